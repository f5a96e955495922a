"""CooperBench for N episodes at once: the game's state as arrays, the partner styles' policy as matrices.

``CooperBenchBatch`` holds N games (slots) and steps any subset of them with numpy, following
``CooperBenchGame`` (turns, claims, questions, the three-way merge with writer-ordered combined edits) and
``styles.decide`` (the partner policy: expected, with the reference's card needs, or with its coins flipped)
operation for operation, so that the same seeds give the same trajectories (``tests/test_vec.py`` plays
every cooperbench id both ways). Dealing (the style card and the task) stays with the scalar game; the vec
env (``scope_envs.vec``) passes each slot's task and the style's traits in. Roles are 0 (``teammate``,
feature A) and 1 (``partner``, feature B). The vec env's fast mode deals from ``split_styles`` and
``split_tasks``: a split's cards and tasks as arrays, so N deals are N pairs of indices.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

from scope_envs.core.rewards import SIMULATOR_REWARDS
from scope_envs.games.cooperbench import styles, world
from scope_envs.games.cooperbench.dialogue_acts import (
    ACTS,
    CLAIM,
    COMBINED,
    EDIT,
    FIRST_MESSAGE,
    INDEX,
    MESSAGES,
)
from scope_envs.games.cooperbench.game import OWN_BONUS, TEAM_BONUS
from scope_envs.games.cooperbench.styles import TRAITS
from scope_envs.games.cooperbench.world import N_REGIONS

N_ACTS = len(ACTS)
R = N_REGIONS
ANNOUNCE, REPORT, ASK, ANSWER, DECLINE = (INDEX[m] for m in MESSAGES)
WAIT, SUBMIT = INDEX["wait"], INDEX["submit"]
# the act's family: 0 no-op, 1 edit, 2 combined edit, 3 claim, 4.. the messages, then wait, submit
FAMILY = np.zeros(N_ACTS, np.int64)
FAMILY[EDIT : EDIT + R], FAMILY[COMBINED : COMBINED + R], FAMILY[CLAIM : CLAIM + R] = 1, 2, 3
FAMILY[FIRST_MESSAGE : FIRST_MESSAGE + len(MESSAGES)] = 4 + np.arange(len(MESSAGES))
FAMILY[WAIT], FAMILY[SUBMIT] = 4 + len(MESSAGES), 5 + len(MESSAGES)
REGION = (np.arange(N_ACTS) - 1) % R
# content of a region: 0 base, 1 feature A's line, 2 B's, 3 both written by the teammate (A first), 4 both
# written by the partner (B first; ``world.edited_region``): 3 and 4 differ, so they conflict
TEAMMATE_CONTENT, PARTNER_CONTENT = np.array([0, 1, 3]), np.array([0, 2, 4])
HAS_A, HAS_B = np.array([False, True, False, True, True]), np.array([False, False, True, True, True])


@functools.cache
def _coin_keys(max_turns: int) -> tuple[list[bytes], dict]:
    """``coins``' keys in order, as the bytes that follow the style and task in ``repr((style_id, task, *key))``
    (``", 'answer', 3)"``), and where each entry's run of keys lies in that order (a slice; an index for a scalar)."""
    runs = {"answer": [("answer", t) for t in range(max_turns + 1)], "announce": [("announce",)],
            **{name: [(name, r) for r in range(R)] for name in ("respect", "keep", "claim")}, "report": [("report",)]}
    tails, where = [], {}
    for name, keys in runs.items():
        where[name] = len(tails) if name in ("announce", "report") else slice(len(tails), len(tails) + len(keys))
        tails += [("".join(f", {part!r}" for part in key) + ")").encode() for key in keys]
    return tails, where


@functools.lru_cache(maxsize=65536)
def coins(style_id: str, task: str, max_turns: int) -> dict[str, np.ndarray]:
    """The uniforms behind ``styles.coin`` in sampled mode for one (style, task): every key a decision can
    ask (``coin`` is ``u < p`` with this ``u``): ``zlib.crc32(repr((style_id, task, *key)).encode()) / 2**32``,
    each CRC continued from the one of the shared head ``(style_id, task``. Cached: read it, never write to it."""
    tails, where = _coin_keys(max_turns)
    head = zlib.crc32(f"({style_id!r}, {task!r}".encode())
    u = np.array([zlib.crc32(tail, head) for tail in tails]) / 2**32
    return {name: float(u[w]) if isinstance(w, int) else u[w] for name, w in where.items()}


@functools.cache
def split_styles(split: str) -> dict:
    """Every style card of ``split`` (``styles.persona(split, i)``, i in order): ``personas`` and ``ids``
    (object arrays), ``traits`` (cards, 5) in ``TRAITS`` order and ``talk``. Cached: read, never write."""
    return style_table(tuple(styles.persona(split, i) for i in range(styles.SPLIT_SIZES[split])))


