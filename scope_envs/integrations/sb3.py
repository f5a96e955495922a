"""Stable-Baselines3 on batched rollouts: ``SB3VecEnv`` is ``make_vec``'s single-agent case as an SB3 ``VecEnv``.

SB3 does not step Gymnasium's vector envs; it steps its own ``VecEnv`` (``step_async``/``step_wait``, one
info dict per slot). ``SB3VecEnv`` is that API over ``GymVectorEnv``, so PPO, A2C and sb3-contrib's
``MaskablePPO`` collect N episodes of one id per step from the batched engine (``scope_envs.vec``) instead
of N scalar envs behind a ``DummyVecEnv``. Install the extra: ``pip install "scope-envs[sb3]"``.

    >>> import numpy as np
    >>> from sb3_contrib import MaskablePPO
    >>> from stable_baselines3.common.vec_env import VecMonitor
    >>> from scope_envs.integrations.sb3 import sb3_vec_env
    >>> venv = VecMonitor(sb3_vec_env("p4g-frozen", num_envs=8))  # the persuader; the frozen simulator replies
    >>> venv.observation_space.shape, int(venv.action_space.n)
    ((77,), 18)
    >>> model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=128, seed=0).learn(256)
    >>> obs = venv.reset()
    >>> masks = venv.env_method("action_masks")  # what MaskablePPO reads, one (18,) bool row per slot
    >>> actions, _ = model.predict(obs, action_masks=np.stack(masks), deterministic=True)
    >>> obs, rewards, dones, infos = venv.step(actions)
    >>> obs.shape, rewards.dtype, dones.dtype, len(infos)
    ((8, 77), dtype('float32'), dtype('bool'), 8)

What SB3 sees:

* ``observation_space``: the ``observation`` part of the id's ``Dict(observation, action_mask)`` space, a
  flat ``Box``, so ``"MlpPolicy"`` fits (SB3's policies would otherwise feed the mask to the network).
  The mask goes where sb3-contrib looks for it: ``action_masks()`` gives the (N, n) bool masks, and
  ``env_method("action_masks")`` / ``get_action_masks(venv)`` one row per slot, through any ``VecEnvWrapper``
  (``VecMonitor``, ``VecNormalize``). A masked act raises ``ValueError``, as in the scalar env: train with
  ``MaskablePPO``, or with ``PPO`` on ``SingleAgentView`` + ``LegalActions``.
* ``action_space``: ``Discrete(n)``; ``step(actions)`` takes an int array (N,).
* ``step`` returns ``dones = terminated | truncated`` and auto-resets the finished slots in the same step
  (the returned observation is the next episode's first). A finished slot's info holds
  ``terminal_observation`` (its episode's last observation), ``TimeLimit.truncated``, and the episode's
  ``return`` (``agent_0``'s), ``agent_score`` and ``outcome`` (the game's outcome keys); every info has
  ``member`` (the user seat's member in that slot's current episode).
* ``seed(s)`` then ``reset()`` seeds slot ``i`` with ``s + i``: the episodes of ``GymVectorEnv.reset(seed=s)``
  (and of ``make_vec``'s ``reset(seed=s)``). ``set_options`` passes ``reset`` options the same way.
* ``get_attr`` / ``env_method`` read ``action_masks``, ``member`` and ``render_mode`` per slot from the
  adapter, any other name from the slot's scalar env (``vec.envs[i]``: its game, simulator members,
  schedule); ``set_attr`` sets it there, as ``DummyVecEnv`` sets it on its envs.
  ``env_is_wrapped`` is False for Gymnasium wrappers (the slots are not ``gymnasium.Env`` objects).

Only single-agent ids (``frozen``, ``vs``, ``rotation``, ``heldout``: ``agent_0`` alone acts) have this view;
for ``cotrain`` and ``population`` use a MARL trainer on ``make_vec`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from scope_envs.vec import GymVectorEnv, make_vec

__all__ = ["SB3VecEnv", "sb3_vec_env"]


def sb3_vec_env(id: str, num_envs: int = 16, **kwargs) -> SB3VecEnv:
    """``SB3VecEnv`` over ``make_vec(id, num_envs, **kwargs)`` (a single-agent id)."""
    return SB3VecEnv(make_vec(id, num_envs=num_envs, **kwargs))


class SB3VecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a ``GymVectorEnv`` (or over a vec env from ``make_vec``, which it wraps)."""

    # per-slot values the adapter answers itself in get_attr / env_method; read-only for set_attr
    OWN = frozenset({"action_masks", "member", "render_mode"})

    def __init__(self, env):
        self.gym_env = env if isinstance(env, GymVectorEnv) else GymVectorEnv(env)
        n = self.gym_env.num_envs
        self._masks = np.zeros((n, self.gym_env.n_acts), bool)
        self._member = np.zeros(n, np.int64)
        self._actions: np.ndarray | None = None
        space = self.gym_env.single_observation_space
        super().__init__(n, space["observation"], self.gym_env.single_action_space)

    @property
    def vec(self):
        """The underlying ``make_vec`` env (its slots' scalar envs are ``vec.envs``)."""
        return self.gym_env.vec

    # -- the SB3 VecEnv API ----------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = list(self._options) if any(self._options) else None
        obs, info = self.gym_env.reset(seed=seeds, options=options)
        self._reset_seeds()  # seeds and options hold for one reset, as in DummyVecEnv
        self._reset_options()
        self._member = np.asarray(info["member"]).copy()
        self.reset_infos = [{"member": int(m)} for m in self._member]
        return self._keep(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async(actions)")
        actions, self._actions = self._actions, None
        obs, rewards, terms, truncs, info = self.gym_env.step(actions.astype(np.int64))
        dones = np.asarray(terms, bool) | np.asarray(truncs, bool)
        self._member = np.asarray(info["member"]).copy()
        infos: list[dict[str, Any]] = [
            {"member": int(m), "TimeLimit.truncated": bool(tr and not te)}
            for m, te, tr in zip(self._member, terms, truncs)
        ]
        finished = info.get("_final_obs", np.zeros(self.num_envs, bool))
        if finished.any():
            final = info["final_info"]
            outcome_keys = [k for k in final if not k.startswith("_") and k not in ("return", "agent_score")]
            for i in np.flatnonzero(finished).tolist():
                infos[i]["terminal_observation"] = np.asarray(info["final_obs"][i]["observation"], np.float32)
                infos[i]["return"] = float(final["return"][i])
                infos[i]["agent_score"] = float(final["agent_score"][i])
                infos[i]["outcome"] = {k: float(final[k][i]) for k in outcome_keys}
        return self._keep(obs), np.asarray(rewards, np.float32), dones, infos

    def close(self) -> None:
        self.gym_env.close()

    def action_masks(self) -> np.ndarray:
        """The (N, n) bool masks of the current observations: the legal acts of each slot."""
        return self._masks.copy()

    # -- per-slot attributes -----------------------------------------------------------------------------
    def _own(self, name: str, i: int):
        if name == "action_masks":
            row = self._masks[i].copy()
            return lambda: row
        if name == "member":
            return int(self._member[i])
        return None  # render_mode: nothing renders images

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name in self.OWN:
            return [self._own(attr_name, i) for i in self._get_indices(indices)]
        return [getattr(self.vec.envs[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if attr_name in self.OWN:
            raise AttributeError(f"{attr_name!r} is the adapter's own per-slot state and cannot be set")
        for i in self._get_indices(indices):
            setattr(self.vec.envs[i], attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list:
        return [method(*method_args, **method_kwargs) for method in self.get_attr(method_name, indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]

    def _keep(self, obs: dict) -> np.ndarray:
        self._masks = np.asarray(obs["action_mask"]).astype(bool)
        return np.asarray(obs["observation"], np.float32)
