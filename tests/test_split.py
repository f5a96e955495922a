"""docs/architecture.md §4.1: the held-out population is never seen in training."""

import numpy as np
import pytest

import scope_envs
from scope_envs.agents.p4g import CollapsedPersuadee, rotation_members
from scope_envs.games.p4g import human_proxy, personas

TRAINING_REGIMES = ("frozen", "vs", "rotation", "cotrain", "population", "grounded")


def test_persona_splits_are_disjoint():
    train = [personas.persona("train", i) for i in range(personas.SPLIT_SIZES["train"])]
    held = [personas.persona("heldout", i) for i in range(personas.SPLIT_SIZES["heldout"])]
    assert not {p.id for p in train} & {p.id for p in held}
    vec = lambda p: tuple(sorted(p.traits.items()))
    assert not {vec(p) for p in train} & {vec(p) for p in held}
    assert personas.SPLIT_KEYS["train"] != personas.SPLIT_KEYS["heldout"]


@pytest.mark.parametrize("regime", TRAINING_REGIMES)
def test_training_regimes_never_touch_the_heldout_side(regime, monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError(f"{regime} touched the held-out behaviour model")

    for name in ("willingness", "reply_distribution", "follow_through"):
        monkeypatch.setattr(human_proxy, name, forbidden)
    real_persona = personas.persona

    def guarded(split, i):
        assert split != "heldout", f"{regime} drew a held-out persona"
        return real_persona(split, i)

    monkeypatch.setattr(personas, "persona", guarded)
    env = scope_envs.make(f"p4g-{regime}")
    rng = np.random.default_rng(0)
    for ep in range(10):
        obs, _ = env.reset(seed=ep)
        assert env.unwrapped.game.persona.split in ("train", "default")
        while env.agents:
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})


def test_default_simulators_play_no_heldout_persona():
    for sim in [CollapsedPersuadee(), *rotation_members()]:
        assert sim.persona.split in ("train", "default")


def test_heldout_regime_deals_heldout_personas():
    env = scope_envs.make("p4g-heldout")
    ids = set()
    for ep in range(20):
        env.reset(seed=ep)
        ids.add(env.unwrapped.game.persona.id)
    assert all(i.startswith("heldout-") for i in ids) and len(ids) > 15
