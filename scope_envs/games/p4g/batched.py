"""Persuasion for Good for N episodes at once: the game's state as arrays, the users' replies as matrices.

``P4GBatch`` holds N games (slots) and steps any subset of them with numpy. It is
the batched engine under ``scope_envs.make_vec`` and follows ``P4GGame`` (and the
reference and human-proxy reply models) operation for operation, in the same
floating-point order, so that the same seeds give the same trajectories:
``tests/test_vec.py`` plays every p4g id both ways and compares every
observation, mask, reward and outcome. Dealing (the card) stays with the scalar
game (``P4GGame.sample_persona``); who plays the user, and their generators, stay
with the vec env. The vec env's fast mode deals from ``split_cards``: every card
of a split with its terms as arrays, so N cards are N indices.

Reply models computed here for all slots at once:

* ``reference_reply``: ``reference.reply_distribution`` at the reference
  willingness plus a simulator's ``cooperation`` (``ReferencePersuadee``, hence
  the frozen simulator, the rotation members and every family);
* ``human_proxy_reply``: ``human_proxy.reply_distribution`` at its default
  assumptions (the willingness updated act by act as ``human_proxy.willingness``
  sums it).
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Persona
from scope_envs.core.rewards import SIMULATOR_REWARDS
from scope_envs.games.p4g import dialogue_acts, human_proxy, personas, reference
from scope_envs.games.p4g.game import N_PERSUADEE_ACTS, N_PERSUADER_ACTS

FIRST_AMOUNT = dialogue_acts.FIRST_AMOUNT
CLOSE = dialogue_acts.PERSUADER_INDEX["close"]
CLOSING = dialogue_acts.PERSUADEE_INDEX["closing"]
AMOUNTS = np.array(dialogue_acts.AMOUNT_BINS)
STATED = np.concatenate([[0.0], AMOUNTS])  # the stated amount by ``stated + 1``: 0 before any statement
PERSUASION = np.isin(np.arange(N_PERSUADER_ACTS), [dialogue_acts.PERSUADER_INDEX[a] for a in human_proxy.PERSUASION])
REQUESTS = np.isin(np.arange(N_PERSUADER_ACTS), [dialogue_acts.PERSUADER_INDEX[a] for a in human_proxy.REQUESTS])


_TABLES: list = [None, None]  # (the params dict they were built from, the tables)


def tables() -> dict:
    """The fitted parameters as arrays indexed by act, rebuilt whenever ``personas.set_params`` swapped them."""
    p = personas.params()
    if _TABLES[0] is not p:
        _TABLES[:] = [p, _build_tables(p)]
    return _TABLES[1]


def _build_tables(p: dict) -> dict:
    resp = p["responses"]
    coef = p["strategy_effects"]["coef"]
    base = np.zeros((N_PERSUADER_ACTS, len(resp["acts"])))
    for a, name in enumerate(dialogue_acts.PERSUADER_ACTS):
        base[a] = resp["given"][name] if name in resp["given"] else resp["start"]
    valence = np.array([p["valence"][a] for a in resp["acts"]])
    reply_index = np.array([dialogue_acts.PERSUADEE_INDEX[n] for n in resp["acts"][:-1]])
    contiguous = (np.diff(reply_index) == 1).all()
    return {
        "base": base,  # the reply frequencies after each persuader act
        "valence": valence,
        "tilt": (reference.KAPPA * valence)[None],  # how willingness tilts each reply (``reply_distribution``)
        "reply_index": reply_index,
        # where the replies go in a row of persuadee acts: a slice when they are in order (writes faster)
        "reply_columns": slice(reply_index[0], reply_index[-1] + 1) if contiguous else reply_index,
        "ref_coef": np.array([coef.get(a, 0.0) for a in dialogue_acts.PERSUADER_ACTS]),
        "coef": coef,
    }


_CARDS: dict = {}  # id(card) -> (card, its terms): cards are immutable and mostly cached objects


def card_terms(persona: Persona) -> dict:
    """What the rules and the reply models read from a card, computed by the scalar code once per card."""
    hit = _CARDS.get(id(persona))
    if hit is None or hit[0] is not persona:
        if len(_CARDS) > 8192:
            _CARDS.clear()
        hit = _CARDS[id(persona)] = (persona, _card_terms(persona))
    return hit[1]


_SPLITS: dict = {}  # split -> (the params dict they were built from, the split's cards)


def split_cards(split: str) -> dict:
    """Every card of ``split`` (``personas.persona(split, i)``, i in order): ``personas`` and ``ids`` (object
    arrays) and ``terms``, each of ``card_terms``' keys an array over the cards; rebuilt whenever
    ``personas.set_params`` swapped the parameters."""
    p = personas.params()
    hit = _SPLITS.get(split)
    if hit is None or hit[0] is not p:
        people = [personas.persona(split, i) for i in range(personas.SPLIT_SIZES[split])]
        terms = [card_terms(x) for x in people]
        cards = {"personas": np.empty(len(people), object), "ids": np.array([x.id for x in people], object),
                 "terms": {k: np.array([t[k] for t in terms]) for k in terms[0]}}
        cards["personas"][:] = people
        hit = _SPLITS[split] = (p, cards)
    return hit[1]


def _card_terms(persona: Persona) -> dict:
    z = dict(zip(personas.numeric_traits(), np.clip(personas.standardize(persona), -3, 3)))
    coef = tables()["coef"]
    moderated = np.zeros(N_PERSUADER_ACTS)
    for a in np.flatnonzero(PERSUASION).tolist():
        t1, t2 = human_proxy.MODERATORS[dialogue_acts.PERSUADER_ACTS[a]]
        moderated[a] = coef[dialogue_acts.PERSUADER_ACTS[a]] + human_proxy.HETEROGENEITY * (z[t1] + z[t2]) / 2
    return {
        "z": np.clip(personas.standardize(persona), -4, 4).astype(np.float32),
        "reference": reference.propensity_logit(persona) + reference.calibration("reference_offset"),
        "proxy": reference.propensity_logit(persona) + human_proxy.calibration("human_proxy_offset"),
        "moderated": moderated,  # the human proxy's per-use effect of each persuasion act on this card
        "push": human_proxy.PUSHINESS * (0.5 + human_proxy.reactance(z)),
        "expected_gift": reference.expected_gift(persona),
    }


class P4GBatch:
    """N Persuasion-for-Good games; roles are 0 (persuader) and 1 (persuadee)."""

    roles = ("persuader", "persuadee")
    n_acts = (N_PERSUADER_ACTS, N_PERSUADEE_ACTS)
    # the turn order the vec env may rely on: the persuader opens, and the persuadee replies once per turn
    user_opens, user_replies_once = False, True

    def __init__(self, n: int, max_turns: int = 10, user_reward: str = "mixed"):
        self.n, self.max_turns, self.user_reward = n, max_turns, user_reward
        self.obs_dim = (1 + 2 * N_PERSUADEE_ACTS + N_PERSUADER_ACTS + 2,
                        25 + 1 + 2 * N_PERSUADER_ACTS + N_PERSUADEE_ACTS + 3)
        self.z = np.zeros((n, 25), np.float32)
        self.ref_base = np.zeros(n)
        self.proxy_base = np.zeros(n)
        self.moderated = np.zeros((n, N_PERSUADER_ACTS))
        self.push = np.zeros(n)
        self.expected = np.zeros(n)
        self.turns = np.zeros(n, np.int64)
        self.stated = np.full(n, -1, np.int64)  # the stated amount's bin, -1 before any
        self.final = np.zeros(n, bool)
        self.done = np.zeros(n, bool)
        self.actual = np.zeros(n)
        self.counts = (np.zeros((n, N_PERSUADER_ACTS), np.float32), np.zeros((n, N_PERSUADEE_ACTS), np.float32))
        self.last_role = np.full(n, -1, np.int64)  # who spoke last: -1 nobody yet
        self.last_act = np.zeros(n, np.int64)
        self.last_persuader = np.zeros(n, np.int64)
        self.ref_sum = np.zeros(n)  # the reference model's summed act effects
        self.proxy_w = np.zeros(n)  # the human proxy's willingness
        self.uses = np.zeros((n, N_PERSUADER_ACTS), np.int64)
        self.requests = np.zeros(n, np.int64)
        self.length = np.zeros(n, np.int64)
        self._noop = [np.eye(k, dtype=bool)[0] for k in self.n_acts]
        # whether any slot may play the human proxy, whose willingness ``apply`` then tracks (the vec env
        # sets it; the state is reset per episode, so turning it on between episodes is safe)
        self.track_proxy = True

    # -- episodes ------------------------------------------------------------------------
    def reset(self, idx: np.ndarray, cards: list[dict]) -> None:
        """Start new games in slots ``idx`` on these cards (``card_terms`` of each slot's persona)."""
        if not len(idx):
            return
        self.reset_terms(idx, {k: [t[k] for t in cards] for k in cards[0]})

    def reset_terms(self, idx: np.ndarray, terms: dict) -> None:
        """``reset`` with the cards' terms stacked: each key of ``card_terms`` an array over ``idx``."""
        self.z[idx] = terms["z"]
        self.ref_base[idx] = terms["reference"]
        self.proxy_w[idx] = self.proxy_base[idx] = terms["proxy"]
        self.moderated[idx] = terms["moderated"]
        self.push[idx] = terms["push"]
        self.expected[idx] = terms["expected_gift"]
        self.turns[idx], self.stated[idx], self.final[idx], self.done[idx], self.actual[idx] = 0, -1, False, False, 0.0
        self.counts[0][idx] = 0
        self.counts[1][idx] = 0
        self.last_role[idx], self.last_act[idx], self.last_persuader[idx] = -1, 0, 0
        self.ref_sum[idx] = 0.0
        self.uses[idx], self.requests[idx], self.length[idx] = 0, 0, 0

    def active(self) -> np.ndarray:
        """The role to move in each slot (0, 1), or -1 once over."""
        return np.where(self.done, -1, (self.last_role == 0).astype(np.int64))

    def legal(self, role: int, active: np.ndarray) -> np.ndarray:
        """Each slot's legal acts of ``role``; slots where ``role`` is not to move get the no-op only."""
        on = active == role
        noop = self._noop[role]
        mask = np.where(on[:, None], ~noop, noop)
        if role == 1:
            mask[:, 1:FIRST_AMOUNT] &= ~(on & self.final)[:, None]  # the final reply: an amount (or closing, below)
            mask[:, CLOSING] = on & (self.stated >= 0)
        return mask

    def apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Play ``acts`` (legal, checked by the caller) in slots ``idx``; returns the slots that finished
        (the caller settles their gift with ``settle``)."""
        self.counts[role][idx, acts] += 1
        self.last_role[idx], self.last_act[idx] = role, acts
        self.length[idx] += 1
        if role == 0:
            self.turns[idx] += 1
            self.final[idx] = (acts == CLOSE) | (self.turns[idx] >= self.max_turns)
            self.last_persuader[idx] = acts
            self.ref_sum[idx] += tables()["ref_coef"][acts]
            if self.track_proxy:
                self._proxy_update(idx, acts)
            return idx[:0]
        amount = acts >= FIRST_AMOUNT
        self.stated[idx[amount]] = acts[amount] - FIRST_AMOUNT
        over = self.final[idx] | (acts == CLOSING)
        self.done[idx[over]] = True
        return idx[over]

    def _proxy_update(self, idx, acts):
        # human_proxy.willingness, one act at a time: the k-th use counts 1/k, requests past two push back
        persuade = PERSUASION[acts]
        if not persuade.any():
            return
        idx, acts = idx[persuade], acts[persuade]
        self.uses[idx, acts] += 1
        self.proxy_w[idx] += self.moderated[idx, acts] / self.uses[idx, acts]
        request = REQUESTS[acts]
        self.requests[idx[request]] += 1
        pushy = idx[request & (self.requests[idx] > 2)]
        self.proxy_w[pushy] -= self.push[pushy]

    def intended(self, idx) -> np.ndarray:
        return STATED[self.stated[idx] + 1]

    def settle(self, idx, actual) -> None:
        self.actual[idx] = actual

    # -- what the roles see ------------------------------------------------------------------
    def features(self, role: int) -> np.ndarray:
        n, max_turns = self.n, self.max_turns
        out = np.zeros((n, self.obs_dim[role]), np.float32)
        turn = (self.turns / max_turns).astype(np.float32)
        has = self.stated >= 0
        stated = (STATED[self.stated + 1] / 2.0).astype(np.float32)
        rows = np.arange(n)
        other = 1 - role
        last_other = self.last_role == other
        c = 0
        if role == 1:
            out[:, :25] = self.z
            c = 25
        out[:, c] = turn
        c += 1
        k = self.n_acts[other]
        out[rows[last_other], c + self.last_act[last_other]] = 1
        c += k
        np.divide(self.counts[other], 5, out=out[:, c : c + k])
        c += k
        k = self.n_acts[role]
        np.divide(self.counts[role], 5, out=out[:, c : c + k])
        c += k
        out[:, c] = has
        out[:, c + 1] = stated
        if role == 1:
            out[:, c + 2] = self.final
        return out

    def outcome(self, idx) -> dict[str, np.ndarray]:
        return {"intended": self.intended(idx), "actual": self.actual[idx],
                "stated": (self.stated[idx] >= 0).astype(float), "persuader_turns": self.turns[idx].astype(float)}

    def agent_score(self, idx) -> np.ndarray:
        return np.minimum(np.maximum(self.actual[idx] / 2.0, 0.0), 1.0)

    def rewards(self, idx) -> tuple[np.ndarray, np.ndarray]:
        """The finished slots' (persuader, persuadee) rewards."""
        actual = self.actual[idx]
        mode = self.user_reward
        if mode in SIMULATOR_REWARDS:
            score = self.agent_score(idx)
            user = {"adversarial": 1.0 - score, "cooperative": score, "curriculum": np.zeros(len(idx))}[mode]
            return actual, user
        persona_term = -np.abs(self.intended(idx) - self.expected[idx])
        user = {"zero_sum": -actual, "persona": persona_term, "mixed": 0.5 * persona_term - 0.5 * actual}[mode]
        return actual, user

    # -- the users' replies ------------------------------------------------------------------------
    def reference_reply(self, idx, legal, cooperation: float, normalized: bool = True) -> np.ndarray:
        """``ReferencePersuadee.reference`` in slots ``idx``: the reference reply distribution (up to each
        row's sum unless ``normalized``)."""
        w = (self.ref_base[idx] + self.ref_sum[idx]) + cooperation
        return reply_distribution(w, self.last_persuader[idx], legal, reference.gift_distribution(),
                                  reference.neutral(), 0.0, normalized)

    def human_proxy_reply(self, idx, legal, normalized: bool = True) -> np.ndarray:
        """``human_proxy.reply_distribution`` in slots ``idx`` (its default assumptions)."""
        return reply_distribution(self.proxy_w[idx], self.last_persuader[idx], legal,
                                  human_proxy.stated_distribution(), human_proxy.neutral(),
                                  reference.calibration("human_proxy_amount_shift"), normalized)


def reply_distribution(w, said, legal, gifts, center, shift, normalized: bool = True) -> np.ndarray:
    """``reference.reply_distribution`` for rows of willingness ``w`` after persuader acts ``said``;
    ``normalized=False``: each row up to its sum (what inverse-CDF sampling needs; the vec env's fast mode)."""
    t = tables()
    dev = w - center
    base = t["base"][said] * np.exp(t["tilt"] * dev[:, None])
    p = np.zeros((len(w), N_PERSUADEE_ACTS))
    p[:, t["reply_columns"]] = base[:, :-1]
    pos = gifts[1:][None] * np.exp((reference.AMOUNT_TILT * dev + shift)[:, None] * reference.AMOUNT_Z[None])
    s = 1.0 / (1.0 + np.exp(-w))
    amounts = np.empty((len(w), len(dialogue_acts.AMOUNT_BINS)))
    amounts[:, 0] = 1.0 - s
    amounts[:, 1:] = s[:, None] * pos / pos.sum(1, keepdims=True)
    p[:, FIRST_AMOUNT:] = base[:, -1:] * amounts
    p = np.where(legal, p, 0.0)
    if not normalized:
        empty = ~p.any(1)
        if empty.any():  # no legal reply has mass: uniform over the legal ones, as below
            p[empty] = legal[empty]
        return p
    total = p.sum(1, keepdims=True)
    ok = total[:, 0] > 0
    if ok.all():  # the usual case: no row needs the uniform fallback
        return p / total
    out = legal / legal.sum(1, keepdims=True)
    out[ok] = p[ok] / total[ok]
    return out
