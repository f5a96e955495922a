"""``benchmarks/gc_share.py``: the collections of the timed steps are counted and timed, no callback is left behind,
and the arguments are bounded."""

import gc

import pytest
from bench_fixtures import load_script


def test_the_timed_steps_collections_are_counted_and_the_callback_removed():
    module = load_script("gc_share")
    callbacks, threshold = list(gc.callbacks), gc.get_threshold()
    gc.set_threshold(10)  # (a young collection every 10 allocations: some surely fall in the timed steps)
    try:
        out = module.measure("p4g-frozen", num_envs=16, steps=50, warmup=5)
    finally:
        gc.set_threshold(*threshold)
    assert out["steps_per_s"] > 0 and 0 < out["gc_share"] < 1
    assert out["collections"]["0"]["count"] > 0 and out["tracked_objects"] > 0
    assert gc.callbacks == callbacks


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--num-envs", "0"], ["--env", "nosuch"]])
def test_arguments_are_checked(argv, capsys):
    module = load_script("gc_share")
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2 and "argument --" in capsys.readouterr().err
