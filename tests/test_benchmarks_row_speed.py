"""``benchmarks/row_speed.py``: a row timed on this tree and on a past revision, with its records compared."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_fixtures import load_script

from scope_envs.bench.presets import ceiling_steps, preset_steps

ROOT = Path(__file__).resolve().parents[1]


def test_a_row_trains_the_budget_the_benchmark_gives_it():
    row_steps = load_script("row_speed").row_steps
    assert row_steps("p4g", "frozen", 300) == (300, 300)
    assert row_steps("p4g", "oracle", 300) == (300, ceiling_steps("p4g", 300)) and ceiling_steps("p4g", 300) > 300
    default = preset_steps("tau2", "default")
    assert row_steps("tau2", "vs", None) == (default, default)
    assert row_steps("tau2", "oracle", None) == (default, ceiling_steps("tau2", default))


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="exports HEAD: needs this checkout's git history")
def test_a_row_at_head_and_on_this_tree_writes_the_same_records(tmp_path):
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "row_speed.py"), "--runs", "p4g:frozen",
                           "--seeds", "2", "--steps", "200", "--episodes", "8", "--rounds", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    [row] = result["rows"]
    assert row["run"] == "p4g:frozen" and row["seeds"] == 2 and row["decisions_per_seed"] == 200
    assert row["baseline_s"] > 0 and row["tree_s"] > 0
    assert row["speedup"] == pytest.approx(row["baseline_s"] / row["tree_s"])
    # a speed change to the engine leaves every number as it was (a change that moves one fails here)
    assert row["same_records"] is True
