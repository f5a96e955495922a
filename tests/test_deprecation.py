"""Renamed for readers: the simulator's sharpening exponent is ``sharpening`` (``gamma=`` a deprecated alias
for this release; ``PPOConfig.gamma`` stays the discount), and a ``Persona`` carrying a tau2 task is a
``Scenario`` (``Persona`` its alias)."""

import warnings

import numpy as np
import pytest

import scope_envs
from scope_envs.agents.cooperbench import CollapsedPartner
from scope_envs.agents.p4g import CollapsedPersuadee, ReferencePersuadee
from scope_envs.agents.tau2 import CollapsedUser, ReferenceUser
from scope_envs.train.act_ppo import PPOConfig


def digest(env, steps=30):
    obs, infos = env.reset(seed=3)
    rng, out = np.random.default_rng(0), []
    for _ in range(steps):
        if not env.agents:
            obs, infos = env.reset()
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rew, _, _, infos = env.step(acts)
        out.append(sorted(rew.items()))
    return out


@pytest.mark.parametrize("env_id", ["p4g-frozen", "cooperbench-frozen", "tau2-frozen"])
def test_gamma_still_works_warns_and_means_sharpening(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        new = scope_envs.make(env_id, sharpening=5.0)
        default = scope_envs.make(env_id)
    with pytest.warns(DeprecationWarning, match="sharpening"):
        old = scope_envs.make(env_id, gamma=5.0)
    assert new.unwrapped.members[0].sharpening == old.unwrapped.members[0].sharpening == 5.0
    assert default.unwrapped.members[0].sharpening == 3.0
    assert digest(new) == digest(old)
    with pytest.raises(ValueError, match="not both"):
        scope_envs.make(env_id, sharpening=2.0, gamma=2.0)


@pytest.mark.parametrize("cls", [CollapsedPersuadee, CollapsedPartner, CollapsedUser, ReferencePersuadee,
                                 ReferenceUser])
def test_the_simulators_take_sharpening(cls):
    sim = cls(sharpening=2.5)
    assert sim.sharpening == 2.5 == sim.gamma  # the old attribute reads the new one
    with pytest.warns(DeprecationWarning):
        assert cls(gamma=4.0).sharpening == 4.0
    with pytest.raises(ValueError, match="sharpening must be >= 1"):
        cls(sharpening=0.5)


def test_ppo_gamma_is_still_the_discount():
    assert PPOConfig().gamma == 1.0 and "sharpening" not in PPOConfig.__dataclass_fields__


def test_a_tau2_persona_is_a_scenario_with_its_task():
    from scope_envs.core.game import Persona, Scenario

    assert Persona is Scenario
    env = scope_envs.make("tau2-frozen")
    env.reset(seed=0)
    dealt = env.unwrapped.game.persona
    assert isinstance(dealt, Scenario) and {"task_id", "domain"} <= set(dealt.attributes)
