"""tau^2-bench's act game for N episodes at once: the slots' scalar games behind the batch interface of the vec
engine (``scope_envs.vec.games.Tau2VecEnv``), and the built-in users' reply models as arrays.

tau2's rules are not arrays: a turn runs tool calls on a database, grounds candidates in what the dialogue has
revealed and checks the domain policy. ``Tau2Batch`` therefore keeps each slot's own ``Tau2ActGame`` (the scalar
env's game object, so the scalar code stays the one definition of the rules) and steps the slots one by one in
``apply``; what the vec engine batches around it is everything else a scalar env does per step: the simulator
turn (the view, the reply distribution, its sharpening, the draw), the observations, masks, infos and rewards.

The users' reply models are computed for all slots at once from the dialogue state read into arrays
(``user_states``), operation for operation as ``behaviour.reference_distribution`` and
``human_proxy.distribution`` compute them, so that the same seeds give the same episodes
(``tests/test_vec_tau2.py`` plays every tau2 id both ways and compares every observation, mask, reward and
outcome):

* ``reference_reply``: ``ReferenceUser.reference`` (the collapsed user, the rotation members and the panel's
  families: each slot's card, or its simulator's style card, moved toward the modal card by its cooperation);
* ``human_proxy_reply``: ``human_proxy.distribution`` at its default assumptions.
"""

from __future__ import annotations

import numpy as np

from scope_envs.games.tau2 import human_proxy
from scope_envs.games.tau2.behaviour import VOLUNTEER
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, USER_ACTS, USER_INDEX
from scope_envs.games.tau2.game import AGENT, USER, Tau2Game

ROLES = (AGENT, USER)
N_USER = len(USER_ACTS)
U = USER_INDEX
IDENTITY_ASKS = ("user_id", "email", "name_zip", "phone")
RECORD_ASKS = ("record_id", "details")
# the traits a reply model reads, as columns of ``Tau2Batch.traits``
TRAITS = ("disclose", "patience", "insist", "comply", "mind_change", "slip")
T = {t: j for j, t in enumerate(TRAITS)}
# the dialogue-state fields the reply models read (``Tau2Game.user_state``), as columns of ``user_states``
STATE = ("transfer_pending", "first_turn", "satisfied", "agent_msgs", "instructed", "confirm_decoy", "confirm_real",
         "decoy_mind", "decoy_forbidden", "ask_identity", "ask_record", "slipped", "stated", "details_given",
         "identity_given", "asked", "has_question", "denied", "insisted", "decoy_open", "real_pending",
         "tool_errors")
S = {k: j for j, k in enumerate(STATE)}


def user_state_row(game) -> list:
    """``game.user_state()`` as the numbers of ``STATE`` (the labels as flags): the one definition of what a user
    knows is ``Tau2Game.user_state``, read here as every simulator reads it."""
    g = game.goal
    st = game.user_state()
    target, slot = st["confirm_target"], st["asked_slot"]
    return [st["transfer_pending"], st["first_turn"], st["satisfied"], st["agent_msgs"], st["instructed"],
            target == "decoy", target == "real", g.decoy_kind == "mind_change", g.decoy_kind == "forbidden",
            slot in IDENTITY_ASKS, slot in RECORD_ASKS, st["slipped"], st["stated"], st["details_given"],
            st["identity_given"], st["asked"], st["has_question"], st["denied"], st["insisted"], st["decoy_open"],
            st["real_pending"], st["tool_errors"]]


