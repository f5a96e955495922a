"""SCOPE's checkpoint-pool population (wrappers/pool.py) and grouped scenarios (reset's scenario_seed)."""

import numpy as np
import pytest

import scope_envs
from conftest import play_episode
from scope_envs.core.env import LEARNABLE
from scope_envs.wrappers import CheckpointPool


def frozen_user(game):
    return scope_envs.make(f"{game}-frozen").unwrapped.members[0]


@pytest.mark.parametrize("game", ["p4g", "cooperbench", "tau2"])
def test_the_pool_holds_at_most_k_entries_and_the_live_user_last(game):
    env = scope_envs.make(f"{game}-population", pool_size=3)
    assert isinstance(env, CheckpointPool) and env.entries == [LEARNABLE]
    snapshots = [frozen_user(game) for _ in range(5)]
    for i, snap in enumerate(snapshots):
        env.add_snapshot(snap)
        assert len(env.entries) == min(i + 2, 3) and env.entries[-1] == LEARNABLE
    assert env.entries[:-1] == snapshots[-2:]  # FIFO: the oldest left
    assert env.possible_agents == ["agent_0", "user_0"]


def test_uniform_draws_every_entry_and_only_the_live_user_is_an_agent():
    env = scope_envs.make("p4g-population", pool_size=3)
    env.add_snapshot(frozen_user("p4g"))
    env.add_snapshot(frozen_user("p4g"))
    rng = np.random.default_rng(0)
    seen = []
    for ep in range(60):
        trace = play_episode(env, rng, seed=ep)
        entry = trace[-1][-1]["agent_0"]["pool_entry"]
        seen.append(entry)
        live = {a for acts, *_ in trace for a in acts}
        assert ("user_0" in live) == (entry == 2)  # a snapshot plays inside the env
    counts = np.bincount(seen, minlength=3)
    assert counts.min() >= 10  # about 20 each


def test_latest_is_always_the_live_user():
    env = scope_envs.make("p4g-population", pool_size=4, pool_sample="latest")
    env.add_snapshot(frozen_user("p4g"))
    for seed in range(5):
        _, infos = env.reset(seed=seed)
        assert env.agents == ["agent_0", "user_0"] and infos["agent_0"]["pool_entry"] == 1


@pytest.mark.parametrize("bad, match", [({"pool_size": 0}, "pool_size"), ({"snapshot_every": 0}, "snapshot_every"),
                                        ({"pool_sample": "best"}, "pool_sample"),
                                        # unbounded, a pool never evicted and held every snapshot of a run
                                        ({"pool_size": 10**12}, r"pool_size must be an int in \[1, 1024\]"),
                                        ({"snapshot_every": 100_001}, r"snapshot_every must be an int in \[1, 100000\]"),
                                        ({"pool_size": 3, "members": 2}, "not both")])
def test_bad_pool_options(bad, match):
    with pytest.raises(ValueError, match=match):
        scope_envs.make("p4g-population", **bad)


def test_snapshots_only_between_episodes():
    env = scope_envs.make("p4g-population", pool_size=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="between episodes"):
        env.add_snapshot(frozen_user("p4g"))


@pytest.mark.parametrize("game", ["p4g", "cooperbench", "tau2"])
def test_a_scenario_seed_deals_the_same_card_and_task_to_a_group(game):
    """A GRPO group: one scenario, independent dialogue randomness (here the held-out simulator's replies)."""
    env = scope_envs.make(f"{game}-heldout")
    cards, replies = set(), set()
    for seed in range(8):
        obs, _ = env.reset(seed=seed, options={"scenario_seed": 42})
        cards.add(env.unwrapped.game.persona.id)
        for _ in range(3):  # the same agent acts every time: the first legal one
            if env.agents:
                obs, *_ = env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[0])})
        replies.add(tuple(t.act for t in env.unwrapped.game.history))
    assert len(cards) == 1 and len(replies) > 1
    dealt = set()
    for scenario in range(8):
        env.reset(seed=0, options={"scenario_seed": scenario})
        dealt.add(env.unwrapped.game.persona.id)
    assert len(dealt) > 1