def style_table(people: tuple) -> dict:
    """``split_styles`` of these cards."""
    out = {"personas": np.empty(len(people), object), "ids": np.array([p.id for p in people], object),
           "traits": np.array([[p.traits[t] for t in TRAITS] for p in people]),
           "talk": np.array([p.traits.get("talk", 0.5) for p in people])}
    out["personas"][:] = people
    return out


@functools.cache
def split_tasks(split: str) -> dict:
    """Every task of ``split`` (``world.tasks``): ``ids`` (an object array) and ``needs`` (tasks, 2, regions)
    bool. Cached: read, never write."""
    tasks = world.tasks(split)
    needs = np.zeros((len(tasks), 2, R), bool)
    for j, task in enumerate(tasks):
        for role in (0, 1):
            needs[j, role, list(task.needs[role])] = True
    return {"ids": np.array([t.id for t in tasks], object), "needs": needs}


class CooperBenchBatch:
    roles = ("teammate", "partner")
    n_acts = (N_ACTS, N_ACTS)
    # the turn order the vec env may rely on: the teammate opens; the partner moves again once it submitted
    user_opens, user_replies_once = False, False

    def __init__(self, n: int, max_turns: int = 12, user_reward: str = "persona"):
        self.n, self.max_turns, self.user_reward = n, max_turns, user_reward
        self.obs_dim = (6 * R + len(MESSAGES) + 1 + 4,) * 2
        self.feature_max = 1.0  # every feature is a flag or a fraction (the vec env then skips clipping them)
        self.needs = np.zeros((n, 2, R), bool)
        self.known = np.zeros((n, 2, R), bool)
        self.claims = np.zeros((n, 2, R), bool)
        self.edits = np.zeros((n, 2, R), np.int64)  # 0 none, 1 its own feature's change, 2 both (combined)
        self.turns = np.zeros((n, 2), np.int64)
        self.submitted = np.zeros((n, 2), bool)
        self.announced = np.zeros((n, 2), bool)
        self.reported = np.zeros((n, 2), bool)
        self.asked = np.zeros((n, 2), bool)  # a question from the other awaits this role
        self.last_message = np.zeros((n, 2), np.int64)  # this role's last message (1 + its index), 0: none
        self.messages = np.zeros(n, np.int64)
        self.length = np.zeros(n, np.int64)
        self.next = np.zeros(n, np.int64)
        self.done = np.zeros(n, bool)
        self.talk = np.full(n, 0.5)  # the card's ``talk`` (the persona user reward)
        self.result = {k: np.zeros(n) for k in ("success", "teammate_feature", "partner_feature", "conflicts",
                                                 "merge_conflict", "message_share")}
        self._noop = [np.eye(N_ACTS, dtype=bool)[0]] * 2

    def reset(self, idx: np.ndarray, cards: list[dict]) -> None:
        """New games in slots ``idx``: each card holds the task's ``needs`` (two region sets) and ``talk``."""
        if not len(idx):
            return
        needs = np.zeros((len(idx), 2, R), bool)
        for j, card in enumerate(cards):
            for role in (0, 1):
                needs[j, role, list(card["needs"][role])] = True
        self.reset_needs(idx, needs, [c["talk"] for c in cards])

    def reset_needs(self, idx: np.ndarray, needs: np.ndarray, talk) -> None:
        """``reset`` with the tasks' needs stacked (len(idx), 2, regions) and the cards' ``talk``."""
        self.needs[idx] = needs
        self.talk[idx] = talk
        for a in (self.known, self.claims, self.submitted, self.announced, self.reported, self.asked):
            a[idx] = False
        for a in (self.edits, self.turns, self.last_message, self.messages, self.length, self.next):
            a[idx] = 0
        self.done[idx] = False
        for v in self.result.values():
            v[idx] = 0.0

    def coins(self, style_id: str, task: str) -> dict[str, np.ndarray]:
        """``coins`` of one (style, task) at this batch's ``max_turns``."""
        return coins(style_id, task, self.max_turns)

    def active(self) -> np.ndarray:
        return np.where(self.done, -1, self.next)

    def legal(self, role: int, active: np.ndarray) -> np.ndarray:
        on = np.flatnonzero(active == role)
        mask = np.repeat(self._noop[role][None], self.n, 0)
        if not len(on):
            return mask
        other = 1 - role
        needs, known, claims = self.needs[on, role], self.known[on, role], self.claims[on, role]
        m = np.zeros((len(on), N_ACTS), bool)
        m[:, EDIT : EDIT + R] = needs
        m[:, COMBINED : COMBINED + R] = needs & known
        m[:, CLAIM : CLAIM + R] = needs & ~claims
        m[:, ANNOUNCE] = ~self.announced[on, role]
        m[:, REPORT] = (self.edits[on, role] > 0).any(1) & ~self.reported[on, role]
        m[:, ASK] = ~known.any(1) & ~self.asked[on, other]
        m[:, ANSWER] = m[:, DECLINE] = self.asked[on, role]
        m[:, WAIT] = m[:, SUBMIT] = True
        mask[on] = m
        return mask

    def apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Play ``acts`` in slots ``idx`` (legal, checked by the caller); returns the slots that finished."""
        other = 1 - role
        fam = FAMILY[acts]
        present = set(fam.tolist())
        self.length[idx] += 1
        if present & {1, 2, 3}:
            reg = REGION[acts]
            for f in present & {1, 2}:  # an edit of its own feature (1) or of both (2)
                sel = fam == f
                self.edits[idx[sel], role, reg[sel]] = f
            if 3 in present:
                sel = fam == 3
                self.claims[idx[sel], role, reg[sel]] = True
        messages = present & set(range(4, 4 + len(MESSAGES)))
        if messages:
            tell = (acts == ANNOUNCE) | (acts == ANSWER)
            self.known[idx[tell], other] = self.needs[idx[tell], role]
            self.announced[idx[acts == ANNOUNCE], role] = True
            self.reported[idx[acts == REPORT], role] = True
            self.asked[idx[acts == ASK], other] = True
            self.asked[idx[(acts == ANSWER) | (acts == DECLINE)], role] = False
            message = (fam >= 4) & (fam < 4 + len(MESSAGES))
            self.last_message[idx[message], role] = fam[message] - 3
        if present & {3} or messages:
            self.messages[idx] += (fam >= 3) & (fam < 4 + len(MESSAGES))
        if FAMILY[SUBMIT] in present:
            self.submitted[idx[acts == SUBMIT], role] = True
        self.turns[idx, role] += 1
        self.submitted[idx[self.turns[idx, role] >= self.max_turns], role] = True
        submitted = self.submitted[idx]
        over = submitted[:, 0] & submitted[:, 1]
        self.next[idx] = np.where(submitted[:, other], role, other)
        ended = idx[over]
        if len(ended):
            self._finish(ended)
        return ended

    def _finish(self, idx):
        """``world.merge`` region by region, then each feature's test (``world.feature_done``)."""
        a = TEAMMATE_CONTENT[self.edits[idx, 0]]
        b = PARTNER_CONTENT[self.edits[idx, 1]]
        conflict = (a != b) & (b != 0) & (a != 0)
        merged = np.where((a == b) | (b == 0), a, np.where(a == 0, b, 0))
        has_a, has_b = HAS_A[merged] & ~conflict, HAS_B[merged] & ~conflict
        done_t = ~(self.needs[idx, 0] & ~has_a).any(1)
        done_p = ~(self.needs[idx, 1] & ~has_b).any(1)
        n_conflicts = conflict.sum(1)
        self.done[idx] = True
        r = self.result
        r["success"][idx] = (done_t & done_p & (n_conflicts == 0)).astype(float)
        r["teammate_feature"][idx], r["partner_feature"][idx] = done_t.astype(float), done_p.astype(float)
        r["conflicts"][idx], r["merge_conflict"][idx] = n_conflicts.astype(float), (n_conflicts > 0).astype(float)
        r["message_share"][idx] = self.messages[idx] / np.maximum(1, self.length[idx])

    def features(self, role: int) -> np.ndarray:
        other = 1 - role
        out = np.zeros((self.n, self.obs_dim[role]), np.float32)
        blocks = (self.needs[:, role], self.known[:, role], self.claims[:, other], self.claims[:, role],
                  self.edits[:, role] == 1, self.edits[:, role] == 2)
        for k, block in enumerate(blocks):
            out[:, k * R : (k + 1) * R] = block
        c = 6 * R
        out[np.arange(self.n), c + self.last_message[:, other]] = 1
        c += len(MESSAGES) + 1
        out[:, c] = (self.turns[:, role] / self.max_turns).astype(np.float32)
        out[:, c + 1], out[:, c + 2], out[:, c + 3] = self.asked[:, role], self.reported[:, other], \
            self.submitted[:, other]
        return out

    def outcome(self, idx) -> dict[str, np.ndarray]:
        return {k: v[idx] for k, v in self.result.items()}

    def _agent_reward(self, idx):
        return TEAM_BONUS * self.result["success"][idx] + OWN_BONUS * self.result["teammate_feature"][idx]

    def agent_score(self, idx) -> np.ndarray:
        return self._agent_reward(idx) / (TEAM_BONUS + OWN_BONUS)

    def rewards(self, idx, users: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The finished slots' (teammate, partner) rewards; ``users=False``: the teammate's only (None for the
        partner: no learnable user to pay)."""
        agent = self._agent_reward(idx)
        mode = self.user_reward
        if not users:
            return agent, None
        if mode in SIMULATOR_REWARDS:
            score = self.agent_score(idx)
            return agent, {"adversarial": 1.0 - score, "cooperative": score, "curriculum": np.zeros(len(idx))}[mode]
        team = TEAM_BONUS * self.result["success"][idx]
        talk = np.abs(self.result["message_share"][idx] - self.talk[idx])
        persona = team + OWN_BONUS * self.result["partner_feature"][idx] - talk
        return agent, {"zero_sum": -agent, "persona": persona, "mixed": 0.5 * persona - 0.5 * agent}[mode]

    # -- the partner styles' policy ----------------------------------------------------------------
    def decide(self, idx, legal, traits: np.ndarray, u: dict | None, role: int = 1) -> np.ndarray:
        """``styles.decide`` for ``role`` in slots ``idx``: ``traits`` (k, 5) in ``TRAITS`` order; ``u`` the
        slots' coin uniforms (``coins`` stacked: each key an array over the slots) in sampled mode, or None
        in expected mode (every coin its probability)."""
        k, other = len(idx), 1 - role
        t = {name: traits[:, j] for j, name in enumerate(TRAITS)}
        p = np.zeros((k, N_ACTS))
        mass = np.ones(k)
        rows = np.arange(k)

        def put(act, q, where=None):  # ``put`` of styles.decide, in the rows ``where``
            nonlocal mass
            ok = legal[:, act] if isinstance(act, int) else legal[rows, act]
            if where is not None:
                ok = ok & where
            if not ok.any():
                return
            qo = q if np.ndim(q) == 0 else q[ok]
            if isinstance(act, int):
                p[ok, act] += mass[ok] * qo
            else:
                p[rows[ok], act[ok]] += mass[ok] * qo
            mass = np.where(ok, mass * (1.0 - q), mass)

        def coin(prob, uniform):  # ``styles.coin``: the probability, or whether its coin came up
            return prob if u is None else (uniform < prob).astype(float)

        asked, turn = self.asked[idx, role], self.turns[idx, role]
        put(ANSWER, coin(t["answer"], None if u is None else u["answer"][rows, turn]), asked)
        put(ANNOUNCE, coin(t["announce"], None if u is None else u["announce"]), turn == 0)
        needs, known = self.needs[idx, role], self.known[idx, role]
        edits = self.edits[idx, role]
        partner_claims, own_claims = self.claims[idx, other], self.claims[idx, role]
        respect = coin(t["respect"][:, None], None if u is None else u["respect"])
        keep = coin(t["keep"][:, None], None if u is None else u["keep"])
        # ``styles.leaves_shared``: the reference's quiet cards wait for their teammate on shared regions, and
        # one that got a claim works alone (plans as if told nothing, ignores claims); never in sampled mode
        leaves = (t["talk"] < 0.5) if u is None else np.zeros(k, bool)
        alone = leaves & partner_claims.any(1)
        known = known & ~alone[:, None]
        skip = (edits > 0) & ((edits == 2) | ~known)
        skip |= known & ~own_claims & leaves[:, None]
        skip |= partner_claims & (respect >= 0.5) & ~alone[:, None]  # ``styles.gate``: its likelier side
        skip |= own_claims & (keep < 0.5)
        todo = needs & ~skip
        claim = todo & known & ~own_claims & ~partner_claims
        if claim.any():
            talk = coin(t["talk"][:, None], None if u is None else u["claim"])
            talk = np.broadcast_to(talk, (k, R))
            for r in np.flatnonzero(claim.any(0)).tolist():  # in region order, as the regions are put
                put(CLAIM + r, talk[:, r], claim[:, r])
        has = todo.any(1)
        first = todo.argmax(1)
        if has.any():
            put(np.where(known[rows, first], COMBINED, EDIT) + first, 1.0, has)
        if not has.all():
            put(REPORT, coin(t["talk"], None if u is None else u["report"]), ~has & ~self.reported[idx, role])
            put(SUBMIT, 1.0, ~has)
        put(WAIT, 1.0)
        total = p.sum(1, keepdims=True)
        empty = total[:, 0] == 0
        if empty.any():
            p[empty] = legal[empty]
            total[empty] = p[empty].sum(1, keepdims=True)
        return p / total
