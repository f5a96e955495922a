"""``SB3VecEnv``: ``make_vec``'s single-agent case as a Stable-Baselines3 ``VecEnv``.

SB3's own wrappers (VecMonitor, VecNormalize, VecCheckNan) and sb3-contrib's mask helpers run on it; its
episodes are ``GymVectorEnv``'s on the same seed and actions; MaskablePPO learns on ``p4g-frozen`` through it
and never picks a masked act. Skips without the ``sb3`` extra.
"""

import doctest

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import (
    VecCheckNan,
    VecEnv,
    VecEnvWrapper,
    VecMonitor,
    VecNormalize,
)

import scope_envs
from scope_envs.integrations import sb3
from scope_envs.integrations.sb3 import SB3VecEnv, sb3_vec_env
from scope_envs.vec import GymVectorEnv

torch.set_num_threads(1)  # tiny networks: threads only add overhead on a 2-core machine


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int64)


# -- (a) SB3's VecEnv conventions, and SB3's wrappers on top -------------------------------------------------
@pytest.mark.parametrize("env_id", ["p4g-frozen", "p4g-rotation", "tau2-frozen"])
def test_follows_the_sb3_vec_env_api(env_id):
    n = 4
    venv = sb3_vec_env(env_id, num_envs=n)
    assert isinstance(venv, VecEnv) and venv.num_envs == n
    assert isinstance(venv.observation_space, spaces.Box) and venv.observation_space.dtype == np.float32
    assert isinstance(venv.action_space, spaces.Discrete)
    assert venv.seed(3) == [3, 4, 5, 6]
    obs = venv.reset()
    assert obs.shape == (n, *venv.observation_space.shape) and obs.dtype == np.float32
    assert [sorted(i) for i in venv.reset_infos] == [["member"]] * n
    rng, finished = np.random.default_rng(0), 0
    for _ in range(60):
        masks = venv.action_masks()
        assert masks.shape == (n, venv.action_space.n) and masks.dtype == bool and masks.any(1).all()
        obs, rewards, dones, infos = venv.step(random_legal(masks, rng))
        assert obs.dtype == np.float32 and all(venv.observation_space.contains(o) for o in obs)
        assert rewards.shape == (n,) and rewards.dtype == np.float32
        assert dones.shape == (n,) and dones.dtype == bool
        assert isinstance(infos, list) and len(infos) == n
        for done, info in zip(dones, infos):
            assert ("terminal_observation" in info) == done
            assert "TimeLimit.truncated" in info and "member" in info
            if done:
                assert venv.observation_space.contains(info["terminal_observation"])
                assert {"return", "agent_score", "outcome"} <= set(info)
        finished += int(dones.sum())
    assert finished >= n  # episodes ended and auto-reset within the run
    venv.close()


def test_masks_reach_sb3_contrib_through_wrappers():
    venv = VecMonitor(VecCheckNan(sb3_vec_env("p4g-frozen", num_envs=4), raise_exception=True))
    assert is_masking_supported(venv)
    venv.seed(0)
    venv.reset()
    rows = venv.env_method("action_masks")
    assert len(rows) == 4 and all(r.shape == (18,) and r.dtype == bool for r in rows)
    assert np.array_equal(get_action_masks(venv), venv.unwrapped.action_masks())
    assert venv.env_method("action_masks", indices=2)[0].tolist() == rows[2].tolist()
    # the masks are the environment's: the same seed through GymVectorEnv shows the same action_mask
    gym_obs, _ = GymVectorEnv(scope_envs.make_vec("p4g-frozen", num_envs=4)).reset(seed=0)
    assert np.array_equal(get_action_masks(venv), gym_obs["action_mask"].astype(bool))
    assert not get_action_masks(venv).all()  # some acts are masked, so masking is not vacuous


def rollout(venv, steps: int = 20) -> np.ndarray:
    """Observations and rewards of ``steps`` steps from ``reset()``, acts drawn from a fixed generator."""
    obs, rng, out = venv.reset(), np.random.default_rng(0), []
    for _ in range(steps):
        out.append(obs.ravel())
        obs, rewards, _, _ = venv.step(random_legal(venv.action_masks(), rng))
        out.append(rewards)
    return np.concatenate(out)


