"""``benchmarks/tau2_fast_dealing.py``: both ways of dealing run, the engine's own dealing is put back, and the
arguments are bounded."""

import pytest
from bench_fixtures import load_script

from scope_envs.vec.games import Tau2VecEnv


def test_both_ways_run_and_the_engine_is_restored():
    module = load_script("tau2_fast_dealing")
    at_once = Tau2VecEnv.deal_many
    out = module.measure("tau2-heldout", num_envs=16, rounds=2, steps=20, warmup=5)
    assert set(out["steps_per_s"]) == {"at_once", "slot_by_slot"} and min(out["steps_per_s"].values()) > 0
    assert out["speedup"] > 0 and Tau2VecEnv.deal_many is at_once


@pytest.mark.parametrize("argv", [["--rounds", "21"], ["--num-envs", "0"], ["--env", "p4g-frozen"],
                                  ["--env", "nosuch"]])
def test_arguments_are_checked(argv, capsys):
    module = load_script("tau2_fast_dealing")
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2 and "argument --" in capsys.readouterr().err
