"""``benchmarks/tau2_step_split.py``: it reads each part of the engine's step off a profiler, patching nothing."""

import pytest
from bench_fixtures import load_script

from scope_envs.games.tau2.batched import Tau2Batch
from scope_envs.vec.batched import BatchedVecEnv


def test_the_split_finds_each_part_and_changes_nothing():
    module = load_script("tau2_step_split")
    step, features = BatchedVecEnv.step, Tau2Batch.features
    out = module.split(num_envs=8, steps=20, warmup=5)
    assert BatchedVecEnv.step is step and Tau2Batch.features is features
    ms = out["ms_per_step"]
    assert set(ms) == {f"{cls}.{name}" for _, cls, name in module.PARTS}
    # every part ran, and the parts nest inside the step
    assert all(0 < v <= ms["BatchedVecEnv.step"] for v in ms.values()) and out["steps_per_s"] > 0
    assert ms["Tau2Batch.candidates"] <= ms["BatchedVecEnv._observe"] + ms["BatchedVecEnv._apply"]


def test_counts_are_bounded():
    module = load_script("tau2_step_split")
    with pytest.raises(SystemExit) as e:
        module.main(["--num-envs", "5000"])
    assert e.value.code == 2