def test_attributes_and_seeding():
    venv = sb3_vec_env("p4g-rotation", num_envs=3)
    assert venv.get_attr("render_mode") == [None] * 3
    assert venv.get_attr("possible_agents") == [["agent_0"]] * 3  # from each slot's scalar env
    assert not venv.has_attr("no_such_attribute")
    venv.seed(5)
    first = rollout(venv)
    assert not np.array_equal(first, rollout(venv))  # a seed holds for one reset, as in DummyVecEnv
    venv.seed(5)
    assert np.array_equal(first, rollout(venv))
    venv.reset()
    assert venv.get_attr("member") == [i["member"] for i in venv.reset_infos]
    venv.set_attr("marker", 7, indices=[1])
    assert venv.vec.envs[1].marker == 7 and not hasattr(venv.vec.envs[0], "marker")
    with pytest.raises(AttributeError, match="action_masks"):
        venv.set_attr("action_masks", None)
    assert venv.env_is_wrapped(VecMonitor) == [False] * 3


def test_vec_monitor_and_vec_normalize_wrap_it():
    monitor = VecMonitor(sb3_vec_env("p4g-frozen", num_envs=8))
    venv = VecNormalize(monitor, gamma=1.0)
    venv.seed(1)
    obs = venv.reset()
    assert obs.shape == (8, 77) and np.isfinite(obs).all()
    rng, episodes = np.random.default_rng(1), []
    for _ in range(40):
        obs, rewards, dones, infos = venv.step(random_legal(get_action_masks(venv), rng))
        assert np.isfinite(obs).all() and np.isfinite(rewards).all()
        for i in np.flatnonzero(dones):
            episodes.append(infos[i])
            # VecNormalize normalises the terminal observation like any other
            assert infos[i]["terminal_observation"].shape == (77,)
    assert episodes
    for info in episodes:  # VecMonitor's episode return is the env's own (unnormalised) agent return
        assert info["episode"]["r"] == pytest.approx(info["return"], abs=1e-5)
        assert info["episode"]["l"] >= 1


# -- (b) the same episodes as GymVectorEnv ------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ["p4g-frozen", "p4g-rotation", "tau2-frozen"])
def test_episodes_equal_gym_vector_env(env_id):
    n, seed = 4, 11
    venv = SB3VecEnv(GymVectorEnv(scope_envs.make_vec(env_id, num_envs=n)))  # either a GymVectorEnv...
    ref = GymVectorEnv(scope_envs.make_vec(env_id, num_envs=n))
    venv.seed(seed)  # SB3's seed(s): slot i gets s + i
    obs = venv.reset()
    ref_obs, _ = ref.reset(seed=[seed + i for i in range(n)])
    rng, finished = np.random.default_rng(5), 0
    for _ in range(50):
        assert np.array_equal(obs, ref_obs["observation"])
        assert np.array_equal(venv.action_masks(), ref_obs["action_mask"].astype(bool))
        acts = random_legal(venv.action_masks(), rng)
        obs, rewards, dones, infos = venv.step(acts)
        ref_obs, ref_rew, term, trunc, ref_info = ref.step(acts)
        assert np.array_equal(rewards, ref_rew.astype(np.float32))
        assert np.array_equal(dones, term | trunc)
        assert [i["member"] for i in infos] == ref_info["member"].tolist()
        for i in np.flatnonzero(dones):
            assert np.array_equal(infos[i]["terminal_observation"], ref_info["final_obs"][i]["observation"])
            assert infos[i]["return"] == ref_info["final_info"]["return"][i]
            assert infos[i]["TimeLimit.truncated"] == bool(trunc[i] and not term[i])
        finished += int(dones.sum())
    assert finished >= n


