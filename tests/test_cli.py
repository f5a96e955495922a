"""A user's mistake on the command line: argparse's exit 2, the argument named, nothing slow started."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import scope_envs

from scope_envs.cli import main

ROOT = Path(__file__).resolve().parents[1]

BAD = [
    (["bench", "--games", "nope"], "--games", "unknown game 'nope'"),
    (["bench", "--seeds", "-1"], "--seeds", "an integer from 1 to"),
    (["bench", "--seeds", "0"], "--seeds", "an integer from 1 to"),
    (["bench", "--steps", "0"], "--steps", "an integer from 1 to"),
    (["bench", "--steps", "-5"], "--steps", "an integer from 1 to"),
    (["bench", "--eval-episodes", "0"], "--eval-episodes", "an integer from 1 to"),
    (["bench", "--jobs", "0"], "--jobs", "an integer from 1 to"),
    (["bench", "--advantage", "grpo", "--group-size", "1"], "--group-size", "must be >= 2"),
    (["bench", "--user-reward", "curriculum", "--group-size", "1"], "--group-size", "must be >= 2"),
    (["bench", "--user-reward", "kind"], "--user-reward", "invalid choice"),
    (["bench", "--advantage", "td"], "--advantage", "invalid choice"),
    (["bench", "--group-size", "0"], "--group-size", "an integer from 1 to"),
    (["bench", "--seed-block", "0"], "--seed-block", "an integer from 1 to"),
    (["bench", "--seed-block", "1001"], "--seed-block", "an integer from 1 to 1_000"),
    # an unset shell variable: the whole grid ran (bench), a study.yaml in the working folder was served (study)
    (["bench", "--against", ""], "--against", "an empty value"),
    (["score", "--policy", ".", "--game", "p4g", "--against", ""], "--against", "an empty value"),
    (["study", "serve", "--config", ""], "--config", "an empty value"),
    (["validate", "tau2", "--data", "/nonexistent"], "--data", "no such directory"),
    (["validate", "p4g", "--data", "/nonexistent"], "--data", "no such directory"),
    (["validate", "p4g", "--data", __file__], "--data", "is a file, not a directory"),
    (["validate", "tau2", "--episodes", "10"], "--episodes", "not used by 'validate tau2'"),
    (["validate", "tau2", "--seed", "1"], "--seed", "not used by 'validate tau2'"),
    (["validate", "nope"], "game", "invalid choice"),
    (["demo", "--episodes", "0"], "--episodes", "an integer from 1 to"),
    (["train-llm", "--env-kwargs", "notjson"], "--env-kwargs", "not valid JSON"),
    (["train-llm", "--env-kwargs", "[1, 2]"], "--env-kwargs", "JSON object"),
    (["train-llm", "--env", "nope"], "--env", "unknown environment id 'nope'"),
    (["train-llm", "--env", "p4g-heldout"], "--env", "held-out population every policy is evaluated against"),
    (["train-llm", "--env-kwargs", '{"max_turnz": 3}'], "--env-kwargs", "max_turnz"),
    (["train-llm", "--model", "/nonexistent"], "--model", "never downloads"),
    (["train-llm", "--lr", "-1"], "--lr", "expected a number in (0, 1], got -1.0"),
    (["train-llm", "--lr", "1e300"], "--lr", "expected a number in (0, 1], got 1e+300"),  # overflowed in Adam
    (["train-llm", "--clip-high", "1e300"], "--clip-high", "expected a number in [0, 10]"),  # after 18 s of rollout
    (["train-llm", "--updates", "0"], "--updates", "an integer from 1 to"),
    (["bench", "--games", "p4g", "p4g", "--methods", "random"], "--games", "p4g given twice"),
    (["bench", "--games", "p4g", "--methods", "random", "random"], "--methods", "random given twice"),
    (["train-llm", "--device", "nosuch"], "--device", "not a torch device: 'nosuch'"),
    (["train-llm", "--device", "cuda:99"], "--device", "'cuda:99'"),
    (["train-llm", "--device", "meta"], "--device", "cpu, cuda or mps"),
    (["train-llm", "--env", "llm-toy", "--shared"], "--shared", "only with --mode cotrain"),
    (["train-llm", "--env", "llm-toy", "--members", "3"], "--members", "only with --mode members"),
    (["train-llm", "--env", "llm-toy", "--mode", "cotrain", "--pool-size", "3"], "--pool-size",
     "only with --mode population"),
    (["train-llm", "--env", "llm-toy", "--user-lr", "1e-5"], "--user-lr", "--mode cotrain / population / members"),
    (["train-llm", "--env", "llm-toy", "--grpo-std-norm"], "--grpo-std-norm", "only with --algo grpo"),
    (["study", "serve", "--demo", "--demo-steps", "0"], "--demo-steps", "an integer from 1 to"),
    (["diagnose", "--game", "p4g", "--list", "--simulator", "frozen"], "--simulator", "not used with --list"),
]


@pytest.mark.parametrize("argv, argument, why", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_argument_exits_2_naming_it(argv, argument, why, capsys, monkeypatch):
    from scope_envs.train.llm import ppo

    def no_training(*a, **k):
        raise AssertionError("training started on a bad argument")

    monkeypatch.setattr(ppo, "train", no_training)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"argument {argument}" in err and why in err and "Traceback" not in err


@pytest.mark.parametrize("argv, size", [([], 1), (["--advantage", "grpo"], 8), (["--user-reward", "curriculum"], 8),
                                        (["--advantage", "grpo", "--group-size", "4"], 4)])
def test_bench_groups_as_train_does_scopes_eight_where_grpo_needs_groups(monkeypatch, tmp_path, argv, size):
    """``--advantage grpo`` alone was refused as "--group-size ... got 1", a value nobody gave (train took 2)."""
    from scope_envs.bench import runner

    given = {}
    monkeypatch.setattr(runner, "run", lambda **kw: given.update(kw))
    monkeypatch.setattr(runner, "summary", lambda *a, **k: "", raising=False)
    try:
        main(["bench", "--games", "p4g", "--methods", "cotrain", "--out", str(tmp_path), *argv])
    except (OSError, KeyError, TypeError):  # what the patched run did not write: only its arguments matter here
        pass
    assert given["group_size"] == size


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"scope-envs {scope_envs.__version__}"


def test_train_llm_cuda_without_a_gpu_is_an_argument_error(capsys, monkeypatch):
    """On a CPU-only torch, --device cuda is said at once, not an AssertionError once the model loads."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--env", "llm-toy", "--device", "cuda", "--updates", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --device: 'cuda': torch sees no CUDA device" in err
    assert "Traceback" not in err


