"""SCOPE's training on the act-level trainer: episode groups on one scenario, GRPO's group-relative
advantage, the curriculum user reward, the checkpoint pool of user snapshots, the collapse diagnostics."""

import numpy as np
import pytest
import torch

from scope_envs.core.rewards import curriculum_reward
from scope_envs.train.act_ppo import (
    AGENT,
    PolicySnapshot,
    PPOConfig,
    PPOTrainer,
    find_pool,
)
from scope_envs.train.groups import by_group, group_advantages
from scope_envs.train.rollout import rollout_diagnostics

torch.set_num_threads(1)

QUICK = {"bc_episodes": 30, "bc_steps": 20}


def trainer_for(env_id, **kw):
    return PPOTrainer(PPOConfig(env_id=env_id, seed=0, **{"total_steps": 0, **QUICK, **kw}))


def by_group(episodes):
    groups = {}
    for ep in episodes:
        groups.setdefault(ep["group"], []).append(ep)
    return groups


@pytest.mark.parametrize("env_id", ["p4g-cotrain", "tau2-cotrain"])
def test_a_group_shares_its_persona_and_task(env_id):
    trainer = trainer_for(env_id, user_init="random", group_size=8, num_envs=6)  # 6 envs: groups span envs
    episodes, _ = trainer.play(trainer.envs, 32, seed=5, group_size=8, scenario_seed=11)
    groups = by_group(episodes)
    assert sorted(groups) == [0, 1, 2, 3] and all(len(eps) == 8 for eps in groups.values())
    cards = [{ep["persona"] for ep in eps} for eps in groups.values()]
    assert all(len(c) == 1 for c in cards), cards
    assert len(set.union(*cards)) > 1  # different groups, different scenarios
    assert any(len({tuple(ep["user_acts"]) for ep in eps}) > 1 for eps in groups.values())  # own dialogues
    again, _ = trainer.play(trainer.envs, 32, seed=6, group_size=8, scenario_seed=11)  # the scenarios replay
    assert [{ep["persona"] for ep in eps} for _, eps in sorted(by_group(again).items())] == \
        [cards_g for _, cards_g in sorted(zip(groups, cards))]
    with pytest.raises(ValueError, match="multiple of group_size"):
        trainer.play(trainer.envs, 12, seed=5, group_size=8)


def test_grpo_advantage_is_return_minus_the_group_mean():
    returns, groups = [1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0, 0.5], [0, 0, 0, 0, 1, 1, 1, 1, 2]
    np.testing.assert_allclose(group_advantages(returns, groups), [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, 0])
    std = np.std([1.0, 0.0, 0.0, 1.0], ddof=1)
    np.testing.assert_allclose(group_advantages(returns, groups, std_norm=True),
                               [0.5 / (std + 1e-6), -0.5 / (std + 1e-6), -0.5 / (std + 1e-6), 0.5 / (std + 1e-6),
                                0, 0, 0, 0, 0])


def hand_made_episode(trainer, group, agent_rewards, user_rewards):
    def decisions(agent, rewards):
        return [{"x": np.zeros(trainer.dims[agent], np.float32), "m": np.ones(trainer.n_acts[agent], bool), "a": 0,
                 "logp": 0.0, "v": 0.3, "ent": 1.0, "r": r, "user": agent != AGENT} for r in rewards]
    traj = {AGENT: decisions(AGENT, agent_rewards)}
    if user_rewards is not None:
        traj["user_0"] = decisions("user_0", user_rewards)
    return {"traj": traj, "return": sum(agent_rewards), "group": group, "agent_score": 0.5, "user_acts": []}


@pytest.mark.parametrize("std_norm", [False, True])
def test_grpo_gives_every_decision_its_episodes_group_relative_return(std_norm):
    trainer = trainer_for("p4g-cotrain", user_init="random", group_size=2, advantage="grpo", grpo_std_norm=std_norm)
    episodes = [hand_made_episode(trainer, 0, [0.0, 0.0, 1.0], [0.0, -1.0]),
                hand_made_episode(trainer, 0, [0.0, 0.0], [0.0, 1.0]),
                hand_made_episode(trainer, 1, [0.0, 2.0], None),  # a snapshot played the user
                hand_made_episode(trainer, 1, [0.0, 0.0, 0.0, 0.0], [3.0])]
    b = trainer.batches(episodes)
    s0 = np.sqrt(0.5) + 1e-6 if std_norm else 1.0  # the sample std of agent returns 1 and 0
    s1 = np.sqrt(2.0) + 1e-6 if std_norm else 1.0  # of 2 and 0
    agent = [0.5 / s0] * 3 + [-0.5 / s0] * 2 + [1.0 / s1] * 2 + [-1.0 / s1] * 4
    np.testing.assert_allclose(b[AGENT]["adv"], agent, rtol=1e-6)
    s2 = np.sqrt(2.0) + 1e-6 if std_norm else 1.0  # user returns -1 and 1
    np.testing.assert_allclose(b["user_0"]["adv"], [-1.0 / s2] * 2 + [1.0 / s2] * 2 + [0.0], rtol=1e-6)
    np.testing.assert_allclose(b[AGENT]["ret"], [1, 1, 1, 0, 0, 2, 2, 0, 0, 0, 0])  # value target
    assert b[AGENT]["adv"].dtype == np.float32