def test_an_illegal_act_raises():
    venv = SB3VecEnv(scope_envs.make_vec("p4g-frozen", num_envs=2))  # ...or a make_vec env
    venv.seed(0)
    venv.reset()
    acts = random_legal(venv.action_masks(), np.random.default_rng(0))
    acts[1] = int(np.flatnonzero(~venv.action_masks()[1])[0])
    with pytest.raises(ValueError, match="illegal"):
        venv.step(acts)


def test_plain_ppo_trains_with_replaced_acts_counted_per_slot():
    """Plain PPO sends masked acts: ``sb3_vec_env`` refused ``illegal=`` as a regime option, so the page's
    replacement for the SuperSuit recipe could not train it. ``illegal="random"`` replaces each, counted in the
    slot's info (and no longer among a finished episode's outcome keys)."""
    from stable_baselines3 import PPO

    venv = sb3_vec_env("p4g-rotation", num_envs=4, illegal="random")
    venv.seed(0)
    venv.reset()
    _, _, _, infos = venv.step(np.argmin(venv.action_masks(), axis=1))  # a masked act in every slot
    assert [info["illegal_actions"] for info in infos] == [1] * 4
    outcomes = []
    for _ in range(40):
        _, _, _, infos = venv.step(np.argmin(venv.action_masks(), axis=1))
        outcomes += [(info["outcome"], info["illegal_actions"]) for info in infos if "outcome" in info]
    assert outcomes and all("illegal_actions" not in o and n >= 1 for o, n in outcomes)
    PPO("MlpPolicy", sb3_vec_env("p4g-rotation", num_envs=4, illegal="random"), n_steps=32, batch_size=64,
        seed=0).learn(128)
    with pytest.raises(ValueError, match="illegal must be 'random' or 'raise'"):
        sb3_vec_env("p4g-rotation", num_envs=2, illegal="skip")


@pytest.mark.parametrize("wrong", ["p4g-frozen", "scalar"])
def test_an_id_or_a_scalar_env_is_refused_naming_what_it_wraps(wrong):
    """SB3VecEnv of an id or of make(id) is one TypeError saying what it takes (it was an AttributeError from
    inside GymVectorEnv or the scalar env)."""
    env = scope_envs.make("p4g-frozen") if wrong == "scalar" else wrong
    with pytest.raises(TypeError, match=r"SB3VecEnv wraps make_vec\(id, num_envs=N\) or a GymVectorEnv.*sb3_vec_env"):
        SB3VecEnv(env)


# -- (c, d) MaskablePPO trains through it, masked ----------------------------------------------------------
class RecordActs(VecEnvWrapper):
    """Keeps every (mask, action) pair a trainer steps the wrapped VecEnv with."""

    def __init__(self, venv):
        super().__init__(venv)
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def reset(self):
        return self.venv.reset()

    def step_async(self, actions):
        self.seen.append((self.venv.unwrapped.action_masks(), np.asarray(actions).copy()))
        self.venv.step_async(actions)

    def step_wait(self):
        return self.venv.step_wait()


def held_out_return(model, seed: int = 10_000, episodes: int = 64) -> float:
    """Mean return of the deterministic policy over the first episode of each of 64 fixed-seed slots."""
    venv = VecMonitor(sb3_vec_env("p4g-frozen", num_envs=episodes))
    venv.seed(seed)
    mean, _ = evaluate_policy(model, venv, n_eval_episodes=episodes, deterministic=True, warn=False)
    return mean


@pytest.fixture(scope="module")
def trained():
    venv = RecordActs(VecMonitor(sb3_vec_env("p4g-frozen", num_envs=16)))
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=128, seed=0)
    before = held_out_return(model)
    model.learn(4096)
    return model, venv, before, held_out_return(model)


def test_maskable_ppo_learns_through_the_adapter(trained):
    model, _, before, after = trained
    assert model.num_timesteps >= 4096
    # measured (seed 0, 4096 steps, 16 slots, p4g's training side on its own part's fit): before 1.34, after 1.58 on
    # slots seeded 10000-10063 (the evaluation is deterministic: a fixed policy on fixed seeds)
    assert after > before + 0.15, (before, after)


