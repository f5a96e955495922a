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
  ``MaskablePPO``, or with ``PPO`` on ``sb3_vec_env(id, illegal="random")``, which replaces it by a random legal
  act and counts it in the slot's ``info["illegal_actions"]`` (replaced acts are still credited to the policy).
* ``action_space``: ``Discrete(n)``; ``step(actions)`` takes an int array (N,).
* ``step`` returns ``dones = terminated | truncated`` and auto-resets the finished slots in the same step
  (the returned observation is the next episode's first). A finished slot's info holds
  ``terminal_observation`` (its episode's last observation), ``TimeLimit.truncated``, and the episode's
  ``return`` (``agent_0``'s), ``agent_score`` and ``outcome`` (the game's outcome keys); every info has
  ``member`` (the user seat's member in that slot's current episode).
* ``seed(s)`` then ``reset()`` seeds slot ``i`` with ``s + i``: the episodes of ``GymVectorEnv.reset(seed=[s, s + 1,
  ...])`` (and of ``make_vec``'s ``reset`` with those seeds). ``set_options`` passes ``reset`` options the same way.
* ``get_attr`` / ``env_method`` read ``action_masks``, ``member`` and ``render_mode`` per slot from the
  adapter, any other name from the slot's scalar env (``vec.envs[i]``: its game, simulator members,
  schedule); ``set_attr`` sets it there, as ``DummyVecEnv`` sets it on its envs.
  ``env_is_wrapped`` is False for Gymnasium wrappers (the slots are not ``gymnasium.Env`` objects).

Only single-agent ids (``frozen``, ``vs``, ``rotation``, ``heldout``: ``agent_0`` alone acts) have this view;
for ``cotrain`` and ``population`` use a MARL trainer on ``make_vec`` directly, or train the seats in turn with
SB3: each seat a ``SingleAgentView`` whose other seat is the other model, through ``SB3Player`` (the callable
``SingleAgentView(others=...)`` plays; ``examples/cotrain_sb3.py`` alternates best responses this way).

Domain randomization over training simulators — the first remedy researchers try — is ``sb3_mixed_vec_env``:
several single-agent ids of one game, slot by slot, in one SB3 ``VecEnv``, each slot's info naming its id::

    >>> venv = sb3_mixed_vec_env(["p4g-frozen", "p4g-vs", "p4g-rotation"], num_envs=6)
    >>> venv.slot_ids
    ('p4g-frozen', 'p4g-frozen', 'p4g-vs', 'p4g-vs', 'p4g-rotation', 'p4g-rotation')
    >>> model = MaskablePPO("MlpPolicy", VecMonitor(venv), n_steps=32, batch_size=96, seed=0).learn(192)
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

from scope_envs.core.checks import check_seed
from scope_envs.core.checks import short_repr
from scope_envs.vec import GymVectorEnv, make_vec

__all__ = ["SB3MixedVecEnv", "SB3Player", "SB3VecEnv", "sb3_mixed_vec_env", "sb3_vec_env"]


def _checked_seed(venv: VecEnv, seed) -> Sequence[int | None]:
    """SB3's ``seed``, the seed checked now: SB3 keeps it for the next ``reset``, where a bad one was refused as
    ``seed[0]``, far from the call that set it."""
    check_seed("seed", seed)
    return VecEnv.seed(venv, None if seed is None else int(seed))


def _slot_actions(actions, n: int) -> np.ndarray:
    """``step``'s actions: one per slot, (n,) or anything of n elements (SB3's policies give (n,) or (n, 1))."""
    actions = np.asarray(actions)
    if actions.size != n:
        raise ValueError(f"actions must be one act per slot, {n} of them, got shape {actions.shape} "
                         f"{short_repr(actions.tolist())}")
    return actions.reshape(n)


def sb3_vec_env(id: str, num_envs: int = 16, illegal: str = "raise", **kwargs) -> SB3VecEnv:
    """``SB3VecEnv`` over ``make_vec(id, num_envs, **kwargs)`` (a single-agent id). ``illegal``: ``"raise"``
    (default) refuses a masked act, for ``MaskablePPO``; ``"random"`` replaces it by a random legal one, counted in
    each slot's ``info["illegal_actions"]``, for trainers that cannot mask (SB3's ``PPO``, ``A2C``)."""
    return SB3VecEnv(GymVectorEnv(make_vec(id, num_envs=num_envs, **kwargs), illegal=illegal))


class SB3VecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a ``GymVectorEnv`` (or over a vec env from ``make_vec``, which it wraps)."""

    # per-slot values the adapter answers itself in get_attr / env_method; read-only for set_attr
    OWN = frozenset({"action_masks", "member", "render_mode"})

    def __init__(self, env):
        if not isinstance(env, GymVectorEnv) and not hasattr(env, "num_envs"):
            raise TypeError(f"SB3VecEnv wraps make_vec(id, num_envs=N) or a GymVectorEnv, got {type(env).__name__} "
                            f"{env!r:.80}; sb3_vec_env(id, num_envs=N) builds one from an id")
        # a masked act raises here (the module's docstring): SB3's maskable trainers never send one
        self.gym_env = env if isinstance(env, GymVectorEnv) else GymVectorEnv(env, illegal="raise")
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

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return _checked_seed(self, seed)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = _slot_actions(actions, self.num_envs)

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
        counted = self.gym_env.illegal == "random"  # the slots' replaced acts this episode
        if counted:
            for i, n in enumerate(info["illegal_actions"].tolist()):
                infos[i]["illegal_actions"] = n
        finished = info.get("_final_obs", np.zeros(self.num_envs, bool))
        if finished.any():
            final = info["final_info"]
            outcome_keys = [k for k in final if not k.startswith("_")
                            and k not in ("return", "agent_score", "illegal_actions")]
            for i in np.flatnonzero(finished).tolist():
                infos[i]["terminal_observation"] = np.asarray(info["final_obs"][i]["observation"], np.float32)
                infos[i]["return"] = float(final["return"][i])
                infos[i]["agent_score"] = float(final["agent_score"][i])
                infos[i]["outcome"] = {k: float(final[k][i]) for k in outcome_keys}
                if counted:  # the finished episode's count (the slot's next episode has made no act yet)
                    infos[i]["illegal_actions"] = int(final["illegal_actions"][i])
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


def sb3_mixed_vec_env(ids: Sequence[str], num_envs: int = 16, **kwargs) -> SB3MixedVecEnv:
    """One SB3 ``VecEnv`` over several single-agent ids of one game: ``num_envs`` slots split among ``ids`` in
    contiguous blocks as evenly as possible (the first ids take the remainder), each block ``make_vec(id, n)``.

    ``kwargs`` go to every id's ``make_vec``. The ids must share their spaces (the regimes of one game do)."""
    if isinstance(ids, str):
        raise ValueError(f"ids is a list of env ids, got the string {ids!r}: sb3_mixed_vec_env([{ids!r}, ...]), "
                         f"or sb3_vec_env({ids!r}) for one id")
    ids = tuple(ids)
    if not ids:
        raise ValueError("sb3_mixed_vec_env needs at least one env id")
    if num_envs < len(ids):
        raise ValueError(f"num_envs={num_envs} is fewer than the {len(ids)} ids: every id needs a slot")
    base, extra = divmod(num_envs, len(ids))
    return SB3MixedVecEnv([sb3_vec_env(i, num_envs=base + (j < extra), **kwargs) for j, i in enumerate(ids)], ids)


class SB3MixedVecEnv(VecEnv):
    """Several ``SB3VecEnv`` blocks as one SB3 ``VecEnv``, slot by slot (domain randomization over simulators).

    Slot ``k`` of the whole is slot ``k - offset`` of its block; ``seed(s)`` seeds slot ``k`` with ``s + k``, as
    one ``SB3VecEnv`` of ``num_envs`` slots would, so each block plays exactly the episodes of its id seeded at its
    offset. Every info carries ``simulator``: the id of its slot's block (``slot_ids``)."""

    def __init__(self, blocks: Sequence[SB3VecEnv], ids: Sequence[str] | None = None):
        blocks = list(blocks)
        first = blocks[0]
        for b in blocks[1:]:
            if b.observation_space != first.observation_space or b.action_space != first.action_space:
                raise ValueError(
                    "the mixed ids must share their spaces (the regimes of one game do): "
                    f"{first.observation_space}/{first.action_space} against {b.observation_space}/{b.action_space}")
        self.blocks = blocks
        self.ids = tuple(ids) if ids is not None else tuple(f"block{j}" for j in range(len(blocks)))
        self.offsets = np.cumsum([0] + [b.num_envs for b in blocks])
        self.slot_ids = tuple(i for i, b in zip(self.ids, blocks) for _ in range(b.num_envs))
        super().__init__(int(self.offsets[-1]), first.observation_space, first.action_space)

    def _spans(self):
        return zip(self.blocks, self.offsets[:-1].tolist(), self.offsets[1:].tolist())

    def reset(self) -> VecEnvObs:
        obs, self.reset_infos = [], []
        for block, a, b in self._spans():
            block._seeds = list(self._seeds[a:b])  # this reset's seeds and options, slot by slot
            block._options = list(self._options[a:b])
            obs.append(block.reset())
            self.reset_infos += [dict(info, simulator=sid) for info, sid in zip(block.reset_infos, self.slot_ids[a:b])]
        self._reset_seeds()
        self._reset_options()
        return np.concatenate(obs)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return _checked_seed(self, seed)

    def step_async(self, actions: np.ndarray) -> None:
        actions = _slot_actions(actions, self.num_envs)
        for block, a, b in self._spans():
            block.step_async(actions[a:b])

    def step_wait(self) -> VecEnvStepReturn:
        parts = [block.step_wait() for block in self.blocks]
        infos = [dict(info, simulator=sid) for info, sid in zip((i for p in parts for i in p[3]), self.slot_ids)]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]), infos)

    def close(self) -> None:
        for block in self.blocks:
            block.close()

    def action_masks(self) -> np.ndarray:
        """The (N, n) bool masks of the current observations, the blocks' in slot order."""
        return np.concatenate([block.action_masks() for block in self.blocks])

    def _locate(self, indices: VecEnvIndices):
        for k in self._get_indices(indices):
            j = int(np.searchsorted(self.offsets, k, side="right") - 1)
            if not 0 <= k < self.num_envs:
                raise IndexError(f"slot {k} is out of range for {self.num_envs} slots")
            yield self.blocks[j], k - int(self.offsets[j])

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [block.get_attr(attr_name, i)[0] for block, i in self._locate(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for block, i in self._locate(indices):
            block.set_attr(attr_name, value, i)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list:
        return [block.env_method(method_name, *method_args, indices=i, **method_kwargs)[0]
                for block, i in self._locate(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


class SB3Player:
    """An SB3 model as the other seat of a ``SingleAgentView``: the callable ``obs -> act`` that
    ``SingleAgentView(env, role, others={seat: SB3Player(model)})`` plays, ``obs`` being that seat's
    ``{"observation", "action_mask"}``.

    The model is one trained on that seat's ``SingleAgentView`` (``MultiInputPolicy``: it reads the dict) or on a
    flat observation (``MlpPolicy``: it reads ``observation``). Its act is the model's ``predict`` under the legal
    mask (sb3-contrib's ``MaskablePPO`` takes it as ``action_masks``; a model without masking that picks an
    illegal act is corrected by ``SingleAgentView``'s ``LegalActions``). ``deterministic``: the most probable act,
    else a draw from the model's distribution (SB3's generator, which the model's ``seed`` seeds)."""

    def __init__(self, model, deterministic: bool = False):
        if not callable(getattr(model, "predict", None)) or not hasattr(model, "observation_space"):
            raise TypeError(f"SB3Player plays an SB3 model (MaskablePPO, PPO, ...: its predict and "
                            f"observation_space), got {type(model).__name__} {short_repr(model)}")
        self.model, self.deterministic = model, deterministic
        self.reads_dict = hasattr(model.observation_space, "spaces")
        self.masked = "action_masks" in model.predict.__code__.co_varnames

    def __call__(self, obs) -> int:
        mask = np.asarray(obs["action_mask"], bool)
        x = {k: np.asarray(obs[k]) for k in self.model.observation_space.spaces} if self.reads_dict \
            else np.asarray(obs["observation"], np.float32)
        extra = {"action_masks": mask} if self.masked else {}
        act, _ = self.model.predict(x, deterministic=self.deterministic, **extra)
        return int(np.asarray(act).reshape(-1)[0])
