"""``benchmarks/tau2_step_split.py``: it times the engine's parts without changing them, and puts them back."""

import pytest
from bench_fixtures import load_script

from scope_envs.games.tau2.batched import Tau2Batch
from scope_envs.vec.batched import BatchedVecEnv


def test_the_split_times_each_part_and_restores_the_engine():
    module = load_script("tau2_step_split")
    before = {(o, n): getattr(o, n) for o, n in module.PARTS}
    out = module.split(num_envs=8, steps=20, warmup=5)
    assert {(o, n): getattr(o, n) for o, n in module.PARTS} == before  # the engine is the engine again
    ms = out["ms_per_step"]
    assert set(ms) == {f"{o.__name__}.{n}" for o, n in module.PARTS}
    # the parts nest inside the step
    assert all(0 <= v <= ms["BatchedVecEnv.step"] for v in ms.values()) and out["steps_per_s"] > 0
    assert ms["Tau2Batch.candidates"] <= ms["BatchedVecEnv._observe"] + ms["BatchedVecEnv._apply"]
    assert BatchedVecEnv.step is before[BatchedVecEnv, "step"] and Tau2Batch.features is before[Tau2Batch, "features"]


def test_counts_are_bounded():
    module = load_script("tau2_step_split")
    with pytest.raises(SystemExit) as e:
        module.main(["--num-envs", "5000"])
    assert e.value.code == 2
