"""The ``benchmarks/`` scripts' command lines: a bad value is argparse's exit 2 naming the argument, never a
traceback, a division by zero or a NaN printed as a result. (The leaderboard's: tests/test_bench_entrants.py.)"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BAD = [
    ("env_speed", ["--env", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("env_speed", ["--env", "llm-toy"], "--env", "unknown environment id"),  # not a registered env
    ("env_speed", ["--steps", "0"], "--steps", "an integer from 1 to"),  # was a ZeroDivisionError
    ("env_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),  # was exit 0 with NaN
    ("env_speed", ["--steps", "3", "--rounds", "5"], "--steps", "at least one step per round"),
    ("trainer_speed", ["--env", "p4g-frozen", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("trainer_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),
    ("trainer_speed", ["--seeds", "0"], "--seeds", "an integer from 1 to"),
    ("vec_speed", ["--num-envs", "0"], "--num-envs", "an integer from 1 to"),
    ("vec_speed", ["--rounds", "1000"], "--rounds", "an integer from 1 to 100"),
    ("tau2_act_speed", ["--env", "nosuch"], "--env", "unknown environment id 'nosuch'"),
    ("tau2_act_speed", ["--fingerprint", "-1"], "--fingerprint", "an integer from 1 to"),
    ("tau2_calculate", ["--repeats", "0"], "--repeats", "an integer from 1 to"),
    ("tanh_speed", ["--check-step", "0"], "--check-step", "an integer from 1 to"),
    ("fused_speed", ["--rounds", "0"], "--rounds", "an integer from 1 to"),
    ("fused_speed", ["--seeds", "5000"], "--seeds", "an integer from 1 to"),
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
