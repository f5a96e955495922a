"""``benchmarks/gc_share.py``: the collections of the timed steps are counted and timed, no callback is left behind,
and the arguments are bounded."""

import gc

import pytest
from bench_fixtures import load_script


def test_the_timed_steps_collections_are_counted_and_the_callback_removed():
    module = load_script("gc_share")
    callbacks = list(gc.callbacks)
    out = module.measure("tau2-frozen", num_envs=32, steps=300, warmup=5)
    assert out["steps_per_s"] > 0 and 0 < out["gc_share"] < 1  # tau2 makes young collections in 300 steps
    assert out["collections"]["0"]["count"] > 0 and out["tracked_objects"] > 0
    assert gc.callbacks == callbacks


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--num-envs", "0"], ["--env", "nosuch"]])
def test_arguments_are_checked(argv, capsys):
    module = load_script("gc_share")
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2 and "argument --" in capsys.readouterr().err
