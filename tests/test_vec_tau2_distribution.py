"""tau2's batched engine (``make_vec("tau2-...")``: one generator for every slot's dealing and every user reply):
its episodes come from the same distribution as the scalar envs' (``LoopVecEnv``), by the chi-square comparison of
tests/test_vec_distribution.py on each episode's outcome, length and the user's acts; the comparison rejects a
perturbed engine. 3,000 episodes per sample (tau2's episodes are long: the comparison still rejects the
perturbations below REJECT, a hundredth of the level at which the engine is accepted)."""

import functools

import numpy as np
import pytest
from test_vec_distribution import alike, chi2_p, collect, compare, random_acts, same, trace

import scope_envs
from scope_envs.vec import LoopVecEnv, Tau2VecEnv, vectorize

EPISODES = 3000
NUM_ENVS = 128
ALPHA = 1e-3
REJECT = ALPHA / 100


@functools.cache
def episodes_of(env_id: str, batched: bool, seed: int, **kwargs) -> dict:
    vec = vectorize([scope_envs.make(env_id, **kwargs) for _ in range(NUM_ENVS)], batched=batched)
    assert isinstance(vec, Tau2VecEnv if batched else LoopVecEnv)
    return collect(vec, EPISODES, seed)


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-heldout", "tau2-rotation", "tau2-vs", "tau2-population"])
def test_the_batched_engine_draws_episodes_from_the_scalar_envs_distribution(env_id):
    batched, scalar = episodes_of(env_id, True, 0), episodes_of(env_id, False, 0)
    p = compare(batched, scalar)
    assert alike(p, ALPHA), p
    assert len(np.unique(scalar["success"])) > 1 and len(np.unique(scalar["user_acts"])) > 1


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_batched_dealing_draws_scenarios_as_sample_persona(split):
    """``Tau2Game.sample_scenarios`` (the engine's dealing, all slots at once, as indices) and ``scenario_at`` /
    ``scenario_ids`` against ``sample_persona`` one at a time: the same scenarios (task, card) from the same
    distribution; a draw from the other split is rejected."""
    game = scope_envs.make("tau2-frozen").unwrapped.game
    rng = np.random.default_rng(1)
    one = [game.sample_persona(rng, split) for _ in range(4000)]

    def sample(seed, split):
        drawn = game.sample_scenarios(np.random.default_rng(seed), split, 4000)
        ids = game.scenario_ids(split, *drawn)
        scenarios = [game.scenario_at(split, *ix) for ix in zip(*(a.tolist() for a in drawn))]
        assert ids.tolist() == [p.id for p in scenarios]
        return scenarios, drawn[2]

    many, cards = sample(2, split)
    other, _ = sample(3, "train" if split == "heldout" else "heldout")
    drawn = {p.id: p for p in one}
    assert all(p == drawn[p.id] for p in many if p.id in drawn) and sum(p.id in drawn for p in many) > 100
    assert [p.attributes["card"] for p in many] == [f"{split}-{c:04d}" for c in cards]

    def stats(ps):
        return {"domain": np.array([p.attributes["domain"] for p in ps]),
                "task": np.array([p.attributes["task_id"] for p in ps]),
                "card": np.array([int(p.attributes["card"][-4:]) // 50 for p in ps])}
    a, b, c = stats(one), stats(many), stats(other)
    p = {k: chi2_p(a[k], b[k]) for k in a}
    assert alike(p, ALPHA), p
    assert chi2_p(a["task"], c["task"]) < REJECT


def test_the_comparison_rejects_a_perturbed_engine():
    """A less sharpened collapsed user (sharpening 1 against 3), and the held-out proxies on train tasks and cards
    instead of held-out ones: both are rejected."""
    from scope_envs.agents.tau2 import CollapsedUser

    flat = collect(scope_envs.make_vec("tau2-frozen", num_envs=NUM_ENVS, user=CollapsedUser(sharpening=1.0)),
                   EPISODES, 0)
    p = compare(flat, episodes_of("tau2-frozen", False, 0))
    assert min(p.values()) < REJECT, p
    p = compare(episodes_of("tau2-heldout", True, 0, personas="train"), episodes_of("tau2-heldout", False, 0))
    assert min(p.values()) < REJECT, p


def test_the_engine_is_reproducible_and_keeps_the_api():
    vec = scope_envs.make_vec("tau2-heldout", num_envs=16)
    assert isinstance(vec, Tau2VecEnv)
    first = trace(vec, 40, seed=4)
    assert same(first, trace(vec, 40, seed=4))
    assert same(first, trace(scope_envs.make_vec("tau2-heldout", num_envs=16), 40, seed=4))
    assert not same(first, trace(vec, 40, seed=5))
    vec = scope_envs.make_vec("tau2-cotrain", num_envs=8)
    rng = np.random.default_rng(0)
    obs, infos = vec.reset(seed=1)
    finals = 0
    for _ in range(60):
        obs, rewards, terms, truncs, infos = vec.step(random_acts(vec, obs, infos, rng))
        for a in vec.possible_agents:
            idle = ~infos["live"][a]
            assert (obs[a]["action_mask"][idle, 1:] == 0).all() and (obs[a]["observation"][idle] == 0).all()
        done = infos["_final_info"]
        if done.any():
            finals += int(done.sum())
            final = infos["final_info"]
            assert all(isinstance(final["persona"][i], str) for i in np.flatnonzero(done))
            assert (terms["agent_0"] | truncs["agent_0"])[done].all()
    assert finals > 0


def test_scenarios_dealt_by_indices_are_the_ones_read():
    """The engine deals scenarios as indices and builds one only where it is read (``Tau2Batch.game``): each slot's
    ``persona`` id, and the scenario its scalar game is reset on, are ``sample_persona``'s for those indices."""
    from scope_envs.games.tau2.behaviour import card, card_split
    from scope_envs.games.tau2.game import scenario

    vec = scope_envs.make_vec("tau2-heldout", num_envs=16)
    rng = np.random.default_rng(0)
    obs, infos = vec.reset(seed=2)
    seen = 0
    for _ in range(30):
        obs, _, _, _, infos = vec.step(random_acts(vec, obs, infos, rng))
        b = vec.batch
        for i in range(vec.num_envs):
            if b.persona[i] is None:  # not built yet: build it from the indices and compare
                split, (d, t, c) = b.drawn_split[i], b.drawn[i].tolist()
                game = b.game(i)
                domain = game.domains[d]
                want = scenario(domain, game._tasks(domain, split)[t], card(card_split(split), c), split)
                assert game.persona == want and vec.persona_id[i] == want.id
                seen += 1
    assert seen > 16