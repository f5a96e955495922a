"""``sb3_mixed_vec_env``: several single-agent ids of one game slot by slot in one SB3 ``VecEnv`` (domain
randomization over training simulators). Each block plays exactly its own id's episodes at its offset, the
masks and infos line up with the slots, mismatched games are refused, and MaskablePPO learns through it."""

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

from scope_envs.integrations.sb3 import SB3MixedVecEnv, sb3_mixed_vec_env, sb3_vec_env

torch.set_num_threads(1)
IDS = ["p4g-frozen", "p4g-vs", "p4g-rotation"]


def test_slots_split_evenly_in_blocks():
    venv = sb3_mixed_vec_env(IDS, num_envs=7)
    assert venv.num_envs == 7
    assert venv.slot_ids == ("p4g-frozen",) * 3 + ("p4g-vs",) * 2 + ("p4g-rotation",) * 2
    assert venv.seed(10) == list(range(10, 17))
    venv.reset()
    assert [i["simulator"] for i in venv.reset_infos] == list(venv.slot_ids)


def test_each_block_plays_its_own_ids_episodes():
    """Slot k of the mix, seeded s, is slot k - offset of sb3_vec_env(id) seeded s + offset: same obs, rewards."""
    mixed = sb3_mixed_vec_env(IDS, num_envs=6)
    alone = [sb3_vec_env(i, num_envs=2) for i in IDS]
    mixed.seed(100)
    for j, v in enumerate(alone):
        v.seed(100 + 2 * j)
    obs = mixed.reset()
    np.testing.assert_array_equal(obs, np.concatenate([v.reset() for v in alone]))
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(80):
        masks = mixed.action_masks()
        np.testing.assert_array_equal(masks, np.concatenate([v.action_masks() for v in alone]))
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        o, r, d, infos = mixed.step(acts)
        parts = [v.step(acts[2 * j:2 * j + 2]) for j, v in enumerate(alone)]
        np.testing.assert_array_equal(o, np.concatenate([p[0] for p in parts]))
        np.testing.assert_array_equal(r, np.concatenate([p[1] for p in parts]))
        np.testing.assert_array_equal(d, np.concatenate([p[2] for p in parts]))
        assert [i["simulator"] for i in infos] == list(mixed.slot_ids)
        finished += int(d.sum())
    assert finished > 6  # episodes ended and auto-reset in every block


def test_attributes_reach_the_right_slot():
    venv = sb3_mixed_vec_env(IDS, num_envs=3)
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (3, venv.action_space.n)
    assert venv.get_attr("member") == [b.get_attr("member", 0)[0] for b in venv.blocks]
    assert venv.get_attr("member", 2) == venv.blocks[2].get_attr("member", 0)
    with pytest.raises(IndexError, match="slot 3"):
        venv.get_attr("member", 3)


def test_refuses_ids_of_different_games_and_too_few_slots():
    with pytest.raises(ValueError, match="share their spaces"):
        sb3_mixed_vec_env(["p4g-frozen", "tau2-frozen"], num_envs=2)
    with pytest.raises(ValueError, match="fewer than"):
        sb3_mixed_vec_env(IDS, num_envs=2)
    with pytest.raises(ValueError, match="at least one"):
        sb3_mixed_vec_env([], num_envs=2)
    with pytest.raises(ValueError, match="ids is a list of env ids, got the string 'p4g-frozen'"):
        sb3_mixed_vec_env("p4g-frozen", num_envs=10)  # once read as the ids 'p', '4', 'g', ...


class Returns(BaseCallback):
    def __init__(self):
        super().__init__()
        self.returns = []

    def _on_step(self) -> bool:
        self.returns += [i["episode"]["r"] for i in self.locals["infos"] if "episode" in i]
        return True


@pytest.mark.slow
def test_maskable_ppo_learns_on_the_mix():
    """The mean return of the last 100 finished episodes is above that of the first 100 (fixed seed)."""
    venv = VecMonitor(sb3_mixed_vec_env(IDS, num_envs=12))
    venv.seed(0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=256, n_epochs=4, learning_rate=1e-3, seed=0)
    log = Returns()
    model.learn(24_000, callback=log)
    assert isinstance(venv.venv, SB3MixedVecEnv) and len(log.returns) > 400
    first, late = np.mean(log.returns[:100]), np.mean(log.returns[-100:])
    assert late > first + 0.3, (first, late)  # measured 0.70 -> 1.77
