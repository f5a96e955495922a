"""``benchmarks/exact_dealing.py``: both ways of dealing run, the engine's own choice is put back, and the
arguments are bounded."""

import pytest
from bench_fixtures import load_script

from scope_envs.vec.games import CooperBenchVecEnv


def test_both_ways_run_and_the_engine_is_restored():
    module = load_script("exact_dealing")
    drawn = CooperBenchVecEnv.draws_by_index
    out = module.measure("cooperbench-rotation", num_envs=16, rounds=2, steps=20, warmup=5)
    assert set(out["steps_per_s"]) == {"drawn", "slot_by_slot"} and min(out["steps_per_s"].values()) > 0
    assert min(out["us_per_episode_dealt"].values()) > 0  # (episodes were dealt both ways)
    assert out["speedup"] > 0 and CooperBenchVecEnv.draws_by_index is drawn


@pytest.mark.parametrize("argv", [["--rounds", "21"], ["--num-envs", "0"], ["--num-envs", "4097"],
                                  ["--env", "nosuch"]])
def test_arguments_are_checked(argv, capsys):
    module = load_script("exact_dealing")
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2 and "argument --" in capsys.readouterr().err
