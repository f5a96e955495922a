"""TorchRL on the batched engine: ``TorchRLVecEnv`` is ``make_vec(id, num_envs)`` as a TorchRL ``EnvBase``.

TorchRL's ``PettingZooWrapper`` steps one scalar env, so a trainer that wants N episodes at once wraps N of them
in a ``SerialEnv`` and pays Python's per-env cost N times a step. ``TorchRLVecEnv`` is one env of batch size
``(num_envs,)`` over the batched engine (``scope_envs.vec``): every slot's step is one array computation, as a
VMAS env is to TorchRL, and BenchMARL's tasks run on it (``scope_envs.integrations.benchmarl``). Install the
extra: ``pip install "scope-envs[torchrl]"``.

    >>> from torchrl.envs.utils import check_env_specs
    >>> from scope_envs.integrations.torchrl_env import TorchRLVecEnv
    >>> env = TorchRLVecEnv("p4g-cotrain", num_envs=8, seed=0)
    >>> env.group_map
    {'agent': ['agent_0'], 'user': ['user_0']}
    >>> check_env_specs(env)
    >>> rollout = env.rollout(20, break_when_any_done=False)  # random legal acts, every slot
    >>> rollout["next", "agent", "reward"].shape
    torch.Size([8, 20, 1, 1])

The layout is ``PettingZooWrapper``'s (``use_mask=True``, ``categorical_actions=True``), with the batch axis first:

* **Groups**: agents named ``<group>_<int>`` share a group, as TorchRL groups a PettingZoo env: ``agent``
  (``agent_0``) and, where users learn, ``user`` (``user_0``; a ``population``'s K members ``user_0`` ... ``user_{K-1}``,
  which TorchRL's wrapper cannot group). ``group_map`` (a dict, or TorchRL's ``MarlGroupMapType``) regroups them;
  a group's agents need the same observation and action sizes.
* Per group, shapes ``(num_envs, agents)``: ``("observation", "observation")`` (float32 features),
  ``"action_mask"`` (bool: the legal acts; only the no-op for an agent not to move, not seated, or whose episode
  just ended), ``"mask"`` (the agent is seated in the slot's episode), ``"action"`` (int64 act ids, masked:
  ``rand_action`` draws legal acts), ``"reward"`` (trailing 1), ``"done"`` / ``"terminated"`` / ``"truncated"``
  (trailing 1), and the same three done keys at the root, one per slot. An episode ends every seat's.
* **Resets**: the engine starts a finished slot's next episode in the same step. ``step`` returns the finished
  episode's last observation under ``"next"`` (as TorchRL expects), and ``reset`` with a ``"_reset"`` mask of the
  slots that just finished (what a collector's ``step_and_maybe_reset`` sends) hands over the episodes already
  begun. A reset of a slot whose episode is running is refused; a reset of every slot starts them all afresh.
* **Seeds**: ``seed=`` (or ``set_seed``) seeds the next full reset, slot ``i`` with ``seed + i`` as ``make_vec``'s
  ``reset(seed=...)`` does; resets after it continue the slots' generators.

Every id of the act surface works, ``**kwargs`` going to ``scope_envs.make``; the text surface is refused (its
acts are strings). An illegal act raises the engine's ``ValueError``.
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase
from torchrl.envs.utils import MarlGroupMapType

from scope_envs.vec import make_vec, noop_mask

DONE_KEYS = ("done", "terminated", "truncated")


def default_group_map(agents: list[str]) -> dict[str, list[str]]:
    """Agents named ``<group>_<int>`` grouped under ``<group>``, any other alone (TorchRL's PettingZoo grouping)."""
    groups: dict[str, list[str]] = {}
    for agent in agents:
        prefix, _, index = agent.rpartition("_")
        groups.setdefault(prefix if prefix and index.isdigit() else agent, []).append(agent)
    return groups


class TorchRLVecEnv(EnvBase):
    """``make_vec(env_id, num_envs, **kwargs)`` as a TorchRL env of batch size ``(num_envs,)`` (the module)."""

    def __init__(self, env_id: str, num_envs: int = 16, *, seed: int | None = None, device="cpu",
                 group_map: dict[str, list[str]] | MarlGroupMapType | None = None, **kwargs):
        vec = make_vec(env_id, num_envs, **kwargs)
        agents = vec.possible_agents
        spaces = {a: vec.observation_space(a) for a in agents}
        if not all(hasattr(s, "spaces") and "action_mask" in s.spaces for s in spaces.values()):
            vec.close()
            raise ValueError(f"{env_id}: TorchRLVecEnv steps the act surface (int acts under an action mask); on the "
                             "text surface step make_vec itself, a string per slot")
        if group_map is None:
            group_map = default_group_map(agents)
        elif isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(agents)
        self.group_map = {g: list(members) for g, members in dict(group_map).items()}
        grouped = sorted(a for members in self.group_map.values() for a in members)
        if grouped != sorted(agents):
            vec.close()
            raise ValueError(f"group_map must place each of {agents} in exactly one group, got {self.group_map}")
        self.vec, self.env_id, self.num_envs = vec, env_id, int(num_envs)
        vec._final_obs = True  # a finished episode's last observation: "next" of the step that ends it
        super().__init__(device=device, batch_size=torch.Size([self.num_envs]))
        self._make_specs(spaces)
        self._seed = seed
        self._ended = np.zeros(self.num_envs, bool)  # the slots whose episode ended in the last step
        self._obs = self._infos = None

    def _make_specs(self, spaces) -> None:
        n = self.num_envs
        obs, act, rew, done = {}, {}, {}, {}
        for g, members in self.group_map.items():
            first = spaces[members[0]]
            box, n_acts = first["observation"], int(first["action_mask"].shape[0])
            for a in members[1:]:
                if spaces[a]["observation"].shape != box.shape or spaces[a]["action_mask"].shape[0] != n_acts:
                    raise ValueError(f"group {g!r}: its agents {members} need the same observation and action sizes "
                                     f"to share a group; give each its own group (group_map)")
            k, shape = len(members), (n, len(members))
            low = torch.as_tensor(np.broadcast_to(box.low, (*shape, *box.shape)).copy())
            high = torch.as_tensor(np.broadcast_to(box.high, (*shape, *box.shape)).copy())
            obs[g] = Composite(
                observation=Composite(observation=Bounded(low, high, shape=(*shape, *box.shape), dtype=torch.float32,
                                                          device=self.device), shape=shape),
                action_mask=Categorical(2, shape=(*shape, n_acts), dtype=torch.bool, device=self.device),
                mask=Categorical(2, shape=shape, dtype=torch.bool, device=self.device), shape=shape)
            act[g] = Composite(action=Categorical(n_acts, shape=shape, dtype=torch.int64, device=self.device),
                               shape=shape)
            rew[g] = Composite(reward=Unbounded(shape=(*shape, 1), dtype=torch.float32, device=self.device),
                               shape=shape)
            done[g] = Composite({key: Categorical(2, shape=(n, k, 1), dtype=torch.bool, device=self.device)
                                 for key in DONE_KEYS}, shape=shape)
        self.observation_spec = Composite(obs, shape=(n,))
        self.action_spec = Composite(act, shape=(n,))
        self.reward_spec = Composite(rew, shape=(n,))
        self.done_spec = Composite({**done, **{key: Categorical(2, shape=(n, 1), dtype=torch.bool,
                                                                device=self.device)
                                               for key in DONE_KEYS}}, shape=(n,))

    # -- the engine's arrays as TorchRL's tensors -----------------------------------------------------------------
    def _observation(self, obs: dict, infos: dict, ended: np.ndarray | None = None, final: dict | None = None,
                     seats: dict | None = None) -> dict:
        """Each group's observation entries; ``ended`` slots show their finished episode's last observation
        (``final``), its seats (``seats``: the step's ``live`` before it ended) and only the no-op."""
        out = {}
        for g, members in self.group_map.items():
            x = np.stack([obs[a]["observation"] for a in members], 1)
            m = np.stack([obs[a]["action_mask"] for a in members], 1).astype(bool)
            seated = np.stack([infos["live"][a] for a in members], 1)
            if ended is not None and ended.any():
                x[ended] = np.stack([final["obs"][a][ended] for a in members], 1)
                m[ended] = noop_mask(m.shape[-1]).astype(bool)
                seated[ended] = np.stack([seats[a] for a in members], 1)[ended]
            shape = (self.num_envs, len(members))
            out[g] = TensorDict({"observation": TensorDict({"observation": torch.from_numpy(x)}, batch_size=shape),
                                 "action_mask": torch.from_numpy(m), "mask": torch.from_numpy(seated)},
                                batch_size=shape)
            self.action_spec[g, "action"].update_mask(out[g]["action_mask"].to(self.device))
        return out

    def _set_seed(self, seed: int | None) -> None:
        self._seed = seed

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        n = self.num_envs
        reset = self._reset_slots(tensordict)
        if reset is None or reset.all() or self._obs is None:
            self._obs, self._infos = self.vec.reset(seed=self._seed)
            self._seed = None
        elif not self._ended[reset].all():
            running = np.flatnonzero(reset & ~self._ended).tolist()
            raise ValueError(f"slots {running[:8]} are mid-episode: TorchRLVecEnv resets every slot, or the slots "
                             "whose episode just ended (the engine has begun their next one)")
        self._ended = np.zeros(n, bool)
        out = self._observation(self._obs, self._infos)
        for g, members in self.group_map.items():
            out[g].update({key: torch.zeros(n, len(members), 1, dtype=torch.bool) for key in DONE_KEYS})
        out.update({key: torch.zeros(n, 1, dtype=torch.bool) for key in DONE_KEYS})
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def _reset_slots(self, tensordict: TensorDictBase | None) -> np.ndarray | None:
        """The slots a partial reset asks for (any of the root's or a group's ``_reset``), None for all."""
        if tensordict is None:
            return None
        masks = [tensordict.get(key, None) for key in self.reset_keys]
        masks = [m.reshape(self.num_envs, -1).any(-1).cpu().numpy() for m in masks if m is not None]
        return np.logical_or.reduce(masks) if masks else None

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = {}
        for g, members in self.group_map.items():
            acts = tensordict.get((g, "action")).cpu().numpy().astype(np.int64, copy=False)
            for j, a in enumerate(members):
                actions[a] = np.ascontiguousarray(acts[:, j])
        seats = self._infos["live"]  # of the episodes this step may end
        self._obs, rewards, terms, truncs, self._infos = self.vec.step(actions)
        ended = self._infos["_final_info"]
        out = self._observation(self._obs, self._infos, ended, self._infos.get("final_info"), seats)
        n = self.num_envs
        for g, members in self.group_map.items():
            r = np.stack([rewards[a] for a in members], 1).astype(np.float32)
            trunc = np.stack([truncs[a] for a in members], 1)
            out[g]["reward"] = torch.from_numpy(r)[..., None]
            # an episode ends for every seat at once, the unseated members of a population included
            term = np.repeat(ended[:, None], len(members), 1) & ~trunc
            out[g]["terminated"] = torch.from_numpy(term)[..., None]
            out[g]["truncated"] = torch.from_numpy(trunc)[..., None]
            out[g]["done"] = torch.from_numpy(term | trunc)[..., None]
        truncated = np.logical_or.reduce(list(truncs.values()))
        self._ended = ended.copy()
        out["terminated"] = torch.from_numpy(ended & ~truncated).reshape(n, 1)
        out["truncated"] = torch.from_numpy(truncated).reshape(n, 1)
        out["done"] = torch.from_numpy(ended | truncated).reshape(n, 1)
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.vec.close()
        super().close(raise_if_closed=raise_if_closed)