class Tau2Batch:
    """N tau2 act games (each slot's scalar ``Tau2ActGame``); roles are 0 (agent) and 1 (user)."""

    roles = ROLES
    n_acts = (len(AGENT_ACTS), N_USER)
    # a task may open mid-conversation with the user to speak (``Tau2Game._replay_message``); after a user turn
    # the agent always moves next (or the episode is over)
    user_opens, user_replies_once = True, True

    def __init__(self, games: list):
        self.games = list(games)
        n = self.n = len(self.games)
        first = self.games[0]
        self.max_steps = first.max_steps
        self.obs_dim = tuple(len(first.features(r)) for r in ROLES)
        # the largest feature: ``agent_msgs / 30`` (at most max_steps / 30); the rest are fractions or flags
        self.feature_max = max(1.0, self.max_steps / 30)
        self.length = np.zeros(n, np.int64)  # turns in each game's history (``infos["turn"]``)
        self.done = np.zeros(n, bool)
        self.cut = np.zeros(n, bool)  # whether the slot's last finished episode was truncated (steps, tool errors)
        self._active = np.full(n, -1, np.int64)
        self._noop = [np.eye(k, dtype=bool)[0] for k in self.n_acts]
        self._stamp = np.zeros(n, np.int64)  # bumped whenever a slot's game changes (features are cached by it)
        self._features = [np.zeros((n, d), np.float32) for d in self.obs_dim]
        self._seen = [np.full(n, -1, np.int64), np.full(n, -1, np.int64)]
        # each slot's reply-model traits (``TRAITS``; the vec env sets them as it deals) and whether a
        # learnable user sits in it (only those slots need the user's features)
        self.traits = np.zeros((n, len(TRAITS)))
        self.seat = np.full(n, -1, np.int64)
        self.track_proxy = False

    # -- episodes ------------------------------------------------------------------------------------------
    def reset(self, idx: np.ndarray, cards=None) -> None:
        """The games in slots ``idx`` were just reset (by the vec env's dealing): read their state."""
        for i in np.asarray(idx).tolist():
            self._read(i)

    def _read(self, i: int) -> None:
        game = self.games[i]
        self.length[i] = len(game.history)
        role = game.active_role()
        self._active[i] = -1 if role is None else (0 if role == AGENT else 1)
        self.done[i] = role is None
        self._stamp[i] += 1

    def active(self) -> np.ndarray:
        """The role to move in each slot (0, 1), or -1 once over."""
        return self._active.copy()

    def legal(self, role: int, active: np.ndarray) -> np.ndarray:
        """Each slot's legal acts of ``role``; slots where ``role`` is not to move get the no-op only."""
        out = np.tile(self._noop[role], (self.n, 1))
        name, games = ROLES[role], self.games
        for i in np.flatnonzero(active == role).tolist():
            game = games[i]
            # the shared mask, copied once into ``out`` (a game class with its own ``legal`` is asked for it)
            out[i] = game.shared_legal(name) if type(game).legal is Tau2Game.legal else game.legal(name)
        return out

    def apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Play ``acts`` (legal, checked by the caller) in slots ``idx``; returns the slots that finished."""
        name, games = ROLES[role], self.games
        ended = []
        for i, a in zip(idx.tolist(), acts.tolist()):
            game = games[i]
            game.apply(name, a, "")  # the act surface's empty text: the game words the act itself
            self._read(i)
            if self.done[i]:
                self.cut[i] = game.truncated()
                ended.append(i)
        return np.array(ended, np.int64)

    # -- what the roles see -------------------------------------------------------------------------------
    def features(self, role: int) -> np.ndarray:
        """Each slot's features of ``role`` (the user's only where a learnable user sits; zeros elsewhere,
        which the vec env does not show)."""
        out, seen, stamp = self._features[role], self._seen[role], self._stamp
        stale = seen != stamp
        if role == 1:
            stale &= self.seat >= 0
        name, games = ROLES[role], self.games
        for i in np.flatnonzero(stale).tolist():
            out[i] = games[i].features(name)
        seen[stale] = stamp[stale]
        return out.copy()

    def outcome(self, idx) -> dict[str, np.ndarray]:
        rows = [self.games[i].outcome() for i in np.asarray(idx).tolist()]
        return {k: np.array([r[k] for r in rows], float) for k in rows[0]}

    def agent_score(self, idx) -> np.ndarray:
        return np.array([self.games[i].agent_score() for i in np.asarray(idx).tolist()])

    def rewards(self, idx, users: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The finished slots' (agent, user) rewards (``Tau2Game.rewards``); ``users=False``: the agent's only."""
        rows = [self.games[i].rewards() for i in np.asarray(idx).tolist()]
        agent = np.array([r[AGENT] for r in rows], float)
        return agent, (np.array([r[USER] for r in rows], float) if users else None)

    # -- the users' replies ------------------------------------------------------------------------------
    def user_states(self, idx: np.ndarray) -> np.ndarray:
        """``user_state_row`` of slots ``idx``, (rows, ``STATE``)."""
        games = self.games
        return np.array([user_state_row(games[i]) for i in idx.tolist()], float).reshape(len(idx), len(STATE))

    def reference_reply(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``behaviour.reference_distribution`` in slots ``idx`` with each slot's ``traits``, in its
        floating-point order."""
        return reference_distribution(self.traits[idx], self.user_states(idx), legal)

    def human_proxy_reply(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """``human_proxy.distribution`` in slots ``idx`` (its default assumptions)."""
        st = self.user_states(idx)
        seeds = [self.games[i].episode_seed for i in idx.tolist()]
        t = self.traits[idx]
        coins = np.array([[human_proxy._coin(s, "slip", slip), human_proxy._coin(s, "mind", mind)]
                          for s, slip, mind in zip(seeds, t[:, T["slip"]].tolist(), t[:, T["mind_change"]].tolist())],
                         bool).reshape(len(idx), 2)
        return proxy_distribution(t, st, coins, legal)


def _patience(t: np.ndarray) -> np.ndarray:
    """``behaviour.patience_turns``: ``int(4 + 26 * patience)`` (the traits are >= 0: truncation is floor)."""
    return np.floor(4 + 26 * t[:, T["patience"]])


def _pow(x: np.ndarray, e: float) -> np.ndarray:
    """``x ** e`` element by element as Python computes it (C's ``pow``; numpy may take another route, such as
    ``sqrt`` for 0.5, whose last bit can differ)."""
    return np.array([v ** e for v in x.tolist()], float)


def _branches(st: np.ndarray, conditions: list) -> list:
    """The if/elif chain's branches as disjoint masks: each condition where no earlier one held."""
    taken = np.zeros(len(st), bool)
    out = []
    for c in conditions:
        mine = c & ~taken
        taken |= mine
        out.append(mine)
    out.append(~taken)  # the final else
    return out


def reference_distribution(t: np.ndarray, st: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``behaviour.reference_distribution`` for rows of traits ``t`` (``TRAITS``) and states ``st``
    (``STATE``): each branch's weights by the same operations in the same order."""
    rows = len(st)
    w = np.zeros((rows, N_USER))
    f = lambda k: st[:, S[k]]  # noqa: E731
    tr = lambda k: t[:, T[k]]  # noqa: E731
    patience = _patience(t)
    denied_forbidden = (f("denied") != 0) & (f("decoy_forbidden") != 0)
    (transfer, first, satisfied, impatient, instructed, decoy, real, identity, record, insist,
     rest) = _branches(st, [f("transfer_pending") != 0, f("first_turn") != 0, f("satisfied") != 0,
                            f("agent_msgs") > patience, f("instructed") != 0, f("confirm_decoy") != 0,
                            f("confirm_real") != 0, f("ask_identity") != 0, f("ask_record") != 0, denied_forbidden])

    def put(mask, act, values):
        if mask.any():
            w[mask, U[act]] = values[mask] if isinstance(values, np.ndarray) else values

    put(transfer, "transfer", 1.0)
    put(first, "inform_all", 0.05 + tr("disclose"))
    put(first, "state_request", 1.05 - tr("disclose"))
    put(first, "change_mind", 0.5 * tr("mind_change"))
    put(satisfied, "stop", 1.0)
    put(satisfied, "ask_question", 0.2 * (1 - f("asked")))
    put(impatient, "stop", 1.0)
    put(instructed, "phone_action", 0.1 + tr("comply"))
    put(instructed, "deny", 0.3 * (1 - tr("comply")))
    mind = decoy & (f("decoy_mind") != 0)
    put(mind, "change_mind", 0.2 + tr("mind_change"))
    put(mind, "confirm", 0.2 * (1 - tr("mind_change")))
    put(decoy & ~mind, "confirm", 1.0)
    put(real, "confirm", 0.2 + tr("comply"))
    put(real, "deny", 0.2 * (1 - tr("comply")))
    slip = 0.8 * tr("slip") * (1 - f("slipped"))
    put(identity, "inform_identity", 1.0 - slip)
    put(identity, "inform_slip", slip)
    put(identity, "inform_all", 0.3 * tr("disclose"))
    put(record, "inform_details", 1.0)
    put(record, "state_request", 0.3 * (1 - f("stated")))
    put(insist, "insist", tr("insist") * np.maximum(0.0, 1 - 0.3 * f("insisted")))
    put(insist, "stop", 0.3 * (1 - tr("insist")) * (f("real_pending") == 0))
    put(insist, "state_request", 0.3 * f("real_pending"))
    put(rest, "state_request", 0.6 * (1 - f("stated")) + 0.1)
    put(rest, "inform_details", VOLUNTEER * tr("disclose") * (1 - f("details_given")))
    put(rest, "inform_identity", VOLUNTEER * tr("disclose") * (1 - f("identity_given")))
    put(rest, "ask_question", 0.3 * f("has_question") * (1 - f("asked")))
    put(rest, "change_mind", 0.3 * tr("mind_change") * f("decoy_open"))
    put(rest, "stop", 0.05 * f("agent_msgs") / np.maximum(1, patience))
    w = np.where(legal, w, 0.0)
    total = w.sum(1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():  # no legal act has weight: uniform over the legal ones, the stop act at 0.1 beside others
        fallback = legal[empty].astype(float)
        stop = legal[empty, U["stop"]] & (legal[empty].sum(1) > 1)
        fallback[stop, U["stop"]] = 0.1
        w[empty] = fallback
        total[empty, 0] = fallback.sum(1)
    return w / total


def proxy_distribution(t: np.ndarray, st: np.ndarray, coins: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``human_proxy.distribution`` (default assumptions) for rows of traits, states and the episode's two
    coins (slips, changes its mind), by the same operations in the same order."""
    rows = len(st)
    w = np.zeros((rows, N_USER))
    f = lambda k: st[:, S[k]]  # noqa: E731
    tr = lambda k: t[:, T[k]]  # noqa: E731
    patience = _patience(t) - 2 * f("tool_errors")
    slips, changes = coins[:, 0], coins[:, 1]
    denied_forbidden = (f("denied") != 0) & (f("decoy_forbidden") != 0)
    (transfer, first, stop, instructed, decoy, real, identity, record, insist,
     rest) = _branches(st, [f("transfer_pending") != 0, f("first_turn") != 0,
                            (f("satisfied") != 0) | (f("agent_msgs") > patience), f("instructed") != 0,
                            f("confirm_decoy") != 0, f("confirm_real") != 0, f("ask_identity") != 0,
                            f("ask_record") != 0, denied_forbidden])

    def put(mask, act, values):
        if mask.any():
            w[mask, U[act]] = values[mask] if isinstance(values, np.ndarray) else values

    put(transfer, "transfer", 1.0)
    mind_first = first & changes & (f("decoy_mind") != 0)
    put(mind_first, "change_mind", 1.0)
    disclose2 = _pow(tr("disclose"), 2)
    put(first & ~mind_first, "inform_all", disclose2)
    put(first & ~mind_first, "state_request", 1 - disclose2 + 0.05)
    put(stop, "stop", 1.0)
    root = _pow(tr("comply"), 0.5)
    put(instructed, "phone_action", root)
    put(instructed, "deny", 1 - root + 0.02)
    mind = decoy & (f("decoy_mind") != 0)
    put(mind, "change_mind", 1.0)
    put(decoy & ~mind, "confirm", 1.0)
    put(real, "confirm", 1.0)
    put(real, "deny", 0.15 * (1 - tr("comply")))
    slip_now = identity & slips & (f("slipped") == 0)
    put(slip_now, "inform_slip", 1.0)
    put(identity & ~slip_now, "inform_identity", 1.0)
    put(identity & ~slip_now, "state_request", 0.2 * (1 - tr("disclose")) * (1 - f("stated")))
    put(record, "inform_details", 0.6 + 0.4 * tr("disclose"))
    put(record, "ask_question", 0.2 * f("has_question") * (1 - f("asked")))
    keeps = f("insisted") < 1 + 3 * tr("insist")
    put(insist, "insist", tr("insist") * keeps)
    put(insist, "state_request", 0.5 * f("real_pending"))
    put(insist, "stop", (1 - tr("insist")) * (f("real_pending") == 0) + 0.1 * ~keeps)
    put(rest, "state_request", 0.5 * (1 - f("stated")) + 0.15)
    put(rest, "ask_question", 0.4 * f("has_question") * (1 - f("asked")))
    put(rest, "inform_details", 0.15 * (1 - f("details_given")) * tr("disclose"))
    put(rest, "change_mind", 0.5 * changes * f("decoy_open"))
    put(rest, "stop", 0.1 * f("agent_msgs") / np.maximum(1, patience))
    w = np.where(legal, w, 0.0)
    total = w.sum(1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():
        w[empty] = legal[empty]
        total[empty, 0] = legal[empty].sum(1)
    return w / total


__all__ = ["Tau2Batch", "proxy_distribution", "reference_distribution", "user_state_row"]
