"""docs/adding-a-game.md is enough to add a game: its worked example, written out from the page's own blocks into a
temporary package, is registered, passes PettingZoo's API tests on every id and surface, and runs a one-seed
``scope-envs bench``.

The game is declared the way the page says a game outside the package is (``SCOPE_ENVS_GAMES``), so each step
runs in a process of its own, as a user's would: this test process's registry is left as it was.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "adding-a-game.md"

CONFORMANCE = """
import warnings
import scope_envs
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec
from scope_envs.games import game_names

warnings.filterwarnings("ignore", message="No agents present but not all possible_agents")
ids = sorted(i for i, spec in scope_envs.registry.items() if spec.game == "bargain")
for env_id in ids:
    for surface in ("act", "text"):
        parallel_api_test(scope_envs.make(env_id, surface=surface), num_cycles=100)
        api_test(parallel_to_aec(scope_envs.make(env_id, surface=surface)), num_cycles=100)
print(" ".join(game_names()), "|", " ".join(ids))
"""


def page_files() -> dict[str, str]:
    """The page's blocks that open with the file they are, ``# bargain/x.py``: {path: text}."""
    blocks = re.findall(r"```py\n# (bargain/[\w/]+\.py)\n(.*?)```", PAGE.read_text(), re.S)
    return dict(blocks)


@pytest.fixture(scope="module")
def game_env(tmp_path_factory):
    folder = tmp_path_factory.mktemp("packages")
    for path, text in page_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
               SCOPE_ENVS_GAMES="bargain.spec")
    return env


def run(args, env, timeout=600):
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_page_gives_every_file_of_the_example():
    assert set(page_files()) == {"bargain/__init__.py", "bargain/game.py", "bargain/players.py", "bargain/env.py",
                                 "bargain/spec.py"}


def test_the_example_game_is_registered_and_passes_the_api_tests(game_env):
    out = run([sys.executable, "-c", CONFORMANCE], game_env).strip().splitlines()[-1]
    games, ids = out.split(" | ")
    assert games.split() == ["p4g", "cooperbench", "tau2", "bargain"]  # declared order: bargain's 10 comes last
    assert ids.split() == sorted(f"bargain-{r}" for r in scope_envs_regimes())


def scope_envs_regimes():
    from scope_envs.registry import REGIMES

    return REGIMES


BAD_OPTIONS = """
import scope_envs
for env_id, kwargs in (("bargain-frozen", {"max_turns": 0}), ("bargain-cotrain", {"max_turns": "3"}),
                       ("bargain-heldout", {"assumptions": "no_slips"})):
    try:
        scope_envs.make(env_id, **kwargs).reset(seed=0)
    except ValueError as e:
        print(str(e).split(",")[0])
    else:
        print("taken", env_id, kwargs)
"""


def test_the_suites_that_find_a_game_by_the_registry_hold_the_example_with_nothing_added(game_env):
    """The page says the conformance, fuzz, error, split and panel suites hold a new game "with nothing to add":
    run on the example, 11 of them failed (the text fuzz had no legal messages for it, the text determinism test
    played strings the example's language does not read)."""
    suites = ["tests/test_conformance.py", "tests/test_env_fuzz.py", "tests/test_env_errors.py", "tests/test_split.py",
              "tests/test_families.py"]
    out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *suites,
               "-k", "bargain"], game_env)
    assert re.search(r"\b(\d{2,}) passed", out) and "failed" not in out and " error" not in out, out[-2000:]


def test_the_example_refuses_a_bad_option_naming_it_as_the_built_in_games_do(game_env):
    """The page's game checks its count (max_turns=0 was taken and broke at reset with an IndexError) and its proxy
    refuses a variant it does not have (assumptions="no_slips" played the default silently)."""
    out = run([sys.executable, "-c", BAD_OPTIONS], game_env).strip().splitlines()[-3:]
    assert out == ["max_turns must be an int in [1", "max_turns must be an int in [1",
                   "the bargain human proxy has no assumption variants (only 'default')"]


