"""The ``benchmarks/`` scripts' command lines: a bad value, or an option the chosen mode would ignore, is argparse's
exit 2 naming the argument, never a traceback, a division by zero or a NaN printed as a result; ``--help`` states
each bound. (The leaderboard's: tests/test_bench_entrants.py.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_fixtures import load_script
from cli_fixtures import bare_arguments

ROOT = Path(__file__).resolve().parents[1]

BAD = [
    ("env_speed", ["--env", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("torchrl_speed", ["--ids", "nosuch"], "--ids", "unknown environment id 'nosuch'"),
    ("torchrl_speed", ["--envs", "4097"], "--envs", "an integer from 1 to 4_096"),
    ("torchrl_speed", ["--benchmarl"], "--benchmarl", "BenchMARL is not installed here"),
    ("env_speed", ["--env", "llm-toy"], "--env", "unknown environment id"),  # not a registered env
    ("env_speed", ["--steps", "0"], "--steps", "an integer from 1 to"),  # was a ZeroDivisionError
    ("env_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),  # was exit 0 with NaN
    ("env_speed", ["--steps", "3", "--rounds", "5"], "--steps", "at least one step per round"),
    ("trainer_speed", ["--env", "p4g-frozen", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("trainer_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),
    ("trainer_speed", ["--seeds", "0"], "--seeds", "an integer from 1 to"),
    ("vec_speed", ["--num-envs", "0"], "--num-envs", "an integer from 1 to"),
    ("vec_speed", ["--rounds", "1000"], "--rounds", "an integer from 1 to 100"),
    ("vec_speed", ["--env-only", "--steps", "64"], "--steps", "not with --env-only"),  # was ignored
    ("vec_speed", ["--env-only", "--baseline-rev", "HEAD"], "--baseline-rev", "not with --env-only"),
    ("tau2_act_speed", ["--env", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("tau2_act_speed", ["--fingerprint", "-1"], "--fingerprint", "an integer from 1 to"),
    ("tau2_calculate", ["--repeats", "0"], "--repeats", "an integer from 1 to"),
    ("tanh_speed", ["--check-step", "0"], "--check-step", "an integer from 1 to"),
    ("fused_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),
    ("fused_speed", ["--seeds", "5000"], "--seeds", "an integer from 1 to"),
    ("fused_speed", ["--check", "--games", "p4g"], "--games", "not with --check"),  # was ignored
    ("torchrl_speed", ["--iterations", "2"], "--iterations", "only with --benchmarl"),  # was ignored
    ("eval_speed", ["--baseline", str(ROOT / "docs")], "--baseline", "holds no scope_envs package"),  # was run
    ("restamp", ["a.json", "b.json", "--results", ""], "--results", "an empty folder name"),  # was the working folder
    ("cooperbench_code_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),
    ("realism_known_answers", ["--seeds", "0"], "--seeds", "an integer from 1 to"),
    ("realism_known_answers", ["--game", "tau2"], "--game", "invalid choice"),
    ("hostile_text", ["--lengths", "100", "-5"], "--lengths", "an integer from 1 to"),
    ("tau2_speed", ["--domains", "nosuch"], "--domains", "invalid choice"),
    ("tau2_speed", ["--repeat", "0"], "--repeat", "an integer from 1 to"),
    ("eval_episodes", ["--episodes", "1"], "--episodes", "an integer from 2 to"),
    ("oracle_budget", ["p4g", "0"], "steps", "an integer from 1 to"),
    ("p4g_out_of_sample", ["--replications", "1001"], "--replications", "an integer from 1 to 1_000"),
    ("p4g_split_fit", ["--episodes", "0"], "--episodes", "an integer from 1 to"),
    ("user_reward_ablation", ["--seeds", "1001"], "--seeds", "an integer from 1 to 1_000"),
    ("study_load", ["--deadline", "-1"], "--deadline", "positive"),
    ("seeds_rule", ["--out", "."], "--out", "is a folder"),
    ("same_numbers", ["run", "--out", "/"], "--out", "is a folder"),
    ("serve_speed", ["--out", "."], "--out", "is a folder"),
    ("plateau_budget", ["--seeds", "0"], "--seeds", "an integer from 1 to 64"),
    ("plateau_budget", ["--max-rung", "9"], "--max-rung", "an integer from 0 to"),
    ("collapse_design", ["--games", "nosuch"], "--games", "nosuch"),
    ("collapse_design", ["--games", "tau2", "--world", "no-interactions"], "--world", "tau2 has no world"),
    ("kernel_speed", ["--runs", "p4g"], "--runs", "expected GAME:METHOD"),
    ("arithmetic_floor", ["--runs", "p4g:random"], "--runs", "nothing to bound"),
    ("arithmetic_floor", ["--runs", "chess:frozen"], "--runs", "not a built-in row"),
    ("arithmetic_floor", ["--seeds", "65"], "--seeds", "an integer from 1 to 64"),
    ("row_speed", ["--runs", "p4g"], "--runs", "expected GAME:METHOD"),
    ("row_speed", ["--runs", "cooperbench:grounded"], "--runs", "not a built-in row"),
    ("row_speed", ["--rounds", "21"], "--rounds", "an integer from 1 to 20"),
    ("row_speed", ["--baseline-rev", "no-such-rev"], "--baseline-rev", "is not a revision"),
    ("slot_scaling", ["--slots", "0"], "--slots", "an integer from 1 to"),
    ("baseline_tree", ["HEAD", "/proc/scope-envs-no-such-folder"], "into", "cannot create"),
    ("study_load", ["--participants", "0"], "--participants", "an integer from 1 to 1_000, got 0"),  # no choices list
    ("study_load", ["--deadline", "1e308"], "--deadline", "up to 86_400"),  # was an OverflowError after 16 s
    ("trainer_speed", ["--seeds", "2", "--games", "cooperbench", "--methods", "grounded"], "--methods",
     "row of none of ['cooperbench']"),
    ("trainer_speed", ["--games", "cooperbench", "--methods", "cotrain"], "--games", "only with --seeds"),
    ("trainer_speed", ["--whole"], "--whole", "only with --seeds"),  # was ignored
    ("trainer_speed", ["--seeds", "2", "--env", "p4g-frozen"], "--env", "not with --seeds"),
    ("restamp", ["/nonexistent-before.json", "/nonexistent-after.json"], "before", "no such file"),
    ("same_numbers", ["compare", "/nonexistent-before.json", "b.json"], "before", "no such file"),
    ("tau2_speed", ["--tau2-python", "/nonexistent-python"], "--tau2-python", "no such file"),
    ("tau2_speed", ["--tau2-python", str(ROOT / "README.md")], "--tau2-python", "is not executable"),
    ("tau2_speed", ["--data", str(ROOT / "benchmarks")], "--data", "holds none of the domain folders"),
    ("tanh_speed", ["--fit", "--fit-points", "1"], "--fit-points", "an integer from 2 to"),  # was a LinAlgError
    ("tanh_speed", ["--check", "--out", "t.json"], "--out", "not with --check"),  # wrote nothing
    ("tanh_speed", ["--fit-points", "100"], "--fit-points", "only with --fit"),
    ("tau2_act_speed", ["--env", "p4g-frozen"], "--env", "is not a tau2 environment"),
    ("tau2_act_speed", ["--fingerprint", "1", "--steps", "100"], "--steps", "not with --fingerprint"),  # was ignored
    ("tau2_act_speed", ["--fingerprint", "1", "--embedded"], "--embedded", "not with --fingerprint"),
    ("llm_gpu", ["--sizes", ","], "--sizes", "no size given"),  # was an IndexError
    ("llm_gpu", ["--fit-sizes", "14B,3B"], "--fit-sizes", "not ascending"),
    ("llm_gpu", ["--dry-run", "--batch", "2"], "--batch", "--dry-run uses fixed tiny sizes"),  # was replaced
    ("arithmetic_floor", ["--runs", "p4g:frozen", "--default-run"], "--runs", "not with --default-run"),
    ("arithmetic_floor", ["--jobs", "2"], "--jobs", "only with --default-run"),  # was ignored
]


@pytest.mark.parametrize("script, argv, argument, why", BAD, ids=[f"{b[0]} {' '.join(b[1])}" for b in BAD])
def test_a_bad_argument_exits_2_naming_it(script, argv, argument, why, tmp_path):
    if "/proc/" in " ".join(argv) and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *argv], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert f"argument {argument}" in done.stderr and why in done.stderr and "Traceback" not in done.stderr, \
        done.stderr[-2000:]


def test_collapse_design_resumed_on_a_broken_packed_file_is_one_line(tmp_path):
    """A folder that cannot hold the runs (here a packed file that is not one) stops the script in one line."""
    (tmp_path / "runs.jsonl.gz").write_text("not gzip")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "collapse_design.py"), "--games", "p4g",
                           "--seeds", "1", "--steps", "100", "--eval-episodes", "4", "--jobs", "1", "--resume",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].startswith("collapse_design: ") and "runs.jsonl.gz" in done.stderr


@pytest.mark.parametrize("script", [["restamp"], ["same_numbers", "compare"]], ids=["restamp", "same_numbers"])
@pytest.mark.parametrize("content", ["", "[1, 2]", "{}", '{"records": {"x": 1}}'], ids=["empty", "list", "object",
                                                                                           "not-records"])
def test_a_file_that_is_not_a_same_numbers_output_is_one_line_naming_it(script, content, tmp_path):
    (tmp_path / "before.json").write_text(content)
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script[0]}.py"), *script[1:], "before.json",
                           "before.json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "argument before: before.json: not a" in done.stderr.strip().splitlines()[-1]


HELP_BOUNDS = [  # (script, its help's command line, what it must say): every bound argparse enforces, stated
    ("serve_speed", ["--help"], ["at most 1_000_000", "at most 256", "at most 4096", "at most 10_000",
                                 "0 to 10_000_000"]),
    ("same_numbers", ["run", "--help"], ["at most 20", "at most 200_000", "at most 64"]),
    ("vec_speed", ["--help"], ["at most 16_384", "default 200, at most 100_000", "rounds (default 3, at most 100)",
                               "trainer round (default 10_000, at most 10_000_000)"]),
    ("tanh_speed", ["--help"], ["at most 100", "at most 1_073_741_824", "2 to 10_000_000"]),
    ("user_reward_ablation", ["--help"], ["at most 1000", "2 to 256", "benchmarks/results/ablation"]),
    ("collapse_design", ["--help"], ["at most 100_000", "at most 256"]),
    ("serve_latency", ["--help"], ["at most 100_000"]),
    ("seed_phases", ["--help"], ["0 to 1000"]),
    ("tau2_state_revisits", ["--help"], ["at most 100_000", "at most 1_000_000"]),
    ("tau2_step_split", ["--help"], ["at most 4096", "default 200, at most 100_000", "default 300, at most 100_000"]),
    ("tau2_speed", ["--help"], ["at most 1_000_000"]),
    ("study_load", ["--help"], ["at most 1000", "at most 86400"]),
    ("realism_known_answers", ["--help"], ["with real dialogues to ground in (p4g)", "Writes ``known_answers.json``"]),
    ("llm_gpu", ["--help"], ["docs/llm-training.md", "it refuses the options above"]),
    # a run without --out writes into the committed results: the help says so
    ("collapse_design", ["--help"], ["default: the committed benchmarks/results/collapse_design", "keep the runs"]),
    ("plateau_budget", ["--help"], ["default: the committed benchmarks/results/plateau_budget"]),
    ("eval_episodes", ["--help"], ["default: the committed benchmarks/results/eval_episodes"]),
    ("oracle_budget", ["--help"], ["default: the committed benchmarks/results/oracle_budget"]),
    ("seeds_rule", ["--help"], ["the committed clocks as they are; 0.1 to 100)"]),
    ("serve_latency", ["--help"], ["(default p4g-cotrain:act tau2-frozen:act tau2-frozen:text)"]),
    ("tau2_act_speed", ["--help"], ["default 5000, at most 100_000_000", "default 3, at most 1000",
                                    "EPISODES random-act episodes per regime and surface (at most 1_000_000"]),
]


@pytest.mark.parametrize("script, argv, wanted", HELP_BOUNDS, ids=[h[0] for h in HELP_BOUNDS])
def test_help_states_the_bounds_argparse_enforces(script, argv, wanted, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *argv], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    text = " ".join(done.stdout.split())  # argparse wraps its lines
    assert done.returncode == 0 and all(w in text for w in wanted), [w for w in wanted if w not in text]


def test_every_argument_of_every_script_says_what_it_is(tmp_path):
    """A script's --help is its reference: no option or positional of any ``benchmarks/`` script is a bare name."""
    assert bare_arguments([str(p) for p in sorted((ROOT / "benchmarks").glob("*.py"))], tmp_path) == {}


