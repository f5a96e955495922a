"""TorchRLVecEnv (scope_envs.integrations.torchrl_env): the batched engine as one TorchRL env. Its specs hold on
every kind of id, its rollouts are the engine's episodes step for step, a finished episode shows its last
observation and then the one the engine began, and what it cannot do it refuses. (BenchMARL trains on it:
tests/test_integrations_benchmarl.py, in a virtualenv of its own.)"""

import numpy as np
import pytest

pytest.importorskip("torchrl", reason="the torchrl extra: pip install 'scope-envs[torchrl]'")

import torch  # noqa: E402
from torchrl.envs.utils import MarlGroupMapType, check_env_specs, step_mdp  # noqa: E402

import scope_envs  # noqa: E402
from scope_envs.integrations.torchrl_env import TorchRLVecEnv, default_group_map  # noqa: E402


def legal_acts(td, groups, rng) -> dict:
    """A uniform legal act for every agent of every group, set on ``td``; returns them per agent."""
    out = {}
    for g, members in groups.items():
        mask = td[g, "action_mask"].numpy()
        acts = np.array([[rng.choice(np.flatnonzero(m)) for m in row] for row in mask], np.int64)
        td[g, "action"] = torch.from_numpy(acts)
        out.update({a: acts[:, j] for j, a in enumerate(members)})
    return out


@pytest.mark.parametrize("env_id, groups", [
    ("p4g-frozen", {"agent": ["agent_0"]}),
    ("p4g-cotrain", {"agent": ["agent_0"], "user": ["user_0"]}),
    ("p4g-population", {"agent": ["agent_0"], "user": ["user_0", "user_1", "user_2", "user_3"]}),
    ("cooperbench-cotrain", {"agent": ["agent_0"], "user": ["user_0"]}),
    ("tau2-rotation", {"agent": ["agent_0"]}),
])
def test_specs_hold_and_agents_are_grouped_as_torchrl_groups_pettingzoo_agents(env_id, groups):
    env = TorchRLVecEnv(env_id, num_envs=4, seed=0)
    assert env.group_map == groups and env.batch_size == torch.Size([4])
    check_env_specs(env)
    plain = scope_envs.make(env_id)
    for g, members in groups.items():
        k, agent = len(members), members[0]
        assert env.observation_spec[g, "observation", "observation"].shape == \
            (4, k, plain.observation_space(agent)["observation"].shape[0])
        assert env.action_spec[g, "action"].shape == (4, k)
        assert env.action_spec[g, "action"].space.n == plain.action_space(agent).n
        assert env.reward_spec[g, "reward"].shape == (4, k, 1)


@pytest.mark.parametrize("env_id", ["p4g-cotrain", "cooperbench-population", "tau2-frozen"])
def test_a_rollout_is_the_engines_episodes_step_for_step(env_id):
    """The same seed and acts on make_vec and on the TorchRL env: the same rewards, ends, observations and masks;
    a finished slot shows its episode's last observation under "next", and the reset that follows hands over the
    episode the engine began."""
    env = TorchRLVecEnv(env_id, num_envs=6, seed=3)
    vec = scope_envs.make_vec(env_id, num_envs=6)
    vec._final_obs = True
    obs, infos = vec.reset(seed=3)
    td = env.reset()
    rng, ends = np.random.default_rng(0), 0
    for _ in range(50):
        for g, members in env.group_map.items():
            for j, a in enumerate(members):
                assert np.array_equal(td[g, "observation", "observation"][:, j].numpy(), obs[a]["observation"])
                assert np.array_equal(td[g, "action_mask"][:, j].numpy(), obs[a]["action_mask"].astype(bool))
                assert np.array_equal(td[g, "mask"][:, j].numpy(), infos["live"][a])
        acts = legal_acts(td, env.group_map, rng)
        stepped, td = env.step_and_maybe_reset(td)
        obs, rewards, _, _, infos = vec.step(acts)
        ended = infos["_final_info"]
        nxt = stepped["next"]
        assert np.array_equal(nxt["done"][:, 0].numpy(), ended) and not nxt["truncated"].any()
        for g, members in env.group_map.items():
            assert nxt[g, "done"][..., 0].numpy().tolist() == [[bool(e)] * len(members) for e in ended]
            for j, a in enumerate(members):
                assert np.array_equal(nxt[g, "reward"][:, j, 0].numpy(), rewards[a].astype(np.float32))
                last = np.where(ended[:, None], infos["final_info"]["obs"][a] if ended.any() else 0,
                                obs[a]["observation"])
                assert np.array_equal(nxt[g, "observation", "observation"][:, j].numpy(), last)
                assert (nxt[g, "action_mask"][ended, j].sum(-1) == 1).all()  # only the no-op, once it ended
        assert not td["done"].any()
        ends += int(ended.sum())
    assert ends >= 6