def test_a_one_seed_benchmark_runs_on_the_example_game(game_env, tmp_path):
    out = tmp_path / "bench"
    run([sys.executable, "-m", "scope_envs.cli", "bench", "--games", "bargain", "--seeds", "1", "--steps", "300",
         "--eval-episodes", "24", "--jobs", "1", "--out", str(out)], game_env, timeout=900)
    runs = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    assert {r["task"]["game"] for r in runs} == {"bargain"}
    methods = {r["result"]["method"] for r in runs}
    assert {"random", "oracle", "frozen", "rotation", "cotrain"} <= methods
    report = (out / "report.md").read_text()
    assert "## bargain: revenue (agent_0 = the seller)" in report
    assert "Success is each game's success metric: for bargain the revenue. " in report  # not the built-in games'"


def test_diagnose_says_the_example_game_declares_no_probe_agent(game_env, tmp_path):
    """The page leaves ``probe_agent`` unset ("read only by the tool that names them"): diagnose names it, in one
    line, before it plays anything."""
    done = subprocess.run([sys.executable, "-m", "scope_envs.cli", "diagnose", "--game", "bargain", "--simulator",
                           "frozen", "--out", str(tmp_path / "d")], env=game_env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "argument --game: bargain declares no probe agent (GameSpec.probe_agent" in done.stderr

PROBED = """
import dataclasses
import numpy as np
from bargain.spec import SPEC as PAGE


class FirstLegal:
    def act(self, view, rng):
        return int(np.flatnonzero(view.legal)[0])


class NoRng:
    def act(self, view):
        return 0


SPEC = dataclasses.replace(PAGE, **{"probe_agent": "bargain_probed:FirstLegal", **dict({extra})})
"""


@pytest.mark.parametrize("extra, refused", [
    ("concede=('acept',)", "argument --game: bargain's GameSpec.concede names acts its user does not have: acept"),
    ("probe_agent='bargain_probed:NoRng'", "argument --game: bargain's GameSpec.probe_agent (bargain_probed:NoRng) "
                                           "has no act(view, rng)"),
    ("", None)])
def test_diagnose_checks_the_probe_declarations_and_says_n_a_for_what_a_game_does_not_declare(game_env, tmp_path,
                                                                                              extra, refused):
    """A probe agent without ``act(view, rng)`` was a traceback mid-run, and a misspelled conceding act a rate of
    0.000: both are refused before any episode, naming the field. A game that declares no conceding act, and whose
    outcome has no ``cooperation_outcome`` key (the page's example: the defaults), measured neither: ``n/a`` on the
    card and null in diagnose.json, not 0."""
    (tmp_path / "bargain_probed.py").write_text(PROBED.replace("{extra}", extra))
    env = dict(game_env, PYTHONPATH=os.pathsep.join([str(tmp_path), game_env["PYTHONPATH"]]),
               SCOPE_ENVS_GAMES="bargain_probed")
    out = tmp_path / "d"
    done = subprocess.run([sys.executable, "-m", "scope_envs.cli", "diagnose", "--game", "bargain", "--simulator",
                           "frozen", "--episodes", "24", "--probe-episodes", "4", "--bootstrap", "20", "--no-progress",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if refused:
        assert done.returncode == 2 and refused in done.stderr.strip().splitlines()[-1], done.stderr[-2000:]
        assert not out.exists()
        return
    assert done.returncode == 0, done.stderr[-3000:]
    co = json.loads((out / "diagnose.json").read_text())["cooperation"]
    assert co["rate"]["value"] is None and co["bias"]["value"] is None and co["outcome"]["rate"]["value"] is None
    card = (out / "diagnose.md").read_text()
    assert "| conceding rate | n/a | the game declares no conceding act (GameSpec.concede) |" in card, card
    assert "no episode's outcome has the key 'success' (GameSpec.cooperation_outcome)" in card


def test_the_batched_engine_row_names_every_hook_a_game_must_write():
    """The page's ``scope_envs/vec/games.py`` row names each ``BatchedVecEnv`` method that only raises
    ``NotImplementedError`` (it left out ``public_private``, which an engine without it fails on when a custom user
    is asked slot by slot)."""
    import inspect

    from scope_envs.vec import BatchedVecEnv

    row = next(line for line in PAGE.read_text().splitlines() if line.startswith("| `scope_envs/vec/games.py` |"))
    required = [name for name, f in vars(BatchedVecEnv).items() if inspect.isfunction(f)
                and inspect.getsource(f).rstrip().endswith("raise NotImplementedError")]
    assert "public_private" in required
    assert [name for name in required if f"`{name}" not in row] == []
