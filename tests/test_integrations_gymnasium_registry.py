"""Every id in Gymnasium's registry (scope_envs.integrations.gymnasium_registry): ``gymnasium.make`` gives the
``agent_0`` seat as ``SingleAgentView`` does, passing Gymnasium's own checker, and ``gymnasium.make_vec`` on a
single-agent id steps the batched engine, episode for episode as ``scope_envs.make_vec``."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import scope_envs
from scope_envs.vec import GymVectorEnv
from scope_envs.wrappers import SingleAgentView

SINGLE = [i for i, spec in scope_envs.registry.items() if spec.regime in ("frozen", "vs", "rotation", "heldout")]


def first_legal(mask) -> np.ndarray:
    return np.argmax(np.asarray(mask), axis=-1)


@pytest.mark.parametrize("env_id", sorted(scope_envs.registry))
def test_every_id_is_in_gymnasiums_registry(env_id):
    name = scope_envs.registry[env_id].pettingzoo_id
    assert gymnasium.spec(name).kwargs == {"env_id": env_id}


@pytest.mark.parametrize("env_id", ["p4g-frozen", "tau2-vs", "cooperbench-heldout"])
def test_make_is_the_single_agent_view_and_passes_gymnasiums_checker(env_id):
    name = scope_envs.registry[env_id].pettingzoo_id
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the passive checker warns of what does not hold
        env = gymnasium.make(name)
        assert isinstance(env.unwrapped, SingleAgentView) and env.spec.id == name
        check_env(env.unwrapped, skip_render_check=True)
    mine, theirs = gymnasium.make(name), SingleAgentView(scope_envs.make(env_id))
    (a, _), (b, _) = mine.reset(seed=3), theirs.reset(seed=3)
    done = False
    while not done:
        assert np.array_equal(a["observation"], b["observation"])
        act = int(first_legal(a["action_mask"]))
        a, ra, ta, ua, _ = mine.step(act)
        b, rb, tb, ub, _ = theirs.step(act)
        assert (ra, ta, ua) == (rb, tb, ub)
        done = ta or ua


def test_make_takes_the_envs_and_the_views_options():
    """Keyword arguments go to ``scope_envs.make`` (the regime's options) and to the view (``role``, ``others``); a
    co-trained user needs ``others``, and a wrong option is the env's own error."""
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 1000\], got 0"):
        gymnasium.make("scope/P4G-Vs-v0", k=0)
    user = gymnasium.make("scope/P4G-Cotrain-v0", role="user_0", others={"agent_0": lambda obs: int(
        first_legal(obs["action_mask"]))})
    obs, info = user.reset(seed=0)
    assert user.action_space.n == obs["action_mask"].shape[0] and info["active"]
    with pytest.raises(ValueError, match=r"user_0 plays beside agent_0 but has no policy: pass others="):
        gymnasium.make("scope/P4G-Cotrain-v0")
    text = gymnasium.make("scope/P4G-Frozen-v0", surface="text")  # strings in, strings out, through the checker
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs, _ = text.reset(seed=0)
        _, reward, *_ = text.step("Would you consider donating to Save the Children?")
    assert isinstance(text.observation_space, gymnasium.spaces.Text) and isinstance(obs, str) and reward == 0.0
    with pytest.raises(ValueError, match=r"regime 'frozen' takes no option\(s\) \['not_an_option'\]"):
        gymnasium.make("scope/P4G-Frozen-v0", not_an_option=1)