def test_the_curriculum_reward_of_a_group_goes_to_its_user_decisions():
    kw = {"user_reward": "curriculum", "target_var": 0.1, "width": 0.05}
    trainer = trainer_for("p4g-cotrain", env_kwargs=kw, user_init="random", group_size=4, episodes_per_iter=16)
    assert trainer.curriculum
    episodes, _ = trainer.play(trainer.envs, 16, seed=1, group_size=4)
    assert all(d["r"] == 0.0 for ep in episodes for d in ep["traj"]["user_0"])  # the env pays 0
    agent_returns = [ep["return"] for ep in episodes]
    values = trainer.assign_curriculum(episodes)
    groups = by_group(episodes)
    assert len(values) == len(groups) == 4
    for g, eps in groups.items():
        scores = [ep["agent_score"] for ep in eps]
        assert all(0.0 <= sc <= 1.0 for sc in scores)
        expected = float(np.exp(-(np.var(scores) - 0.1) ** 2 / 0.05))
        assert values[g] == pytest.approx(expected) == curriculum_reward(scores, 0.1, 0.05)
        for ep in eps:
            user = ep["traj"]["user_0"]
            assert user[-1]["r"] == values[g] and all(d["r"] == 0.0 for d in user[:-1])
    assert [sum(d["r"] for d in ep["traj"][AGENT]) for ep in episodes] == agent_returns  # the agent's untouched
    row = PPOTrainer(PPOConfig(env_id="p4g-cotrain", env_kwargs=kw, seed=0, total_steps=200, group_size=4,
                               episodes_per_iter=16, **QUICK)).train()[0]
    assert 0.0 <= row["curriculum_reward"] <= 1.0


def live_user_view(trainer):
    """The live user's observation and the env's view of the user role at its first turn (the episode is
    then played out: snapshots join the pool between episodes)."""
    env = trainer.envs[0]
    obs, infos = env.reset(seed=3)
    first = None
    while env.agents:
        if first is None and infos.get("user_0", {}).get("active"):
            first = obs["user_0"], env.unwrapped.view(env.unwrapped.game.user_role, observation=True)
        obs, _, _, _, infos = env.step({a: int(np.flatnonzero(obs[a]["action_mask"])[0]) for a in env.agents})
    return first


@pytest.mark.parametrize("selfplay", [False, True])
def test_a_snapshot_keeps_the_networks_distribution_at_snapshot_time(selfplay):
    trainer = trainer_for("p4g-population", env_kwargs={"pool_size": 3}, selfplay=selfplay)
    obs, view = live_user_view(trainer)
    np.testing.assert_array_equal(view.observation, obs["observation"])
    net = trainer.learners[trainer.seat["user_0"]]
    x, m = (torch.as_tensor(v)[None] for v in trainer.encode("user_0", obs))

    def live():
        with torch.no_grad():
            return net.dist(x, m).probs[0, : len(view.legal)].double().numpy()

    snapshot = trainer.snapshot_user()
    assert isinstance(snapshot, PolicySnapshot) and snapshot.wants_observation
    assert all(find_pool(e).entries[0] is snapshot for e in trainer.envs)  # every env's pool
    at_snapshot = live()
    p = snapshot.distribution(view)
    np.testing.assert_allclose(p, at_snapshot, atol=1e-6)
    assert p.sum() == pytest.approx(1.0) and np.all(p[~view.legal] == 0)
    with torch.no_grad():
        for w in net.parameters():
            w.add_(torch.randn_like(w) * 0.5)
    assert not np.allclose(live(), at_snapshot, atol=1e-3)
    np.testing.assert_allclose(snapshot.distribution(view), at_snapshot, atol=1e-6)


