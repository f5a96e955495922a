"""A task's goal as integers, and the rules that read a dialogue state through it, for rows of states.

A goal's calls (its lookups, the identity reads as the user told its identity, right or mistyped, the record
reads, the requests and the decoy, the phone actions, the transfer) get one index each, and the values a lookup or
a write needs revealed (its *grounding tokens*) one bit each (``GoalCalls``). A dialogue state then reads as
numbers: the calls made and what was revealed are bitsets, the identity slots told a row. Over those numbers, for
any number of rows at once, this module defines

* ``candidates``: the agent's read, write and phone candidates, the calls its ``lookup:j``, ``execute:j`` /
  ``confirm:j`` and ``instruct:j`` acts name (scan orders, "not made yet", "grounded", first ``k``);
* ``satisfied`` and ``requests_pending``: whether the user's goal is met, as its users read it.

The scalar game (``game.Tau2Game``) asks them for a row of one, from its goal's ``GoalCalls``; the batch
(``batched.Tau2Batch``) for its slots, from the compiled tasks' padded rows (``compiled.Tasks``), which hold the
same indices. A goal of more than 64 calls or 64 grounding tokens does not fit a ``uint64`` and is refused.
"""

from __future__ import annotations

import numpy as np

from scope_envs.games.tau2.dialogue_acts import IDENTITY_SLOTS, K_PHONE, K_READ, K_WRITE
from scope_envs.games.tau2.goals import IDENTITY_READS, Call
from scope_envs.games.tau2.world import MEMO_SIZE

MAX_CALLS, MAX_TOKENS = 64, 64  # bits of a uint64
HOWS = ("ok", "slip")  # how an identity slot was told (a ``told`` row: 0 not told, 1 + this index)
# BITS[k] = 1 << k, and BITS[-1] = 0: a call index of -1 (none) has no bit
BITS = np.append(np.left_shift(np.uint64(1), np.arange(MAX_CALLS, dtype=np.uint64)), np.uint64(0))


def bit(u: np.ndarray) -> np.ndarray:
    """1 << u for call indices (0 where u is -1)."""
    return BITS[u]


def bits(indices) -> int:
    return sum(1 << int(j) for j in set(indices))


class GoalCalls:
    """A goal's calls and grounding tokens as indices (see the module), for a domain's ``tools``; ``row`` holds
    its scan orders and groundings as rows of one, the arguments ``candidates`` takes."""

    def __init__(self, goal, tools):
        self.calls: list[Call] = []
        self.index: dict[str, int] = {}
        self._candidates: dict[tuple, tuple] = {}

        def add(c: Call | None) -> int:
            if c is None:
                return -1
            k = c.key()
            if k not in self.index:
                self.index[k] = len(self.calls)
                self.calls.append(c)
            return self.index[k]

        g = goal
        self.lookups = [add(c) for c in g.lookups]
        self.identity_reads = [[add(g.identity_read(s, how)) if s in g.identity and IDENTITY_READS[s][0] in tools
                                else -1 for how in HOWS] for s in IDENTITY_SLOTS]
        self.records = [add(c) if c.name in tools else -1 for c in g.record_reads]
        self.requests = [add(c) for c in g.real_requests]
        self.decoy = add(g.decoy)
        self.phones = [add(c) for c in g.phone_actions]
        self.transfer = add(g.transfer_call)
        self.tokens = sorted({t for c in (*g.lookups, *g.real_requests, *([g.decoy] if g.decoy else []))
                              for t in c.grounding()})
        if len(self.calls) > MAX_CALLS or len(self.tokens) > MAX_TOKENS:
            raise ValueError(f"tau2 task {g.task_id!r} is too large for the array rules: {len(self.calls)} calls "
                             f"and {len(self.tokens)} grounding tokens, at most {MAX_CALLS} of each")
        tok = {t: j for j, t in enumerate(self.tokens)}
        self.need = [bits(tok[t] for t in c.grounding() if t in tok) for c in self.calls]
        self.lookup_bits = bits(self.index[c.key()] for c in g.lookups)  # (a goal may list a lookup twice)
        self.request_bits = bits(self.index[c.key()] for c in g.real_requests)
        self.phone_bits = bits(self.index[c.key()] for c in g.phone_actions)
        self.needs_none = not (g.real_requests or g.phone_actions or g.questions)
        self.has_questions, self.forbidden = bool(g.questions), g.decoy_kind == "forbidden"
        one = lambda seq: np.array([seq], np.int64).reshape(1, -1)  # noqa: E731
        self.row = {"lookups": one(self.lookups), "records": one(self.records), "requests": one(self.requests),
                    "phones": one(self.phones), "decoy": np.array([self.decoy], np.int64),
                    "identity_reads": np.array([[[-1, *hows] for hows in self.identity_reads]], np.int64),
                    "need": np.array([self.need], np.uint64).reshape(1, -1)}

    def candidates(self, called: int, revealed: int, told: tuple, details_given: bool, stated: bool,
                   decoy_open: bool) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``candidates`` of one state of this goal (``told``: the (slot, how) pairs in the order first told), as
        call indices; kept per state (a few per task recur across episodes, and a row of one pays numpy's cost
        per call)."""
        key = (called, revealed, told, details_given, stated, decoy_open)
        hit = self._candidates.get(key)
        if hit is None:
            told_row, order = told_rows(told)
            one = lambda v, dtype=bool: np.array([v], dtype)  # noqa: E731
            rows = candidates(**self.row, called=one(called, np.uint64), revealed=one(revealed, np.uint64),
                              told=told_row[None], told_order=order[None], details_given=one(details_given),
                              stated=one(stated), decoy_open=one(decoy_open), k_read=K_READ, k_write=K_WRITE,
                              k_phone=K_PHONE)
            hit = tuple(tuple(u for u in r[0].tolist() if u >= 0) for r in rows)
            if len(self._candidates) >= MEMO_SIZE:
                self._candidates.clear()
            self._candidates[key] = hit
        return hit

    def tokens_in(self, text: str) -> int:
        """The grounding tokens that ``text`` holds."""
        return sum(1 << j for j, t in enumerate(self.tokens) if t in text)

    def called(self, keys) -> int:
        """The calls among ``keys`` (call keys) that are the goal's."""
        index = self.index
        return bits(index[k] for k in keys if k in index)


