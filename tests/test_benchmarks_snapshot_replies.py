"""``benchmarks/snapshot_replies.py``: both ways of asking a pool's snapshots play the same row, and the
engine is left as it was."""

import pytest
from bench_fixtures import load_script

from scope_envs.train.act_ppo import PolicySnapshot
from scope_envs.vec.batched import BatchedVecEnv


def test_both_ways_give_the_same_row_and_the_snapshot_class_is_restored():
    module = load_script("snapshot_replies")
    out = module.measure("p4g", rounds=1, steps=3000, eval_episodes=40, heldout_episodes=40, curve_points=1,
                         curve_episodes=20)
    assert out["snapshot_replies"] > 100  # the snapshots played, as many replies either way
    assert out["same_metrics"] and len(out["batched_s"]) == len(out["slot_by_slot_s"]) == 1 and out["speedup"] > 0
    assert "act" not in PolicySnapshot.__dict__ and "_observed" in BatchedVecEnv.__dict__
    assert BatchedVecEnv._observed.__name__ == "_observed" and BatchedVecEnv._ask.__name__ == "_ask"


def test_counts_are_bounded():
    module = load_script("snapshot_replies")
    with pytest.raises(SystemExit) as e:
        module.main(["--rounds", "21"])
    assert e.value.code == 2
