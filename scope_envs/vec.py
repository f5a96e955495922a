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

Fast mode, ``make_vec(id, num_envs, exact=False)``: the same games, players and API, but one generator
(seeded by ``reset(seed=s)`` with ``s`` itself, or the list of seeds given) drives all N slots, so nothing
is drawn slot by slot: every simulator reply of a step from one call, each new episode's persona (and
cooperbench task) drawn as indices into the split with the card's terms read from arrays built once per
split, the member picked at once where the schedule is the default one (a single member, or uniform over
the roster). What keeps per-slot state still runs per slot, on the shared generator: ``MemberSchedule``
(rotation and population schedules), a checkpoint pool's pick, simulators asked slot by slot (``vs``, pool
snapshots, custom users), ``scenario_seed`` options, the human proxy's follow-through. Episodes are then not those of N scalar envs seeded alike, but they are drawn from the
same distribution: tests/test_vec_fast.py compares 10,000 episodes of each mode per id (outcomes, lengths,
the user's acts) and shows the comparison rejects a perturbed engine. Fast mode applies to the batched
engines only; an id or option that loops over scalar envs (``LoopVecEnv``) runs exact, with no error
(``vec.exact`` says which mode runs).

``GymVectorEnv(vec)`` is the single-agent case (``agent_0`` alone acts) as a ``gymnasium.vector.VectorEnv``,
for libraries that consume those (CleanRL-style loops; SB3 through a VecEnv adapter).
"""

from __future__ import annotations

import functools
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

SPLITS = ("train", "heldout")  # an env's split (``DialogueParallelEnv.split``), as codes in fast mode

# the keyword arguments of make() that the batched engine reproduces; any other (a held-out proxy's
# assumption switch, say) falls back to looping the scalar envs, which implement it
BATCHED_KWARGS = frozenset({
    "surface", "max_turns", "user_reward", "gamma", "target_var", "width", "max_errors", "max_message_chars",
    "user", "k", "tau", "min_survivors", "weight_mode", "tail", "temperature", "selection",
    "schedule", "families", "family_seed", "members", "pool_size", "snapshot_every", "pool_sample", "personas",
})


def make_vec(id: str, num_envs: int = 16, exact: bool = True, **kwargs):
    """N episodes of ``id`` stepped together (``scope_envs.make(id, **kwargs)`` per slot; see the module).
    ``exact=False``: fast mode, one generator for all slots (the same distribution of episodes, not the
    same episodes as N scalar envs; see the module)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact must be a bool, got {exact!r}")
    envs = [make(id, **kwargs) for _ in range(int(num_envs))]
    return vectorize(envs, batched=not set(kwargs) - BATCHED_KWARGS, exact=bool(exact))


def vectorize(envs: list, batched: bool = True, exact: bool = True):
    """The vec env over these scalar envs of one id: batched where their game and players allow (and
    ``batched``), else ``LoopVecEnv``. The envs stay the slots' configuration: their members (a pool's
    snapshots join there), schedules, generators and dealing. ``exact=False``: the batched engine's fast
    mode (one generator for all slots); the loop path is always exact."""
    if batched:
        for cls in BATCHED:
            if cls.supports(envs):
                return cls(envs, exact=exact)
    return LoopVecEnv(envs)


def _always_next(slot: int) -> dict:
    """The default ``next_episode``: every slot starts its next episode at once."""
    return {}


# -- the shared part ---------------------------------------------------------------------------------------
class _VecBase:
    num_envs: int
    envs: list
    exact = True  # the same episodes as N scalar envs seeded alike (``BatchedVecEnv(exact=False)``: fast mode)

    def __init__(self, envs):
        if not envs:
            raise ValueError("a vec env needs at least one env")
        self.envs = list(envs)
        self.num_envs = len(self.envs)
        self.next_episode: Callable[[int], dict | None] = _always_next
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

    def __init__(self, envs, exact: bool = True):
        super().__init__(envs)
        self.exact = exact
        self._rng = np.random.default_rng()  # fast mode's one generator (exact mode: each slot's env._rng)
        game = self.envs[0].unwrapped.game
        self.batch = self.make_batch(game)
        self.batch.track_proxy = False  # until a slot's member is the held-out proxy (``_kind``)
        self.role_names = game.roles
        n = self.num_envs
        self._u = [e.unwrapped for e in self.envs]
        self.member = np.zeros(n, np.int64)
        self.seat = np.full(n, -1, np.int64)  # the learnable user_j in the user seat, -1: a simulator
        self.kind = np.full(n, -1, np.int64)  # the simulator's batched reply model (``_kinds``), -1: ask it
        self.follows = np.zeros(n, bool)  # its follow_through is its own (p4g's human proxy: the gap)
        self.persona = np.full(n, None, object)
        self.persona_id = np.full(n, None, object)
        self._ret = np.zeros(n)
        horizon = 2 * game.max_turns + 2
        self.hist_role = np.zeros((n, horizon), np.int64)
        self.hist_act = np.zeros((n, horizon), np.int64)
        self._masks = None
        self._kinds: list[tuple] = []  # batched reply models seen: ("reference", gamma, cooperation) | ...
        self._kind_of: dict = {}  # (id(sim), id(sampler)) -> (sim, sampler, code); holding sim keeps its id
        # fast mode: each slot's roster as arrays over (slot, member), rebuilt when the env's members change
        self._m_ref: list = [None] * n
        self._m_count = np.zeros(n, np.int64)
        self._m_kind = np.full((n, 1), -1, np.int64)
        self._m_seat = np.full((n, 1), -1, np.int64)
        self._m_follows = np.zeros((n, 1), bool)
        self._m_own = np.full((n, 1), -1, np.int64)  # a simulator's own persona (into ``_own``), -1: dealt
        self._own: list = []
        self._m_learnable = np.zeros((n, 1), bool)
        self._split_code = np.zeros(n, np.int64)
        self._default_schedules = False

    # -- a game's part ------------------------------------------------------------------------------------
    def make_batch(self, game):
        raise NotImplementedError

    def deal(self, i: int, env, sim, persona, rng) -> dict:
        """Slot ``i``'s new game on ``persona`` (the scalar game's own dealing, drawing from ``rng``): the
        batch's card."""
        raise NotImplementedError

    def deal_many(self, idx: np.ndarray, split: str | None, persona=None) -> None:
        """Fast mode: new games in slots ``idx`` on personas of ``split`` drawn from the shared generator (the
        cards read from the split's arrays), or all on ``persona``, the members' own (any task drawn from
        the shared generator); sets ``persona`` and ``persona_id``."""
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
        if self.exact:
            for i in slots:
                if seeds[i] is not None:
                    self._u[i]._rng = np.random.default_rng(seeds[i])
        elif isinstance(seed, (int, np.integer)):
            self._rng = np.random.default_rng(int(seed))
        elif seed is not None and all(s is not None for s in seeds):
            self._rng = np.random.default_rng([int(s) for s in seeds])
        from scope_envs.core.env import FirstOrUniform

        self._default_schedules = all(type(u.schedule) is FirstOrUniform for u in self._u)
        self._split_code = np.array([SPLITS.index(u.split) for u in self._u], np.int64)
        self._start(slots, opts)
        self._run_simulators()
        return self._observe(), self._infos()

    def _start(self, slots: list[int], options: list[dict] | None) -> None:
        """``DialogueParallelEnv.reset`` of these slots: each one's generator, schedule and dealing."""
        if not self.exact:
            self._start_fast(slots, options)
            return
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
            cards.append(self.deal(i, env, sim, persona, env._rng))
            self.persona[i], self.persona_id[i] = persona, persona.id
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

    def _start_fast(self, slots: list[int], options: list[dict] | None) -> None:
        """``_start`` on the shared generator: members, personas (and tasks) and cards drawn for all these
        slots at once; per slot only what keeps per-slot state (see the module)."""
        idx = np.asarray(slots, np.int64)
        if not len(idx):
            return
        rng = self._rng
        scenario: dict[int, int] = {}
        for j, opt in enumerate(options or ()):
            if opt and j < len(idx):
                i = int(idx[j])
                if opt.get("reset_schedule"):
                    self._u[i].schedule.reset()
                if opt.get("scenario_seed") is not None:
                    scenario[i] = opt["scenario_seed"]
        self._rosters(idx)
        count = self._m_count[idx]
        if self._default_schedules:  # FirstOrUniform: the only member, or one drawn uniformly
            member = np.zeros(len(idx), np.int64)
            many = count > 1
            if many.any():
                member[many] = rng.integers(count[many])
        else:
            member = np.array([self._u[i].schedule.pick(c, rng) for i, c in zip(idx.tolist(), count.tolist())],
                              np.int64)
        self.member[idx] = member
        self.kind[idx] = kind = self._m_kind[idx, member]
        self.seat[idx] = self._m_seat[idx, member]
        self.follows[idx] = self._m_follows[idx, member]
        # slot by slot: a simulator asked through the scalar env (its view reads the scalar game), a scenario
        # seed
        slow = (kind < 0) & ~self._m_learnable[idx, member]
        if scenario:
            slow |= np.isin(idx, list(scenario))
        if slow.any():
            cards, ones = [], idx[slow]
            for i, m in zip(ones.tolist(), member[slow].tolist()):
                env = self._u[i]
                sim = env.members[m]
                sim = None if sim == LEARNABLE else sim
                persona = sim.persona if sim is not None and sim.persona is not None else None
                if persona is None:
                    seed = scenario.get(i)
                    persona = env.game.sample_persona(rng if seed is None else np.random.default_rng(seed), env.split)
                env.game.user_player = sim
                cards.append(self.deal(i, env, sim, persona, rng))
                self.persona[i], self.persona_id[i] = persona, persona.id
            self.batch.reset(ones, cards)
            idx, member = idx[~slow], member[~slow]
        own = self._m_own[idx, member]
        groups = [(int(own[0]), idx)] if len(own) and (own == own[0]).all() else \
            [(code, idx[own == code]) for code in np.unique(own).tolist()]
        for code, mine in groups:  # the frozen simulators play their own (default) persona
            if code < 0:
                codes = self._split_code[mine]
                for split in np.unique(codes).tolist():
                    self.deal_many(mine[codes == split], SPLITS[split])
            else:
                self.deal_many(mine, None, self._own[code])
        idx = np.asarray(slots, np.int64)
        self._ret[idx] = 0.0
        self.idle[idx] = False

    def _rosters(self, idx: np.ndarray) -> None:
        """Fast mode: the (slot, member) arrays of these slots, rebuilt where the env's members changed (a
        checkpoint pool's snapshot joins through ``set_members``, a new list)."""
        for i in idx.tolist():
            env = self._u[i]
            if env.members is self._m_ref[i]:
                continue
            k = len(env.members)
            if k > self._m_kind.shape[1]:
                pad = k - self._m_kind.shape[1]
                self._m_kind = np.pad(self._m_kind, ((0, 0), (0, pad)), constant_values=-1)
                self._m_seat = np.pad(self._m_seat, ((0, 0), (0, pad)), constant_values=-1)
                self._m_follows = np.pad(self._m_follows, ((0, 0), (0, pad)))
                self._m_own = np.pad(self._m_own, ((0, 0), (0, pad)), constant_values=-1)
                self._m_learnable = np.pad(self._m_learnable, ((0, 0), (0, pad)))
            index = self._agent_index
            for m, sim in enumerate(env.members):
                agent = env.member_agent[m]
                self._m_seat[i, m] = -1 if agent is None else index[agent]
                learnable = sim == LEARNABLE
                self._m_learnable[i, m] = learnable
                self._m_kind[i, m] = -1 if learnable else self._kind(sim, env.user_sampler)
                self._m_follows[i, m] = not learnable and type(sim).follow_through is not Simulator.follow_through
                own = None if learnable else sim.persona
                if own is not None and own not in self._own:  # equal cards (each env's default) share a code
                    self._own.append(own)
                self._m_own[i, m] = -1 if own is None else self._own.index(own)
            self._m_count[i] = k
            self._m_ref[i] = env.members

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
                self.batch.track_proxy = any(k[0] == "human_proxy" for k in self._kinds)
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
            if not self._default_schedules:  # FirstOrUniform.episode_end does nothing
                for i, m, r in zip(ended.tolist(), self.member[ended].tolist(), self._ret[ended].tolist()):
                    self._u[i].schedule.episode_end(m, r)
            if self.next_episode is _always_next:
                restart, options = ended.tolist(), None
            else:
                restart, options = [], []
                for i in ended.tolist():
                    nxt = self.next_episode(i)
                    if nxt is not None:
                        restart.append(i)
                        options.append(nxt)
            self.idle[ended] = True
            if restart:
                self._start(restart, options)
                if b.user_opens:  # else the new episodes open with the agent's move
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
        keys, values = zip(*b.outcome(ended).items())
        table = np.zeros((len(keys), n))  # every outcome key at once: one row each
        table[:, ended] = values
        outcome = dict(zip(keys, table))
        score, ret = np.full(n, np.nan), np.zeros(n)
        score[ended], ret[ended] = b.agent_score(ended), self._ret[ended]
        persona, user_acts = np.full(n, None, object), np.full(n, None, object)
        persona[ended] = self.persona_id[ended]
        # the user's acts of every finished slot in one pass, then cut into one list per slot
        length = b.length[ended]
        width = int(length.max())
        theirs = (self.hist_role[ended, :width] == 1) & (np.arange(width) < length[:, None])
        acts = self.hist_act[ended, :width][theirs].tolist()
        start = 0
        for i, end in zip(ended.tolist(), np.cumsum(theirs.sum(1)).tolist()):
            user_acts[i], start = acts[start:end], end
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
            if (kinds == kinds[0]).all():  # the usual case: one model in every slot
                groups = [(int(kinds[0]), todo)]
            else:
                groups = [(code, todo[kinds == code]) for code in np.unique(kinds).tolist()]
            for code, idx in groups:
                if code < 0:
                    acts = np.array([self._ask(i, legal[i]) for i in idx.tolist()], np.int64)
                elif self.exact:
                    p = self.reply(self._kinds[code], idx, legal[idx])
                    u = np.array([self._u[i]._rng.random() for i in idx.tolist()])
                    cdf = np.cumsum(p, 1)
                    cdf /= cdf[:, -1:]
                    acts = (cdf <= u[:, None]).sum(1)
                else:  # one draw for all the slots; the weights need no normalizing for inverse-CDF sampling
                    w = self.reply_weights(self._kinds[code], idx, legal[idx])
                    cdf = w @ self._triu(w.shape[1])  # the running sums, as one product (faster than cumsum)
                    acts = (cdf <= (self._rng.random(len(idx)) * cdf[:, -1])[:, None]).sum(1)
                self._apply(1, idx, acts)
            if b.user_replies_once:  # the agent moves next (or the game is over) in every slot
                return

    def reply_weights(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Fast mode: weights proportional to ``reply``'s distributions, zero off the legal acts."""
        return self.reply(kind, idx, legal)

    @staticmethod
    @functools.cache
    def _triu(k: int) -> np.ndarray:
        return np.triu(np.ones((k, k)))

    def _ask(self, i: int, legal: np.ndarray) -> int:
        """One slot's simulator turn through the scalar env's own sampler (``DialogueParallelEnv._run_simulator``)."""
        env = self._u[i]
        sim = env.simulator
        rng = env._rng if self.exact else self._rng
        choice, _ = env.user_sampler(sim, self.view(i, 1, legal, sim.wants_observation), rng)
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
        users = self.possible_agents[1:]
        self._masks = [b.legal(0, active), b.legal(1, active) if users else None]
        x = b.features(0)
        obs = {AGENT: {"observation": np.clip(x, -FEATURE_BOUND, FEATURE_BOUND, out=x),
                       "action_mask": self._masks[0].astype(np.int8)}}
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


def power(p: np.ndarray, gamma: float) -> np.ndarray:
    """``p ** gamma``; a small whole ``gamma`` (the default 3) by products, several times faster than ``pow``
    (fast mode only: the last bit may differ from ``np.power``)."""
    if gamma in (1.0, 2.0, 3.0, 4.0):
        q = p
        for _ in range(int(gamma) - 1):
            q = q * p
        return q
    return np.power(p, gamma)


class P4GVecEnv(BatchedVecEnv):
    """Persuasion for Good batched (``scope_envs.games.p4g.batched``)."""

    game_type = P4GGame

    def make_batch(self, game):
        from scope_envs.games.p4g.batched import P4GBatch

        return P4GBatch(self.num_envs, game.max_turns, game.user_reward)

    def deal(self, i, env, sim, persona, rng):
        from scope_envs.games.p4g.batched import card_terms

        if env.game.persona is not persona:  # p4g's reset draws nothing: the scalar game keeps the card in step
            env.game.reset(persona, rng)
        return card_terms(persona)

    def deal_many(self, idx, split, persona=None):
        from scope_envs.games.p4g.batched import card_terms, split_cards

        if persona is not None:
            self.batch.reset_terms(idx, card_terms(persona))
            self.persona[idx], self.persona_id[idx] = persona, persona.id
            return
        table = split_cards(split)
        drawn = self._rng.integers(len(table["ids"]), size=len(idx))  # ``personas.sample``, all at once
        self.batch.reset_terms(idx, {k: v[drawn] for k, v in table["terms"].items()})
        self.persona[idx], self.persona_id[idx] = table["personas"][drawn], table["ids"][drawn]

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

    def reply_weights(self, kind, idx, legal):
        if kind[0] == "reference":  # ``sharpen`` unnormalized (``reference_reply`` is zero off the legal acts)
            return power(self.batch.reference_reply(idx, legal, kind[2], normalized=False), kind[1])
        return self.batch.human_proxy_reply(idx, legal, normalized=False)

    def settle(self, ended):
        """The gift a stated amount becomes (``P4GGame.apply``): the simulator's follow-through."""
        b = self.batch
        actual = b.intended(ended)
        for j in np.flatnonzero(self.follows[ended]).tolist():
            i = int(ended[j])
            env = self._u[i]
            sim = env.members[int(self.member[i])]
            actual[j] = float(sim.follow_through(float(actual[j]), env._rng if self.exact else self._rng))
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
        self.task_id = np.full(self.num_envs, None, object)
        self._own_styles: dict = {}
        batch = CooperBenchBatch(self.num_envs, game.max_turns, game.user_reward)
        self.coins = {k: np.zeros((self.num_envs, *np.shape(v))) for k, v in batch.coins("", "").items()}
        return batch

    def deal(self, i, env, sim, persona, rng):
        from scope_envs.games.cooperbench.styles import TRAITS

        game = env.game
        game.reset(persona, rng)  # draws the task from the slot's generator
        self.task_id[i] = game.task.id
        kind = None if sim is None else self.batched_kind(sim, env.user_sampler)
        if kind is not None and kind[0] == "reference":
            c = kind[2]  # ``agents.cooperbench._cooperative``: every trait moved up by the cooperation
            self.traits[i] = [min(1.0, persona.traits[t] + c) if c else persona.traits[t] for t in TRAITS]
        elif kind is not None:
            self.traits[i] = [persona.traits[t] for t in TRAITS]
            for k, v in self.batch.coins(persona.id, game.task.id).items():
                self.coins[k][i] = v
        return {"needs": game.task.needs, "talk": persona.traits.get("talk", 0.5)}

    def deal_many(self, idx, split, persona=None):
        from scope_envs.games.cooperbench.batched import (
            split_styles,
            split_tasks,
            style_table,
        )
        from scope_envs.games.cooperbench.world import SPLIT_KEYS

        rng = self._rng
        if persona is None:
            styles = split_styles(split)
            drawn = rng.integers(len(styles["ids"]), size=len(idx))  # ``styles.sample``, all at once
        else:  # ``CooperBenchGame.reset``: a card of no split draws a train task
            if id(persona) not in self._own_styles:  # ``_own`` keeps the card, hence its id
                self._own_styles[id(persona)] = style_table((persona,))
            styles, drawn = self._own_styles[id(persona)], np.zeros(len(idx), np.int64)
            split = persona.split if persona.split in SPLIT_KEYS else "train"
        tasks = split_tasks(split)
        task = rng.integers(len(tasks["ids"]), size=len(idx))  # ``CooperBenchGame.reset``'s task
        self.batch.reset_needs(idx, tasks["needs"][task], styles["talk"][drawn])
        self.persona[idx], self.persona_id[idx] = styles["personas"][drawn], styles["ids"][drawn]
        self.task_id[idx] = tasks["ids"][task]
        kinds = self.kind[idx]
        for code in np.unique(kinds).tolist():
            if code < 0:  # a learnable user: no policy to parameterize
                continue
            sel = kinds == code
            kind, traits = self._kinds[code], styles["traits"][drawn[sel]]
            if kind[0] == "reference":
                c = kind[2]
                traits = np.minimum(1.0, traits + c) if c else traits
            else:
                for j, (i, p, t) in enumerate(zip(idx[sel].tolist(), drawn[sel].tolist(), task[sel].tolist())):
                    for k, v in self.batch.coins(styles["ids"][p], tasks["ids"][t]).items():
                        self.coins[k][i] = v
            self.traits[idx[sel]] = traits

    def simulators(self):
        from scope_envs.agents.cooperbench import HumanProxyPartner, ReferencePartner

        return ReferencePartner, HumanProxyPartner

    def reply_weights(self, kind, idx, legal):
        if kind[0] == "reference":  # ``sharpen`` unnormalized (``decide`` is zero off the legal acts)
            return power(self.batch.decide(idx, legal, self.traits[idx], None), kind[1])
        return self.reply(kind, idx, legal)

    def reply(self, kind, idx, legal):
        from scope_envs.agents.base import normalize, sharpen

        if kind[0] == "reference":
            return normalize(sharpen(self.batch.decide(idx, legal, self.traits[idx], None), kind[1]), legal)
        return self.batch.decide(idx, legal, self.traits[idx], {k: v[idx] for k, v in self.coins.items()})

    def public_private(self, i, role):
        b, other, names = self.batch, 1 - role, self.role_names
        regions = [frozenset(np.flatnonzero(row).tolist()) for row in (b.needs[i, role], b.known[i, role],
                                                                        b.claims[i, other], b.claims[i, role])]
        feature = ("A",) if role == 0 else ("B",)
        edits = {int(r): (feature if code == 1 else ("A", "B")) for r, code in enumerate(b.edits[i, role].tolist())
                 if code}
        public = {"turns": dict(zip(names, b.turns[i].tolist())),
                  "submitted": dict(zip(names, map(bool, b.submitted[i])))}
        private = {"task": self.task_id[i], "needs": regions[0], "known": regions[1], "partner_claims": regions[2],
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
