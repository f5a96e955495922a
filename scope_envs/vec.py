"""Batched rollouts: ``make_vec(id, num_envs=N)`` steps N episodes of one id together, as arrays.

    >>> import numpy as np, scope_envs
    >>> vec = scope_envs.make_vec("p4g-frozen", num_envs=4)
    >>> obs, infos = vec.reset(seed=0)
    >>> obs["agent_0"]["observation"].shape, obs["agent_0"]["action_mask"].shape
    ((4, 77), (4, 18))
    >>> acts = {"agent_0": np.full(4, 1)}  # a logical appeal in every episode
    >>> obs, rewards, terminations, truncations, infos = vec.step(acts)
    >>> rewards["agent_0"].shape, infos["active"]["agent_0"].tolist()
    ((4,), [True, True, True, True])

The API is PettingZoo's parallel one with a leading batch axis:

* ``obs[agent]``: ``{"observation": (N, dim) float32, "action_mask": (N, n) int8}`` for every agent of
  ``possible_agents``; a slot where the agent is not to move has only the no-op unmasked.
* ``step(actions)``: ``actions[agent]`` an int array (N,); only the slots where that agent moves are read
  (checked against the mask: an illegal act raises ``ValueError``). A simulator in the user seat replies
  inside ``step``, as in the scalar env.
* ``rewards[agent]``, ``terminations[agent]``, ``truncations[agent]``: (N,) arrays.
* ``infos``: ``active[agent]`` and ``live[agent]`` (bool (N,)), ``member`` (the user seat's member per
  slot), ``turn`` (turns played), ``_final_info`` (bool (N,): the slots whose episode ended this step) and,
  when any did, ``final_info``: the finished episodes' ``outcome`` (a dict of (N,) arrays, the game's
  outcome keys), ``agent_score``, ``return`` (``agent_0``'s), ``member``, ``persona`` and ``user_acts``
  (object arrays), valid where ``_final_info`` is set, as Gymnasium's vector envs keep them.
* Auto-reset in the same step (Gymnasium's ``SAME_STEP`` mode): a finished slot's observation is its next
  episode's first. ``next_episode(slot)`` decides: it returns ``reset`` options for the slot's next
  episode (``{}``, or ``{"scenario_seed": s}``), or None to leave the slot idle until ``reset``.
  ``reset(seed=s)`` seeds slot ``i`` with ``s + i`` (a list gives each slot its seed); ``slots=`` resets
  only those slots and leaves the others idle.

Every regime is covered, learnable users included (``user_j`` act in the slots whose episode drew them).
On p4g and cooperbench the game state and the built-in simulators' reply distributions (the frozen
simulator, rotation members, families, the held-out proxies at their default assumptions) are computed for
all N at once (``scope_envs.games.p4g.batched``, ``scope_envs.games.cooperbench.batched``); any other
user-seat player (verbalized sampling, a checkpoint pool's snapshots) is asked slot by slot through the
scalar env's own sampler; every other case loops over N scalar envs inside the same API (``LoopVecEnv``:
tau2, the text surface, text players, the held-out proxies' ``assumptions`` variants, any option this module
does not know). Each slot keeps its own generator, member schedule and dealing from a
scalar env of the id (``envs[i]``), so the batched path gives the same trajectories as N scalar envs seeded
alike (tests/test_vec.py plays every id both ways).

``GymVectorEnv(vec)`` is the single-agent case (``agent_0`` alone acts) as a ``gymnasium.vector.VectorEnv``,
for libraries that consume those (CleanRL-style loops; SB3 through a VecEnv adapter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from scope_envs.core.env import AGENT, LEARNABLE, DirectAnswer
from scope_envs.core.game import Turn
from scope_envs.core.simulator import Simulator, View
from scope_envs.core.surfaces import FEATURE_BOUND
from scope_envs.games.cooperbench.game import CooperBenchGame
from scope_envs.games.p4g.game import P4GGame
from scope_envs.registry import make

# the keyword arguments of make() that the batched engine reproduces; any other (a held-out proxy's
# assumption switch, say) falls back to looping the scalar envs, which implement it
BATCHED_KWARGS = frozenset({
    "surface", "max_turns", "user_reward", "gamma", "target_var", "width", "max_errors", "max_message_chars",
    "user", "k", "tau", "min_survivors", "weight_mode", "tail", "temperature", "selection",
    "schedule", "families", "family_seed", "members", "pool_size", "snapshot_every", "pool_sample", "personas",
})


def make_vec(id: str, num_envs: int = 16, **kwargs):
    """N episodes of ``id`` stepped together (``scope_envs.make(id, **kwargs)`` per slot; see the module)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    envs = [make(id, **kwargs) for _ in range(int(num_envs))]
    return vectorize(envs, batched=not set(kwargs) - BATCHED_KWARGS)


