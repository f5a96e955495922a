"""Simulator families (SCOPE's ensemble and held-out panel), the ``index`` schedule and VS ``selection``."""

import hashlib

import numpy as np
import pytest

import scope_envs
from conftest import random_actions
from scope_envs.agents import families as fam
from scope_envs.agents.base import SharpenedReference
from scope_envs.core.env import DirectAnswer
from scope_envs.core.simulator import Simulator
from scope_envs.wrappers.verbalized import PROB_FLOOR, VerbalizedSampler, candidate_weights

GAMES = fam.GAMES


def digest(env, episodes=6):
    """A seeded rollout's fingerprint: observations, rewards, ends, members, vs_* infos and the acts played."""
    h = hashlib.sha256()
    rng = np.random.default_rng(123)
    for ep in range(episodes):
        obs, infos = env.reset(seed=ep)
        h.update(repr(env.unwrapped.member).encode())
        while env.agents:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, rew, term, trunc, infos = env.step(acts)
            for a in sorted(obs):
                h.update(np.ascontiguousarray(obs[a]["observation"]).tobytes())
                h.update(repr((rew.get(a), term.get(a), trunc.get(a))).encode())
                for key in sorted(k for k in infos[a] if k.startswith("vs_") or k == "member"):
                    h.update(repr(np.asarray(infos[a][key]).tolist()).encode())
        h.update(repr([(t.role, getattr(t, "act", None)) for t in env.unwrapped.game.history]).encode())
    return h.hexdigest()[:16]


def user_views(game, n=8):
    """Views on which the user is to act (several legal acts), captured from a rotation's episodes."""
    env = scope_envs.make(f"{game}-rotation", families=1)
    views = []

    def spy(sim, view, rng):
        if view.legal.sum() > 1:
            views.append(view)
        return DirectAnswer()(sim, view, rng)

    env.unwrapped.user_sampler = spy
    rng = np.random.default_rng(0)
    for ep in range(4):
        obs, _ = env.reset(seed=ep)
        while env.agents and len(views) < n:
            obs, *_ = env.step(random_actions(env, obs, rng))
    assert views, f"{game}: no user view with a choice"
    return views[:n]


# -- the family generator -------------------------------------------------------------------------

@pytest.mark.parametrize("game", GAMES)
def test_families_are_deterministic_given_the_seed(game):
    a, b = fam.family_specs(game, "train", 3, seed=5), fam.family_specs(game, "train", 3, seed=5)
    assert a == b
    assert fam.family_specs(game, "train", 3, seed=6) != a
    assert fam.family_specs(game, "train", 6, seed=5)[:3] == a  # family j does not depend on k
    assert fam.family_specs(game, "heldout", seed=5) == fam.family_specs(game, "heldout", seed=5)
    views = user_views(game, 4)
    for x, y in zip(fam.families(game, seed=5), fam.families(game, seed=5)):
        for v in views:
            np.testing.assert_array_equal(x.distribution(v), y.distribution(v))


@pytest.mark.parametrize("game", GAMES)
def test_families_are_sharpened_references_with_distinct_parameters(game):
    for split in fam.SPLITS:
        specs = fam.family_specs(game, split, seed=0)
        assert len(specs) == fam.DEFAULT_K[split]
        center, width = fam.COOPERATION[game]
        for f in specs:
            assert f.gamma > 1 and center - width <= f.cooperation <= center + width
            assert (f.reply_style is not None) == (game in fam.REPLY_STYLES)
        assert len({f.gamma for f in specs}) == len(specs) and len({f.name for f in specs}) == len(specs)
        sims = [f.simulator() for f in specs]
        assert all(isinstance(s, SharpenedReference) and s.family is f for s, f in zip(sims, specs))


@pytest.mark.parametrize("game", GAMES)
def test_families_reply_differently_on_the_same_view(game):
    sims = fam.families(game, "train", 3, seed=0)
    views = user_views(game)
    for i in range(len(sims)):
        for j in range(i + 1, len(sims)):
            gaps = [np.abs(sims[i].distribution(v) - sims[j].distribution(v)).max() for v in views]
            assert max(gaps) > 1e-3, f"{game}: families {i} and {j} reply alike"


