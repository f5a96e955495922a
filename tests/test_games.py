"""The registry of games (``scope_envs.games``): each game's ``GameSpec``, found, ordered and loadable."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import scope_envs
from scope_envs import games
from scope_envs.games import GameSpec, game_names, game_spec, load, register_game
from scope_envs.games.spec import _BUILT_WITH, PATH_FIELDS
from scope_envs.registry import REGIMES

ROOT = Path(__file__).resolve().parents[1]



def test_the_built_in_games_are_found_in_their_declared_order():
    assert game_names()[:3] == ("p4g", "cooperbench", "tau2")
    assert [game_spec(g).order for g in game_names()] == sorted(game_spec(g).order for g in game_names())


def test_an_unknown_game_is_named_with_the_known_ones():
    with pytest.raises(KeyError) as raised:
        game_spec("chess")
    assert str(raised.value) == "unknown game 'chess'; the games are " + ", ".join(game_names())
    with pytest.raises(ValueError, match="unknown game 'chess'"):  # a bad argument, where callers catch those
        game_spec("chess")


@pytest.mark.parametrize("game", ["p4g", "cooperbench", "tau2"])
def test_every_path_a_built_in_spec_names_loads(game):
    spec = game_spec(game)
    paths = {f.name for f in dataclasses.fields(spec) if isinstance(getattr(spec, f.name), str)
             and _BUILT_WITH.match(getattr(spec, f.name))}
    assert paths <= set(PATH_FIELDS), "PATH_FIELDS is what a declared game's paths are checked by at registration"
    for field in PATH_FIELDS:
        path = getattr(spec, field)
        if path:
            assert load(path) is not None, f"{game}.{field}: {path}"
    sizes, card = load(spec.split_sizes), load(spec.card)
    assert card("train", 0).split == "train" and card("heldout", sizes["heldout"] - 1).split == "heldout"
    sim = load(spec.collapsed)(sharpening=2.0, **{spec.card_keyword: card("train", 1)}, cooperation=0.1,
                               calibration_noise=0.25, name="x")
    assert sim.sharpening == 2.0 and sim.cooperation == 0.1


def test_every_game_has_every_regime_registered():
    for game in game_names():
        assert {f"{game}-{r}" for r in REGIMES} <= set(scope_envs.registry)


def test_register_game_refuses_a_second_spec_under_a_name_and_anything_but_a_spec():
    spec = game_spec("p4g")
    assert register_game(spec) is spec  # the same declaration again: nothing changes
    with pytest.raises(ValueError, match="'p4g' is already registered"):
        register_game(dataclasses.replace(spec, order=99))
    with pytest.raises(TypeError, match="GameSpec"):
        register_game({"name": "dict"})


def test_a_spec_checks_its_name_and_card_keyword():
    base = dict(factory="m:f", order=0, reference="m:a", collapsed="m:a", human_proxy="m:a", rotation="m:a",
                card="m:a", split_sizes="m:a", modal_card="m:a")
    with pytest.raises(ValueError, match="lowercase"):
        GameSpec(name="Two Words", **base)
    with pytest.raises(ValueError, match="card_keyword"):
        GameSpec(name="g", card_keyword="card", **base)
    with pytest.raises(ValueError, match="module:attribute"):
        load("no colon")


def test_a_listener_hears_every_game_once_and_each_one_registered_later(monkeypatch):
    monkeypatch.setattr(games, "_specs", dict(games._specs))
    monkeypatch.setattr(games, "_listeners", [])
    heard = []
    games.on_register(lambda spec: heard.append(spec.name))
    assert heard == list(game_names())
    new = dataclasses.replace(game_spec("p4g"), name="p4g_copy", order=50)
    register_game(new)
    assert heard == [*game_names()[:-1], "p4g_copy"] and game_names()[-1] == "p4g_copy"


def test_a_module_in_the_environment_variable_that_is_not_there_is_named(monkeypatch):
    monkeypatch.setattr(games, "_specs", {})
    monkeypatch.setattr(games, "_listeners", [])
    monkeypatch.setattr(games, "_discovered", False)
    monkeypatch.setattr(games, "_declaration_errors", [])
    monkeypatch.setenv(games.ENV_VAR, "no_such_game_module_here")
    with pytest.raises(ValueError, match="SCOPE_ENVS_GAMES: no module 'no_such_game_module_here'"):
        game_names()


@pytest.mark.parametrize("declared, said", [
    ("no_such_pkg.spec", "SCOPE_ENVS_GAMES: no module 'no_such_pkg.spec' on the path"),
    ("broken_import", "SCOPE_ENVS_GAMES: importing 'broken_import' failed: ModuleNotFoundError: No module named "
                      "'not_installed_anywhere'"),
    ("no_spec_here", "SCOPE_ENVS_GAMES: 'no_spec_here' has no SPEC"),
    ("raises_here", "SCOPE_ENVS_GAMES: importing 'raises_here' failed: RuntimeError: boom"),
    ("misspelt_factory", "SCOPE_ENVS_GAMES: misspelt_factory: GameSpec.factory 'scope_envs.regimes:make_p4gg' does "
                         "not load: AttributeError")])
def test_a_game_that_does_not_load_is_one_line_from_every_command_and_import_works(tmp_path, declared, said):
    """A typo in SCOPE_ENVS_GAMES, or a spec module that fails to import, was a traceback from ``import scope_envs``
    and so from every command, --help included. The import now works (the other games are registered); the
    commands, which list the games, say the fault in one line and exit 2; a game looked up raises it."""
    (tmp_path / "broken_import.py").write_text("import not_installed_anywhere\n")
    (tmp_path / "no_spec_here.py").write_text("X = 1\n")
    (tmp_path / "raises_here.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "misspelt_factory.py").write_text(
        "import dataclasses\nfrom scope_envs.games.p4g.spec import SPEC as P4G\n"
        "SPEC = dataclasses.replace(P4G, name='misspelt', order=98, factory='scope_envs.regimes:make_p4gg')\n")
    env = {**os.environ, games.ENV_VAR: declared, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    for argv in (["list"], ["--help"], ["bench", "--help"]):
        r = subprocess.run([sys.executable, "-c", "from scope_envs.cli import main; main()", *argv], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (argv, r.stderr)
        assert r.stderr.strip().splitlines() == [f"scope-envs: error: {said}" + r.stderr.split(said, 1)[1].rstrip()]
    probe = ("import scope_envs, scope_envs.games as g\nprint('imported')\n"
             "try:\n    scope_envs.make('p4g-frozen')\nexcept g.GameDeclarationError as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("imported\nrefused: " + said), (r.stdout, r.stderr)


def test_an_installed_distribution_declares_its_game_by_entry_point(monkeypatch, tmp_path):
    """A distribution's ``scope_envs.games`` entry point names its spec module; the game is then found as the
    built-in ones are."""
    (tmp_path / "fake_game_spec.py").write_text(
        "import dataclasses\nfrom scope_envs.games.p4g.spec import SPEC as P4G\n"
        "SPEC = dataclasses.replace(P4G, name='fakegame', order=99)\n")
    info = tmp_path / "fake_game-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-game\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[scope_envs.games]\nfakegame = fake_game_spec\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(games, "_specs", {})
    monkeypatch.setattr(games, "_listeners", [])
    monkeypatch.setattr(games, "_discovered", False)
    monkeypatch.setattr(games, "_declaration_errors", [])
    assert game_names()[-1] == "fakegame" and game_spec("fakegame").order == 99
    assert game_names()[:3] == ("p4g", "cooperbench", "tau2")