def test_maskable_ppo_never_picks_a_masked_act(trained):
    model, venv, _, _ = trained
    masks = np.concatenate([m for m, _ in venv.seen])
    acts = np.concatenate([a for _, a in venv.seen])
    assert len(acts) >= 4096 and not masks.all()  # masked acts were on offer
    assert masks[np.arange(len(acts)), acts].all()
    # also when sampling (not argmax) from the trained policy on fresh states
    eval_env = sb3_vec_env("p4g-frozen", num_envs=16)
    eval_env.seed(123)
    obs = eval_env.reset()
    for _ in range(30):
        m = eval_env.action_masks()
        a, _ = model.predict(obs, action_masks=m, deterministic=False)
        assert m[np.arange(16), a].all()
        obs, *_ = eval_env.step(a)


def test_docstring_example_runs():
    result = doctest.testmod(sb3, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_sb3_player_plays_the_other_seat_of_a_single_agent_view():
    """A model trained on one seat's view plays that seat for another view (the callable ``others`` takes): a
    legal act every turn, whatever the model's observation space (the view's dict, or its flat observation)."""
    from scope_envs.integrations.sb3 import SB3Player
    from scope_envs.wrappers import SingleAgentView

    user_view = SingleAgentView(scope_envs.make("p4g-cotrain"), "user_0",
                                others={"agent_0": lambda obs: int(np.flatnonzero(obs["action_mask"])[0])})
    user = MaskablePPO("MultiInputPolicy", user_view, n_steps=32, batch_size=32, seed=0, device="cpu").learn(32)
    seen = []

    class Watched(SB3Player):
        def __call__(self, obs):
            act = super().__call__(obs)
            seen.append(bool(obs["action_mask"][act]))
            return act

    view = SingleAgentView(scope_envs.make("p4g-cotrain"), "agent_0", others={"user_0": Watched(user)},
                           illegal="raise")
    obs, _ = view.reset(seed=0)
    done = False
    while not done:
        obs, _, term, trunc, _ = view.step(int(np.flatnonzero(obs["action_mask"])[0]))
        done = term or trunc
    assert seen and all(seen)
    flat = MaskablePPO("MlpPolicy", sb3_vec_env("p4g-frozen", num_envs=2), n_steps=16, batch_size=32, seed=0,
                       device="cpu")
    obs, _ = SingleAgentView(scope_envs.make("p4g-frozen")).reset(seed=0)
    assert obs["action_mask"][SB3Player(flat, deterministic=True)(obs)]


@pytest.mark.parametrize("mixed", [False, True])
def test_a_bad_seed_or_actions_of_the_wrong_count_are_refused_where_given(mixed):
    """``seed(-1)`` / ``seed(1.5)`` were kept and refused at the next ``reset`` as ``seed[0]``; actions of the
    wrong count were numpy's reshape error."""
    venv = sb3.sb3_mixed_vec_env(["p4g-frozen", "p4g-vs"], num_envs=4) if mixed else sb3_vec_env("p4g-frozen", 4)
    for seed in (-1, 1.5, "3", True, np.int64(-2)):
        with pytest.raises(ValueError, match=r"seed must be None or an int >= 0"):
            venv.seed(seed)
    assert venv.seed(np.int64(3)) == [3, 4, 5, 6]
    venv.reset()
    for acts in (np.ones(3, np.int64), np.ones(5, np.int64), 1):
        with pytest.raises(ValueError, match=r"actions must be one act per slot, 4 of them, got shape"):
            venv.step(acts)
    venv.step(random_legal(venv.action_masks(), np.random.default_rng(0)).reshape(4, 1))  # (n, 1): still taken


@pytest.mark.parametrize("wrong", [3, "model.zip", None])
def test_sb3_player_of_something_not_a_model_says_what_it_plays(wrong):
    """It was an AttributeError on ``observation_space`` (or on ``predict``) from inside the adapter."""
    with pytest.raises(TypeError, match=r"SB3Player plays an SB3 model .*got "):
        sb3.SB3Player(wrong)
