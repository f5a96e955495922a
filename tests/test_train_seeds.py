"""All seeds of a row at once (``scope_envs.train.seeds``, ``rollout.collect_blocks``): a seed's training and
episodes are the ones it gets alone, bit for bit, whichever seeds share the vec env with it; and the blocks'
inputs are checked."""

import json

import numpy as np
import pytest

import scope_envs
from scope_envs.bench.methods import method_setup
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
from scope_envs.train.policy import UniformPolicy
from scope_envs.train.rollout import Block, collect, collect_blocks
from scope_envs.train.seeds import train_seeds
from scope_envs.vec import vectorize


def trainer(game: str, method: str, seed: int, steps: int, **config) -> PPOTrainer:
    env_id, kwargs, overrides = method_setup(game, method, group_size=config.pop("group_size", 1),
                                             advantage=config.pop("advantage", "gae"))
    settings = {**overrides, "num_envs": 16, "episodes_per_iter": 16, "bc_episodes": 40, "bc_steps": 10, **config}
    return PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=seed, total_steps=steps, **settings))


def rows(history: list[dict]) -> str:
    """A log's rows without the wall-clock field."""
    return json.dumps([{k: v for k, v in r.items() if k != "steps_per_s"} for r in history], default=str)


def same_networks(a: PPOTrainer, b: PPOTrainer) -> bool:
    return all(np.array_equal(x, y) for name in a.params for x, y in zip(a.params[name], b.params[name]))


CASES = [("p4g", m) for m in ("frozen", "oracle", "uncollapsed", "vs", "rotation", "cotrain", "population",
                              "selfplay", "cotrain-realism")] + [("cooperbench", "frozen"), ("cooperbench", "population"),
                                                                 ("tau2", "frozen"), ("tau2", "cotrain")]


@pytest.mark.parametrize("game,method", CASES)
def test_a_seed_trains_among_others_as_it_trains_alone(game, method):
    """Seed 3 among four (its neighbours on other seeds, one of them with half the budget, so that it
    leaves the vec env midway) ends with the networks, the counts and the log rows of seed 3 alone (each seed's
    block draws from its own stream)."""
    alone = trainer(game, method, 3, 900)
    history = alone.train()
    together = [trainer(game, method, s, 450 if s == 1 else 900) for s in (0, 1, 3, 5)]
    seen = []
    histories = train_seeds(together, callback=lambda k, row: seen.append(k))
    mine = together[2]
    assert same_networks(alone, mine)
    assert (alone.agent_steps, alone.env_steps, alone.updates) == (mine.agent_steps, mine.env_steps, mine.updates)
    assert rows(history) == rows(histories[2])
    assert len(histories[1]) < len(histories[2])  # the short seed left early, and the others went on
    assert seen.count(2) == len(histories[2]) and all(t.agent_steps >= t.cfg.total_steps for t in together)
    assert not same_networks(together[0], mine)  # the seeds are not copies of one another


def test_grouped_training_is_independent_too():
    """GRPO's groups (scenario seeds from each trainer's own seed) under the seed axis."""
    alone = trainer("p4g", "frozen", 2, 600, group_size=4, advantage="grpo")
    alone.train()
    together = [trainer("p4g", "frozen", s, 600, group_size=4, advantage="grpo") for s in (2, 7)]
    train_seeds(together)
    assert same_networks(alone, together[0]) and not same_networks(together[0], together[1])


def test_the_shared_rollout_learns():
    """Trained together, every seed's return rises (the seed axis changes where episodes run, not learning)."""
    together = [PPOTrainer(PPOConfig("p4g-frozen", seed=s, total_steps=6000)) for s in range(3)]
    histories = train_seeds(together)
    for h in histories:
        first, last = np.mean([r["return"] for r in h[:2]]), np.mean([r["return"] for r in h[-2:]])
        assert last > first + 0.2, (first, last)


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "loop"])
@pytest.mark.parametrize("env_id", ["p4g-frozen", "tau2-rotation"])
def test_blocks_play_the_episodes_of_their_own_vec_env(env_id, batched):
    """``collect_blocks``: each block's episodes (returns, outcomes, acts, groups) equal ``collect``'s on a vec env
    of its slots alone, with blocks of different sizes, episode counts and grouping."""
    def vec(n):
        return vectorize([scope_envs.make(env_id) for _ in range(n)], batched=batched)

    specs = [(4, 10, 100, 1), (6, 3, 200, 1), (4, 8, 300, 2)]  # (slots, episodes, seed, group size)
    blocks, start = [], 0
    for n, eps, seed, g in specs:
        blocks.append(Block({"agent_0": UniformPolicy(seed)}, eps, seed, g, slots=range(start, start + n)))
        start += n
    shared = collect_blocks(vec(start), blocks, decisions=False)
    for (n, eps, seed, g), got in zip(specs, shared):
        alone = collect(vec(n), {"agent_0": UniformPolicy(seed)}, eps, seed, group_size=g, decisions=False)
        key = [(e["return"], e["outcome"], e["user_acts"], e["group"], e["persona"]) for e in alone.episodes]
        assert [(e["return"], e["outcome"], e["user_acts"], e["group"], e["persona"]) for e in got.episodes] == key
        assert got.steps == alone.steps and len(got.episodes) == eps


def test_bad_blocks_and_trainers_are_refused():
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(8)])
    policy = {"agent_0": UniformPolicy(0)}
    with pytest.raises(ValueError, match="overlaps"):
        collect_blocks(vec, [Block(policy, 4, 0, slots=range(0, 5)), Block(policy, 4, 0, slots=range(4, 8))])
    with pytest.raises(ValueError, match="range of the vec env's 8 slots"):
        collect_blocks(vec, [Block(policy, 4, 0, slots=range(6, 10))])
    with pytest.raises(ValueError, match="every live seat needs a policy"):
        collect_blocks(vec, [Block({}, 4, 0)])
    with pytest.raises(ValueError, match="multiple of group_size"):
        collect_blocks(vec, [Block(policy, 5, 0, group_size=2)])
    a = PPOTrainer(PPOConfig("p4g-frozen", seed=0, total_steps=0, num_envs=4, episodes_per_iter=4))
    b = PPOTrainer(PPOConfig("p4g-frozen", seed=1, total_steps=0, num_envs=8, episodes_per_iter=8))
    with pytest.raises(ValueError, match="differ in \\['num_envs', 'episodes_per_iter'\\]"):
        train_seeds([a, b])
    with pytest.raises(ValueError, match="once"):
        train_seeds([a, a])
    with pytest.raises(ValueError, match="at least one"):
        train_seeds([])