def vectorize(envs: list, batched: bool = True):
    """The vec env over these scalar envs of one id: batched where their game and players allow (and
    ``batched``), else ``LoopVecEnv``. The envs stay the slots' configuration: their members (a pool's
    snapshots join there), schedules, generators and dealing."""
    if batched:
        for cls in BATCHED:
            if cls.supports(envs):
                return cls(envs)
    return LoopVecEnv(envs)


# -- the shared part ---------------------------------------------------------------------------------------
class _VecBase:
    num_envs: int
    envs: list

    def __init__(self, envs):
        if not envs:
            raise ValueError("a vec env needs at least one env")
        self.envs = list(envs)
        self.num_envs = len(self.envs)
        self.next_episode: Callable[[int], dict | None] = lambda slot: {}
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

    def _reset_args(self, seed, options, slots):
        n = self.num_envs
        slots = list(range(n)) if slots is None else [int(s) for s in slots]
        if seed is None:
            seeds = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"seed must be an int or {n} seeds, got {len(seeds)}")
        if options is None or isinstance(options, dict):
            opts = [dict(options or {}) for _ in range(n)]
        else:
            opts = [dict(o or {}) for o in options]
        return slots, seeds, opts

    def close(self):
        for env in self.envs:
            env.close()


def _finished_record(game, agent_return: float, member: int, user_acts: list[int]) -> dict:
    try:
        score = float(game.agent_score())
    except NotImplementedError:
        score = None
    return {"outcome": {k: float(v) for k, v in game.outcome().items()}, "agent_score": score,
            "persona": getattr(game.persona, "id", None), "user_acts": user_acts, "member": member,
            "return": agent_return}


def _stack_final(records: list) -> dict:
    """Per-slot final records (None where no episode ended) as Gymnasium's arrays over the slots."""
    n = len(records)
    some = next(r for r in records if r is not None)
    outcome = {k: np.zeros(n) for k in some["outcome"]}
    score, ret, member = np.full(n, np.nan), np.zeros(n), np.zeros(n, np.int64)
    persona, user_acts = np.full(n, None, object), np.full(n, None, object)
    obs = {a: np.zeros((n, *x.shape), np.float32) for a, x in some.get("obs", {}).items()}
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