@pytest.mark.parametrize("game", GAMES)
def test_train_and_heldout_families_draw_from_disjoint_personas_and_seed_streams(game, monkeypatch):
    sizes, _ = fam._personas(game)
    train = [f for s in range(20) for f in fam.family_specs(game, "train", 3, seed=s)]
    held = [f for s in range(20) for f in fam.family_specs(game, "heldout", seed=s)]
    assert {f.persona.split for f in train} == {"train"} and {f.persona.split for f in held} == {"heldout"}
    assert all(f.persona.id.startswith("train-") for f in train)
    assert all(f.persona.id.startswith("heldout-") for f in held)
    assert not {f.persona.id for f in train} & {f.persona.id for f in held}
    assert not {tuple(sorted(f.persona.traits.items())) for f in train} & \
        {tuple(sorted(f.persona.traits.items())) for f in held}
    assert fam.FAMILY_KEYS["train"] != fam.FAMILY_KEYS["heldout"]
    assert not {f.entropy for f in train} & {f.entropy for f in held}
    # a training-side family never asks for a held-out persona, whatever the seed
    real = fam._personas

    def guarded(g):
        n, persona = real(g)

        def only_train(split, i):
            assert split == "train", f"a train family read a {split} persona"
            return persona(split, i)

        return n, only_train

    monkeypatch.setattr(fam, "_personas", guarded)
    for s in range(50):
        fam.families(game, "train", 3, seed=s)
    scope_envs.make(f"{game}-rotation", families=3, schedule="index", family_seed=7)


def test_training_families_never_touch_the_heldout_behaviour_model(monkeypatch):
    from scope_envs.games.p4g import human_proxy

    def forbidden(*a, **k):
        raise AssertionError("a training family touched the held-out behaviour model")

    for name in ("willingness", "reply_distribution", "follow_through"):
        monkeypatch.setattr(human_proxy, name, forbidden)
    env = scope_envs.make("p4g-rotation", families=3, schedule="index")
    rng = np.random.default_rng(0)
    for ep in range(6):
        obs, _ = env.reset(seed=ep)
        assert env.unwrapped.game.persona.split == "train"
        while env.agents:
            obs, *_ = env.step(random_actions(env, obs, rng))


@pytest.mark.parametrize("game", GAMES)
def test_the_heldout_panel_plays_heldout_scenarios(game):
    panel = fam.panel(game)
    assert len(panel) == fam.PANEL_SIZE == 6
    assert all(s.family.split == "heldout" for s in panel)
    base = scope_envs.make(f"{game}-frozen").unwrapped.game
    env = fam.panel_env(base, panel[0])
    rng = np.random.default_rng(0)
    for ep in range(3):
        obs, _ = env.reset(seed=ep)
        assert env.unwrapped.game.persona.split == "heldout"
        while env.agents:
            obs, *_ = env.step(random_actions(env, obs, rng))


def test_tau2_cooperation_moves_a_card_toward_the_modal_one():
    from scope_envs.agents.tau2 import cooperative_traits
    from scope_envs.games.tau2 import behaviour

    card = behaviour.card("train", 3).traits
    mode = behaviour.default_card().traits
    assert cooperative_traits(card, 0.0) is card
    full = cooperative_traits(card, 1.0)
    assert all(full[t] == pytest.approx(mode[t]) for t in ("disclose", "comply", "insist", "slip"))
    assert full["verbose"] == card["verbose"]


# -- rotation: families=K, schedule="index" ---------------------------------------------------------

@pytest.mark.parametrize("game", GAMES)
def test_rotation_of_three_families_cycles_by_episode_index(game):
    env = scope_envs.make(f"{game}-rotation", families=3, schedule="index")
    names = [m.name for m in env.unwrapped.members]
    assert names == [f.name for f in fam.family_specs(game, "train", 3)]
    rng = np.random.default_rng(0)
    members = []
    for ep in range(6):
        obs, infos = env.reset(seed=ep)
        members.append(env.unwrapped.member)
        assert infos["agent_0"]["member"] == members[-1]
        assert env.unwrapped.simulator.family.index == members[-1]
        while env.agents:
            obs, *_ = env.step(random_actions(env, obs, rng))
    assert members == [0, 1, 2, 0, 1, 2]
    assert env.unwrapped.schedule.episode_index == 6
    again = []
    for ep in range(3):  # an unfinished episode counts too: the index counts episodes started
        env.reset(seed=ep, options={"reset_schedule": ep == 0})
        again.append(env.unwrapped.member)
    assert again == [0, 1, 2]


def test_index_schedule_without_families_uses_the_rotation_members():
    env = scope_envs.make("p4g-rotation", schedule="index")
    assert len(env.unwrapped.members) == 4
    assert [env.reset(seed=0)[1]["agent_0"]["member"] for _ in range(5)] == [0, 1, 2, 3, 0]


def test_family_seed_picks_another_ensemble():
    a = scope_envs.make("tau2-rotation", families=3)
    b = scope_envs.make("tau2-rotation", families=3, family_seed=1)
    assert [m.name for m in a.unwrapped.members] != [m.name for m in b.unwrapped.members]


