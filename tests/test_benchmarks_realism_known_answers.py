"""``benchmarks/realism_known_answers.py``: a small run writes both answers, as JSON and Markdown."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def script():
    path = ROOT / "benchmarks" / "realism_known_answers.py"
    spec = importlib.util.spec_from_file_location("realism_known_answers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_small_run_writes_both_answers(tmp_path):
    out = tmp_path / "realism"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "realism_known_answers.py"), "--seeds", "2",
                           "--steps", "600", "--episodes", "60", "--jobs", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((out / "known_answers.json").read_text())
    assert isinstance(result["R1"]["held"], bool) and isinstance(result["R2"]["held"], bool)
    assert [r["seed"] for r in result["R2"]["per_seed"]] == [0, 1]
    for r in result["R2"]["per_seed"]:
        assert 0 < r["start"] < 1 and 0 < r["cotrain-realism"] < 1 and 0 < r["cotrain"] < 1
    # the collapsed copy is sharper than the grounded simulator it was made from
    assert result["R1"]["collapsed_copy"]["sharpening"] > result["R1"]["grounded"]["sharpening"]
    md = (out / "known_answers.md").read_text()
    assert "**R1**" in md and "**R2**" in md and "--seeds 2" in md


def test_r2_holds_only_when_both_intervals_lie_below_zero():
    nearer = [{"start": 0.30, "cotrain-realism": 0.20 + 0.01 * i, "cotrain": 0.29} for i in range(4)]
    assert script().r2_verdict(nearer)["held"]
    no_better_than_cotrain = [{"start": 0.30, "cotrain-realism": 0.20, "cotrain": 0.20 + 0.01 * (i - 2)}
                              for i in range(4)]
    assert not script().r2_verdict(no_better_than_cotrain)["held"]
    assert script().r2_verdict(nearer)["cotrain-realism"] == pytest.approx(0.215)
