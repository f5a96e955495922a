"""``benchmarks/arithmetic_floor.py``: every product of the networks' passes is recorded with its shapes, the names
are given back, and a row's products take less than the row."""

import numpy as np
from bench_fixtures import load_script

from scope_envs.train import act_ppo, numpy_ac


def network(obs: int, hidden: int, acts: int, rng) -> list[np.ndarray]:
    shapes = [(hidden, obs), (hidden,), (hidden, hidden), (hidden,), (acts, hidden), (acts,)]
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


def test_a_forward_and_a_backward_pass_record_their_eight_products():
    module = load_script("arithmetic_floor")
    rng = np.random.default_rng(0)
    rows, obs, hidden, acts = 5, 7, 6, 3
    layers = network(obs, hidden, acts, rng)
    x = rng.standard_normal((rows, obs), dtype=np.float32)
    grads = [np.empty_like(w) for w in layers]
    before = (numpy_ac.mlp, numpy_ac.mlp_backward, act_ppo.mlp)
    with module.Products() as products:
        h1, h2, out = numpy_ac.mlp(layers, x)
        numpy_ac.mlp_backward(layers, x, h1, h2, np.ones_like(out), grads)
    assert (numpy_ac.mlp, numpy_ac.mlp_backward, act_ppo.mlp) == before  # given back
    assert dict(products.calls) == {
        ((rows, obs), False, (obs, hidden), True): 1, ((rows, hidden), False, (hidden, hidden), True): 1,
        ((rows, hidden), False, (hidden, acts), True): 1,  # forward: x w1^T, h1 w2^T, h2 w3^T
        ((acts, rows), True, (rows, hidden), False): 1, ((rows, acts), False, (acts, hidden), False): 1,
        ((hidden, rows), True, (rows, hidden), False): 1, ((rows, hidden), False, (hidden, hidden), False): 1,
        ((hidden, rows), True, (rows, obs), False): 1}  # backward: each layer's weight gradient, two input gradients
    forward = rows * (obs * hidden + hidden * hidden + hidden * acts)
    backward = 2 * rows * acts * hidden + 2 * rows * hidden * hidden + rows * hidden * obs
    assert products.flops() == 2 * (forward + backward)
    assert products.seconds(rounds=1) > 0


def test_a_rows_products_take_part_of_its_time():
    module = load_script("arithmetic_floor")
    out = module.measure("p4g", "frozen", seeds=2, steps=200, episodes=8)
    assert out["calls"] > 0 and out["flops"] > 0
    assert 0 < out["products_s"] < out["wall_s"]


def test_the_default_run_is_measured_block_by_block_and_summed(monkeypatch):
    module = load_script("arithmetic_floor")
    from scope_envs.bench.methods import SEEDS_MIN

    asked = []

    def fake_child(level, game, method, seeds, steps, episodes, heldout, first):
        asked.append((game, method, seeds, first))
        return {"wall_s": 3.0, "products_s": 0.0 if method == "random" else 1.0}

    monkeypatch.setattr(module, "child", fake_child)
    out = module.default_run(jobs=2)
    blocks = {}
    for game, method, seeds, first in asked:
        blocks.setdefault((game, method), []).append((first, seeds))
    for (game, method), got in blocks.items():  # every seed the default run gives the game, in blocks of 8
        n = max(8, SEEDS_MIN[game])
        assert sorted(got) == [(f, min(8, n - f)) for f in range(0, n, 8)], (game, method)
    assert ("cooperbench", "oracle") in blocks and ("p4g", "grounded") in blocks and ("tau2", "grounded") not in blocks
    assert out["rows"][0]["run"].endswith(":oracle")  # the longest first
    assert out["worker_s"] == 3.0 * len(asked)
    assert out["products_worker_s"] == sum(method != "random" for _, method, _, _ in asked)
    assert out["floor_wall_s"] == out["products_worker_s"] / 2
