"""Every script under ``benchmarks/`` runs: its ``--help``, and where it has a reduced size, a tiny run of it, exit 0
and no traceback; a child process that fails ends the script with the child's own error (``baseline_tree``'s
``child_output``), and ``vec_speed.py``'s baseline process imports nothing this tree alone has (its run with the
baseline trainer, marked slow). (Bad arguments: tests/test_benchmarks_args.py.)"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
]


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
    assert "Traceback" not in done.stderr and done.stdout.strip()


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

