"""tau^2-bench's tasks compiled for the batched act engine (``batched.Tau2Batch``): what a task's rules can touch,
as integers and tables.

A task (``TaskTables``) becomes:

* its *calls*: every tool call an episode can make (the goal's lookups, the identity reads as the user told its
  identity, right or mistyped, the record reads, the requests and the decoy, the phone actions, the transfer), one
  bit each, so that the calls made, the confirmations and the candidates are integers;
* its *grounding tokens*: the values a lookup or a write needs revealed before the agent may make it, one bit each;
  the tokens a revealed text holds, per text (a token with a space may also run across the join of two texts: on
  the tasks that have one the batch keeps the text and searches the join as the scalar game does);
* the candidates' scan orders (lookups, identity reads in the order the user told them, record reads; the decoy,
  then the requests; the phone actions) as rows of call indices;
* the agent's sentences (``realize.agent``'s first wording, per act and per call named), and what the evaluation
  reads of the episode: the gold actions each call matches (ACTION), the required strings each sentence holds
  (COMMUNICATE).

What is not a table is asked of the world once and kept: a tool call's answer (its text, error, identified users
and policy violations) per *trail* (the writes made so far, which name the database state) and identified users;
the policy check of a write candidate likewise; the reward per trail, gold actions met and strings said. Those
answers come from the very functions the scalar game calls (``World.call``, the domain's ``violations``,
``evaluate.evaluate``), on a world rebuilt at that trail.

``Tasks`` holds the compiled tasks of the process as rows of padded arrays (``TASKS``, shared by every batch), and
the kept answers again as rows of numbers (``KeptRows``), which the batch reads for all its slots at once: a table
answers only what was not asked before.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from scope_envs.core.game import Drawn
from scope_envs.games.tau2 import realize
from scope_envs.games.tau2.data import DOMAINS
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, AGENT_INDEX, IDENTITY_SLOTS, REQUEST_SLOTS
from scope_envs.games.tau2.evaluate import STOPPED, action_matches, communicated, evaluate
from scope_envs.games.tau2.game import AGENT, USER, Tau2Game
from scope_envs.games.tau2.goal_rows import HOWS, MAX_CALLS, goal_calls
from scope_envs.games.tau2.world import MEMO_SIZE, READS
from scope_envs.games.tau2.world import Call as WorldCall

N_AGENT = len(AGENT_ACTS)
A = AGENT_INDEX
# the widths of the padded rows (checked as tasks are compiled)
MAX_LOOKUPS, MAX_RECORDS, MAX_REQUESTS, MAX_PHONES = 24, 8, 8, 16
WORLDS_KEPT = 1_000  # worlds kept per task, one per trail (a trail not kept is rebuilt from its parent's)
ROWS_KEPT = 2_000_000  # answers kept as rows per kind (calls, policy checks, rewards), all tasks together
DECOY_KINDS = (None, "forbidden", "mind_change")


def _keep(memo: dict, key, value) -> None:
    """Keep an answer, up to ``world.MEMO_SIZE`` per memo (the cap bounds memory; past it answers are recomputed)."""
    if len(memo) < MEMO_SIZE:
        memo[key] = value


class KeptRows:
    """Answers kept by rows of integer keys, read for many rows at once: a key's row of values, or a miss (one
    ``get`` is a few array operations whatever the number of rows, where a dict is asked row by row).

    The keys are hashed into one uint64 each and kept sorted; a row is found by binary search and its key
    compared column by column, so a hash collision is a miss, never a wrong answer. New rows wait until there
    are a quarter as many as kept, then are merged in one sort (a run keeps ``ROWS_KEPT`` at most); a row still
    waiting misses, and its table answers it again from its own memo."""

    MIX = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, width: int, values: int, dtype):
        self.width, self.dtype = width, dtype
        self.hash = np.empty(0, np.uint64)
        self.keys = np.empty((0, width), np.uint64)
        self.values = np.empty((0, values), dtype)
        self._waiting: list[tuple[np.ndarray, np.ndarray]] = []
        self._n_waiting = 0

    @classmethod
    def _hash(cls, keys: np.ndarray) -> np.ndarray:
        h = np.zeros(len(keys), np.uint64)
        for j in range(keys.shape[1]):  # (uint64 products wrap: a hash, not a number)
            h = (h ^ keys[:, j]) * cls.MIX
            h ^= h >> np.uint64(29)
        return h

    def get(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(whether each row of ``keys`` (rows, width) is kept, the values of those kept (the rest: zeros))."""
        out = np.zeros((len(keys), self.values.shape[1]), self.dtype)
        if not len(self.hash):
            return np.zeros(len(keys), bool), out
        h = self._hash(keys)
        pos = np.minimum(np.searchsorted(self.hash, h), len(self.hash) - 1)
        found = (self.hash[pos] == h) & (self.keys[pos] == keys).all(1)
        out[found] = self.values[pos[found]]
        return found, out

    def put(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Keep these rows (a row already kept, or waiting, is kept once)."""
        if len(self.hash) + self._n_waiting >= ROWS_KEPT or not len(keys):
            return
        self._waiting.append((keys, values))
        self._n_waiting += len(keys)
        if self._n_waiting >= max(256, len(self.hash) // 4):
            keys = np.concatenate([self.keys, *(k for k, _ in self._waiting)])
            values = np.concatenate([self.values, *(v for _, v in self._waiting)])
            h = self._hash(keys)
            order = np.lexsort((*keys.T[::-1], h))  # by hash, then by key: equal rows side by side
            h, keys, values = h[order], keys[order], values[order]
            first = np.ones(len(h), bool)
            first[1:] = (h[1:] != h[:-1]) | (keys[1:] != keys[:-1]).any(1)
            self.hash, self.keys, self.values = h[first], keys[first], values[first]
            self._waiting, self._n_waiting = [], 0


class TaskTables:
    """One task compiled (see the module): built from a scalar game just reset on it."""

    def __init__(self, game: Tau2Game):
        g, world = game.goal, game.world
        if world.trail != ():
            raise ValueError(f"tau2 task {game.task['id']!r}: its world does not track its writes")
        self.domain, self.task_id, self.task = game.domain, game.task["id"], game.task
        self.goal = g
        gc = goal_calls(g, world.module.TOOLS)
        self.calls, self.index, self.tokens, self.need = gc.calls, gc.index, gc.tokens, gc.need
        self.lookups, self.identity_reads, self.records = gc.lookups, gc.identity_reads, gc.records
        self.requests, self.decoy, self.phones, self.transfer = gc.requests, gc.decoy, gc.phones, gc.transfer
        self.goal_calls = gc
        if (len(self.lookups) > MAX_LOOKUPS or len(self.records) > MAX_RECORDS
                or len(self.requests) > MAX_REQUESTS or len(self.phones) > MAX_PHONES):
            raise ValueError(f"tau2 task {self.task_id!r} is too large for the array engine")
        self.longest = max((len(t) for t in self.tokens), default=1)
        # the pieces a user's turn reveals (``Goal.told_piece`` / ``details_piece``)
        self.told_piece = [[g.told_piece(s, how) for how in HOWS] for s in IDENTITY_SLOTS]
        self.details_piece = g.details_piece
        self.slot_digit = [g.mistypable(s) for s in IDENTITY_SLOTS]
        self.identity_order = [IDENTITY_SLOTS.index(s) for s in g.identity]
        # the episode's opening (a task may start mid-conversation): what ``reset`` leaves
        h = game.history
        self.steps0, self.length0, self.next0 = game.steps, len(h), 0 if game._next == AGENT else 1
        self.last_err0 = bool(h and h[-1].error)
        self.user_acts0 = [t.act for t in h if t.role == USER]
        self.agent_texts0 = [t.text for t in h if t.role == AGENT and t.call is None]
        self.violations0 = len(world.violations)
        self.calls0 = list(world.calls)
        # answers kept per task (see the module)
        self.trails: dict[tuple, int] = {(): 0}
        self.trail_of: list[tuple] = [()]
        self.worlds = {0: world.copy()}
        self.identified: dict[frozenset, int] = {frozenset(world.identified): 0}
        self.identified_of: list[frozenset] = [frozenset(world.identified)]
        self.answers: dict[tuple, tuple] = {}
        self.flags: dict[tuple, float] = {}
        self.rewards: dict[tuple, float] = {}
        self.texts: dict[str, int] = {}
        self.text_of: list[str] = []
        self.reveals: dict[tuple, int] = {}
        self.said = self._sentences()
        self._checks()

    # -- the agent's sentences and what the evaluation reads of them -----------------------------------------
    def _text(self, text: str) -> int:
        j = self.texts.get(text)
        if j is None:
            if len(self.text_of) >= MAX_CALLS:
                raise ValueError(f"tau2 task {self.task_id!r}: too many distinct agent sentences")
            j = self.texts[text] = len(self.text_of)
            self.text_of.append(text)
        return j

    def _sentences(self) -> dict:
        """The index of each sentence the agent's message acts say (``realize.agent``, the act surface's first
        wording): per act, and per call for ``confirm`` / ``instruct``; ``answer`` by whether it carries facts."""
        g = self.goal

        def say(act: int, write=(), phone=(), done=frozenset()) -> int:
            view = SimpleNamespace(goal=g, done=done,
                                   candidates=lambda: {"read": [], "write": list(write), "phone": list(phone)})
            return self._text(realize.agent(view, act))

        out = {"act": np.full(N_AGENT, -1, np.int64), "confirm": [say(A["confirm:0"], write=[c]) for c in self.calls],
               "instruct": [say(A["instruct:0"], phone=[c]) for c in self.calls]}
        for name in ("greet", *(f"request:{s}" for s in REQUEST_SLOTS), "deny", "transfer", "end"):
            out["act"][A[name]] = say(A[name])
        lookups = frozenset(c.key() for c in g.lookups)
        out["answer"] = [say(A["answer"]), say(A["answer"], done=lookups)]
        return out

    def _checks(self) -> None:
        """What the evaluation reads of the calls made and the sentences said: the gold actions each call matches
        (ACTION) and the required strings each sentence holds (COMMUNICATE), as bits; with the opening's."""
        crit = self.task.get("evaluation_criteria") or {}
        gold, infos = crit.get("actions") or [], crit.get("communicate_info") or []
        if len(gold) > MAX_CALLS or len(infos) > MAX_CALLS:
            raise ValueError(f"tau2 task {self.task_id!r} is too large for the array engine")

        def matched(call) -> int:
            return sum(1 << k for k, a in enumerate(gold) if action_matches(a, call))

        def held(text: str) -> int:
            return sum(1 << k for k, info in enumerate(infos) if text and communicated(info, text))

        self.gold_of = [matched(c) for c in self.calls]
        self.gold0 = 0
        for c in self.calls0:
            self.gold0 |= matched(c)
        self.comm_of = [held(t) for t in self.text_of]
        self.comm0 = 0
        for t in self.agent_texts0:
            self.comm0 |= held(t)

    # -- the world's answers -------------------------------------------------------------------------
    def _trail(self, trail: tuple | None) -> int:
        if trail is None:
            raise ValueError(f"tau2 task {self.task_id!r}: a call left the world untracked")
        j = self.trails.get(trail)
        if j is None:
            j = self.trails[trail] = len(self.trail_of)
            self.trail_of.append(trail)
        return j

    def _identified(self, ids) -> int:
        ids = frozenset(ids)
        j = self.identified.get(ids)
        if j is None:
            j = self.identified[ids] = len(self.identified_of)
            self.identified_of.append(ids)
        return j

    def world_at(self, trail: int):
        """A world of this task at ``trail`` (its writes replayed on the task's initial world, kept)."""
        w = self.worlds.get(trail)
        if w is None:
            *before, last = self.trail_of[trail]
            w = self.world_at(self.trails[tuple(before)]).copy()
            name, args, requestor = json.loads(last)
            w.call(name, args, requestor, last)
            if len(self.worlds) < WORLDS_KEPT:
                self.worlds[trail] = w
        return w

    def answer(self, trail: int, ident: int, u: int) -> tuple:
        """Call ``u`` made at ``trail`` with users ``ident`` identified, as ``World.call`` answers it: (its text,
        lower-cased, error, the identified users after, the violations it added, the trail after, the tokens its
        text holds, whether any user is identified after)."""
        key = (trail, ident, u)
        hit = self.answers.get(key)
        if hit is None:
            c = self.calls[u]
            w = self.world_at(trail)
            tool = w.tools(c.requestor).get(c.name)
            reads = tool is not None and tool.kind in READS
            # a read leaves the database as it is: asked on the kept world, its records put back; any other
            # call on a copy, which is then the world at the trail it leads to
            kept = (w.identified, w.violations, w.calls)
            if not reads:
                w = w.copy()
            w.identified, w.violations, w.calls = set(self.identified_of[ident]), [], []
            try:
                content, error = w.call(c.name, c.arguments, c.requestor, c.key())
                after = self._trail(w.trail)
                text, ident = content.lower(), self._identified(w.identified)
                hit = (text, bool(error), ident, len(w.violations), after, self.inside(text),
                       bool(self.identified_of[ident]))
                _keep(self.answers, key, hit)
            finally:
                if reads:
                    w.identified, w.violations, w.calls = kept
            if not reads and after not in self.worlds and len(self.worlds) < WORLDS_KEPT:
                self.worlds[after] = w
        return hit

    def policy_flag(self, trail: int, ident: int, u: int) -> float:
        """``World.policy_flag`` of write call ``u`` at ``trail`` with users ``ident`` identified."""
        key = (trail, ident, u)
        flag = self.flags.get(key)
        if flag is None:
            c = self.calls[u]
            flag = self.world_at(trail).policy_flag(c.name, c.arguments, self.identified_of[ident])
            _keep(self.flags, key, flag)
        return flag

    def reward(self, trail: int, gold: int, comm: int, done: int, said: int) -> float:
        """``evaluate``'s reward of an episode that stopped at ``trail`` having met gold actions ``gold`` and
        required strings ``comm``, which are all it reads of the calls made and the sentences said (``done``,
        ``said``: those of the episode, replayed into the evaluation when the answer is not kept yet). No judge:
        the act engine runs without one."""
        key = (trail, gold, comm)
        r = self.rewards.get(key)
        if r is None:
            w = self.world_at(trail).copy()
            made = [self.calls[u] for u in range(len(self.calls)) if done >> u & 1]
            w.calls = self.calls0 + [WorldCall(c.requestor, c.name, c.arguments, "", False) for c in made]
            texts = self.agent_texts0 + [t for j, t in enumerate(self.text_of) if said >> j & 1]
            r = float(evaluate(w, texts, STOPPED[0])["reward"])
            _keep(self.rewards, key, r)
        return r

    def inside(self, piece: str) -> int:
        """The tokens that ``" " + piece`` holds."""
        return sum(1 << j for j, t in enumerate(self.tokens) if t in " " + piece)

    def reveal(self, tail: str, piece: str) -> int:
        """The tokens that ``tail + " " + piece`` holds (``tail``: the end of what was revealed before, as long as
        the longest token less one, so that a token across the join is found as the scalar game finds it)."""
        if len(self.reveals) > MEMO_SIZE:  # (the tails vary with what was told: bounded)
            self.reveals.clear()
        key = (tail, piece)
        bits = self.reveals.get(key)
        if bits is None:
            text = tail + " " + piece
            bits = self.reveals[key] = sum(1 << j for j, t in enumerate(self.tokens) if t in text)
        return bits


