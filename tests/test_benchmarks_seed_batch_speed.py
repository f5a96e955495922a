"""benchmarks/seed_batch_speed.py: at its smallest size it runs, its checks hold (every variant equals the
per-seed trainer to float32 tolerance, numpy's stacked update bit for bit, alone or among eight seeds), the JSON
has every variant at every S; its check rejects a variant whose loss is off; its arguments are bounded."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "seed_batch_speed.py"


def _script():
    spec = importlib.util.spec_from_file_location("seed_batch_speed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*argv, cwd):
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_smallest_run_checks_every_variant_and_writes_each_one(tmp_path):
    out = tmp_path / "speed.json"
    done = run("--games", "p4g", "--seeds", "1", "2", "--rounds", "1", "--forward-reps", "1", "--out", str(out),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    script = _script()
    game = result["games"]["p4g"]
    assert set(game["by_seeds"]) == {"1", "2"}
    for row in game["by_seeds"].values():
        assert set(row) == set(script.VARIANTS)
        assert all(row[v]["update_epoch_ms"] > 0 and row[v]["forward_ms"] > 0 for v in script.VARIANTS)
        assert row["loop"]["update_ratio_to_loop"] == 1.0
    assert set(game["checks"]) == set(script.VARIANTS)
    for name, c in game["checks"].items():
        assert max(c["max_diff_vs_per_seed"].values()) <= script.GRAD_TOL, (name, c)
        assert c["alone_vs_among"] == {**c["alone_vs_among"], "seed": 3, "among": 8}
        assert c["alone_vs_among"]["bit_equal"] or c["alone_vs_among"]["max_diff"] <= script.GRAD_TOL
    # numpy's stacked update is the trainer's arithmetic, seed by seed: bit for bit, whatever seeds sit beside
    assert game["checks"]["numpy_stacked"]["bit_equal_to_per_seed"]
    assert game["checks"]["numpy_stacked"]["alone_vs_among"]["bit_equal"]
    sizes = game["sizes"]
    assert sizes["hidden"] == 64 and sizes["minibatch"] >= sizes["min_minibatch"] == 128
    assert sizes["rows_per_seed"] == min(sizes["rows_per_seed_before_cut"])
    assert "| p4g | 2 |" in done.stdout


def test_the_check_rejects_a_variant_whose_loss_is_off(monkeypatch):
    script = _script()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        trainers, batches, _ = script.seed_trainers("p4g", 2)
        start = script.Start(trainers)
        script.check(trainers, batches, start, [0, 1], 1)  # as found: passes
        entropy = script.entropy
        monkeypatch.setattr(script, "entropy", lambda logp, p: np.float32(1.01) * entropy(logp, p))  # numpy_stacked's
        with pytest.raises(AssertionError, match="numpy_stacked"):
            script.check(trainers, batches, start, [0, 1], 1)


@pytest.mark.parametrize("argv, argument", [(["--seeds", "65"], "--seeds"), (["--rounds", "0"], "--rounds"),
                                            (["--among", "1"], "--among"), (["--games", "nosuch"], "--games"),
                                            (["--among", "4", "--probe-seed", "4"], "--probe-seed")])
def test_a_bad_argument_exits_2_naming_it(argv, argument, tmp_path):
    done = run(*argv, cwd=tmp_path)
    assert done.returncode == 2 and f"argument {argument}" in done.stderr and "Traceback" not in done.stderr, \
        done.stderr[-2000:]
