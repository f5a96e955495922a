"""behaviour_clone: a learnable user's start, the frozen simulator fitted in numpy (its gradient is torch autograd's)."""

import numpy as np
import torch

import scope_envs
from scope_envs.train.act_ppo import ActorCritic
from scope_envs.train.behaviour_clone import behaviour_clone, cross_entropy_grad, frozen_targets
from scope_envs.train.numpy_ac import MASKED_LOGIT, bind, views_like

torch.set_num_threads(1)


def own_input(seat, obs):
    """A seat's own observation as the network's input (no self-play encoding)."""
    return obs["observation"], obs["action_mask"].astype(bool)


def test_the_fits_gradient_and_loss_are_torch_autograds():
    torch.manual_seed(0)
    net = ActorCritic(9, 6)
    with torch.no_grad():
        for w in net.parameters():
            w.add_(torch.randn_like(w) * 0.3)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 9)).astype(np.float32)
    m = rng.random((40, 6)) < 0.6
    m[:, 2] = True
    p = rng.random((40, 6)).astype(np.float32) * m
    p /= p.sum(1, keepdims=True)
    # torch: behaviour_clone's loss as it was written in torch
    logp = torch.log_softmax(net.actor(torch.as_tensor(x)).masked_fill(~torch.as_tensor(m), MASKED_LOGIT), -1)
    loss = -(torch.as_tensor(p) * logp.clamp(min=-1e4)).sum(-1).mean()
    loss.backward()
    want = [w.grad.numpy().copy() for w in net.actor.parameters()]
    arrays = bind(net)[1]
    grad = np.zeros(sum(a.size for a in arrays[6:]), np.float32)
    grads = views_like(grad, arrays[6:])
    got = cross_entropy_grad(arrays[6:], x, m, p, grads)
    assert abs(got - loss.item()) < 1e-5
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-7)


def test_the_clone_learns_the_frozen_simulator_on_views_it_never_saw():
    env = scope_envs.make("p4g-cotrain")
    dim, acts = env.observation_space("user_0")["observation"].shape[0], env.action_space("user_0").n
    x, m, p = frozen_targets("p4g-cotrain", {}, 99, 60, own_input)  # other episodes than the clone's (seed 0)

    def cross_entropy(net) -> float:
        arrays = bind(net)[1]
        return cross_entropy_grad(arrays[6:], x, m, p, [np.zeros_like(a) for a in arrays[6:]])

    torch.manual_seed(0)
    net = ActorCritic(dim, acts)
    before = cross_entropy(net)
    behaviour_clone(net, "p4g-cotrain", {}, seed=0, episodes=120, steps=200, encode=own_input)
    after = cross_entropy(net)
    floor = float(-(p * np.log(np.where(p > 0, p, 1.0))).sum(-1).mean())  # the simulator's own entropy
    assert after < before - 0.5 * (before - floor), (before, after, floor)  # more than half the way to the floor


def test_the_clone_is_a_function_of_its_seed():
    env = scope_envs.make("p4g-cotrain")
    dim, acts = env.observation_space("user_0")["observation"].shape[0], env.action_space("user_0").n

    def clone(seed: int) -> bytes:
        torch.manual_seed(0)
        net = ActorCritic(dim, acts)
        behaviour_clone(net, "p4g-cotrain", {}, seed=seed, episodes=20, steps=30, encode=own_input)
        return b"".join(w.detach().numpy().tobytes() for w in net.actor.parameters())

    assert clone(3) == clone(3) != clone(4)
