"""What every vec env shares (``VecBase``: slots, reset arguments, ``next_episode``) and ``LoopVecEnv``,
N scalar envs behind the vec API: the path for what the batched engines do not cover."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from scope_envs.core.checks import check_actions, check_int, check_reset_options, check_seed, short_repr
from scope_envs.core.env import AGENT, DialogueParallelEnv
from scope_envs.core.game import InGameError
from scope_envs.train.groups import agent_score


def holds_bool(value) -> bool:
    """``value`` is a list or tuple holding a bool, which ``np.asarray`` would read as an int (True as 1)."""
    return isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value)


def int_column(value, n: int) -> np.ndarray | None:
    """``value`` as an int array of shape (n,), or None where it is not one: a float or bool array, a list holding a
    bool (``holds_bool``), a ragged list (numpy's own error names no argument), another length."""
    if holds_bool(value):
        return None
    try:
        a = np.asarray(value)
    except ValueError:
        return None
    return a if a.shape == (n,) and a.dtype.kind in "iu" else None


def always_next(slot: int) -> dict:
    """The default ``next_episode``: every slot starts its next episode at once."""
    return {}


class VecBase:
    num_envs: int
    envs: list

    def _act_column(self, actions, agent: str, slots) -> np.ndarray:
        """``actions[agent]``, an int array of shape (N,) on the act surface, or a ``ValueError`` naming ``agent``:
        missing where it moves (in ``slots``), or another shape or dtype (a float or bool array, a scalar, a
        wrong length); both engines refuse the same."""
        if agent not in actions:
            raise ValueError(f"{agent}: it is this agent's turn in slots {list(slots)[:5]} but no action was given")
        a = int_column(actions[agent], self.num_envs)
        if a is None:
            given = actions[agent]
            raise ValueError(f"{agent}: actions must be an int array of shape ({self.num_envs},), got " + (
                f"{given.dtype} {given.shape}" if isinstance(given, np.ndarray) else
                f"{type(given).__name__} {short_repr(given)}"))
        return a

    def __init__(self, envs):
        if not envs:
            raise ValueError("a vec env needs at least one env")
        self.envs = list(envs)
        self.num_envs = len(self.envs)
        self.next_episode: Callable[[int], dict | None] = always_next
        self.idle = np.ones(self.num_envs, bool)
        self._final_obs = False  # also keep the finished episodes' last observations (final_info["obs"])

    @property
    def possible_agents(self) -> list[str]:
        return list(self.envs[0].possible_agents)

    def observation_space(self, agent):
        return self.envs[0].observation_space(agent)

    def action_space(self, agent):
        return self.envs[0].action_space(agent)

    @property
    def unwrapped(self):
        return self

    def _check_agents(self, actions) -> None:
        """An action for an agent the id does not have is refused, as the scalar env and the batched endpoint do."""
        check_actions(actions, "an action per slot")
        possible = self.possible_agents
        for agent in actions:
            if agent not in possible:
                raise ValueError(f"unknown agent {short_repr(agent)}; possible agents are {possible}")

    def _reset_args(self, seed, options, slots):
        n = self.num_envs
        slots = list(range(n)) if slots is None else self._check_slots(slots)
        expected = f"an int >= 0 or a sequence of {n} of them (one per slot)"
        if seed is None:
            seeds = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            seeds = [int(check_int("seed", seed, 0, wanted=expected)) + i for i in range(n)]
        else:
            try:
                if isinstance(seed, (str, bytes, Mapping, bool, np.bool_)):
                    raise TypeError
                seeds = list(seed)
            except TypeError:
                raise ValueError(f"seed must be {expected}, got {type(seed).__name__} {short_repr(seed)}") from None
            if len(seeds) != n:
                raise ValueError(f"seed must be {expected}, got a sequence of {len(seeds)}")
            for i, s in enumerate(seeds):  # None: that slot's seed is left out (its generator is kept)
                check_seed(f"seed[{i}]", s)
        if options is None or isinstance(options, Mapping):
            one = check_reset_options("options", options)
            opts = [dict(one) for _ in range(n)]
        else:  # one dict (or None) per slot
            wanted = f"a dict (such as {{'scenario_seed': 3}}), None, or a sequence of {n} of them (one per slot)"
            if isinstance(options, (str, bytes)) or not hasattr(options, "__len__") or len(options) != n:
                raise ValueError(f"options must be {wanted}, got {type(options).__name__} {short_repr(options)}")
            opts = [check_reset_options(f"options[{i}]", o) for i, o in enumerate(options)]
        return slots, seeds, opts

    def _check_streams(self, streams) -> None:
        """``reset(streams=)``: None, or a label in [0, num_envs] per slot (``BatchedVecEnv.reset``)."""
        if streams is None:
            return
        label = int_column(streams, self.num_envs)
        if label is None or (len(label) and (label.min() < 0 or label.max() > self.num_envs)):
            raise ValueError(f"streams must be {self.num_envs} labels in [0, {self.num_envs}], one per slot")

    def _check_slots(self, slots) -> list[int]:
        """``reset(slots=)``: distinct slot indices in [0, num_envs), refused whole before any slot is reset."""
        n = self.num_envs
        wanted = f"a sequence of distinct slot indices in [0, {n})"
        if isinstance(slots, (str, bytes, Mapping)) or not hasattr(slots, "__iter__"):
            raise ValueError(f"slots must be {wanted}, got {type(slots).__name__} {short_repr(slots)}")
        slots = list(slots)
        for s in slots:
            check_int("slots", s, 0, n - 1, wanted=wanted)
        if len(set(int(s) for s in slots)) != len(slots):
            raise ValueError(f"slots must be {wanted}: a slot is listed more than once, got {short_repr(slots)}")
        return [int(s) for s in slots]

    def close(self):
        for env in self.envs:
            env.close()


def _finished_record(game, agent_return: float, member: int, user_acts: list[int]) -> dict:
    return {"outcome": {k: float(v) for k, v in game.outcome().items()}, "agent_score": agent_score(game),
            "persona": getattr(game.persona, "id", None), "user_acts": user_acts, "member": member,
            "return": agent_return}


def _stack_final(records: list) -> dict:
    """Per-slot final records (None where no episode ended) as Gymnasium's arrays over the slots."""
    n = len(records)
    some = next(r for r in records if r is not None)
    outcome = {k: np.zeros(n) for k in some["outcome"]}
    score, ret, member = np.full(n, np.nan), np.zeros(n), np.zeros(n, np.int64)
    persona, user_acts = np.full(n, None, object), np.full(n, None, object)
    # (a text agent's last observations: an object array of strings, "" where no episode ended)
    obs = {a: np.zeros((n, *x.shape), np.float32) if isinstance(x, np.ndarray) else np.full(n, np.str_(""), object)
           for a, x in some.get("obs", {}).items()}
    for i, r in enumerate(records):
        if r is None:
            continue
        for k, v in r["outcome"].items():
            outcome[k][i] = v
        score[i] = np.nan if r["agent_score"] is None else r["agent_score"]
        ret[i], member[i], persona[i], user_acts[i] = r["return"], r["member"], r["persona"], r["user_acts"]
        for a, x in r.get("obs", {}).items():
            obs[a][i] = x
    final = {"outcome": outcome, "agent_score": score, "return": ret, "member": member, "persona": persona,
             "user_acts": user_acts}
    if obs:
        final["obs"] = obs
    return final


class LoopVecEnv(VecBase):
    """N scalar envs behind the vec API (the path for what the batched engines do not cover).

    On the text surface an agent's observations are Gymnasium's batch of a ``Text`` space
    (``gymnasium.vector.utils.batch_space``): a tuple of N strings, each the scalar env's transcript (``""`` where
    the agent is not live), and its actions are a sequence of N strings (only the slots where it moves are read)."""

    @functools.cached_property
    def _text(self) -> frozenset:
        """The agents whose observations are text (the text surface) rather than ``Dict(observation,
        action_mask)`` arrays: fixed when the envs are made."""
        return frozenset(a for a in self.possible_agents if not isinstance(self.observation_space(a), spaces.Dict))

    def _column(self, actions, agent: str, text: bool, slot: int) -> list:
        """``actions[agent]`` as a list over the slots (read lazily: only the slots where the agent moves), refused
        as the batched engine refuses it (``BatchedVecEnv._read``): missing where ``agent`` moves in ``slot``, or on
        the act surface not an int array of shape (N,) (a float or bool array, a scalar, a wrong length)."""
        if not text:
            return self._act_column(actions, agent, [slot]).tolist()
        if agent not in actions:
            raise ValueError(f"{agent}: it is this agent's turn in slots [{slot}] but no action was given")
        col = actions[agent]
        if isinstance(col, (str, bytes)) or not hasattr(col, "__len__") or len(col) != self.num_envs:
            raise ValueError(f"{agent}: actions must be a sequence of {self.num_envs} strs on the text surface "
                             f"(one per slot), got {type(col).__name__} {short_repr(col)}")
        return list(col)

    def reset(self, seed=None, options=None, slots=None, streams=None):
        """``streams`` is the batched engine's (``BatchedVecEnv.reset``): each scalar env draws from its own generator."""
        slots, seeds, opts = self._reset_args(seed, options, slots)
        self._check_streams(streams)  # (this engine has no use for them: refused as the batched engine's are)
        n = self.num_envs
        self._obs, self._infos = [None] * n, [None] * n
        self._ret = np.zeros(n)
        self.idle[:] = True
        for i in slots:
            self._obs[i], self._infos[i] = self.envs[i].reset(seed=seeds[i], options=opts[i] or None)
            self.idle[i] = False
        return self._stack_obs(), self._stack_infos()

    def step(self, actions: dict[str, Any]):
        self._check_agents(actions)
        n, agents, text = self.num_envs, self.possible_agents, self._text
        rewards = {a: np.zeros(n) for a in agents}
        terms = {a: np.zeros(n, bool) for a in agents}
        truncs = {a: np.zeros(n, bool) for a in agents}
        final: list = [None] * n
        columns: dict[str, list] = {}  # each agent's actions as Python numbers, converted once per step
        acts: list = [None] * n
        for i in range(n):
            if self.idle[i]:
                continue
            env = self.envs[i]
            act = acts[i] = {}
            for a in env.agents:
                if self._infos[i][a]["active"]:
                    col = columns.get(a)
                    if col is None:
                        col = columns[a] = self._column(actions, a, a in text, i)
                    act[a] = col[i] if a in text else int(col[i])
                else:
                    act[a] = "" if a in text else 0  # the no-op (on the text surface any str, unread off turn)
            if type(env) is DialogueParallelEnv:  # every slot's acts checked before any slot moves
                for a, value in act.items():
                    try:
                        env.surface.parse(a, env._role[a], value, self._infos[i][a]["active"])
                    except InGameError:
                        pass  # malformed model output is an in-game error of that slot's turn, not a refusal
        for i in range(n):
            if self.idle[i]:
                continue
            env, act = self.envs[i], acts[i]
            if type(env) is DialogueParallelEnv:
                # an unwrapped env skips building its full infos: of a step's infos this engine reads only
                # "active" (a wrapper's step may read or add to them, so a wrapped env steps in full)
                self._obs[i], rew, term, trunc, self._infos[i] = env._step(act, False)
            else:
                self._obs[i], rew, term, trunc, self._infos[i] = env.step(act)
            for a in rew:
                rewards[a][i], terms[a][i], truncs[a][i] = rew[a], term[a], trunc[a]
            self._ret[i] += rew.get(AGENT, 0.0)
            if not env.agents:
                game = env.unwrapped.game
                user_acts = [t.act for t in game.history if t.role == game.user_role]
                final[i] = _finished_record(game, float(self._ret[i]), env.unwrapped.member, user_acts)
                if self._final_obs:  # every seat's, a user's zero (or "") where another member was seated
                    final[i]["obs"] = {a: self._last_obs(a, i, text) for a in agents}
                self._ret[i] = 0.0
                nxt = self.next_episode(i)
                if nxt is None:
                    self.idle[i] = True
                else:
                    nxt = check_reset_options(f"next_episode({i})", nxt)
                    self._obs[i], self._infos[i] = env.reset(options=nxt or None)
        infos = self._stack_infos()
        if any(f is not None for f in final):
            infos["final_info"], infos["_final_info"] = _stack_final(final), np.array([f is not None for f in final])
        return self._stack_obs(), rewards, terms, truncs, infos

    def _last_obs(self, agent: str, i: int, text: frozenset):
        o = self._obs[i].get(agent)
        if agent in text:
            return np.str_("") if o is None else o
        return np.zeros(self.observation_space(agent)["observation"].shape, np.float32) if o is None else \
            o["observation"]

    def _stack_obs(self):
        out = {}
        for a in self.possible_agents:
            if a in self._text:  # Gymnasium's batch of a Text space, a tuple
                out[a] = tuple(o[a] if not self.idle[i] and a in o else np.str_("") for i, o in enumerate(self._obs))
                continue
            space = self.observation_space(a)
            x = np.zeros((self.num_envs, *space["observation"].shape), np.float32)
            m = np.zeros((self.num_envs, *space["action_mask"].shape), np.int8)
            m[:, 0] = 1
            for i, o in enumerate(self._obs):
                if not self.idle[i] and a in o:
                    x[i], m[i] = o[a]["observation"], o[a]["action_mask"]
            out[a] = {"observation": x, "action_mask": m}
        return out

    def _stack_infos(self):
        n = self.num_envs
        active = {a: np.zeros(n, bool) for a in self.possible_agents}
        live = {a: np.zeros(n, bool) for a in self.possible_agents}
        for i, info in enumerate(self._infos):
            if self.idle[i]:
                continue
            for a, d in info.items():
                live[a][i], active[a][i] = True, bool(d["active"])
        member = np.array([e.unwrapped.member for e in self.envs])
        turn = np.array([len(e.unwrapped.game.history) for e in self.envs])
        return {"active": active, "live": live, "member": member, "turn": turn, "_final_info": np.zeros(n, bool)}