def test_a_mode_option_at_its_default_is_not_refused(capsys, monkeypatch):
    """Only an option the user changed is refused: --members at its default, 2, in agent mode goes through."""
    from scope_envs.train.llm import ppo

    monkeypatch.setattr(ppo, "train", lambda cfg: print("trained", cfg.mode))
    main(["train-llm", "--env", "llm-toy", "--members", "2", "--updates", "1"])
    assert "trained agent" in capsys.readouterr().out


OUT_COMMANDS = [["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "10"],
                ["score", "--policy", "floor", "--game", "p4g"], ["train-llm", "--env", "llm-toy"],
                ["eval-llm", "--policy", "x", "--env", "p4g-frozen", "--panel", "p"], ["diagnose", "--game", "p4g"]]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, which takes no new names")
@pytest.mark.parametrize("argv", OUT_COMMANDS, ids=[a[0] for a in OUT_COMMANDS])
def test_an_out_folder_that_cannot_be_created_is_an_argument_error(argv, capsys, monkeypatch):
    """/proc passes every permission check (as root) yet takes no new folder: only trying tells, at parse time."""
    from scope_envs.bench import executors

    monkeypatch.setattr(executors, "execute", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", "/proc/scope-envs-no-such-folder"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --out: cannot create '/proc/scope-envs-no-such-folder'" in err
    assert "Traceback" not in err and not Path("/proc/scope-envs-no-such-folder").exists()


def test_an_out_folder_is_probed_and_nothing_is_left(tmp_path, capsys):
    """The probe that tells whether a folder can be made is removed at once (parse errors leave no folder)."""
    target = tmp_path / "new" / "deeper"
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--out", str(target), "--seeds", "0"])
    assert exit_.value.code == 2 and list(tmp_path.iterdir()) == []


def test_the_demo_shows_the_collapsed_simulator_giving_more_than_the_held_out_proxies(capsys):
    """The demo's known answer: one scripted persuader, the frozen simulator against the held-out proxies, the gap
    with its interval; one episode a side has no interval and says so."""
    import re

    main(["demo"])
    out = capsys.readouterr().out
    frozen, heldout = (float(x) for x in re.findall(r"mean donation \$([0-9.]+) over 200 episodes", out))
    gap, low, high = (float(x) for x in re.search(r"frozen - held-out: ([+-][0-9.]+) dollars \(95% CI "
                                                   r"\[([+-][0-9.]+), ([+-][0-9.]+)\]\)", out).groups())
    assert gap == pytest.approx(frozen - heldout, abs=2e-3) and 0 < low < gap < high
    assert "gives this persuader more than the held-out human proxies do" in out
    main(["demo", "--episodes", "1"])
    assert "(one episode a side: no CI)" in capsys.readouterr().out


def test_help_states_the_defaults_of_out_and_the_smoke_cap(capsys):
    from scope_envs.bench.presets import SMOKE_EVAL_EPISODES, SMOKE_STEPS

    for argv, wanted in ((["score"], "(default: ./runs/score)"), (["train-llm"], "(default: ./runs/llm)"),
                         (["diagnose"], "(default: ./runs/diagnose)"), (["demo"], "episodes per env (200;"),
                         (["bench"], f"--steps below {SMOKE_STEPS:_} without --eval-episodes, caps both sides at "
                                     f"{SMOKE_EVAL_EPISODES}")):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        assert wanted in " ".join(capsys.readouterr().out.split()), argv


def test_validate_p4g_on_a_folder_without_the_data_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "p4g", "--data", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "argument --data" in err[-1] and str(tmp_path) in err[-1]


def test_bench_run_rejects_an_empty_budget(tmp_path):
    from scope_envs import bench

    for key in ("seeds", "steps", "eval_episodes"):
        with pytest.raises(ValueError, match=key):
            bench.run(games=["p4g"], methods=["frozen"], out=tmp_path, progress=False, **{key: 0})


# ---------------------------------------------------------------------------- counts and bad files
HUGE = "1" * 30
COUNTS = [
    (["validate", "p4g", "--episodes", HUGE], "--episodes"),
    (["demo", "--episodes", HUGE], "--episodes"),
    (["bench", "--seeds", HUGE], "--seeds"),
    (["bench", "--eval-episodes", HUGE], "--eval-episodes"),
    (["bench", "--steps", HUGE], "--steps"),
    (["study", "serve", "--demo", "--demo-steps", HUGE], "--demo-steps"),
    (["study", "analyze", ".", "--proxy-episodes", HUGE], "--proxy-episodes"),
    (["train-llm", "--updates", HUGE], "--updates"),
    (["eval-llm", "--policy", "x", "--env", "p4g-frozen", "--panel", "p", "--episodes", HUGE], "--episodes"),
]


@pytest.mark.parametrize("argv, argument", COUNTS, ids=[" ".join(c[0][:2]) + " " + c[1] for c in COUNTS])
def test_every_count_has_a_maximum_checked_before_work(argv, argument, capsys):
    from conftest import deadline

    with deadline(30), pytest.raises(SystemExit) as exit_:  # a hang guard: a count without a bound runs forever
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {argument}: expected an integer from" in err and "digits" in err


@pytest.mark.parametrize("argv", [["bench"], ["demo"], ["validate"], ["train-llm"], ["eval-llm"], ["study", "serve"],
                                  ["study", "analyze"]])
def test_help_states_the_maximum_of_every_count(argv, capsys):
    """Every integer option (a count or a seed) says its range in --help."""
    import argparse

    from scope_envs.cli import main as cli_main

    with pytest.raises(SystemExit):
        cli_main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    parser = parser_of(argv)
    for action in parser._actions:
        if getattr(action.type, "maximum", None) is not None and not isinstance(action, argparse._HelpAction):
            shown = f"{action.type.maximum:_}"
            assert shown in text or str(action.type.maximum) in text or "2**32-1" in text, (argv, action.dest)


def test_every_argument_of_every_command_says_what_it_is(tmp_path):
    """--help is the reference a user reads: no option or positional of ``scope-envs`` (any subcommand) or of the
    package's ``python -m`` commands is a bare name."""
    from cli_fixtures import bare_arguments

    assert bare_arguments(["scope_envs.cli", "scope_envs.validate.p4g", "scope_envs.games.p4g.grounded",
                           "scope_envs.diagnose.table", "scope_envs.bench.records"], tmp_path) == {}


def parser_of(argv):
    """The argparse parser of a subcommand (walks the real parser tree of ``scope-envs``)."""
    import argparse

    captured = {}
    original = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        captured["root"] = self
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = grab
    try:
        with pytest.raises(SystemExit):
            main([])
    finally:
        argparse.ArgumentParser.parse_args = original
    parser = captured["root"]
    for word in argv:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def test_train_llm_without_the_llm_extra_names_the_extra():
    code = ("import sys; sys.modules['transformers'] = None; sys.modules['tokenizers'] = None\n"
            "from scope_envs.cli import main; main(['train-llm', '--updates', '1'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "pip install 'scope-envs[llm]'" in done.stderr and "transformers" in done.stderr


def test_the_benchmark_answers_help_before_torch_loads():
    """``scope-envs bench`` pins torch's kernels and then starts itself again (``kernels.pin_or_restart``): its
    parser, and the benchmark package it reads, load no torch, so the first process is short and --help quick."""
    code = ("import sys\nfrom scope_envs.cli import main\ntry:\n    main(['bench', '--help'])\nexcept SystemExit:\n"
            "    pass\nassert 'torch' not in sys.modules, 'torch loaded'\nimport scope_envs.bench\n"
            "assert 'torch' not in sys.modules, 'scope_envs.bench loads torch'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0 and "--methods" in done.stdout, done.stderr[-2000:]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    return tmp_path


def test_train_llm_out_a_file_is_an_argument_error(files, capsys):
    from conftest import deadline

    with deadline(30), pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--out", str(files / "file")])
    assert exit_.value.code == 2 and "argument --out" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["file", "under", "read-only"])
def test_study_demo_dir_that_cannot_be_written_is_an_argument_error(files, capsys, where):
    import contextlib

    from tests.test_bench_faults import tmpfs

    target = {"file": files / "file", "under": files / "file" / "demo", "read-only": files / "ro" / "demo"}[where]
    with contextlib.ExitStack() as stack:
        if where == "read-only":
            stack.enter_context(tmpfs(files / "ro", read_only=True))
        with pytest.raises(SystemExit) as exit_:
            main(["study", "serve", "--demo", "--dir", str(target)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --dir" in err and "Traceback" not in err


def study_folder(tmp_path, **fields):
    pytest.importorskip("sqlalchemy")
    from tests.study_fixtures import save_policies, write_study

    return write_study(tmp_path / "study", save_policies(tmp_path / "policies"), **fields)


@pytest.mark.parametrize("url, why", [("not a url at all", "not a database URL"),
                                      ("nosuchdialect://x/y", "no SQLAlchemy dialect"),
                                      ("postgresql://user:secret@127.0.0.1:1/db", "postgresql://user:***@127.0.0.1:1/db"),
                                      ("sqlite:////nonexistent/dir/study.db", "cannot be opened")])
def test_study_serve_database_urls_that_cannot_open_are_one_line(tmp_path, monkeypatch, capsys, url, why):
    import uvicorn

    folder = study_folder(tmp_path, database=url)
    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: pytest.fail("the server started"))
    with pytest.raises(SystemExit) as exit_:
        main(["study", "serve", "--config", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --config: database" in err and why in err and "Traceback" not in err
    assert "secret" not in err  # the password is never printed


def test_study_serve_config_a_binary_file_is_one_line(files, capsys):
    pytest.importorskip("fastapi")
    with pytest.raises(SystemExit) as exit_:
        main(["study", "serve", "--config", str(files / "binary.yaml")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --config" in err and "not a text file" in err and "Traceback" not in err


def test_study_analyze_with_a_folder_for_its_database_is_one_line(tmp_path, capsys):
    folder = study_folder(tmp_path)
    (folder / "study.db").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(["study", "analyze", str(folder), "--proxy-episodes", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument study_dir: database" in err and "Traceback" not in err


# validate's data folders: truncated, empty, unparsable, vacuous
P4G_DATA = ROOT.parent / "shared" / "data" / "p4g"


@pytest.fixture
def truncated_p4g(tmp_path):
    if not (P4G_DATA / "full_info.csv").is_file():
        pytest.skip(f"needs the real P4G data in {P4G_DATA}")
    for name in ("full_info.csv", "300_dialog.csv", "300_info.csv"):
        (tmp_path / name).write_bytes((P4G_DATA / name).read_bytes()[:3000])  # cut mid-row
    return tmp_path


@pytest.mark.parametrize("extra", [["--episodes", "10"], ["--out-of-sample", "--replications", "1"]])
def test_validate_p4g_on_truncated_csv_files_is_one_line(truncated_p4g, capsys, extra):
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "p4g", "--data", str(truncated_p4g), *extra])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --data" in err and "truncated" in err and "Traceback" not in err


def test_p4g_fit_on_truncated_csv_files_is_one_line(truncated_p4g):
    done = subprocess.run([sys.executable, "-m", "scope_envs.validate.p4g", "--data", str(truncated_p4g), "--out",
                           str(truncated_p4g / "p.json"), "--no-calibrate"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 2 and "argument --data" in done.stderr and "Traceback" not in done.stderr


def tau2_folder(tmp_path, tasks):
    from scope_envs.games.tau2.data import EMBEDDED

    mock = tmp_path / "tau2" / "mock"
    mock.mkdir(parents=True)
    for name in ("db.json", "policy.md"):
        (mock / name).write_bytes((EMBEDDED / "mock" / name).read_bytes())
    (mock / "tasks.json").write_text(tasks)
    return mock.parent


@pytest.mark.parametrize("case", ["empty", "unparsable", "one task without actions"])
def test_validate_tau2_on_a_folder_with_nothing_to_validate_fails(tmp_path, capsys, case):
    if case == "empty":
        data = tmp_path / "empty"
        data.mkdir()
    elif case == "unparsable":
        data = tau2_folder(tmp_path, "{not json")
    else:
        data = tau2_folder(tmp_path, json.dumps([{"id": "t1", "user_scenario": {"instructions": "hello"},
                                                  "evaluation_criteria": {}}]))
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "tau2", "--data", str(data)])
    captured = capsys.readouterr()
    assert exit_.value.code == 2 and "argument --data" in captured.err and "Traceback" not in captured.err
    assert "gold_pass_rate" not in captured.out  # no vacuous 1.0 is reported


def test_a_sigterm_that_a_library_turns_into_its_own_keyboardinterrupt_is_said_as_sigterm(capsys):
    """Ray's wait turns the exception the SIGTERM handler raises (``Stopped``) into a KeyboardInterrupt of its own:
    a --executor ray bench then said "interrupted" and exited 130. What was received is what is said."""
    import argparse
    import os
    import signal
    import time

    from scope_envs.cli import Stopped, stopped_in_one_line

    with pytest.raises(SystemExit) as e:
        with stopped_in_one_line(argparse.Namespace(command="diagnose")):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except Stopped:
                raise KeyboardInterrupt from None  # as ray.wait raises it
    assert e.value.code == 143 and "scope-envs diagnose: stopped (SIGTERM)\n" in capsys.readouterr().err


def test_stdout_that_cannot_be_written_is_not_a_traceback():
    """`scope-envs validate p4g | head -c 10` (the reader gone) and stdout on a full disk (/dev/full) had ended in
    a traceback: the first ends quietly, the second in one line naming standard output."""
    import os

    command = [sys.executable, "-m", "scope_envs.cli", "validate", "p4g", "--episodes", "20"]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        gone = subprocess.run(command, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    finally:
        os.close(write)
    assert gone.returncode == 1 and gone.stderr == ""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "cannot write to standard output: No space left on device" in done.stderr
