"""Every script under ``benchmarks/`` runs: its ``--help``, and where it has a reduced size, a tiny run of it (here
or in its own test file, ``ELSEWHERE``; ``NO_TINY`` says why a script has none), exit 0 and no traceback; a child
process that fails ends the script with the child's own error (``baseline_tree``'s ``child_output``), and
``vec_speed.py``'s baseline process imports nothing this tree alone has (its run with the baseline trainer, marked
slow). (Bad arguments: tests/test_benchmarks_args.py.)"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
needs_git = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this checkout's git history")
needs_p4g_data = pytest.mark.skipif(not (ROOT.parent / "shared" / "data" / "p4g" / "full_info.csv").exists(),
                                    reason="the real P4G data (the script's default --data) is not here")
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba (the `fast` extra) is not installed")
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py"))

TINY = [  # (script, a run at a reduced size of its documented command line)
    ("env_speed", ["--steps", "50", "--rounds", "1"]),
    ("eval_speed", ["--rounds", "1", "--games", "p4g"]),  # exits 1 where it measures no evaluation time
    ("study_load", ["--participants", "1", "--kills", "0", "--deadline", "120"]),  # was StudyFull below 4
    ("hostile_text", ["--lengths", "100"]),
    ("oracle_budget", ["p4g", "200", "--out", "{tmp}"]),  # never the committed results folder
    ("plateau_budget", ["--games", "tau2", "--rows", "uncollapsed", "--seeds", "1", "--eval-episodes", "8",
                        "--base", "200", "--max-rung", "0", "--jobs", "1", "--out", "{tmp}"]),
    ("collapse_design", ["--games", "p4g", "--seeds", "2", "--steps", "200", "--eval-episodes", "8", "--jobs", "1",
                         "--out", "{tmp}"]),
    ("kernel_speed", ["--runs", "p4g:frozen", "--steps", "200", "--eval-episodes", "8", "--rounds", "1",
                      "--out", "{tmp}/k.json"]),
    ("slot_scaling", ["--games", "p4g", "--slots", "64", "--rounds", "1", "--out", "{tmp}/s.json"]),
    ("arithmetic_floor", ["--runs", "p4g:frozen", "--seeds", "2", "--steps", "200", "--eval-episodes", "8",
                          "--out", "{tmp}/a.json"]),
    pytest.param("fused_speed", ["--seeds", "2", "--games", "p4g", "--steps", "300", "--rounds", "1", "--out",
                                 "{tmp}/f.json"], marks=needs_numba, id="fused_speed"),  # asserts the records equal
    ("tanh_speed", ["--rounds", "1", "--calls", "10", "--out", "{tmp}/t.json"]),
    pytest.param("tanh_speed", ["--check", "--check-step", "65536"], id="tanh_speed-check"),
    pytest.param("tanh_speed", ["--fit", "--fit-points", "2000"], id="tanh_speed-fit"),
    ("tau2_calculate", ["--rounds", "1", "--repeats", "5"]),
    ("trainer_speed", ["--seeds", "2", "--games", "p4g", "--methods", "cotrain", "--steps", "300", "--rounds", "1",
                       "--whole", "--out", "{tmp}/t.json"]),  # also asserts the seeds' runs equal alone and together
    pytest.param("trainer_speed", ["--seeds", "2", "--games", "tau2", "--steps", "300", "--rounds", "1",
                                   "--out", "{tmp}/t.json"], id="trainer_speed-tau2"),  # each seed's stream
    ("vec_speed", ["--games", "p4g", "--env-only", "--rounds", "1", "--vec-steps", "3", "--scalar-steps", "50",
                   "--num-envs", "4"]),
    pytest.param("vec_speed", ["--games", "p4g", "--rounds", "1", "--steps", "64", "--vec-steps", "3",
                               "--scalar-steps", "50", "--num-envs", "4"], marks=pytest.mark.slow,
                 id="vec_speed-with-its-baseline-trainer"),  # exports the baseline revision: needs git history
    pytest.param("baseline_tree", ["HEAD", "{tmp}/base"], marks=needs_git, id="baseline_tree"),
    ("cooperbench_code_speed", ["--rounds", "1"]),
    ("eval_episodes", ["--games", "cooperbench", "--episodes", "16", "--out", "{tmp}"]),  # the committed band
    ("gc_share", ["--steps", "10", "--warmup", "1", "--num-envs", "1"]),
    ("instrument_checks", ["--reps", "10", "--out", "{tmp}/i.json"]),  # the committed default reference
    ("leaderboard", [str(ROOT / "benchmarks" / "results" / "default")]),
    pytest.param("p4g_out_of_sample", ["--replications", "1", "--out", "{tmp}"], marks=needs_p4g_data,
                 id="p4g_out_of_sample"),
    ("same_numbers", ["run", "--seeds", "1", "--steps", "100", "--games", "p4g", "--jobs", "1", "--out",
                      "{tmp}/s.json"]),
    ("seeds_rule", ["--out", "{tmp}/s.json"]),
    ("serve_latency", ["--clients", "1", "--steps", "1", "--rows", "p4g-cotrain:act"]),
    ("serve_speed", ["--steps", "10", "--sessions", "1", "--num-envs", "1", "--text-episodes", "1",
                     "--train-steps", "0", "--out", "{tmp}/s.json"]),
    ("tau2_act_speed", ["--embedded", "--steps", "50", "--rounds", "1"]),
    pytest.param("tau2_act_speed", ["--fingerprint", "1"], id="tau2_act_speed-fingerprint"),
    ("tau2_speed", ["--domains", "mock", "--repeat", "1"]),
    ("tau2_state_revisits", ["--episodes", "1", "--steps", "1"]),
    ("tau2_step_split", ["--num-envs", "1", "--steps", "1", "--warmup", "1"]),
    ("torchrl_speed", ["--ids", "p4g-frozen", "--envs", "2", "--frames", "20", "--rounds", "1", "--out", "{tmp}/t.json"]),
    ("user_reward_ablation", ["--games", "p4g", "--seeds", "1", "--group-size", "2", "--out", "{tmp}"]),
]
# scripts whose tiny run is elsewhere, or that have none (and why)
ELSEWHERE = {"p4g_split_fit": "tests/test_benchmarks_p4g_split_fit.py",
             "realism_known_answers": "tests/test_benchmarks_realism_known_answers.py",
             "restamp": "tests/test_benchmarks_restamp.py", "row_speed": "tests/test_benchmarks_row_speed.py",
             "seed_batch_speed": "tests/test_benchmarks_seed_batch_speed.py"}
NO_TINY = {"gpu_wheels": "downloads wheels from PyPI",
           "llm_gpu": "the GPU check; its --dry-run takes minutes on a CPU",
           "seed_phases": "no reduced size: its rows at the default preset (tests/test_benchmarks_seed_phases.py "
                          "profiles a small run)"}


def run(script: str, *argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *argv], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_answers_help(script, tmp_path):
    done = run(script, "--help", cwd=tmp_path)
    assert done.returncode == 0 and "usage:" in done.stdout, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("script, argv", TINY)
def test_a_tiny_run_of_each_script_runs(script, argv, tmp_path):
    done = run(script, *(a.replace("{tmp}", str(tmp_path)) for a in argv), cwd=tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and (done.stdout.strip() or any(tmp_path.iterdir()))  # printed or wrote


def test_every_script_has_a_tiny_run_or_says_why_not():
    tiny = {t.values[0] if hasattr(t, "values") else t[0] for t in TINY}
    missing = [s for s in SCRIPTS if s not in tiny | set(ELSEWHERE) | set(NO_TINY)]
    assert not missing, f"add a tiny run of {missing} to TINY (or its reason to NO_TINY)"
    for script, test in ELSEWHERE.items():
        assert script in (ROOT / test).read_text(), (script, test)


def test_a_failing_child_ends_the_script_with_the_childs_error():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from baseline_tree import child_output
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    cmd = [sys.executable, "-c", "import sys; print('partial'); sys.exit('ImportError: cannot import name count')"]
    with pytest.raises(SystemExit) as e:
        child_output(cmd, {}, "the baseline's round")
    assert "the baseline's round failed with exit 1" in str(e.value) and "cannot import name count" in str(e.value)
    assert child_output([sys.executable, "-c", "print(42)"], {}, "a child").strip() == "42"



@pytest.mark.parametrize("script, argv, said", [
    ("collapse_design", ["--games", "p4g", "p4g", "--out", "{tmp}/cd"], "argument --games: each game once"),
    ("instrument_checks", ["--results", "{tmp}"], "argument --results: {tmp} holds no run records"),
    ("seeds_rule", ["--runs", "no-such-revision"], "argument --runs: 'no-such-revision' is not a revision"),
    ("seeds_rule", ["--runs", ""], "argument --runs: '' is not a revision"),  # read the git index
    ("trainer_speed", ["--env", "p4g-heldout"], "argument --env: p4g-heldout is the held-out population"),
])
def test_a_scripts_argument_mistake_is_one_line_and_exit_2(script, argv, said, tmp_path):
    """Each was a traceback (or exit 0 on the git index), some after leaving an output folder."""
    done = run(script, *(a.replace("{tmp}", str(tmp_path)) for a in argv), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert said.replace("{tmp}", str(tmp_path)) in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "cd").exists()
