"""The evaluation path's shortcuts (issue 32) against their definitions: the lean collector, the lazily built act
spaces and generators, and the per-card caches. Each must give exactly what it replaces."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from gymnasium import spaces

import scope_envs
from scope_envs.core.surfaces import FEATURE_BOUND
from scope_envs.games.cooperbench import styles, world
from scope_envs.games.cooperbench.batched import R
from scope_envs.games.cooperbench.styles import coins
from scope_envs.games.p4g import personas
from scope_envs.games.p4g.batched import CARD_SCALARS, N_PERSUADER_ACTS, card_row
from scope_envs.train.policy import UniformPolicy
from scope_envs.train.rollout import AGENT, agent_entropies, collect


def _coins_by_definition(style_id, task, max_turns):
    def u(*key):
        return zlib.crc32(repr((style_id, task, *key)).encode()) / 2**32

    return {"answer": np.array([u("answer", t) for t in range(max_turns + 1)]), "announce": u("announce"),
            "respect": np.array([u("respect", r) for r in range(R)]), "keep": np.array([u("keep", r) for r in range(R)]),
            "claim": np.array([u("claim", r) for r in range(R)]), "report": u("report")}


def test_coins_are_their_definition():
    ids = [styles.persona(s, i).id for s in ("train", "heldout") for i in (0, 7, 99)] + ["default-mean", "it's \"odd\""]
    for style_id in ids:
        for task in [t.id for t in world.tasks("heldout")[:5]] + ["train-0003"]:
            for max_turns in (12, 4):
                want, got = _coins_by_definition(style_id, task, max_turns), coins(style_id, task, max_turns)
                assert list(got) == list(want)
                for k, v in want.items():
                    assert type(got[k]) is type(v) and np.array_equal(got[k], v) and np.shape(got[k]) == np.shape(v)


def test_a_cards_row_holds_the_standardized_card_and_is_cached():
    first = len(CARD_SCALARS) + 2 * N_PERSUADER_ACTS
    for p in [personas.default_persona()] + [personas.persona("heldout", i) for i in range(0, 500, 50)]:
        want = np.clip(personas.standardize(p, "train"), -4, 4).astype(np.float32)
        assert np.array_equal(card_row(p)[first:-3], want) and card_row(p) is card_row(p)


@pytest.mark.parametrize("env_id", ["p4g-frozen", "p4g-cotrain", "cooperbench-heldout"])
def test_act_spaces_built_on_first_use(env_id):
    env = scope_envs.make(env_id).unwrapped
    env.reset(seed=3)
    for agent in env.possible_agents:
        role = env._agent_role(agent)
        game = env.unwrapped.game
        obs, act = env.observation_space(agent), env.action_space(agent)
        assert obs == spaces.Dict({
            "observation": spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, (game.features(role).shape[0],), np.float32),
            "action_mask": spaces.Box(0, 1, (len(game.acts(role)),), np.int8)})
        assert act == spaces.Discrete(len(game.acts(role)))
        assert env.observation_space(agent) is obs and env.action_space(agent) is act
    with pytest.raises(KeyError):
        env.unwrapped.surface.observation_space("nobody")


def test_unseeded_env_generator_made_once():
    env = scope_envs.make("p4g-frozen").unwrapped
    assert "_rng" not in vars(env)
    rng = env._rng
    assert isinstance(rng, np.random.Generator) and env._rng is rng
    with pytest.raises(AttributeError):
        env.no_such_attribute


@pytest.mark.parametrize("env_id,users", [("p4g-heldout", False), ("cooperbench-frozen", False), ("p4g-cotrain", True)])
def test_collect_without_decisions_gives_the_same_episodes(env_id, users):
    def play(decisions):
        vec = scope_envs.make_vec(env_id, num_envs=8)
        shared = UniformPolicy(seed=5)
        policies = {AGENT: shared, "user_0": shared} if users else {AGENT: UniformPolicy(seed=5)}
        return collect(vec, policies, 30, seed=11, decisions=decisions)

    full, lean = play(True), play(False)
    assert full.steps == lean.steps and len(full.episodes) == len(lean.episodes)
    for a, b in zip(full.episodes, lean.episodes):
        assert "traj" not in b
        assert b["entropies"] == agent_entropies(a)
        for key in ("return", "outcome", "user_acts", "group", "agent_score", "persona"):
            assert a[key] == b[key], key
        assert repr(a["return"]) == repr(b["return"])


@pytest.mark.parametrize("env_id", ["p4g-cotrain", "cooperbench-cotrain"])
def test_a_row_games_turn_reads_are_its_batchs(env_id):
    """``RowGame`` reads whose turn it is, each role's legal mask and features once a turn: at every turn of whole
    episodes they are the batch's own, and what it hands out is a copy (writing it changes nothing)."""
    env = scope_envs.make(env_id)
    game = env.unwrapped.game
    rng = np.random.default_rng(5)
    for episode in range(4):
        env.reset(seed=episode)
        while game.active_role() is not None:
            active = game.batch.active()
            assert game.active_role() == game.roles[int(active[0])]
            for k, role in enumerate(game.roles):
                np.testing.assert_array_equal(game.legal(role), game.batch.legal(k, active)[0])
                np.testing.assert_array_equal(game.features(role), game.batch.features(k)[0])
                game.legal(role)[:] = False
                game.features(role)[:] = 7.0
            role = game.active_role()
            game.apply(role, int(rng.choice(np.flatnonzero(game.legal(role)))))
        assert game.done and game.outcome() == {k: float(v[0]) for k, v in game.batch.outcome(np.zeros(1, int)).items()}