def test_population_seats_one_member_an_episode_and_the_others_play_the_noop():
    env = TorchRLVecEnv("p4g-population", num_envs=16, seed=0)
    td = env.reset()
    rng = np.random.default_rng(1)
    members = set()
    for _ in range(30):
        seated = td["user", "mask"].numpy()
        assert (seated.sum(1) == 1).all()
        members.update(np.flatnonzero(seated.any(0)).tolist())
        masks = td["user", "action_mask"].numpy()
        assert (masks[~seated].sum(-1) == 1).all() and masks[~seated][:, 0].all()
        legal_acts(td, env.group_map, rng)
        _, td = env.step_and_maybe_reset(td)
    assert members == {0, 1, 2, 3}


def test_the_same_seed_gives_the_same_rollout_and_random_actions_are_legal():
    def rollout(seed):
        env = TorchRLVecEnv("p4g-cotrain", num_envs=5)
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(40, break_when_any_done=False)  # TorchRL's random policy: the masked action specs

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert (a == b).all()
    assert not torch.equal(a["user", "observation", "observation"], c["user", "observation", "observation"])
    assert a["next", "done"].sum() >= 5


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="act surface"):
        TorchRLVecEnv("p4g-cotrain", num_envs=2, surface="text")
    with pytest.raises(ValueError, match="num_envs"):
        TorchRLVecEnv("p4g-cotrain", num_envs=0)
    with pytest.raises(ValueError, match="same observation and action sizes"):
        TorchRLVecEnv("p4g-cotrain", num_envs=2, group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    with pytest.raises(ValueError, match="exactly one group"):
        TorchRLVecEnv("p4g-cotrain", num_envs=2, group_map={"agent": ["agent_0"]})
    separate = TorchRLVecEnv("p4g-population", num_envs=2, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)
    assert sorted(separate.group_map) == ["agent_0", "user_0", "user_1", "user_2", "user_3"]
    env = TorchRLVecEnv("p4g-frozen", num_envs=3, seed=0)
    td = env.reset()
    td["agent", "action"] = torch.zeros(3, 1, dtype=torch.int64)  # the no-op, masked on the persuader's turn
    with pytest.raises(ValueError, match="illegal"):
        env.step(td)
    td = env.reset()
    td["_reset"] = torch.tensor([[True], [False], [False]])
    with pytest.raises(ValueError, match="mid-episode"):
        env.reset(td)
    assert default_group_map(["agent_0", "user_0", "user_1", "judge"]) == \
        {"agent": ["agent_0"], "user": ["user_0", "user_1"], "judge": ["judge"]}


def test_step_mdp_carries_the_observation_a_policy_reads():
    """TorchRL's own loop (step, step_mdp) without resets, up to the first end: the root holds the next
    observation and mask, as a hand-written collector expects."""
    env = TorchRLVecEnv("cooperbench-frozen", num_envs=4, seed=2)
    td = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        legal_acts(td, env.group_map, rng)
        out = env.step(td)
        td = step_mdp(out)
        assert torch.equal(td["agent", "action_mask"], out["next", "agent", "action_mask"])


def test_the_module_docstring_runs():
    import doctest

    from scope_envs.integrations import torchrl_env

    result = doctest.testmod(torchrl_env)
    assert result.attempted >= 5 and result.failed == 0
