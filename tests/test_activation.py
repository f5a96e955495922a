"""``scope_envs.train.activation``: the networks' tanh is tanh to a few float32 ulps, bounded and odd, the same bits
in numpy and torch, with tanh's derivative; the act networks and the served snapshots use it."""

import numpy as np
import torch

from scope_envs.serve.snapshot import ACTIVATIONS, mlp_wire
from scope_envs.train.act_ppo import ActorCritic, Tanh
from scope_envs.train.activation import LIMIT, tanh
from scope_envs.train.numpy_ac import bind, mlp


def every_kth_float32(k: int, top: float = 9.5) -> np.ndarray:
    return np.arange(0, int(np.array(top, np.float32).view(np.uint32)), k, dtype=np.uint32).view(np.float32)


def test_tanh_is_within_a_few_ulps_of_float64_tanh_and_bounded_and_odd():
    x = every_kth_float32(997)  # a million inputs spread over every binade below 9.5
    y = tanh(x)
    ref = np.tanh(x.astype(np.float64))
    ulps = np.abs(y - ref) / np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64).clip(1e-45)
    assert ulps.max() <= 7  # 5.8 over every float32 (benchmarks/tanh_speed.py --check)
    assert (np.abs(y) <= 1).all() and (tanh(-x) == -y).all()
    assert y.dtype == np.float32
    big = np.array([LIMIT, 40.0, 1e30, np.inf], np.float32)
    assert (tanh(big) >= np.float32(1) - np.spacing(np.float32(1))).all() and (tanh(-big) == -tanh(big)).all()
    assert tanh(np.float32(40.0)) == 1.0 and np.isnan(tanh(np.array([np.nan], np.float32))).all()
    assert tanh(np.float32(0.0)) == 0.0 and np.signbit(tanh(np.float32(-0.0)))


def test_numpy_and_torch_give_the_same_bits_and_torch_differentiates_as_tanh():
    z = (np.random.default_rng(0).standard_normal(200_000) * 4).astype(np.float32)
    z[:4] = [np.inf, -np.inf, 1e-40, -12.0]
    t = torch.from_numpy(z.copy()).requires_grad_()
    y = Tanh()(t)
    assert (y.detach().numpy().view(np.uint32) == tanh(z).view(np.uint32)).all()
    y.sum().backward()
    assert torch.equal(t.grad, 1.0 - y.detach() * y.detach())


def test_the_networks_and_the_served_snapshots_use_it():
    torch.manual_seed(0)
    net = ActorCritic(obs_dim=5, n_actions=3)
    assert sum(isinstance(m, Tanh) for m in net.modules()) == 4 and not any(
        isinstance(m, torch.nn.Tanh) for m in net.modules())
    _, arrays = bind(net)
    x = np.random.default_rng(1).standard_normal((7, 5)).astype(np.float32)
    h1, h2, logits = mlp(arrays[6:], x)
    np.testing.assert_allclose(logits, net.actor(torch.from_numpy(x)).detach().numpy(), rtol=0, atol=1e-6)
    assert (h1 == tanh(x @ arrays[6].T + arrays[7])).all()
    assert mlp_wire(net.actor)["activation"] == "tanh" and ACTIVATIONS["tanh"] is tanh


def test_torch_func_transforms_go_through_it():
    x = torch.randn(3, 5)
    assert torch.equal(torch.func.vmap(Tanh())(x), Tanh()(x))
    assert torch.allclose(torch.func.grad(lambda v: Tanh()(v).sum())(x), 1 - Tanh()(x) ** 2)