class LoopVecEnv(_VecBase):
    """N scalar envs behind the vec API (the path for what the batched engines do not cover)."""

    def reset(self, seed=None, options=None, slots=None):
        slots, seeds, opts = self._reset_args(seed, options, slots)
        n = self.num_envs
        self._obs, self._infos = [None] * n, [None] * n
        self._ret = np.zeros(n)
        self.idle[:] = True
        for i in slots:
            self._obs[i], self._infos[i] = self.envs[i].reset(seed=seeds[i], options=opts[i] or None)
            self.idle[i] = False
        return self._stack_obs(), self._stack_infos()

    def step(self, actions: dict[str, Any]):
        n, agents = self.num_envs, self.possible_agents
        rewards = {a: np.zeros(n) for a in agents}
        terms = {a: np.zeros(n, bool) for a in agents}
        truncs = {a: np.zeros(n, bool) for a in agents}
        final: list = [None] * n
        for i in range(n):
            if self.idle[i]:
                continue
            env = self.envs[i]
            act = {}
            for a in env.agents:
                act[a] = int(np.asarray(actions[a])[i]) if self._infos[i][a]["active"] else 0
            self._obs[i], rew, term, trunc, self._infos[i] = env.step(act)
            for a in rew:
                rewards[a][i], terms[a][i], truncs[a][i] = rew[a], term[a], trunc[a]
            self._ret[i] += rew.get(AGENT, 0.0)
            if not env.agents:
                game = env.unwrapped.game
                user_acts = [t.act for t in game.history if t.role == game.user_role]
                final[i] = _finished_record(game, float(self._ret[i]), env.unwrapped.member, user_acts)
                if self._final_obs:
                    final[i]["obs"] = {a: o["observation"] for a, o in self._obs[i].items()}
                self._ret[i] = 0.0
                nxt = self.next_episode(i)
                if nxt is None:
                    self.idle[i] = True
                else:
                    self._obs[i], self._infos[i] = env.reset(options=nxt or None)
        infos = self._stack_infos()
        if any(f is not None for f in final):
            infos["final_info"], infos["_final_info"] = _stack_final(final), np.array([f is not None for f in final])
        return self._stack_obs(), rewards, terms, truncs, infos

    def _stack_obs(self):
        out = {}
        for a in self.possible_agents:
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