def band(tmp_path, floor: float, ceiling: float) -> str:
    """A results.json with p4g's random and oracle rows: eval_episodes.py's band."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"p4g": {"random": {"heldout_success": floor}, "oracle": {"heldout_success": ceiling}}}))
    return str(path)


def test_eval_episodes_sizes_from_the_largest_spread(monkeypatch, tmp_path):
    module = load_script("eval_episodes")
    monkeypatch.setattr(module, "episode_sd", lambda game, episodes, row: (0.5, {"oracle": 0.4}.get(row, 0.2)))
    module.main(["--games", "p4g", "--episodes", "2", "--results", band(tmp_path, 0.1, 0.5), "--out",
                 str(tmp_path / "out")])
    got = json.loads((tmp_path / "out" / "eval_episodes.json").read_text())["games"]["p4g"]
    assert got["eval_episodes"] == 128  # (0.4 / (0.1 * 0.4)) ** 2 = 100, up to a multiple of 64


def test_eval_episodes_without_a_spread_is_one_line_not_a_division_by_zero(monkeypatch, tmp_path):
    """Every episode of every band row scored alike (as 2 episodes can): the rule has no sd to size from."""
    module = load_script("eval_episodes")
    monkeypatch.setattr(module, "episode_sd", lambda game, episodes, row: (1.0, 0.0))
    with pytest.raises(SystemExit, match="p4g's band rows show no spread over 2 episodes.*more --episodes"):
        module.main(["--games", "p4g", "--episodes", "2", "--results", band(tmp_path, 0.1, 0.5), "--out",
                     str(tmp_path / "out")])


def test_eval_episodes_on_an_empty_band_is_argparses_error(tmp_path, capsys):
    module = load_script("eval_episodes")
    with pytest.raises(SystemExit) as e:
        module.main(["--games", "p4g", "--results", band(tmp_path, 0.5, 0.5), "--out", str(tmp_path / "out")])
    assert e.value.code == 2 and "argument --results" in capsys.readouterr().err


def test_eval_speed_stops_in_one_line_where_a_round_measured_nothing(monkeypatch, tmp_path):
    """A round whose evaluation did not go through the timed function: never a figure of 0 s, nor a ratio over it
    (a real round measures: its tiny run in tests/test_benchmarks_scripts.py, which such a round would fail)."""
    module = load_script("eval_speed")
    (tmp_path / "scope_envs").mkdir()
    (tmp_path / "scope_envs" / "__init__.py").write_text("")
    round_out = json.dumps({"p4g": {"eval_s": 0.0, "eval_cpu_s": 0.0, "wall_s": 1.0, "digest": "d"}})
    monkeypatch.setattr(module, "child_output", lambda cmd, env, what: round_out + "\n")
    monkeypatch.setattr(sys, "argv", ["eval_speed.py", "--rounds", "1", "--games", "p4g", "--baseline",
                                      str(tmp_path)])
    with pytest.raises(SystemExit, match="the baseline code's round measured no evaluation time for p4g"):
        module.main()


@pytest.mark.parametrize("content", ["[1, 2]", "{}", '{"p4g": {"random": {}}}', '{"p4g": 3}'],
                         ids=["list", "empty", "no-per-seed", "not-a-table"])
def test_leaderboard_of_a_results_json_the_benchmark_did_not_write_is_one_line(content, tmp_path):
    """Was an AttributeError or KeyError traceback: a results.json of another shape names the folder argument."""
    (tmp_path / "results.json").write_text(content)
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "leaderboard.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "argument folder:" in done.stderr and "is not a scope-envs bench results.json" in done.stderr


def test_gpu_wheels_refuses_a_dest_holding_more_than_wheels_and_deletes_nothing(tmp_path):
    """--dest is emptied before the download: it was ``rmtree``, so ``--dest .`` in the checkout deleted it."""
    (tmp_path / "keep.txt").write_text("mine")
    (tmp_path / "old-0.1-py3-none-any.whl").write_text("")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_wheels.py"), "--dest", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "argument --dest" in done.stderr and "holds more than wheels (keep.txt)" in \
        done.stderr, (done.returncode, done.stderr[-2000:])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "old-0.1-py3-none-any.whl"]


def test_gpu_wheels_builds_from_the_checkouts_files_not_its_build_folder(tmp_path):
    """The wheel had been built in the checkout, whose build/ (git-ignored) can hold a module deleted since: it
    went into the wheel. The build now reads a copy of git's tracked files that exist and the untracked ones git
    does not ignore."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_wheels", ROOT / "benchmarks" / "gpu_wheels.py")
    gpu_wheels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_wheels)
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    for name in ("pkg/kept.py", "pkg/deleted.py", ".gitignore"):
        (repo / name).write_text("build/\n" if name == ".gitignore" else "x = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    (repo / "pkg" / "deleted.py").unlink()
    (repo / "pkg" / "new.py").write_text("y = 2\n")
    (repo / "build" / "lib" / "pkg").mkdir(parents=True)
    (repo / "build" / "lib" / "pkg" / "deleted.py").write_text("x = 1\n")
    copied = gpu_wheels.copy_checkout(repo, tmp_path / "copy")
    assert copied == [".gitignore", "pkg/kept.py", "pkg/new.py"]
    assert sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*") if p.is_file()) \
        == copied