def test_the_pool_gets_a_snapshot_every_snapshot_every_updates():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-population", env_kwargs={"pool_size": 3, "snapshot_every": 2},
                                   seed=0, total_steps=2200, episodes_per_iter=32, num_envs=8, group_size=8,
                                   advantage="grpo", **QUICK))
    assert set(trainer.learners) == {AGENT, "user_0"} and len(trainer.pools) == 8  # only the live user learns
    sizes = []
    trainer.train(lambda row: sizes.append([len(p.entries) for p in trainer.pools]))
    assert len(sizes) >= 6
    for updates, per_env in enumerate(sizes, start=1):
        assert per_env == [min(1 + updates // 2, 3)] * 8  # the live user plus the snapshots, at most pool_size
    assert all(p.entries == trainer.pools[0].entries for p in trainer.pools)
    assert all(isinstance(s, PolicySnapshot) for s in trainer.pools[0].snapshots)
    episodes, _ = trainer.play(trainer.envs, 96, seed=9, group_size=8)
    by_snapshot = [ep for ep in episodes if "user_0" not in ep["traj"]]
    assert by_snapshot and all(ep["user_acts"] for ep in by_snapshot)  # a snapshot played; no user decisions
    assert len(by_snapshot) < len(episodes)
    for group in by_group(episodes).values():  # a group's scenario picks its user: one for all its episodes
        assert len({"user_0" in ep["traj"] for ep in group}) == 1


def test_grpo_learns_on_a_fixed_seed():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=8000, seed=0, group_size=8, advantage="grpo"))
    history = trainer.train()
    first, last = np.mean([r["return"] for r in history[:2]]), np.mean([r["return"] for r in history[-2:]])
    assert last > first + 0.2, (first, last)
    assert history[-1]["policy_entropy"] < history[0]["policy_entropy"]
    for row in history:
        for key in ("zero_std_group_frac", "all_fail_group_frac", "all_success_group_frac"):
            assert 0.0 <= row[key] <= 1.0, (key, row[key])
        assert np.isfinite(row["sim_reply_entropy"]) and row["sim_reply_entropy"] > 0 and row["policy_entropy"] > 0


def test_group_diagnostics_on_hand_made_groups():
    def ep(group, ret, score, acts):
        return {"group": group, "return": ret, "agent_score": score, "user_acts": acts}
    episodes = [ep(0, 0.0, 0.0, [1]), ep(0, 0.0, 0.0, [1]),  # all fail, zero std
                ep(1, 2.0, 1.0, [2]), ep(1, 2.0, 1.0 - 1e-12, [2]),  # all success, zero std
                ep(2, 1.0, 0.5, [1]), ep(2, 0.0, 0.0, [2])]
    d = rollout_diagnostics(episodes)
    assert d["zero_std_group_frac"] == pytest.approx(2 / 3)
    assert d["all_fail_group_frac"] == pytest.approx(1 / 3) and d["all_success_group_frac"] == pytest.approx(1 / 3)
    assert d["sim_reply_entropy"] == pytest.approx(np.log(2))  # acts 1 and 2, three times each


@pytest.mark.parametrize("kw, match", [
    ({"advantage": "ppo"}, "advantage must be one of"),
    ({"group_size": 0}, "group_size must be an int >= 1"),
    ({"group_size": 2.0}, "group_size must be an int >= 1"),
    ({"advantage": "grpo"}, "group_size must be >= 2"),
    ({"group_size": 8, "episodes_per_iter": 20}, "episodes_per_iter.*group_size"),
    ({"env_id": "p4g-cotrain", "env_kwargs": {"user_reward": "curriculum"}}, "group_size.*curriculum"),
    ({"episodes_per_iter": 0}, "episodes_per_iter must be a positive int"),  # train() looped forever
    ({"num_envs": 0}, r"num_envs must be an int in \[1, 65536\]"),  # an IndexError
    ({"num_envs": 10**12}, r"num_envs must be an int in \[1, 65536\]"),  # built scalar envs until memory ran out
    ({"seed": -1}, r"seed must be an int in \[0, 4294967295\]"), ({"seed": 1.5}, "seed must be an int"),
    # these trained without a word (a negative budget returned no rows, a negative learning rate ascended)
    ({"total_steps": -5}, "total_steps must be an int >= 0"), ({"learning_rate": -1.0}, "learning_rate must be"),
    ({"hidden": 0}, "hidden must be a positive int"), ({"gamma": 2.0}, r"gamma must be a finite number in \[0, 1\]"),
    ({"clip_coef": 0.0}, "clip_coef must be a finite number > 0"), ({"ent_coef": float("nan")}, "ent_coef must be"),
    ({"env_kwargs": {"surface": "text"}}, "PPOTrainer trains on the act surface, got surface='text'"),  # a TypeError
])
def test_bad_grouping_options(kw, match):
    with pytest.raises(ValueError, match=match):
        PPOTrainer(PPOConfig(**{"env_id": "p4g-frozen", "total_steps": 0, **QUICK, **kw}))
