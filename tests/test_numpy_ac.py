"""numpy_ac: the act PPO's forward pass, backward pass and Adam in numpy, against torch's."""

import numpy as np
import torch

from scope_envs.train.act_ppo import ActorCritic
from scope_envs.train.numpy_ac import Adam, bind, log_policy, log_policy_rows, mlp, mlp_backward, views_like

torch.set_num_threads(1)


def test_bind_shares_the_parameters_both_ways():
    torch.manual_seed(0)
    net = ActorCritic(5, 4)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    flat, arrays = bind(net)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())  # values kept
    flat += 1.0  # numpy writes, torch reads
    assert torch.equal(net.critic[0].bias, before["critic.0.bias"] + 1.0)
    net.load_state_dict(before)  # torch writes, numpy reads
    np.testing.assert_array_equal(arrays[0], before["critic.0.weight"].numpy())


def test_log_policy_rows_gives_each_row_its_one_row_pass_bit_for_bit():
    """A snapshot's answer in a slot must not depend on the slots beside it: each row of ``log_policy_rows`` is
    ``log_policy`` of that row alone, exactly (a plain product over the rows can differ in the last bits)."""
    torch.manual_seed(2)
    net = ActorCritic(60, 14)
    with torch.no_grad():
        for w in net.parameters():
            w.add_(torch.randn_like(w) * 0.5)
    actor = bind(net)[1][6:]
    rng = np.random.default_rng(3)
    for rows in (1, 5, 64, 200):
        x = rng.random((rows, 60)).astype(np.float32)
        m = rng.random((rows, 14)) < 0.6
        m[:, 0] = True
        alone = np.concatenate([log_policy(actor, x[i: i + 1], m[i: i + 1]) for i in range(rows)])
        assert np.array_equal(log_policy_rows(actor, x, m), alone)


def test_forward_and_backward_equal_autograd():
    torch.manual_seed(1)
    net = ActorCritic(7, 5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(33, 7)).astype(np.float32)
    m = rng.random((33, 5)) < 0.6
    m[:, 2] = True
    _, arrays = bind(net)
    actor = arrays[6:]
    logp = net.dist(torch.as_tensor(x), torch.as_tensor(m)).logits
    np.testing.assert_allclose(log_policy(actor, x, m), logp.detach().numpy(), rtol=1e-5, atol=1e-5)
    d_out = rng.normal(size=(33, 5)).astype(np.float32)
    (net.actor(torch.as_tensor(x)) * torch.as_tensor(d_out)).sum().backward()
    h1, h2, _ = mlp(actor, x)
    flat = np.zeros(sum(a.size for a in actor), np.float32)
    grads = views_like(flat, actor)
    mlp_backward(actor, x, h1, h2, d_out, grads)
    for g, p in zip(grads, net.actor.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_adam_equals_torch_adam():
    rng = np.random.default_rng(2)
    start = rng.normal(size=300).astype(np.float32)
    mine = start.copy()
    theirs = torch.nn.Parameter(torch.as_tensor(start.copy()))
    opt, ref = Adam(mine, lr=3e-3, eps=1e-5), torch.optim.Adam([theirs], lr=3e-3, eps=1e-5)
    for t in range(200):
        g = rng.normal(size=300).astype(np.float32) * (1 + t % 7)
        opt.lr = ref.param_groups[0]["lr"] = 3e-3 * (1 - t / 200)  # annealed, as the trainer does
        opt.step(g)
        theirs.grad = torch.as_tensor(g)
        ref.step()
    assert np.abs(mine - start).max() > 0.05
    np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=0, atol=1e-5)
