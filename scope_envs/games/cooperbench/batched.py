"""CooperBench for N episodes at once: the game's state as arrays, the partner styles' policy as matrices.

``CooperBenchBatch`` holds N games (slots) and steps any subset of them with numpy. It is the one definition of
the game's rules (turns, claims, questions, the three-way merge with writer-ordered combined edits, the
rewards): ``CooperBenchGame`` (the env's game) is a batch of one with the transcript and the task on top, and
the batched engine under ``scope_envs.make_vec`` steps N. The partner styles' policy is ``styles.policy``, on
arrays too. Dealing (the style card and the task) stays with the game; the vec env (``scope_envs.vec``)
passes each slot's task and the style's traits in. Roles are 0 (``teammate``, feature A) and 1 (``partner``,
feature B). The vec env deals from ``split_styles`` and ``split_tasks``: a split's cards and tasks
as arrays, so N deals are N pairs of indices.
"""

from __future__ import annotations

import functools

import numpy as np

from scope_envs.core.rewards import SIMULATOR_REWARDS, simulator_reward
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
from scope_envs.games.cooperbench.styles import TRAITS
from scope_envs.games.cooperbench.world import N_REGIONS

TEAMMATE, PARTNER = ROLES = ("teammate", "partner")
FEATURE = {TEAMMATE: "A", PARTNER: "B"}
# ``zero_sum`` is v0's ``adversarial`` (minus the agent's reward); ``adversarial`` is now SCOPE's 1 - score
USER_REWARDS = ("persona", "mixed", "zero_sum") + SIMULATOR_REWARDS
TEAM_BONUS, OWN_BONUS = 1.0, 0.5
OUTCOMES = ("success", "teammate_feature", "partner_feature", "conflicts", "merge_conflict", "message_share")
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
    roles = ROLES
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
        self.result = {k: np.zeros(n) for k in OUTCOMES}
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
        """``styles.coins`` of one (style, task) at this batch's ``max_turns``."""
        return styles.coins(style_id, task, self.max_turns)

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

    def agent_score(self, idx) -> np.ndarray:
        return teammate_score(self.outcome(idx))

    def rewards(self, idx, users: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The finished slots' (teammate, partner) rewards; ``users=False``: the teammate's only (None for the
        partner: no learnable user to pay)."""
        return rewards(self.outcome(idx), self.talk[idx], self.user_reward if users else None)

    def public(self, i: int) -> dict:
        """``game.info()`` of slot ``i``: each role's turns and whether it submitted."""
        return {"turns": dict(zip(ROLES, self.turns[i].tolist())),
                "submitted": dict(zip(ROLES, map(bool, self.submitted[i])))}

    def private(self, i: int, role: int, task: str) -> dict:
        """``game.private(role)`` of slot ``i`` playing task ``task``: what that teammate knows."""
        other = 1 - role
        needs, known, partner_claims, own_claims = (
            frozenset(np.flatnonzero(row).tolist())
            for row in (self.needs[i, role], self.known[i, role], self.claims[i, other], self.claims[i, role]))
        own = (FEATURE[ROLES[role]],)
        edits = {int(r): (own if code == 1 else ("A", "B")) for r, code in enumerate(self.edits[i, role].tolist())
                 if code}
        return {"task": task, "needs": needs, "known": known, "partner_claims": partner_claims,
                "own_claims": own_claims, "edits": edits, "asked": bool(self.asked[i, role]),
                "announced": bool(self.announced[i, role]), "reported": bool(self.reported[i, role]),
                "partner_done": bool(self.reported[i, other] or self.submitted[i, other]),
                "turn": int(self.turns[i, role])}

    def decide(self, idx, legal, traits: np.ndarray, u: dict | None, role: int = 1) -> np.ndarray:
        """``styles.policy`` for ``role`` in slots ``idx``: ``traits`` (k, 5) in ``TRAITS`` order; ``u`` the
        slots' coin uniforms (``styles.coins`` stacked: each key an array over the slots) in sampled mode, or
        None in expected mode (every coin its probability)."""
        other = 1 - role
        view = {"asked": self.asked[idx, role], "turn": self.turns[idx, role], "reported": self.reported[idx, role],
                "needs": self.needs[idx, role], "known": self.known[idx, role], "edits": self.edits[idx, role],
                "own_claims": self.claims[idx, role], "partner_claims": self.claims[idx, other]}
        return styles.policy(view, legal, traits, u)


def teammate_reward(result: dict) -> np.ndarray:
    """The teammate's reward from the episodes' ``result`` (arrays by ``OUTCOMES``): team success + its own
    feature's bonus."""
    return TEAM_BONUS * result["success"] + OWN_BONUS * result["teammate_feature"]


def teammate_score(result: dict) -> np.ndarray:
    """The teammate's reward over its maximum (``TEAM_BONUS + OWN_BONUS``), in [0, 1]."""
    return teammate_reward(result) / (TEAM_BONUS + OWN_BONUS)


def rewards(result: dict, talk: np.ndarray, user_reward: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The finished episodes' (teammate, partner) rewards from their ``result`` and the partner cards' ``talk``,
    the partner paid by ``user_reward`` (None: the teammate's only)."""
    agent = teammate_reward(result)
    if user_reward is None:
        return agent, None
    if user_reward in SIMULATOR_REWARDS:
        score = teammate_score(result)
        return agent, simulator_reward(user_reward, score) + np.zeros_like(score)
    persona = TEAM_BONUS * result["success"] + OWN_BONUS * result["partner_feature"] \
        - np.abs(result["message_share"] - talk)
    return agent, {"zero_sum": -agent, "persona": persona, "mixed": 0.5 * persona - 0.5 * agent}[user_reward]