class Tasks:
    """The tasks dealt in this process, compiled, as rows of padded arrays (a row per task; ``TASKS``, shared by
    every batch: the benchmark builds a vec env per evaluation, and each would compile the same tasks again)."""

    FIELDS = {  # name: (shape after the row axis, dtype, fill)
        "lookups": ((MAX_LOOKUPS,), np.int64, -1), "records": ((MAX_RECORDS,), np.int64, -1),
        "requests": ((MAX_REQUESTS,), np.int64, -1), "phones": ((MAX_PHONES,), np.int64, -1),
        "identity_reads": ((len(IDENTITY_SLOTS), 3), np.int64, -1), "need": ((MAX_CALLS,), np.uint64, 0),
        "decoy": ((), np.int64, -1), "transfer": ((), np.int64, -1), "domain": ((), np.int64, 0),
        "decoy_kind": ((), np.int64, 0), "has_identity": ((), bool, False), "slippable": ((), bool, False),
        "has_details": ((), bool, False), "has_questions": ((), bool, False), "needs_none": ((), bool, False),
        "lookup_bits": ((), np.uint64, 0), "request_bits": ((), np.uint64, 0), "phone_bits": ((), np.uint64, 0),
        "n_requests": ((), np.int64, 0), "n_phones": ((), np.int64, 0), "first_identity": ((), np.int64, -1),
        "slot_digit": ((len(IDENTITY_SLOTS),), bool, False), "in_identity": ((len(IDENTITY_SLOTS),), bool, False),
        "steps0": ((), np.int64, 0), "length0": ((), np.int64, 0), "next0": ((), np.int64, 0),
        "last_err0": ((), bool, False), "violations0": ((), np.int64, 0),
        "said_act": ((N_AGENT,), np.int64, 0), "said_confirm": ((MAX_CALLS,), np.int64, 0),
        "said_instruct": ((MAX_CALLS,), np.int64, 0), "said_answer": ((2,), np.int64, 0),
        "comm_of": ((MAX_CALLS,), np.uint64, 0), "gold_of": ((MAX_CALLS,), np.uint64, 0),
        "gold0": ((), np.uint64, 0), "comm0": ((), np.uint64, 0), "ident_any0": ((), bool, False),
        "told_bits": ((len(IDENTITY_SLOTS), len(HOWS)), np.uint64, 0), "details_bits": ((), np.uint64, 0),
        "tails": ((), bool, False), "assistant": ((MAX_CALLS,), bool, False),
        "identity_order": ((len(IDENTITY_SLOTS),), np.int64, -1), "user_opens": ((), bool, False),
    }

    def __init__(self):
        self.tables: list[TaskTables] = []
        self.row: dict[tuple, int] = {}  # (id of the domain's data, task id) -> row
        self.keep: dict[int, object] = {}  # id -> the domain's data
        # the widest row of each padded field so far (the candidates scan no further)
        self.width = {"lookups": 0, "records": 0, "requests": 0, "phones": 0}
        self.cap = 0
        self._grow(16)
        # the tables' answers as rows, keyed (task row, ...): a call's (error, identified users, violations added,
        # trail after, tokens revealed, anyone identified); a write's policy flag; an episode's reward
        self.kept_calls = KeptRows(4, 6, np.uint64)
        self.kept_flags = KeptRows(4, 1, np.float64)
        self.kept_rewards = KeptRows(4, 1, np.float64)

    # -- copies and pickles ----------------------------------------------------------------------------------
    # ``row`` is keyed by the *id* of each domain's data, which a copy or a pickle round trip does not keep: the
    # copy's data (copied with the games that hold it, by the same deep copy or pickle) has new ids. The state
    # names each row's data by the object itself, and ``__setstate__`` keys the rows again by the new objects'
    # ids, so that a copied game finds its task's row in its copied ``Tasks`` (the same row as the original's).
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        keep = self.keep
        state["row"] = [(keep[data_id], task_id, r) for (data_id, task_id), r in self.row.items()]
        state["keep"] = list(keep.values())
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        rows, kept = state.pop("row"), state.pop("keep")
        self.__dict__.update(state)
        self.keep = {id(data): data for data in kept}
        self.row = {(id(data), task_id): r for data, task_id, r in rows}

    def _grow(self, cap: int) -> None:
        for name, (shape, dtype, fill) in self.FIELDS.items():
            new = np.full((cap, *shape), fill, dtype)
            if self.cap:
                new[: self.cap] = getattr(self, name)
            setattr(self, name, new)
        self.cap = cap

    # -- the kept answers of many slots at once (each a ``TaskTables`` method's, row by row) ---------------------
    def answers(self, rows: np.ndarray, trail: np.ndarray, ident: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``TaskTables.answer`` less its text, for calls ``u`` of tasks ``rows`` at ``trail`` with users ``ident``
        identified: (calls, 6) uint64, the columns (error, identified users after, violations added, trail after,
        tokens the text holds, anyone identified after)."""
        tables = self.tables
        return self._read(self.kept_calls, (rows, trail, ident, u), lambda j, k: tables[k[0]].answer(*k[1:])[1:])

    def policy_flags(self, rows: np.ndarray, trail: np.ndarray, ident: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``TaskTables.policy_flag`` of write calls ``u`` of tasks ``rows`` (1-D arrays, one entry each)."""
        tables = self.tables
        return self._read(self.kept_flags, (rows, trail, ident, u),
                          lambda j, k: (tables[k[0]].policy_flag(*k[1:]),))[:, 0]

    def rewards(self, rows, trail, gold, comm, called, said) -> np.ndarray:
        """``TaskTables.reward`` of episodes of tasks ``rows`` (1-D arrays, one entry each)."""
        tables = self.tables
        return self._read(self.kept_rewards, (rows, trail, gold, comm),
                          lambda j, k: (tables[k[0]].reward(*k[1:], int(called[j]), int(said[j])),))[:, 0]

    @staticmethod
    def _read(kept: KeptRows, columns: tuple, ask) -> np.ndarray:
        """``kept``'s values for the keys ``columns`` (1-D non-negative integer arrays, the task row first); a key
        not kept is ``ask(j, key)`` (its row ``j``, the key as Python ints: a row of values), then kept."""
        # each column cast on its own: int64 stacked beside uint64 (the bitsets) would meet as float64
        keys = np.stack([np.asarray(c).astype(np.uint64) for c in columns], 1)
        found, out = kept.get(keys)
        if not found.all():
            miss = np.flatnonzero(~found)
            got = [ask(j, key) for j, key in zip(miss.tolist(), keys[miss].tolist())]
            out[miss] = np.array(got, kept.dtype).reshape(len(miss), -1)
            kept.put(keys[miss], out[miss])
        return out

    def row_for(self, game: Tau2Game, persona, seed: int) -> int:
        """The row of ``persona``'s task; a task not seen yet is compiled from ``game`` reset on it (its episode
        seed ``seed``)."""
        att = persona.attributes
        r = self.row.get((id(game.data.get(att.get("domain"))), att.get("task_id")))
        if r is None:
            game.reset(persona, Drawn(seed))
            r = self.of(game)
        return r

    def of(self, game: Tau2Game) -> int:
        """The row of the task ``game`` was just reset on, compiled on first sight."""
        data = game.data[game.domain]
        key = (id(data), game.task["id"])  # (``row_for`` looks rows up by the same key)
        r = self.row.get(key)
        if r is not None:
            return r
        t = TaskTables(game)
        self.keep[id(data)] = data  # (its id stays this data's for as long as a row names it)
        r = self.row[key] = len(self.tables)
        self.tables.append(t)
        if r >= self.cap:
            self._grow(2 * self.cap)
        g = t.goal
        for name in self.width:
            self.width[name] = max(self.width[name], len(getattr(t, name)))
        self.lookups[r, : len(t.lookups)] = t.lookups
        self.records[r, : len(t.records)] = t.records
        self.requests[r, : len(t.requests)] = t.requests
        self.phones[r, : len(t.phones)] = t.phones
        self.identity_reads[r, :, 1:] = t.identity_reads
        self.need[r, : len(t.need)] = t.need
        self.decoy[r], self.transfer[r] = t.decoy, t.transfer
        self.domain[r] = DOMAINS.index(t.domain)
        self.decoy_kind[r] = DECOY_KINDS.index(g.decoy_kind)
        self.has_identity[r], self.slippable[r] = bool(g.identity), g.slippable
        self.has_details[r], self.has_questions[r] = bool(g.details), bool(g.questions)
        gc = t.goal_calls
        self.needs_none[r] = gc.needs_none
        self.lookup_bits[r], self.request_bits[r], self.phone_bits[r] = gc.lookup_bits, gc.request_bits, gc.phone_bits
        self.n_requests[r], self.n_phones[r] = len(g.requests), len(g.phone_actions)
        self.first_identity[r] = t.identity_order[0] if t.identity_order else -1
        self.slot_digit[r] = t.slot_digit
        self.in_identity[r] = [s in g.identity for s in IDENTITY_SLOTS]
        self.steps0[r], self.length0[r], self.next0[r] = t.steps0, t.length0, t.next0
        self.last_err0[r], self.violations0[r] = t.last_err0, t.violations0
        said = t.said
        self.said_act[r] = np.maximum(said["act"], 0)
        self.said_confirm[r, : len(t.calls)], self.said_instruct[r, : len(t.calls)] = said["confirm"], said["instruct"]
        self.said_answer[r] = said["answer"]
        self.comm_of[r, : len(t.comm_of)], self.gold_of[r, : len(t.gold_of)] = t.comm_of, t.gold_of
        self.gold0[r], self.comm0[r] = t.gold0, t.comm0
        self.ident_any0[r] = bool(t.identified_of[0])
        self.told_bits[r] = [[t.inside(piece) for piece in pieces] for pieces in t.told_piece]
        self.details_bits[r] = t.inside(t.details_piece)
        self.tails[r] = any(" " in tok for tok in t.tokens)
        self.assistant[r, : len(t.calls)] = [c.requestor == "assistant" for c in t.calls]
        self.identity_order[r, : len(t.identity_order)] = t.identity_order
        self.user_opens[r] = bool(t.user_acts0)
        return r


TASKS = Tasks()
