"""The policy protocol (scope_envs.train.policy): the uniform player, the trainer's networks and a saved
policy all satisfy it, and the collector plays any object that does."""

import doctest

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

import scope_envs
from scope_envs.train import policy as policy_module
from scope_envs.train.act_ppo import NetworkPolicy, PPOConfig, PPOTrainer, load_policy
from scope_envs.train.policy import Decisions, Policy, UniformPolicy
from scope_envs.train.rollout import collect

torch.set_num_threads(1)


def test_the_module_example_runs():
    assert doctest.testmod(policy_module).failed == 0


def test_uniform_is_uniform_over_the_legal_acts_and_reproducible():
    mask = np.zeros((6000, 5), bool)
    mask[:, [0, 2, 3]] = True
    d = UniformPolicy(seed=1).act(np.zeros((6000, 2), np.float32), mask)
    assert set(np.unique(d.actions)) == {0, 2, 3}
    assert chisquare(np.bincount(d.actions, minlength=5)[[0, 2, 3]]).pvalue > 1e-3
    np.testing.assert_allclose(d.logp, -np.log(3)) and np.testing.assert_allclose(d.entropy, np.log(3))
    again = UniformPolicy(seed=1).act(np.zeros((6000, 2), np.float32), mask)
    assert np.array_equal(d.actions, again.actions)
    assert not np.array_equal(d.actions, UniformPolicy(seed=2).act(np.zeros((6000, 2)), mask).actions)
    with pytest.raises(ValueError, match="at least one legal act"):
        UniformPolicy(seed=0).act(np.zeros((1, 2)), np.zeros((1, 5), bool))


def test_the_trainers_networks_are_policies_with_torchs_distribution():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=0, seed=0, user_init="random"))
    assert all(isinstance(p, Policy) and isinstance(p, NetworkPolicy) for p in trainer.policies.values())
    env = trainer.envs[0]
    obs, _ = env.reset(seed=2)
    x, m = obs["agent_0"]["observation"][None], obs["agent_0"]["action_mask"][None].astype(bool)
    d = trainer.policies["agent_0"].act(x, m)
    dist = trainer.learners["agent_0"].dist(torch.as_tensor(x), torch.as_tensor(m))
    assert m[0, d.actions[0]]
    np.testing.assert_allclose(d.logp, dist.log_prob(torch.as_tensor(d.actions)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.entropy, dist.entropy().detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.values, trainer.learners["agent_0"].value(torch.as_tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    greedy = trainer.policies["agent_0"].act(x, m, greedy=True)
    assert greedy.actions[0] == int(dist.probs.argmax())


def test_selfplays_one_network_plays_both_seats_and_is_told_the_role():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", selfplay=True, total_steps=0, seed=0, user_init="random"))
    shared = trainer.policies["agent_0"]
    assert trainer.policies["user_0"] is shared
    x = np.ones((2, 3), np.float32)
    xx, mm = shared.encode("user_0", x, np.ones((2, 2), np.int8))
    assert xx.shape == (2, trainer.in_dim) and (xx[:, :2] == [0, 1]).all() and mm.shape == (2, trainer.out_dim)
    assert mm[:, :2].all() and not mm[:, 2:].any()


def test_a_saved_policy_plays_as_the_trained_one(tmp_path):
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=300, seed=3))
    trainer.train()
    trainer.save(tmp_path / "run")
    saved = load_policy(tmp_path / "run", "agent_0")
    assert isinstance(saved, Policy)
    vec = scope_envs.make_vec("p4g-heldout", num_envs=8)
    ours = collect(vec, {"agent_0": trainer.policies["agent_0"]}, 16, seed=4, greedy=True)
    theirs = collect(vec, {"agent_0": saved}, 16, seed=4, greedy=True)
    assert [e["return"] for e in ours.episodes] == [e["return"] for e in theirs.episodes]
    with pytest.raises(ValueError, match="no seat"):
        load_policy(tmp_path / "run", "user_0")
    obs, _ = scope_envs.make("p4g-frozen").reset(seed=0)
    x, m = obs["agent_0"]["observation"], obs["agent_0"]["action_mask"]
    assert saved.act(x[None], m[None]).actions.shape == (1,)
    for bad_x, bad_m in ((x, m), (x[None, :10], m[None]), (x[None], m[None, :5])):  # an IndexError, numpy's matmul
        with pytest.raises(ValueError, match=rf"act takes a batch: obs an \(n, {x.size}\) array and mask \(n, {m.size}\)"):
            saved.act(bad_x, bad_m)
    with pytest.raises(ValueError, match="every row of the mask needs at least one legal act"):  # was act 0
        saved.act(x[None], np.zeros_like(m)[None])
    for bad in (np.nan, np.inf, 1e300):  # every score NaN: act 0, a masked one, with logp NaN; 1e300 is inf in float32
        rows = np.stack([x, x]).astype(np.float64)
        rows[1, 3] = bad
        with pytest.raises(ValueError, match="obs row 1 holds a NaN or an infinity"):
            saved.act(rows, np.stack([m, m]))


def test_the_uniform_policy_takes_a_batch_and_says_so():
    """One observation's 1-d mask was numpy's AxisError; the trained policy's message says what to pass."""
    with pytest.raises(ValueError, match=r"act takes a batch: mask an \(n, n_acts\) array, got shape \(3,\)"):
        UniformPolicy(seed=0).act(np.zeros(4, np.float32), np.ones(3, bool))
    assert UniformPolicy(seed=0).act(np.zeros((1, 4), np.float32), np.ones((1, 3), bool)).actions.shape == (1,)


def test_any_object_with_act_is_a_policy():
    class AlwaysFirstLegal:  # a user's function, as the protocol takes it
        def act(self, obs, mask, greedy=False):
            return Decisions(np.argmax(mask, 1))

    vec = scope_envs.make_vec("p4g-frozen", num_envs=4)
    episodes, steps = collect(vec, {"agent_0": AlwaysFirstLegal()}, 8, seed=0)
    assert len(episodes) == 8 and steps > 0
    for ep in episodes:
        for d in ep["traj"]["agent_0"]:
            assert d["a"] == int(np.argmax(d["m"])) and np.isnan(d["logp"]) and np.isnan(d["ent"])