def told_rows(items) -> tuple[np.ndarray, np.ndarray]:
    """The identity slots told, (slot, how) pairs in the order first told, as a ``candidates`` row each: ``told``
    (0, or 1 + the ``HOWS`` index, per slot) and ``told_order`` (the slots' indices in that order, -1 past)."""
    told = np.zeros(len(IDENTITY_SLOTS), np.int64)
    order = np.full(len(IDENTITY_SLOTS), -1, np.int64)
    for j, (slot, how) in enumerate(items):
        told[IDENTITY_SLOTS.index(slot)] = 1 + HOWS.index(how)
        order[j] = IDENTITY_SLOTS.index(slot)
    return told, order


def told_items(told: np.ndarray, order: np.ndarray) -> tuple:
    """``told_rows``'s rows back as (slot, how) pairs in the order first told."""
    return tuple((IDENTITY_SLOTS[s], HOWS[int(told[s]) - 1]) for s in order.tolist() if s >= 0)


def goal_calls(goal, tools) -> GoalCalls:
    """``goal``'s ``GoalCalls`` for the domain's ``tools`` (kept on the goal: a goal is shared by every episode of
    its task, and a domain's tools are its module's)."""
    kept = goal.__dict__.setdefault("_goal_calls", {})
    calls = kept.get(id(tools))
    if calls is None:
        calls = kept[id(tools)] = GoalCalls(goal, tools)
    return calls


def first(seq: np.ndarray, ok: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` entries of each row of ``seq`` (call indices, -1 for none) where ``ok`` holds, skipping an
    entry equal to an earlier one that was taken; -1 past a row's last. (rows, k)"""
    taken = np.where(ok, bit(seq), np.uint64(0))  # the calls each row took, column by column
    before = np.zeros_like(taken)
    np.bitwise_or.accumulate(taken[:, :-1], 1, out=before[:, 1:])  # ... and those it took before each column
    ok = ok & ((before & taken) == 0)
    rank = np.cumsum(ok, 1) - 1  # each taken entry's place in its row
    rows, cols = np.nonzero(ok & (rank < k))
    out = np.full((len(seq), k), -1, np.int64)
    out[rows, rank[rows, cols]] = seq[rows, cols]
    return out


def candidates(lookups, identity_reads, records, requests, decoy, phones, need, *, called, revealed, told,
               told_order, details_given, stated, decoy_open, k_read: int, k_write: int, k_phone: int):
    """Each row's read, write and phone candidates as call indices, ((rows, k) each, -1 past the last).

    The goal's rows (``GoalCalls.row``'s, or the compiled tasks' padded ones): ``lookups``, ``records``,
    ``requests``, ``phones`` (rows, width) call indices, ``identity_reads`` (rows, slots, 3) by how a slot was
    told, ``decoy`` (rows,), ``need`` (rows, calls) each call's grounding tokens. The state's: ``called`` and
    ``revealed`` bitsets, ``told`` (rows, slots) and ``told_order`` (the slots in the order first told, -1 past),
    and the flags.

    Reads: the lookups grounded in what was revealed, the identity reads as each slot was told, in the order the
    slots were told, the record reads once the details were given. Writes: the decoy while it is requested, then
    the requests once stated, each grounded. Phones: the phone actions once stated. Always calls not made yet,
    each once, the first ``k`` of each kind."""
    called, revealed = called[:, None], revealed[:, None]
    rows = np.arange(len(called))[:, None]

    def open_(u):  # not made yet
        return (u >= 0) & ((called & bit(u)) == 0)

    def grounded(u):
        return (np.take_along_axis(need, np.maximum(u, 0), 1) & ~revealed) == 0

    slots = np.maximum(told_order, 0)
    how = np.take_along_axis(told, slots, 1)
    ids = np.where(told_order >= 0, identity_reads[rows, slots, how], -1)
    seq = np.concatenate([lookups, ids, records], 1)
    ok = np.concatenate([open_(lookups) & grounded(lookups), open_(ids),
                         open_(records) & details_given[:, None]], 1)
    reads = first(seq, ok, k_read)
    seq = np.concatenate([np.where(decoy_open, decoy, -1)[:, None], np.where(stated[:, None], requests, -1)], 1)
    writes = first(seq, open_(seq) & grounded(seq), k_write)
    ph = np.where(stated[:, None], phones, -1)
    return reads, writes, first(ph, open_(ph), k_phone)


def satisfied(needs_none, request_bits, phone_bits, has_questions, forbidden, *, called, stated, denied, answered):
    """Whether the user's goal is met: every request and phone action made and its questions answered; a goal of
    none of these, once stated (and a forbidden decoy refused)."""
    none = stated & (~forbidden | (denied > 0))
    made = ((request_bits & ~called) == 0) & ((phone_bits & ~called) == 0)
    return np.where(needs_none, none, made & (answered | ~has_questions))


def requests_pending(request_bits, called):
    """Whether a request the user wants made is not made yet."""
    return (request_bits & ~called) != 0


__all__ = ["BITS", "GoalCalls", "HOWS", "MAX_CALLS", "MAX_TOKENS", "bit", "candidates", "first", "goal_calls",
           "requests_pending", "satisfied", "told_items", "told_rows"]