def test_make_vec_steps_the_batched_engine_as_make_vec_does():
    """On a single-agent id ``gymnasium.make_vec`` is the batched engine (not Gymnasium's loop over N envs), and
    its episodes are ``scope_envs.make_vec``'s; on an id with a learned user it is Gymnasium's loop over
    ``make``, whose views need ``others``."""
    envs = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=6)
    local = GymVectorEnv(scope_envs.make_vec("p4g-frozen", num_envs=6))
    assert isinstance(envs, GymVectorEnv)
    (a, _), (b, _) = envs.reset(seed=11), local.reset(seed=11)
    for _ in range(40):
        assert np.array_equal(a["observation"], b["observation"])
        acts = first_legal(a["action_mask"])
        a, ra, ta, ua, _ = envs.step(acts)
        b, rb, tb, ub, _ = local.step(acts)
        assert np.array_equal(ra, rb) and np.array_equal(ta, tb) and np.array_equal(ua, ub)
    assert set(SINGLE) <= {i for i, s in scope_envs.registry.items()
                           if gymnasium.spec(s.pettingzoo_id).vector_entry_point is not None}
    sync = gymnasium.make_vec("scope/P4G-Cotrain-v0", num_envs=2, others={"user_0": lambda obs: int(
        first_legal(obs["action_mask"]))})
    assert isinstance(sync, gymnasium.vector.SyncVectorEnv)
    sync.reset(seed=0)


def test_the_modules_example_runs():
    import doctest

    from scope_envs.integrations import gymnasium_registry

    result = doctest.testmod(gymnasium_registry)
    assert result.attempted >= 4 and result.failed == 0


def test_make_vec_replaces_a_masked_act_as_make_does_and_can_refuse_it():
    """On one id ``gymnasium.make`` replaced a masked act by a random legal one while ``gymnasium.make_vec``'s
    default (the batched engine) raised; ``illegal=`` was refused as a regime option. Both now take ``illegal``,
    "random" by default, counted per slot and repeatable on a seed; "raise" refuses it as the env does."""
    runs = []
    for _ in range(2):
        envs = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=4)
        obs, info = envs.reset(seed=5)
        assert info["illegal_actions"].tolist() == [0, 0, 0, 0]
        masked = np.argmin(obs["action_mask"], axis=-1)  # a masked act in every slot (the no-op is, for the speaker)
        assert not obs["action_mask"][np.arange(4), masked].any()
        obs, _, term, trunc, info = envs.step(masked)
        assert info["illegal_actions"].tolist() == [1, 1, 1, 1] and not (term | trunc).any()
        runs.append(obs["observation"])
    assert np.array_equal(runs[0], runs[1])  # the replacements' stream is the seed's
    strict = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=4, illegal="raise")
    obs, _ = strict.reset(seed=5)
    with pytest.raises(ValueError, match="is illegal in slot 0"):
        strict.step(np.argmin(obs["action_mask"], axis=-1))
    with pytest.raises(ValueError, match="illegal must be 'random' or 'raise', got 'skip'"):
        gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, illegal="skip")


def test_make_vec_takes_the_default_seat_and_refuses_what_it_cannot_do():
    """``role="agent_0"`` was refused as a regime option, and ``render_mode="ansi"`` was dropped without a word
    (the slots fell back to the loop engine, which cannot draw either)."""
    envs = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, role="agent_0", others={})
    assert type(envs).__name__ == "GymVectorEnv"
    with pytest.raises(ValueError, match="role: make_vec views agent_0.*got 'user_0'"):
        gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, role="user_0")
    with pytest.raises(ValueError, match="others: make_vec's ids have no other acting seat"):
        gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, others={"user_0": lambda obs: 0})
    with pytest.raises(ValueError, match="render_mode: the batched engine draws nothing, got 'ansi'"):
        gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, render_mode="ansi")
    sync = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=2, vectorization_mode="sync", render_mode="ansi")
    sync.reset(seed=0)
    assert all(isinstance(text, str) and text for text in sync.render())


def test_sb3s_make_vec_env_takes_every_single_agent_id():
    """SB3's ``make_vec_env`` asks ``render_mode="rgb_array"`` of a registered id and falls back only on a
    TypeError: the env's ValueError for a mode it has not stopped it. The mode is left out after Gymnasium's warning."""
    from stable_baselines3.common.env_util import make_vec_env

    with pytest.warns(UserWarning, match="render_mode='rgb_array' that is not in the possible render_modes"):
        venv = make_vec_env("scope/TAU2-Frozen-v0", n_envs=2, seed=0)
    obs = venv.reset()
    assert obs["observation"].shape[0] == 2 and venv.render_mode is None
    assert gymnasium.make("scope/P4G-Frozen-v0", render_mode="ansi").unwrapped.render_mode == "ansi"