@pytest.mark.parametrize("bad", [0, -1, 2.0, "3", True])
def test_bad_families_is_named(bad):
    with pytest.raises(ValueError, match=r"families must be an int in \[1, 1000\]"):
        scope_envs.make("p4g-rotation", families=bad)


def test_bad_schedule_and_family_seed_are_named():
    with pytest.raises(ValueError, match=r"schedule must be one of .*'index'"):
        scope_envs.make("p4g-rotation", families=3, schedule="modulo")
    with pytest.raises(ValueError, match="family_seed"):
        scope_envs.make("p4g-rotation", families=3, family_seed=-1)
    with pytest.raises(ValueError, match="family_seed needs families"):
        scope_envs.make("p4g-rotation", family_seed=1)
    with pytest.raises(ValueError, match="game must be one of"):
        fam.families("chess")
    with pytest.raises(ValueError, match="split must be one of"):
        fam.families("p4g", "test")


# -- vs: selection="random" | "prob" ----------------------------------------------------------------

class Stated(Simulator):
    """Verbalizes five fixed candidates with fixed stated probabilities."""

    name = "stated"

    def __init__(self, probs):
        self.probs = probs

    def verbalize(self, view, k, rng, tail=None):
        return [(a, p) for a, p in enumerate(self.probs)][:k]


def draws(selection, probs, n=6000):
    sampler = VerbalizedSampler(k=len(probs), selection=selection)
    rng = np.random.default_rng(2024)
    counts = np.zeros(len(probs))
    for _ in range(n):
        choice, info = sampler(Stated(probs), None, rng)
        counts[choice] += 1
        assert info["vs_chosen"] == choice
    return counts


def chi_square(counts, expected_p):
    expected = counts.sum() * np.asarray(expected_p)
    return float(((counts - expected) ** 2 / expected).sum())


PROBS = [0.5, 0.2, 0.15, 0.1, 0.05]
CRITICAL_4DF = 18.47  # chi-square, 4 degrees of freedom, p = 0.001


def test_selection_random_is_uniform_over_the_candidates():
    counts = draws("random", PROBS)
    assert chi_square(counts, [0.2] * 5) < CRITICAL_4DF
    assert chi_square(counts, PROBS) > 10 * CRITICAL_4DF  # and clearly not by stated probability


def test_selection_prob_is_proportional_to_the_stated_probability():
    counts = draws("prob", PROBS)
    assert chi_square(counts, PROBS) < CRITICAL_4DF
    assert chi_square(counts, [0.2] * 5) > 10 * CRITICAL_4DF


def test_selection_prob_floors_at_one_in_a_million():
    w = candidate_weights([0.6, 0.0, float("nan"), 0.4], selection="prob")
    expected = np.array([0.6, PROB_FLOOR, PROB_FLOOR, 0.4])
    np.testing.assert_allclose(w, expected / expected.sum())
    np.testing.assert_array_equal(candidate_weights(PROBS, selection="random"),
                                  candidate_weights(PROBS, weight_mode="uniform"))
    np.testing.assert_array_equal(candidate_weights(PROBS, selection="prob"), candidate_weights(PROBS))


def test_selection_random_is_weight_mode_uniform_in_the_env():
    assert digest(scope_envs.make("p4g-vs", selection="random")) == \
        digest(scope_envs.make("p4g-vs", weight_mode="uniform"))
    env = scope_envs.make("p4g-vs", selection="prob")
    assert env.sampler.selection == "prob"
    digest(env, 2)


def test_bad_selection_is_named():
    with pytest.raises(ValueError, match=r"selection must be one of \('random', 'prob'\)"):
        scope_envs.make("p4g-vs", selection="greedy")
    with pytest.raises(ValueError, match=r"selection .*weight_mode"):
        scope_envs.make("p4g-vs", selection="random", weight_mode="softmax")
    with pytest.raises(ValueError, match=r"selection .*weight_mode"):
        scope_envs.make("tau2-vs", selection="prob", weight_mode="uniform")
    scope_envs.make("p4g-vs", selection="prob", weight_mode="elicited")  # the default weight_mode is no clash


# -- the defaults are untouched -------------------------------------------------------------------

@pytest.mark.parametrize("env_id, options", [("p4g-rotation", {"families": None}), ("tau2-rotation", {"families": None}),
                                             ("p4g-vs", {"selection": None}), ("cooperbench-vs", {"selection": None})])
def test_explicit_none_is_the_default(env_id, options):
    assert digest(scope_envs.make(env_id, **options)) == digest(scope_envs.make(env_id))