# -- the batched engine ----------------------------------------------------------------------------------
class BatchedVecEnv(_VecBase):
    """The game's rules and the built-in simulators' replies computed for all slots at once (a game's
    subclass: ``P4GVecEnv``, ``CooperBenchVecEnv``).

    Other simulators in the user seat (verbalized sampling, a checkpoint pool's snapshots, any act-level
    ``Simulator``) are asked slot by slot with the same view, sampler and generator as the scalar env."""

    game_type: type

    @classmethod
    def supports(cls, envs) -> bool:
        from scope_envs.core.env import DialogueParallelEnv

        for env in envs:
            u = env.unwrapped
            if type(u) is not DialogueParallelEnv or u.surface.name != "act" or type(u.game) is not cls.game_type:
                return False
            if any(m != LEARNABLE and (not isinstance(m, Simulator) or m.plays_text) for m in u.members):
                return False
        return True

    def __init__(self, envs):
        super().__init__(envs)
        game = self.envs[0].unwrapped.game
        self.batch = self.make_batch(game)
        self.role_names = game.roles
        n = self.num_envs
        self._u = [e.unwrapped for e in self.envs]
        self.member = np.zeros(n, np.int64)
        self.seat = np.full(n, -1, np.int64)  # the learnable user_j in the user seat, -1: a simulator
        self.kind = np.full(n, -1, np.int64)  # the simulator's batched reply model (``_kinds``), -1: ask it
        self.follows = np.zeros(n, bool)  # its follow_through is its own (p4g's human proxy: the gap)
        self.persona: list = [None] * n
        self._ret = np.zeros(n)
        horizon = 2 * game.max_turns + 2
        self.hist_role = np.zeros((n, horizon), np.int64)
        self.hist_act = np.zeros((n, horizon), np.int64)
        self._masks = None
        self._kinds: list[tuple] = []  # batched reply models seen: ("reference", gamma, cooperation) | ...
        self._kind_of: dict = {}  # (id(sim), id(sampler)) -> (sim, sampler, code); holding sim keeps its id

    # -- a game's part ------------------------------------------------------------------------------------
    def make_batch(self, game):
        raise NotImplementedError

    def deal(self, i: int, env, sim, persona) -> dict:
        """Slot ``i``'s new game on ``persona`` (the scalar game's own dealing): the batch's card."""
        raise NotImplementedError

    def simulators(self) -> tuple[type, type]:
        """(the game's sharpened reference simulator class, its held-out proxy class)."""
        raise NotImplementedError

    def proxy_is_batched(self, proxy) -> bool:
        """Whether the batch computes this held-out proxy's replies (its default assumptions)."""
        return not vars(proxy)

    def batched_kind(self, sim, sampler) -> tuple | None:
        """``sim``'s batched reply model with its parameters, or None: ask it slot by slot. Batched: the game's
        reference model sharpened (the frozen simulator, rotation members, families) and its held-out proxy,
        answering directly."""
        from scope_envs.agents.base import SharpenedReference

        if type(sampler) is not DirectAnswer:
            return None
        reference, proxy = self.simulators()
        kind = type(sim)
        if isinstance(sim, reference) and kind.reference is reference.reference \
                and kind.distribution is SharpenedReference.distribution and kind.act is Simulator.act:
            return ("reference", float(sim.gamma), float(sim.cooperation))
        if kind is proxy and self.proxy_is_batched(sim):
            return ("human_proxy",)
        return None

    def reply(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Reply distributions of the batched model ``kind`` in slots ``idx``."""
        raise NotImplementedError

    def public_private(self, i: int, role: int) -> tuple[dict, dict]:
        """``game.info()`` and ``game.private(role)`` of slot ``i``."""
        raise NotImplementedError

    # -- episodes -------------------------------------------------------------------------------------
    def reset(self, seed=None, options=None, slots=None):
        slots, seeds, opts = self._reset_args(seed, options, slots)
        self.idle[:] = True
        for i in slots:
            if seeds[i] is not None:
                self._u[i]._rng = np.random.default_rng(seeds[i])
        self._start(slots, opts)
        self._run_simulators()
        return self._observe(), self._infos()

    def _start(self, slots: list[int], options: list[dict] | None) -> None:
        """``DialogueParallelEnv.reset`` of these slots: each one's generator, schedule and dealing."""
        cards = []
        for j, i in enumerate(slots):
            env = self._u[i]
            opt = options[j] if options is not None and len(options) > j else {}
            if opt.get("reset_schedule"):
                env.schedule.reset()
            env._started = True
            env.member = member = env.schedule.pick(len(env.members), env._rng)
            sim = env.members[member]
            sim = None if sim == LEARNABLE else sim
            persona = sim.persona if sim is not None and sim.persona is not None else None
            if persona is None:
                scenario = opt.get("scenario_seed")
                rng = env._rng if scenario is None else np.random.default_rng(scenario)
                persona = env.game.sample_persona(rng, env.split)
            env.game.user_player = sim
            cards.append(self.deal(i, env, sim, persona))
            self.persona[i] = persona
            self.member[i] = member
            agent = env.member_agent[member]
            self.seat[i] = -1 if agent is None else self._agent_index[agent]
            if sim is not None:
                self.kind[i] = self._kind(sim, env.user_sampler)
                self.follows[i] = type(sim).follow_through is not Simulator.follow_through
            else:
                self.kind[i], self.follows[i] = -1, False
        idx = np.array(slots, np.int64)
        self.batch.reset(idx, cards)
        self._ret[idx] = 0.0
        self.idle[idx] = False

    @property
    def _agent_index(self) -> dict[str, int]:
        return {a: j for j, a in enumerate(self.possible_agents[1:])}

    def _kind(self, sim, sampler) -> int:
        """The code of ``sim``'s batched reply model (into ``_kinds``), or -1: ask it slot by slot."""
        key = (id(sim), id(sampler))
        if key not in self._kind_of:
            kind = self.batched_kind(sim, sampler)
            if kind is not None and kind not in self._kinds:
                self._kinds.append(kind)
            self._kind_of[key] = (sim, sampler, -1 if kind is None else self._kinds.index(kind))
        return self._kind_of[key][2]

    # -- stepping -------------------------------------------------------------------------------------
    def step(self, actions: dict[str, Any]):
        n, b = self.num_envs, self.batch
        if self._masks is None:
            raise ValueError("step() called before reset(); call reset(seed=...) first")
        active, live = self._active, ~self.idle
        acting = np.flatnonzero(active == 0)
        if len(acting):
            self._apply(0, acting, self._read(actions, AGENT, acting, 0))
        users = active == 1
        if users.any():
            for j, agent in enumerate(self.possible_agents[1:]):
                idx = np.flatnonzero(users & (self.seat == j))
                if len(idx):
                    self._apply(1, idx, self._read(actions, agent, idx, 1))
        self._run_simulators()
        ended = np.flatnonzero(b.done & live)
        agents = self.possible_agents
        rewards = {a: np.zeros(n) for a in agents}
        terms = {a: np.zeros(n, bool) for a in agents}
        truncs = {a: np.zeros(n, bool) for a in agents}
        final = None
        if len(ended):
            r_agent, r_user = b.rewards(ended)
            rewards[AGENT][ended] = r_agent
            terms[AGENT][ended] = True
            for j, agent in enumerate(agents[1:]):
                mine = self.seat[ended] == j
                rewards[agent][ended[mine]] = r_user[mine]
                terms[agent][ended[mine]] = True
            self._ret[ended] += r_agent
            final = self._final(ended)
            restart, options = [], []
            for i in ended.tolist():
                self._u[i].schedule.episode_end(int(self.member[i]), float(self._ret[i]))
                nxt = self.next_episode(i)
                if nxt is not None:
                    restart.append(i)
                    options.append(nxt)
            self.idle[ended] = True
            if restart:
                self._start(restart, options)
                self._run_simulators()
        obs = self._observe()
        infos = self._infos()
        if final is not None:
            infos["final_info"], infos["_final_info"] = final, final.pop("_mask")
        return obs, rewards, terms, truncs, infos

    def _final(self, ended: np.ndarray) -> dict:
        """The finished slots' final info, Gymnasium style: arrays over all slots, valid where ``_mask``."""
        b, n = self.batch, self.num_envs
        mask = np.zeros(n, bool)
        mask[ended] = True
        outcome = {}
        for k, v in b.outcome(ended).items():
            outcome[k] = np.zeros(n)
            outcome[k][ended] = v
        score, ret = np.full(n, np.nan), np.zeros(n)
        score[ended], ret[ended] = b.agent_score(ended), self._ret[ended]
        persona, user_acts = np.full(n, None, object), np.full(n, None, object)
        for i in ended.tolist():
            length = b.length[i]
            persona[i] = self.persona[i].id
            user_acts[i] = self.hist_act[i, :length][self.hist_role[i, :length] == 1].tolist()
        final = {"outcome": outcome, "agent_score": score, "return": ret, "member": self.member.copy(),
                 "persona": persona, "user_acts": user_acts, "_mask": mask}
        if self._final_obs:
            final["obs"] = {AGENT: np.clip(b.features(0), -FEATURE_BOUND, FEATURE_BOUND)}
        return final

    def _read(self, actions, agent, idx, role) -> np.ndarray:
        if agent not in actions:
            raise ValueError(f"{agent}: it is this agent's turn in slots {idx[:5].tolist()} but no action was given")
        a = np.asarray(actions[agent])
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(f"{agent}: actions must be an int array of shape ({self.num_envs},), got "
                             f"{a.dtype} {a.shape}")
        a = a[idx].astype(np.int64)
        n_acts = self.batch.n_acts[role]
        bad = (a < 0) | (a >= n_acts)
        if not bad.any():
            bad = ~self._masks[role][idx, a].astype(bool)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{agent}: act {int(a[j])} is illegal in slot {int(idx[j])} (masked in action_mask "
                             f"or out of range [0, {n_acts}))")
        return a

    def _apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> None:
        b = self.batch
        pos = b.length[idx]
        self.hist_role[idx, pos], self.hist_act[idx, pos] = role, acts
        ended = b.apply(role, idx, acts)
        if len(ended):
            self.settle(ended)

    def settle(self, ended: np.ndarray) -> None:
        """What a game does once over beyond its rules (p4g: the simulator's follow-through)."""

    def _run_simulators(self) -> None:
        """Let the simulators in the user seat reply: the built-in ones batched over every slot they play
        (the same model at the same parameters), any other slot by slot."""
        b = self.batch
        while True:
            active = b.active()
            todo = np.flatnonzero(~self.idle & (active == 1) & (self.seat < 0))
            if not len(todo):
                return
            legal = b.legal(1, active)
            kinds = self.kind[todo]
            for code in np.unique(kinds).tolist():
                idx = todo[kinds == code]
                if code < 0:
                    acts = np.array([self._ask(i, legal[i]) for i in idx.tolist()], np.int64)
                else:
                    p = self.reply(self._kinds[code], idx, legal[idx])
                    u = np.array([self._u[i]._rng.random() for i in idx.tolist()])
                    cdf = np.cumsum(p, 1)
                    cdf /= cdf[:, -1:]
                    acts = (cdf <= u[:, None]).sum(1)
                self._apply(1, idx, acts)

    def _ask(self, i: int, legal: np.ndarray) -> int:
        """One slot's simulator turn through the scalar env's own sampler (``DialogueParallelEnv._run_simulator``)."""
        env = self._u[i]
        sim = env.simulator
        choice, _ = env.user_sampler(sim, self.view(i, 1, legal, sim.wants_observation), env._rng)
        return int(choice)

    def view(self, i: int, role: int, legal: np.ndarray, observation: bool = False) -> View:
        """Slot ``i``'s ``View`` of ``role``, as the scalar env builds it."""
        b, env = self.batch, self._u[i]
        length = b.length[i]
        names = self.role_names
        history = tuple(Turn(names[r], a) for r, a in zip(self.hist_role[i, :length].tolist(),
                                                           self.hist_act[i, :length].tolist()))
        obs = None
        if observation:
            obs = np.clip(b.features(role)[i], -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)
        public, private = self.public_private(i, role)
        return View(role=names[role], persona=self.persona[i] if role == 1 else None, history=history,
                    legal=np.asarray(legal, bool), instructions=env.game.instructions(names[role]),
                    public=public, private=private, observation=obs)

    # -- what the agents see ----------------------------------------------------------------------------
    def _observe(self):
        b = self.batch
        active = b.active()
        active[self.idle] = -1
        self._active = active
        self._masks = [b.legal(0, active), b.legal(1, active)]
        obs = {AGENT: {"observation": np.clip(b.features(0), -FEATURE_BOUND, FEATURE_BOUND),
                       "action_mask": self._masks[0].astype(np.int8)}}
        users = self.possible_agents[1:]
        if users:
            x = np.clip(b.features(1), -FEATURE_BOUND, FEATURE_BOUND)
            m = self._masks[1].astype(np.int8)
            noop = self.batch._noop[1].astype(np.int8)
            for j, a in enumerate(users):
                mine = (self.seat == j) & ~self.idle
                obs[a] = {"observation": np.where(mine[:, None], x, np.float32(0)),
                          "action_mask": np.where(mine[:, None], m, noop[None])}
        return obs

    def _infos(self):
        n, live = self.num_envs, ~self.idle
        active = {AGENT: self._active == 0}
        lives = {AGENT: live}
        for j, a in enumerate(self.possible_agents[1:]):
            mine = (self.seat == j) & live
            lives[a], active[a] = mine, mine & (self._active == 1)
        return {"active": active, "live": lives, "member": self.member.copy(), "turn": self.batch.length.copy(),
                "_final_info": np.zeros(n, bool)}


class P4GVecEnv(BatchedVecEnv):
    """Persuasion for Good batched (``scope_envs.games.p4g.batched``)."""

    game_type = P4GGame

    def make_batch(self, game):
        from scope_envs.games.p4g.batched import P4GBatch

        return P4GBatch(self.num_envs, game.max_turns, game.user_reward)

    def deal(self, i, env, sim, persona):
        from scope_envs.games.p4g.batched import card_terms

        if env.game.persona is not persona:  # p4g's reset draws nothing: the scalar game keeps the card in step
            env.game.reset(persona, env._rng)
        return card_terms(persona)

    def simulators(self):
        from scope_envs.agents.p4g import HumanProxyPersuadee, ReferencePersuadee

        return ReferencePersuadee, HumanProxyPersuadee

    def proxy_is_batched(self, proxy) -> bool:
        """``P4GBatch.human_proxy_reply`` computes the default assumptions only."""
        from scope_envs.games.p4g import human_proxy

        return vars(proxy) == {"assumptions": human_proxy.DEFAULT}

    def reply(self, kind, idx, legal):
        from scope_envs.agents.base import normalize, sharpen

        if kind[0] == "reference":
            return normalize(sharpen(self.batch.reference_reply(idx, legal, kind[2]), kind[1]), legal)
        return self.batch.human_proxy_reply(idx, legal)

    def settle(self, ended):
        """The gift a stated amount becomes (``P4GGame.apply``): the simulator's follow-through."""
        b = self.batch
        actual = b.intended(ended)
        for j in np.flatnonzero(self.follows[ended]).tolist():
            env = self._u[int(ended[j])]
            actual[j] = float(env.simulator.follow_through(float(actual[j]), env._rng))
        b.settle(ended, actual)

    def public_private(self, i, role):
        b = self.batch
        stated = float(b.intended(np.array([i]))[0]) if b.stated[i] >= 0 else None
        return {"stated": stated, "final": bool(b.final[i]), "persuader_turns": int(b.turns[i])}, {}


class CooperBenchVecEnv(BatchedVecEnv):
    """CooperBench batched (``scope_envs.games.cooperbench.batched``)."""

    game_type = CooperBenchGame

    def make_batch(self, game):
        from scope_envs.games.cooperbench.batched import CooperBenchBatch

        self.traits = np.zeros((self.num_envs, 5))
        self.coins: list = [None] * self.num_envs
        return CooperBenchBatch(self.num_envs, game.max_turns, game.user_reward)

    def deal(self, i, env, sim, persona):
        from scope_envs.games.cooperbench.batched import coins
        from scope_envs.games.cooperbench.styles import TRAITS

        game = env.game
        game.reset(persona, env._rng)  # draws the task from the slot's generator
        kind = None if sim is None else self.batched_kind(sim, env.user_sampler)
        if kind is not None and kind[0] == "reference":
            c = kind[2]  # ``agents.cooperbench._cooperative``: every trait moved up by the cooperation
            self.traits[i] = [min(1.0, persona.traits[t] + c) if c else persona.traits[t] for t in TRAITS]
        elif kind is not None:
            self.traits[i] = [persona.traits[t] for t in TRAITS]
            self.coins[i] = coins(persona.id, game.task.id, game.max_turns)
        return {"needs": game.task.needs, "talk": persona.traits.get("talk", 0.5)}

    def simulators(self):
        from scope_envs.agents.cooperbench import HumanProxyPartner, ReferencePartner

        return ReferencePartner, HumanProxyPartner

    def reply(self, kind, idx, legal):
        from scope_envs.agents.base import normalize, sharpen

        if kind[0] == "reference":
            return normalize(sharpen(self.batch.decide(idx, legal, self.traits[idx], None), kind[1]), legal)
        coins = [self.coins[i] for i in idx.tolist()]
        return self.batch.decide(idx, legal, self.traits[idx], {key: np.array([c[key] for c in coins])
                                                               for key in coins[0]})

    def public_private(self, i, role):
        b, other, names = self.batch, 1 - role, self.role_names
        game = self._u[i].game
        regions = [frozenset(np.flatnonzero(row).tolist()) for row in (b.needs[i, role], b.known[i, role],
                                                                        b.claims[i, other], b.claims[i, role])]
        feature = ("A",) if role == 0 else ("B",)
        edits = {int(r): (feature if code == 1 else ("A", "B")) for r, code in enumerate(b.edits[i, role].tolist())
                 if code}
        public = {"turns": dict(zip(names, b.turns[i].tolist())),
                  "submitted": dict(zip(names, map(bool, b.submitted[i])))}
        private = {"task": game.task.id, "needs": regions[0], "known": regions[1], "partner_claims": regions[2],
                   "own_claims": regions[3], "edits": edits, "asked": bool(b.asked[i, role]),
                   "announced": bool(b.announced[i, role]), "reported": bool(b.reported[i, role]),
                   "partner_done": bool(b.reported[i, other] or b.submitted[i, other]), "turn": int(b.turns[i, role])}
        return public, private


BATCHED = (P4GVecEnv, CooperBenchVecEnv)


# -- Gymnasium's vector API (single-agent) ----------------------------------------------------------------
def gym_vector_env(vec):
    """The single-agent case (``agent_0`` alone acts) as a ``gymnasium.vector.VectorEnv`` in ``SAME_STEP``
    auto-reset mode: observations ``Dict(observation, action_mask)`` batched, ``infos["final_obs"]`` and
    ``infos["final_info"]`` for the slots that finished (see ``GymVectorEnv``)."""
    return GymVectorEnv(vec)


try:
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError:  # pragma: no cover (gymnasium < 1.1)
    VectorEnv, AutoresetMode, batch_space = object, None, None


def noop_mask(n: int) -> np.ndarray:
    """The action mask of a finished episode: only the no-op."""
    mask = np.zeros(n, np.int8)
    mask[0] = 1
    return mask


class GymVectorEnv(VectorEnv):
    """A ``gymnasium.vector.VectorEnv`` over a vec env whose only acting agent is ``agent_0``."""

    def __init__(self, vec):
        if vec.possible_agents != [AGENT]:
            raise ValueError(f"the Gymnasium view needs a single-agent id (frozen, vs, rotation, heldout); this "
                             f"one has agents {vec.possible_agents}")
        self.vec = vec
        self.num_envs = vec.num_envs
        self.single_observation_space = vec.observation_space(AGENT)
        self.single_action_space = vec.action_space(AGENT)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
        self.n_acts = self.single_action_space.n
        vec._final_obs = True

    def reset(self, *, seed=None, options=None):
        obs, infos = self.vec.reset(seed=seed, options=options)
        return obs[AGENT], {"member": infos["member"]}

    def step(self, actions):
        obs, rew, term, trunc, infos = self.vec.step({AGENT: np.asarray(actions, np.int64)})
        out = {"member": infos["member"]}
        done = infos["_final_info"]
        if done.any():
            final = infos["final_info"]
            x = final["obs"][AGENT]
            out["final_obs"] = np.full(self.num_envs, None, object)
            for i in np.flatnonzero(done):
                out["final_obs"][i] = {"observation": x[i], "action_mask": noop_mask(self.n_acts)}
            out["final_info"] = {"return": final["return"], "agent_score": final["agent_score"],
                                 **final["outcome"], "_return": done, "_agent_score": done,
                                 **{f"_{k}": done for k in final["outcome"]}}
            out["_final_obs"] = out["_final_info"] = done
        return obs[AGENT], rew[AGENT], term[AGENT], trunc[AGENT], out

    def close(self, **kwargs):
        self.vec.close()
