"""``BatchedVecEnv``: a game's rules and the built-in simulators' replies for all slots at once, each slot drawing
from its stream's generator (``reset(streams=)``; by default one stream for all slots). The games' engines are in
``scope_envs.vec.games``."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from scope_envs.core.checks import check_reset_options
from scope_envs.core.env import AGENT, LEARNABLE, DirectAnswer, member_generator
from scope_envs.core.game import Turn
from scope_envs.core.simulator import Simulator, View
from scope_envs.core.surfaces import FEATURE_BOUND
from scope_envs.vec.base import VecBase, always_next

SPLITS = ("train", "heldout")  # an env's split (``DialogueParallelEnv.split``), as codes
# the roster fields of a member (dealing reads them): its batched reply model (``_kinds``; -1: none), its learnable user
# (-1: a simulator), whether its follow-through is its own, its own persona (into ``_own``; -1: dealt), and
# whether it is asked slot by slot (a simulator without a batched model)
ROSTER = KIND, SEAT, FOLLOWS, OWN, ASK = range(5)
ROSTER_EMPTY = np.array([-1, -1, 0, -1, 1], np.int64)


class BatchedVecEnv(VecBase):
    """The game's rules and the built-in simulators' replies computed for all slots at once (a game's
    subclass: ``P4GVecEnv``, ``CooperBenchVecEnv``, ``Tau2VecEnv``).

    Verbalized sampling of the game's reference is batched too (``_verbalized``), and so is any simulator that
    answers from the observation alone (``Simulator.distributions``: a checkpoint pool's snapshots). Other
    simulators in the user seat (verbalized sampling of any other simulator, any other act-level ``Simulator``)
    are asked slot by slot with the same view, sampler and generator as the scalar env."""

    game_type: type
    # Whether the built-in reply models compute each row alone (elementwise arithmetic and per-row sums, no
    # product of matrices over rows): then one call for every stream's slots rounds each row as its stream's own
    # call would. Where a model multiplies matrices over rows (p4g's ``reply_weights``), a BLAS may round a row
    # by the number of rows, so each stream's rows are computed apart.
    replies_by_row: bool = False

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
        # the generators by stream label, and each slot's label (``reset(streams=)``)
        self._rngs = {0: np.random.default_rng()}
        self.stream = np.zeros(self.num_envs, np.int64)
        game = self.envs[0].unwrapped.game
        self.batch = self.make_batch(game)
        self.batch.track_proxy = False  # until a slot's member is the held-out proxy (``_kind``)
        self.role_names = game.roles
        n = self.num_envs
        self._u = [e.unwrapped for e in self.envs]
        self._users = self.possible_agents[1:]  # the learnable users' agents, user_j at j
        self._agent_index = {a: j for j, a in enumerate(self._users)}
        self.member = np.zeros(n, np.int64)
        # the user seat's occupant, as the first ``ROSTER`` fields (dealing from integers writes them at once): its
        # batched reply model (``_kinds``; -1: ask it), the learnable user_j in it (-1: a simulator), whether
        # its follow_through is its own (p4g's human proxy: the gap)
        self._seated = np.tile(ROSTER_EMPTY[: FOLLOWS + 1], (n, 1))
        self._seated[:, FOLLOWS] = 0
        self.kind, self.seat, self.follows = self._seated.T
        self.persona = np.full(n, None, object)
        self.persona_id = np.full(n, None, object)
        self._ret = np.zeros(n)
        horizon = 2 * game.max_turns + 2
        self.hist_role = np.zeros((n, horizon), np.int64)
        self.hist_act = np.zeros((n, horizon), np.int64)
        self._masks = None
        # batched reply models seen: ("reference", sharpening, cooperation) | ("vs_reference", sharpening, cooperation,
        # noise, the sampler's options) | ...
        self._kinds: list[tuple] = []
        self._kind_of: dict = {}  # (id(sim), id(sampler)) -> (sim, sampler, code); holding sim keeps its id
        # each slot's roster as one array over (slot, member, ``ROSTER`` field), rebuilt when the
        # env's members change; one gather reads every field of the members drawn
        self._m_ref: list = [None] * n
        self._m_count = np.zeros(n, np.int64)
        self._roster = np.tile(ROSTER_EMPTY, (n, 1, 1))
        self._own: list = []
        self._split_code = np.zeros(n, np.int64)
        self._one_split: str | None = None  # the split of every slot, if they share one
        self._default_schedules = False

    # -- a game's part ------------------------------------------------------------------------------------
    def make_batch(self, game):
        raise NotImplementedError

    def deal(self, i: int, env, sim, persona, rng) -> dict:
        """Slot ``i``'s new game on ``persona`` (the scalar game's own dealing, drawing from ``rng``): the
        batch's card."""
        raise NotImplementedError

    def deal_many(self, idx: np.ndarray, split: str | None, persona, rng: np.random.Generator) -> None:
        """New games in slots ``idx`` on personas of ``split`` (the cards read from the split's arrays), or all on
        ``persona``, the members' own; sets ``persona`` and ``persona_id``. The personas (and any task) are drawn
        from ``rng``, the slots' stream's generator."""
        raise NotImplementedError

    def sync_scalar(self, i: int) -> None:
        """Bring slot ``i``'s scalar game to its episode where ``deal_many`` dealt it (it resets no scalar game), for a
        simulator asked slot by slot (``view``): its user in the seat here; a game's own part (its persona and
        task: the view's instructions) after."""
        sim = self.seated(i)
        self._u[i].game.user_player = None if sim == LEARNABLE else sim

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
        from scope_envs.wrappers.verbalized import VerbalizedSampler

        reference, proxy = self.simulators()
        # the game's reference model, as the simulator's class declares it (agents/base.py SharpenedReference)
        replies = getattr(sim, "batched_replies", frozenset()) if isinstance(sim, reference) \
            and sim.batched_reference is not None and sim.batched_reference == reference.batched_reference \
            else frozenset()
        if isinstance(sampler, VerbalizedSampler):  # its draw from the reference's verbalized top-k (``_verbalized``)
            if not sampler.batched or "verbalized" not in replies:
                return None
            return ("vs_reference", float(sim.sharpening), float(sim.cooperation), float(sim.calibration_noise),
                    sampler.options)
        if type(sampler) is not DirectAnswer:
            return None
        if "direct" in replies:
            return ("reference", float(sim.sharpening), float(sim.cooperation))
        if type(sim) is proxy and self.proxy_is_batched(sim):
            return ("human_proxy",)
        if sim.wants_observation and type(sim).distributions is not Simulator.distributions \
                and type(sim).act is Simulator.act:
            return ("observation",)  # each slot's own simulator, all the slots of one at once (``_observed``)
        return None

    def reply(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Reply distributions of the batched model ``kind`` in slots ``idx``: the reference sharpened (as
        ``SharpenedReference.distribution``), or the held-out proxy's (``proxy_reply``)."""
        from scope_envs.agents.base import normalize, sharpen

        if kind[0] == "reference":
            return normalize(sharpen(self.reference(kind, idx, legal), kind[1]), legal)
        return self.proxy_reply(idx, legal)

    def proxy_reply(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The held-out proxy's reply distributions in slots ``idx`` (its default assumptions)."""
        raise NotImplementedError

    def reference(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``SharpenedReference.reference`` (unsharpened) in slots ``idx`` at ``kind``'s cooperation (``kind[2]``),
        bit for bit: what ``verbalize`` states."""
        raise NotImplementedError

    def public_private(self, i: int, role: int) -> tuple[dict, dict]:
        """``game.info()`` and ``game.private(role)`` of slot ``i``."""
        raise NotImplementedError

    # -- episodes -------------------------------------------------------------------------------------
    def reset(self, seed=None, options=None, slots=None, streams=None):
        """``streams``: each slot's generator, a label in [0, num_envs] per slot (default: as the last reset set
        them, at first one stream for all); the slots of a label share a generator. Each stream draws for its own
        slots only, is seeded from their seeds alone and keeps its generator while its label stays, so a stream's
        episodes depend on no other stream's (the seed axis: a row's seeds in one vec env,
        ``scope_envs.train.rollout.collect_blocks``)."""
        slots, seeds, opts = self._reset_args(seed, options, slots)
        self._check_streams(streams)  # before anything changes
        self.idle[:] = True
        self._seed_streams(seed, seeds, streams)
        from scope_envs.core.env import FirstOrUniform

        self._default_schedules = all(type(u.schedule) is FirstOrUniform for u in self._u)
        self._split_code = np.array([SPLITS.index(u.split) for u in self._u], np.int64)
        self._one_split = SPLITS[self._split_code[0]] if (self._split_code == self._split_code[0]).all() else None
        self._start(slots, [opts[i] for i in slots])  # _start's options go with its slots, in order
        self._run_simulators()
        return self._observe(), self._infos()

    def _seed_streams(self, seed, seeds: list, streams) -> None:
        """The generators: one stream (seeded by an int ``seed``, else by every slot's seed), or one per
        label of ``streams``, each seeded by its slots' seeds. A stream without a seed for every slot keeps the
        generator its label had (a new label: an unseeded one)."""
        if streams is not None:
            label = np.asarray(streams, np.int64)
            if label.shape != (self.num_envs,) or (len(label) and (label.min() < 0 or label.max() > self.num_envs)):
                raise ValueError(f"streams must be {self.num_envs} labels in [0, {self.num_envs}], one per slot")
            self._rngs = {g: self._rngs.get(g) or np.random.default_rng() for g in np.unique(label).tolist()}
            self.stream = label
        if len(self._rngs) == 1 and isinstance(seed, (int, np.integer)):
            self._rngs[next(iter(self._rngs))] = np.random.default_rng(int(seed))
            return
        for g in self._rngs:
            mine = [seeds[i] for i in np.flatnonzero(self.stream == g).tolist()]
            if mine and all(s is not None for s in mine):
                self._rngs[g] = np.random.default_rng([int(s) for s in mine])

    def rng_of(self, i: int) -> np.random.Generator:
        """The generator slot ``i`` draws from: its stream's."""
        return self._rngs[int(self.stream[i])]

    def by_stream(self, idx: np.ndarray) -> list[tuple[np.random.Generator, np.ndarray | slice]]:
        """(generator, which of ``idx``) for each stream among slots ``idx``, in label order; each
        stream draws for its own slots, in their order."""
        if len(self._rngs) == 1:
            return [(next(iter(self._rngs.values())), slice(None))]
        stream = self.stream[idx]
        if not len(stream) or (stream == stream[0]).all():
            return [(self._rngs[int(stream[0]) if len(stream) else next(iter(self._rngs))], slice(None))]
        return [(self._rngs[g], stream == g) for g in np.unique(stream).tolist()]

    def stream_draws(self, idx: np.ndarray, width: int | None = None, normal: bool = False) -> np.ndarray:
        """A uniform (``width`` of them, or standard normals) for each of slots ``idx``, each drawn
        from its stream's generator."""
        shape = (len(idx),) if width is None else (len(idx), width)
        out = np.empty(shape)
        for rng, mine in self.by_stream(idx):
            k = len(idx) if isinstance(mine, slice) else int(np.count_nonzero(mine))
            size = k if width is None else (k, width)
            out[mine] = rng.standard_normal(size) if normal else rng.random(size)
        return out

    def integers(self, idx: np.ndarray, high) -> np.ndarray:
        """An integer in [0, ``high``) (one bound, or one per slot) for each of slots ``idx``, from its
        stream's generator."""
        out = np.empty(len(idx), np.int64)
        for rng, mine in self.by_stream(idx):
            if np.ndim(high):
                out[mine] = rng.integers(high[mine])
            else:
                out[mine] = rng.integers(high, size=len(idx) if isinstance(mine, slice) else np.count_nonzero(mine))
        return out

    def _begun(self, idx: np.ndarray) -> None:
        """The vec env's part of new games in slots ``idx``: no return yet, live, and a history of no turns
        (``_final`` reads the user's turns without cutting at the game's length)."""
        self._ret[idx] = 0.0
        self.idle[idx] = False
        self.hist_role[idx] = -1

    def _deal_one(self, i: int, member: int, scenario_seed: int | None, rng: np.random.Generator) -> dict:
        """Slot ``i``'s new game with ``member`` in the user seat, dealt as the scalar env deals it: the member's
        own persona, or one drawn from ``rng`` (from ``scenario_seed`` when given); returns the batch's card.
        ``rng``: the slot's stream's generator."""
        env = self._u[i]
        sim = env.members[member]
        sim = None if sim == LEARNABLE else sim
        persona = sim.persona if sim is not None and sim.persona is not None else None
        if persona is None:
            draw = rng if scenario_seed is None else np.random.default_rng(scenario_seed)
            persona = env.game.sample_persona(draw, env.split)
        env.game.user_player = sim
        self.persona[i], self.persona_id[i] = persona, persona.id
        return self.deal(i, env, sim, persona, rng)

    def _start(self, slots: list[int], options: list[dict] | None) -> None:
        """``DialogueParallelEnv.reset`` of these slots on their streams' generators: members, personas (and tasks)
        and cards drawn for all these slots at once (each stream's for its slots); slot by slot only a simulator
        asked through the scalar env and a group's scenario seed."""
        idx = slots = np.asarray(slots, np.int64)
        if not len(idx):
            return
        rng_of = self.rng_of
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
            if np.count_nonzero(many):
                member[many] = self.integers(idx[many], count[many])
            for j in np.flatnonzero(np.isin(idx, list(scenario))).tolist() if scenario else ():
                i = int(idx[j])  # a group's scenario picks its member (DialogueParallelEnv.reset)
                member[j] = self._u[i].schedule.pick(int(count[j]), member_generator(scenario[i], rng_of(i)))
        else:
            member = np.array([self._u[i].schedule.pick(c, member_generator(scenario.get(i), rng_of(i)))
                               for i, c in zip(idx.tolist(), count.tolist())], np.int64)
        self.member[idx] = member
        drawn = self._roster[idx, member]  # every field of the members drawn, (slots, ROSTER)
        self._seated[idx] = drawn[:, : FOLLOWS + 1]
        # slot by slot: a simulator asked through the scalar env (its view reads the scalar game), a scenario
        # seed
        slow = drawn[:, ASK].astype(bool)
        if scenario:
            slow |= np.isin(idx, list(scenario))
        if np.count_nonzero(slow):
            ones = idx[slow]
            cards = [self._deal_one(i, m, scenario.get(i), rng_of(i))
                     for i, m in zip(ones.tolist(), member[slow].tolist())]
            self.batch.reset(ones, cards)
            idx, drawn = idx[~slow], drawn[~slow]
        self._deal_groups(idx, drawn[:, OWN])
        self._begun(slots)

    def _deal_groups(self, idx: np.ndarray, own: np.ndarray) -> None:
        """``deal_many`` for slots ``idx`` a group at a time: the members' own persona (``own``: its code into
        ``_own``, -1 for none; the frozen simulators play their own default persona), else each split's, in
        that order, within each stream in stream order (each group draws from its stream's generator)."""
        if not len(idx):
            return
        # a split's code below the own personas' (split - len(SPLITS): negative), so the splits come first
        code = own if self._one_split is not None else \
            np.where(own >= 0, own, self._split_code[idx] - len(SPLITS))
        for rng, part in self.by_stream(idx):
            where = np.arange(len(idx))[part]
            c_part = code[where]
            groups = [(int(c_part[0]), where)] if (c_part == c_part[0]).all() else \
                [(c, where[c_part == c]) for c in np.unique(c_part).tolist()]
            for c, mine in groups:
                if c >= 0:
                    self.deal_many(idx[mine], None, self._own[c], rng)
                else:
                    self.deal_many(idx[mine], self._one_split or SPLITS[c + len(SPLITS)], None, rng)

    def _rosters(self, idx: np.ndarray) -> list[int]:
        """The (slot, member) arrays of these slots, which ``_start`` deals from, rebuilt where the env's members changed (a checkpoint pool's snapshot joins
        through ``set_members``, a new list); returns those slots."""
        envs, known = self._u, self._m_ref
        changed = [i for i in idx.tolist() if envs[i].members is not known[i]]
        for i in changed:
            env = envs[i]
            k = len(env.members)
            if k > self._roster.shape[1]:
                extra = np.tile(ROSTER_EMPTY, (self.num_envs, k - self._roster.shape[1], 1))
                self._roster = np.concatenate([self._roster, extra], 1)
            index = self._agent_index
            for m, sim in enumerate(env.members):
                agent = env.member_agent[m]
                learnable = sim == LEARNABLE
                kind = -1 if learnable else self._kind(sim, env.user_sampler)
                follows = not learnable and type(sim).follow_through is not Simulator.follow_through
                own = None if learnable else sim.persona
                if own is not None and own not in self._own:  # equal cards (each env's default) share a code
                    self._own.append(own)
                self._roster[i, m] = (kind, -1 if agent is None else index[agent], follows,
                                      -1 if own is None else self._own.index(own), kind < 0 and not learnable)
            self._m_count[i] = k
            known[i] = env.members
        if changed:
            self._forget_kinds()
        return changed

    def _forget_kinds(self) -> None:
        """Drop ``_kind_of``'s entries of the simulators that no slot's roster holds any more: an entry holds its
        simulator (to keep its id), so a checkpoint pool's snapshots, which leave the pool as new ones join, were
        kept alive, network and all, one entry per slot, for as long as the vec env lived. A simulator that comes
        back is asked again and gets the same code (``_kinds`` is kept), so no episode changes."""
        live = {(id(sim), id(env.user_sampler))
                for env, known in zip(self._u, self._m_ref) for members in (env.members, known or ())
                for sim in members if not isinstance(sim, str)}
        if not live.issuperset(self._kind_of):
            self._kind_of = {key: hit for key, hit in self._kind_of.items() if key in live}

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
        self._check_agents(actions)
        active, live = self._active, ~self.idle
        # every seat's acts are read and checked before any is applied: a step that raises leaves the batch as it was
        moves = []
        acting = (active == 0).nonzero()[0]
        if len(acting):
            moves.append((0, acting, self._read(actions, AGENT, acting, 0)))
        users = active == 1
        if self._users and np.count_nonzero(users):
            for j, agent in enumerate(self._users):
                idx = (users & (self.seat == j)).nonzero()[0]
                if len(idx):
                    moves.append((1, idx, self._read(actions, agent, idx, 1)))
        for role, idx, acts in moves:
            self._apply(role, idx, acts)
        self._run_simulators()
        ended = (b.done & live).nonzero()[0]
        agents = self.possible_agents
        rewards = {a: np.zeros(n) for a in agents}
        terms = {a: np.zeros(n, bool) for a in agents}
        truncs = {a: np.zeros(n, bool) for a in agents}
        final = None
        if len(ended):
            r_agent, r_user = b.rewards(ended, users=len(agents) > 1)
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
            if self.next_episode is always_next:
                restart, options = ended, None
            else:
                restart, options = [], []
                for i in ended.tolist():
                    nxt = self.next_episode(i)
                    if nxt is not None:
                        restart.append(i)
                        options.append(check_reset_options(f"next_episode({i})", nxt))
            self.idle[ended] = True
            if len(restart):
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
        persona, user_acts = np.empty(n, object), np.empty(n, object)  # (None-filled)
        persona[ended] = self.persona_id[ended]
        # the user's acts of every finished slot in one pass, then cut into one list per slot
        width = int(b.length[ended].max())
        theirs = self.hist_role[ended, :width] == 1
        acts = self.hist_act[ended, :width][theirs].tolist()
        start = 0
        for i, end in zip(ended.tolist(), np.cumsum(theirs.sum(1)).tolist()):
            user_acts[i], start = acts[start:end], end
        final = {"outcome": outcome, "agent_score": score, "return": ret, "member": self.member.copy(),
                 "persona": persona, "user_acts": user_acts, "_mask": mask}
        if self._final_obs:  # every seat's last observation, zero where a user was not seated (as LoopVecEnv's)
            final["obs"] = {AGENT: self._bounded(b.features(0))}
            if self._users:
                x = self._bounded(b.features(1))
                for j, a in enumerate(self._users):
                    final["obs"][a] = np.where((self.seat == j)[:, None], x, np.float32(0))
        return final

    def _read(self, actions, agent, idx, role) -> np.ndarray:
        a = self._act_column(actions, agent, idx[:5].tolist())
        # every slot's int64 acts are read as they are (the env keeps no reference to them)
        if len(idx) < len(a) or a.dtype != np.int64:
            a = a[idx].astype(np.int64)
        n_acts = self.batch.n_acts[role]
        # in range (a negative act, seen unsigned, is past the end), then legal: the usual case in two checks
        if np.count_nonzero(a.view(np.uint64) >= n_acts) or not self._masks[role][idx, a].all():
            bad = (a < 0) | (a >= n_acts)
            if not bad.any():
                bad = ~self._masks[role][idx, a]
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
            todo = (~self.idle & (active == 1) & (self.seat < 0)).nonzero()[0]
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
                elif self._kinds[code][0] == "observation":
                    acts = self._observed(idx, legal[idx])
                elif self._kinds[code][0] == "vs_reference":
                    acts = self._verbalized(self._kinds[code], idx, legal[idx])
                else:  # one call for all slots, or each stream's slots apart (``replies_by_row``)
                    acts = np.empty(len(idx), np.int64)
                    parts = [slice(None)] if self.replies_by_row else [part for _, part in self.by_stream(idx)]
                    for part in parts:
                        sub = idx[part]
                        mine = legal if len(sub) == len(legal) else legal[sub]  # (all slots: no copy)
                        acts[part] = self._draw(self.reply_weights(self._kinds[code], sub, mine), mine, sub)
                self._apply(1, idx, acts)
            if b.user_replies_once:  # the agent moves next (or the game is over) in every slot
                return

    def _verbalized(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``VerbalizedSampler`` on ``SharpenedReference.verbalize`` in slots ``idx``: the stated probabilities,
        candidates and ``candidate_weights`` as arrays over the slots, in the scalar path's floating-point order;
        each slot's stream gives its ``standard_normal`` noise, then the uniform ``choice_rows`` reads."""
        _, _, _, noise, options = kind
        p = self.reference(kind, idx, legal)
        rows, width = p.shape
        z = self.stream_draws(idx, width, normal=True)
        stated = p * np.exp(noise * z)
        stated = stated / stated.sum(1, keepdims=True)
        probs, acts, count = verbalized_candidates(stated, legal, options.k, options.tail)
        w = options.weights(probs, count)  # candidate_weights_rows: the scalar sampler's weighting, on all rows
        empty = count == 0  # nothing stated: the direct answer (``VerbalizedSampler``'s fallback)
        live = ~empty if empty.any() else slice(None)
        u = self.stream_draws(idx)
        chosen = choice_rows(w[live], u[live])  # the trailing zeros leave a row's running sums as they are
        out = np.empty(rows, np.int64)
        out[live] = acts[live][np.arange(len(chosen)), chosen]
        for j in np.flatnonzero(empty).tolist():
            i = int(idx[j])
            out[j] = int(DirectAnswer()(self.seated(i), self.view(i, 1, legal[j]), self.rng_of(i))[0])
        return out

    def _observed(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Simulators that answer from the observation alone (``Simulator.distributions``: a checkpoint pool's
        snapshots) in slots ``idx``: each simulator's slots in one call, on the observation the scalar env's view
        carries; the act drawn from each slot's stream (``_draw``)."""
        x = np.clip(self.batch.features(1)[idx], -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)
        sims = [self.seated(i) for i in idx.tolist()]
        out = np.empty(len(idx), np.int64)
        for sim in {id(s): s for s in sims}.values():
            rows = np.array([s is sim for s in sims])
            p = sim.distributions(x[rows], legal[rows])
            out[rows] = self._draw(p, legal[rows], idx[rows])
        return out

    def _draw(self, w: np.ndarray, legal: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """An act for each row of weights ``w`` (rows, acts) of slots ``idx``, by inverse-CDF sampling
        on the slots' streams (the weights need no normalizing); uniform over the row's legal acts where none
        has mass."""
        streams = self.by_stream(idx)
        if len(streams) > 1:  # each stream's rows alone: their running sums are one product (see below)
            acts = np.empty(len(w), np.int64)
            for _, part in streams:
                acts[part] = self._draw(w[part], legal[part], idx[part])
            return acts
        tril = self._tril(w.shape[1])
        # the running sums as one product (faster than cumsum), acts by rows: the count below adds whole rows
        cdf = tril @ w.T
        total = cdf[-1]
        if not total.all():  # no legal act has mass: uniform over the legal ones (``normalize``)
            none = total == 0
            cdf[:, none] = tril @ legal[none].T
        below = cdf <= self.stream_draws(idx) * total
        # how many running sums each draw passes is the act (bytes add up without a cast)
        acts = np.add.reduce(below.view(np.uint8), 0, dtype=np.uint8 if len(cdf) < 256 else np.int64)
        return acts.astype(np.int64)

    def reply_weights(self, kind: tuple, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Weights proportional to ``reply``'s distributions, zero off the legal acts (a row of zeros
        where no legal act has mass: the caller samples uniformly over the legal ones, as ``normalize``)."""
        return self.reply(kind, idx, legal)

    @staticmethod
    @functools.cache
    def _tril(k: int) -> np.ndarray:
        return np.tril(np.ones((k, k)))

    def _ask(self, i: int, legal: np.ndarray) -> int:
        """One slot's simulator turn through the scalar env's own sampler (``DialogueParallelEnv._run_simulator``)."""
        env = self._u[i]
        sim = self.seated(i)
        choice, _ = env.user_sampler(sim, self.view(i, 1, legal, sim.wants_observation), self.rng_of(i))
        return int(choice)

    def seated(self, i: int) -> Simulator:
        """The simulator in slot ``i``'s user seat: the member drawn for its episode (drawn on its stream's
        generator, which leaves the scalar env's ``member``, hence its ``simulator``, as it was)."""
        return self._u[i].members[self.member[i]]

    def view(self, i: int, role: int, legal: np.ndarray, observation: bool = False) -> View:
        """Slot ``i``'s ``View`` of ``role``, as the scalar env builds it."""
        self.sync_scalar(i)
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
        users = self._users
        self._masks = [b.legal(0, active), b.legal(1, active) if users else None]
        x = self._bounded(b.features(0))
        obs = {AGENT: {"observation": x, "action_mask": self._masks[0].astype(np.int8)}}
        if users:
            x = self._bounded(b.features(1))
            m = self._masks[1].astype(np.int8)
            noop = self.batch._noop[1].astype(np.int8)
            for j, a in enumerate(users):
                mine = (self.seat == j) & ~self.idle
                obs[a] = {"observation": np.where(mine[:, None], x, np.float32(0)),
                          "action_mask": np.where(mine[:, None], m, noop[None])}
        return obs

    def _bounded(self, x: np.ndarray) -> np.ndarray:
        """The features ``x`` clipped to the act surface's bound, in place (as they are when the game's
        ``feature_max`` says they cannot pass it)."""
        if self.batch.feature_max <= FEATURE_BOUND:
            return x
        return np.clip(x, -FEATURE_BOUND, FEATURE_BOUND, out=x)

    def _infos(self):
        n, live = self.num_envs, ~self.idle
        active = {AGENT: self._active == 0}
        lives = {AGENT: live}
        for j, a in enumerate(self._users):
            mine = (self.seat == j) & live
            lives[a], active[a] = mine, mine & (self._active == 1)
        return {"active": active, "live": lives, "member": self.member.copy(), "turn": self.batch.length.copy(),
                "_final_info": np.zeros(n, bool)}


def choice_rows(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``Generator.choice(len(row), p=row)`` for each row of weights ``w`` given the uniform ``u`` it draws: the
    running sums normalized by the last, and how many of them the uniform passes (its ``searchsorted``)."""
    cdf = np.cumsum(w, 1)
    cdf /= cdf[:, -1:]
    return (cdf <= u[:, None]).sum(1)


def power(p: np.ndarray, exponent: float) -> np.ndarray:
    """``p ** exponent``; a small whole ``exponent`` (the default sharpening, 3) by products, several times faster
    than ``pow`` (the last bit may differ from ``np.power``)."""
    if exponent in (1.0, 2.0, 3.0, 4.0):
        q = p
        for _ in range(int(exponent) - 1):
            q = q * p
        return q
    return np.power(p, exponent)


def verbalized_candidates(stated: np.ndarray, legal: np.ndarray, k: int, tail: float | None):
    """``SharpenedReference.verbalize``'s top-``k`` for rows of stated probabilities: the legal acts stated
    above zero by decreasing statement (ties by act), with ``tail`` only those stated below it (else the
    least stated). Returns (stated probabilities, acts), each (rows, min(k, acts)) and zero past a row's
    candidates, and each row's count."""
    order = np.argsort(-stated, 1, kind="stable")
    s = np.take_along_axis(stated, order, 1)
    ok = np.take_along_axis(legal, order, 1) & (s > 0)
    if tail is not None:
        below = ok & (s < tail)
        none = ~below.any(1)
        if none.any():  # ``or order[-1:]``: the least stated candidate alone
            rows = np.flatnonzero(none)
            last = s.shape[1] - 1 - np.argmax(ok[rows, ::-1], 1)
            below[rows, last] = ok[rows, last]
        ok = below
    width = min(k, s.shape[1])
    pos = np.argsort(~ok, 1, kind="stable")[:, :width]  # each row's first candidates, in order
    count = np.minimum(ok.sum(1), width)
    valid = np.arange(width) < count[:, None]
    probs = np.where(valid, np.take_along_axis(s, pos, 1), 0.0)
    return probs, np.take_along_axis(order, pos, 1), count
