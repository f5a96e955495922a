"""benchmarks/plateau_budget.py: a search packs its runs, and ``--resume`` keeps them (runs nothing again)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--games", "p4g", "--rows", "uncollapsed", "--seeds", "1", "--eval-episodes", "8", "--base", "200",
        "--max-rung", "0", "--jobs", "1"]


def search(out: Path, *extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plateau_budget.py"), *TINY, "--out", str(out),
                           *extra], capture_output=True, text=True, timeout=600, cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_resumed_search_keeps_its_packed_runs(tmp_path):
    out = tmp_path / "pb"
    search(out)
    packed = (out / "runs.jsonl.gz").read_bytes()
    first = json.loads((out / "plateau_budget.json").read_text())
    assert not (out / "runs").exists() and first["answers"][0]["per_seed"]  # every run in the packed file
    again = search(out, "--resume")
    assert (out / "runs.jsonl.gz").read_bytes() == packed
    second = json.loads((out / "plateau_budget.json").read_text())
    assert second["answers"] == first["answers"] and second["settings"]["resumed"] is True
    last = [frame for frame in again.stderr.split("\r") if "plateau runs" in frame][-1]
    assert "plateau runs: 0run" in last  # tqdm's last frame: no run started again (a first search ends at 4/4)
