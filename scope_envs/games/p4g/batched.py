"""Persuasion for Good for N episodes at once: the game's rules on arrays, the users' replies as matrices.

``P4GBatch`` holds N games (slots) and steps any subset of them with numpy. It is the one definition of the
game's rules: ``P4GGame`` (the env's game) is a batch of one with the transcript on top, and the batched engine
under ``scope_envs.make_vec`` steps N. Dealing (the card) is ``personas.sample``; who plays the user, and their
generators, stay with the env. The vec env deals from ``split_cards``: every card of a split as one
row of floats (``card_row``), so N cards are N indices.

Reply models computed here for all slots at once:

* ``reference_reply``: ``reference.reply_distribution`` at the reference
  willingness (each card's own act effects) plus a simulator's ``cooperation``, with the card's reply tilt (``ReferencePersuadee``, hence
  the frozen simulator, the rotation members and every family);
* ``human_proxy_reply``: ``human_proxy.reply_distribution`` at its default
  assumptions (the willingness updated act by act as ``human_proxy.willingness``
  sums it).

The vec env samples from ``reference_weights`` / ``human_proxy_weights`` instead:
the same distributions (sharpened) written as one exponential of log-weights
linear in each row's terms (``log_tables``), several times fewer array
operations; ``tests/test_vec_reply_weights.py`` holds them to the scalar game's.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Persona
from scope_envs.core.rewards import REALISM_REWARDS, SIMULATOR_REWARDS, simulator_reward
from scope_envs.games.p4g import dialogue_acts, human_proxy, personas, reference

PERSUADER, PERSUADEE = ROLES = ("persuader", "persuadee")
# ``zero_sum`` is v0's ``adversarial`` (minus the gift in dollars); ``adversarial`` is now SCOPE's 1 - score
USER_REWARDS = ("mixed", "persona", "zero_sum") + SIMULATOR_REWARDS + tuple(REALISM_REWARDS)
N_PERSUADER_ACTS, N_PERSUADEE_ACTS = len(dialogue_acts.PERSUADER_ACTS), len(dialogue_acts.PERSUADEE_ACTS)

FIRST_AMOUNT = dialogue_acts.FIRST_AMOUNT
CLOSE = dialogue_acts.PERSUADER_INDEX["close"]
CLOSING = dialogue_acts.PERSUADEE_INDEX["closing"]
AMOUNTS = np.array(dialogue_acts.AMOUNT_BINS)
STATED = np.concatenate([[0.0], AMOUNTS])  # the stated amount by ``stated + 1``: 0 before any statement
# the features of ``stated + 1``: whether an amount was stated, and half of it
STATED_FEATURES = np.stack([np.arange(len(STATED)) > 0, STATED / 2.0], 1).astype(np.float32)


def _reply_masks() -> np.ndarray:
    """The persuadee's legal acts by ``1 + final + 2 stated`` on its turn (0: off turn, the no-op only): any
    act but the no-op; the final reply an amount (or closing); closing once an amount was stated."""
    masks = np.zeros((5, N_PERSUADEE_ACTS), bool)
    masks[0, 0] = True
    for final in (0, 1):
        for stated in (0, 1):
            mask = masks[1 + final + 2 * stated]
            mask[1:] = True
            mask[1:FIRST_AMOUNT] = not final
            mask[CLOSING] = stated
    return masks


REPLY_MASKS = _reply_masks()
PERSUASION = np.isin(np.arange(N_PERSUADER_ACTS), [dialogue_acts.PERSUADER_INDEX[a] for a in human_proxy.PERSUASION])
REQUESTS = np.isin(np.arange(N_PERSUADER_ACTS), [dialogue_acts.PERSUADER_INDEX[a] for a in human_proxy.REQUESTS])


_TABLES: dict = {}  # part -> (the params dict they were built from, the tables)


def tables(part: str) -> dict:
    """``part``'s fitted parameters (``personas.params``) as arrays indexed by act, rebuilt whenever
    ``personas.set_params`` swapped them."""
    p = personas.params(part)
    hit = _TABLES.get(part)
    if hit is None or hit[0] is not p:
        hit = _TABLES[part] = (p, _build_tables(p))
    return hit[1]


def _build_tables(p: dict) -> dict:
    resp = p["responses"]
    coef = p["strategy_effects"]["coef"]
    base = np.zeros((N_PERSUADER_ACTS, len(resp["acts"])))
    for a, name in enumerate(dialogue_acts.PERSUADER_ACTS):
        base[a] = resp["given"][name] if name in resp["given"] else resp["start"]
    valence = np.array([p["valence"][a] for a in resp["acts"]])
    disclosure = p.get("reply_disclosure", {}).get("coef")
    reply_index = np.array([dialogue_acts.PERSUADEE_INDEX[n] for n in resp["acts"][:-1]])
    contiguous = (np.diff(reply_index) == 1).all()
    return {
        "base": base,  # the reply frequencies after each persuader act
        "valence": valence,
        "tilt": (reference.KAPPA * valence)[None],  # how willingness tilts each reply (``reply_distribution``)
        # how the card's lean deviation tilts each reply (``reference.disclosure``)
        "disclosure": np.array([disclosure[a] for a in resp["acts"]] if disclosure else np.zeros(len(resp["acts"]))),
        "reply_index": reply_index,
        # where the replies go in a row of persuadee acts: a slice when they are in order (writes faster)
        "reply_columns": slice(reply_index[0], reply_index[-1] + 1) if contiguous else reply_index,
        "coef": coef,
    }


# (id(card), with the proxy's terms) -> (card, its terms, its row): cards are immutable and mostly cached objects
_CARDS: dict = {}

# a card's terms as one row (``card_row``), so that dealing N cards is one gather and one write
CARD_SCALARS = ("reference", "proxy", "push", "expected_gift", "lean_deviation")
# the scalars, "moderated", "ref_effects", "z", then the game's floats as a new game starts on the card: the gift
# (0), the reference model's summed act effects (0), the human proxy's willingness ("proxy")
CARD_WIDTH = len(CARD_SCALARS) + 2 * N_PERSUADER_ACTS + 25 + 3
# the held-out side's terms of a card dealt where no human proxy plays: nothing of the held-out part is read
NO_PROXY = {"proxy": 0.0, "push": 0.0, "moderated": np.zeros(N_PERSUADER_ACTS)}


def _cached(persona: Persona, proxy: bool) -> tuple:
    key = (id(persona), proxy)
    hit = _CARDS.get(key)
    if hit is None or hit[0] is not persona:
        if len(_CARDS) > 8192:
            _CARDS.clear()
        other = _CARDS.get((id(persona), not proxy))  # its training-side terms, if the other row has them
        own = other[1] if other is not None and other[0] is persona else _card_terms(persona)
        terms = {**own, **(_proxy_terms(persona) if proxy else NO_PROXY)}
        row = np.concatenate([[terms[k] for k in CARD_SCALARS], terms["moderated"], terms["ref_effects"], terms["z"],
                              [0.0, 0.0, terms["proxy"]]])
        hit = _CARDS[key] = (persona, terms, row)
    return hit


def card_terms(persona: Persona) -> dict:
    """What the rules and the reply models read from a card, computed by the scalar code once per card."""
    return _cached(persona, True)[1]


def card_row(persona: Persona, proxy: bool = True) -> np.ndarray:
    """``card_terms`` as one row of ``CARD_WIDTH`` floats (``P4GBatch.reset``'s cards), with the floats a new
    game starts from; "z" is float32 in ``card_terms``, exactly representable here. ``proxy=False``: the
    human proxy's terms left at zero (``NO_PROXY``), for a batch that does not track it."""
    return _cached(persona, proxy)[2]


_SPLITS: dict = {}  # (split, with the proxy's terms) -> (the parameters they were built from, the split's cards)


def split_cards(split: str, proxy: bool = True) -> dict:
    """Every card of ``split`` (``personas.persona(split, i)``, i in order): ``personas`` and ``ids`` (object
    arrays) and ``rows`` (``card_row(card, proxy)`` of each); rebuilt whenever ``personas.set_params`` swapped
    the parameters they read."""
    made_from = (personas.params(split), personas.params("train"), personas.params(human_proxy.PART) if proxy else None)
    hit = _SPLITS.get((split, proxy))
    if hit is None or any(x is not y for x, y in zip(hit[0], made_from)):
        people = [personas.persona(split, i) for i in range(personas.SPLIT_SIZES[split])]
        cards = {"personas": np.empty(len(people), object), "ids": np.array([x.id for x in people], object),
                 "rows": np.array([card_row(x, proxy) for x in people])}
        cards["personas"][:] = people
        hit = _SPLITS[(split, proxy)] = (made_from, cards)
    return hit[1]


def _card_terms(persona: Persona) -> dict:
    """The card's training-side terms: the agent's features ("z") and the reference model's, from the training
    part's fit."""
    effects = reference.act_effects(persona)
    return {
        "z": np.clip(personas.standardize(persona, "train"), -4, 4).astype(np.float32),
        "reference": reference.propensity_logit(persona) + reference.calibration("reference_offset"),
        # the reference model's per-use effect of each act on this card (the same floats as the scalar sum's)
        "ref_effects": np.array([effects.get(a, 0.0) for a in dialogue_acts.PERSUADER_ACTS]),
        "expected_gift": reference.expected_gift(persona),
        "lean_deviation": reference.lean_deviation(persona),  # scales the card's reply tilt (``disclosure``)
    }


def _proxy_terms(persona: Persona) -> dict:
    """The card's held-out terms: the human proxy's, from the held-out part's fit."""
    part = human_proxy.PART
    z = dict(zip(personas.numeric_traits(part), np.clip(personas.standardize(persona, part), -3, 3)))
    coef = tables(part)["coef"]
    moderated = np.zeros(N_PERSUADER_ACTS)
    for a in np.flatnonzero(PERSUASION).tolist():
        t1, t2 = human_proxy.MODERATORS[dialogue_acts.PERSUADER_ACTS[a]]
        moderated[a] = coef[dialogue_acts.PERSUADER_ACTS[a]] + human_proxy.HETEROGENEITY * (z[t1] + z[t2]) / 2
    return {
        "proxy": reference.propensity_logit(persona, part) + human_proxy.calibration("human_proxy_offset"),
        "moderated": moderated,  # the human proxy's per-use effect of each persuasion act on this card
        "push": human_proxy.PUSHINESS * (0.5 + human_proxy.reactance(z)),
    }


class P4GBatch:
    """N Persuasion-for-Good games; roles are 0 (persuader) and 1 (persuadee)."""

    roles = ROLES
    n_acts = (N_PERSUADER_ACTS, N_PERSUADEE_ACTS)
    # the turn order the vec env may rely on: the persuader opens, and the persuadee replies once per turn
    user_opens, user_replies_once = False, True

    def __init__(self, n: int, max_turns: int = 10, user_reward: str = "mixed"):
        self.n, self.max_turns, self.user_reward = n, max_turns, user_reward
        self.obs_dim = (1 + 2 * N_PERSUADEE_ACTS + N_PERSUADER_ACTS + 2,
                        25 + 1 + 2 * N_PERSUADER_ACTS + N_PERSUADEE_ACTS + 3)
        # the largest feature there can be: a count over 5 (z is clipped to 4, the rest are fractions); the
        # vec env skips clipping the features to the act surface's bound when it is within it
        self.feature_max = max(4.0, max_turns / 5)
        # The state lives in a few 2-D arrays, the named fields being their columns, so that a new game is a
        # handful of writes (the vec env restarts dozens of slots every step).
        card = self._card = np.zeros((n, CARD_WIDTH))  # ``card_row`` of each slot's card
        self.ref_base, self.proxy_base, self.push, self.expected, self.lean_dev = card[:, : len(CARD_SCALARS)].T
        first = len(CARD_SCALARS)
        self.moderated = card[:, first : first + N_PERSUADER_ACTS]
        self.ref_effects = card[:, first + N_PERSUADER_ACTS : first + 2 * N_PERSUADER_ACTS]
        self.z = card[:, first + 2 * N_PERSUADER_ACTS : -3]
        self.actual, self.ref_sum, self.proxy_w = card[:, -3:].T  # the game's floats, started by the card
        # turns, the stated amount's bin (-1 before any), who spoke last (-1: nobody yet), the last act, the
        # persuader's last act, requests so far, the game's length; then each persuader act's uses
        self._ints = np.zeros((n, 7 + N_PERSUADER_ACTS), np.int64)
        (self.turns, self.stated, self.last_role, self.last_act, self.last_persuader, self.requests,
         self.length) = self._ints[:, :7].T
        self.uses = self._ints[:, 7:]
        self._ints_new = np.zeros(self._ints.shape[1], np.int64)  # a new game's row
        self._ints_new[[1, 2]] = -1  # (stated, last_role)
        self._flags = np.zeros((n, 2), bool)
        self.final, self.done = self._flags.T
        # each role's act counts, the persuadee's first: the persuader's observation reads them in this order
        self._counts = np.zeros((n, N_PERSUADEE_ACTS + N_PERSUADER_ACTS), np.float32)
        self.counts = (self._counts[:, N_PERSUADEE_ACTS:], self._counts[:, :N_PERSUADEE_ACTS])
        self._noop = [np.eye(k, dtype=bool)[0] for k in self.n_acts]
        self._rows = np.arange(n)
        # whether any slot may play the human proxy, whose willingness ``apply`` then tracks (the vec env
        # sets it; the state is reset per episode, so turning it on between episodes is safe)
        self.track_proxy = True

    # -- episodes ------------------------------------------------------------------------
    def reset(self, idx: np.ndarray, cards) -> None:
        """Start new games in slots ``idx`` on these cards (``card_row`` of each slot's persona, stacked or
        one row for all)."""
        if not len(idx):
            return
        self._card[idx] = cards
        self._ints[idx] = self._ints_new
        self._flags[idx] = False
        self._counts[idx] = 0

    def active(self) -> np.ndarray:
        """The role to move in each slot (0, 1), or -1 once over."""
        active = (self.last_role == 0).astype(np.int64)
        active[self.done] = -1
        return active

    def legal(self, role: int, active: np.ndarray) -> np.ndarray:
        """Each slot's legal acts of ``role``; slots where ``role`` is not to move get the no-op only."""
        on = active == role
        if role == 0:
            return on[:, None] ^ self._noop[0]  # every act but the no-op where on, else the no-op (a fast where)
        # the persuadee's mask is one of ``REPLY_MASKS``: off turn, or on turn in the final reply or not, an
        # amount stated or not
        code = (self.stated >= 0) * 2
        code += self.final
        code += 1
        code *= on
        return REPLY_MASKS.take(code, 0)

    def apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Play ``acts`` (legal, checked by the caller) in slots ``idx`` (distinct, ascending); returns the
        slots that finished (the caller settles their gift with ``settle``)."""
        self.counts[role][idx, acts] += 1
        rows = slice(None) if len(idx) == self.n else idx  # every slot (the usual case): views, no gathers
        self.last_role[rows], self.last_act[rows] = role, acts
        self.length[rows] += 1
        if role == 0:
            turns = self.turns[rows]
            turns += 1
            if rows is idx:
                self.turns[idx] = turns
            self.final[rows] = (acts == CLOSE) | (turns >= self.max_turns)
            self.last_persuader[rows] = acts
            self.ref_sum[rows] += self.ref_effects[idx, acts]  # this card's effect of each act
            if self.track_proxy:
                self._proxy_update(idx, acts)
            return idx[:0]
        amount = acts >= FIRST_AMOUNT
        if np.count_nonzero(amount):
            self.stated[idx[amount]] = acts[amount] - FIRST_AMOUNT
        over = self.final[rows] | (acts == CLOSING)
        ended = idx[over]
        self.done[ended] = True
        return ended

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
        other = 1 - role
        c = 0
        if role == 1:
            out[:, :25] = self.z
            c = 25
        out[:, c] = self.turns / max_turns
        c += 1
        k = self.n_acts[other]
        # the other role's last act, one-hot where it spoke last: every row writes its flag (elsewhere a zero on
        # the block's zeros; an act of this role past the block's end is moved to its last column)
        last = self.last_act if k >= self.n_acts[role] else np.minimum(self.last_act, k - 1)
        out[self._rows, c + last] = self.last_role == other
        c += k
        if role == 0:  # the other role's counts, then its own: ``_counts`` as it is laid out
            np.divide(self._counts, 5, out=out[:, c : c + self._counts.shape[1]])
            c += self._counts.shape[1]
        else:
            np.divide(self.counts[other], 5, out=out[:, c : c + k])
            c += k
            k = self.n_acts[role]
            np.divide(self.counts[role], 5, out=out[:, c : c + k])
            c += k
        out[:, c : c + 2] = STATED_FEATURES.take(self.stated + 1, 0)
        if role == 1:
            out[:, c + 2] = self.final
        return out

    def outcome(self, idx) -> dict[str, np.ndarray]:
        return {"intended": self.intended(idx), "actual": self.actual[idx],
                "stated": (self.stated[idx] >= 0).astype(float), "persuader_turns": self.turns[idx].astype(float)}

    def agent_score(self, idx) -> np.ndarray:
        return np.minimum(np.maximum(self.actual[idx] / 2.0, 0.0), 1.0)

    def rewards(self, idx, users: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The finished slots' (persuader, persuadee) rewards; ``users=False``: the persuader's only (None for
        the persuadee: no learnable user to pay)."""
        actual = self.actual[idx]
        mode = self.user_reward
        if not users:
            return actual, None
        if mode in SIMULATOR_REWARDS:
            return actual, simulator_reward(mode, self.agent_score(idx)) + np.zeros(len(idx))
        persona_term = -np.abs(self.intended(idx) - self.expected[idx])
        mixed = 0.5 * persona_term - 0.5 * actual
        # realism: the trainer pays the discriminator's term, the env the rest of the default's (``mixed``) share
        user = {"zero_sum": -actual, "persona": persona_term, "mixed": mixed, "realism": np.zeros(len(idx)),
                "realism_mixed": (1.0 - REALISM_REWARDS["realism_mixed"]) * mixed}[mode]
        return actual, user

    # -- the users' replies ------------------------------------------------------------------------
    def reference_reply(self, idx, legal, cooperation: float) -> np.ndarray:
        """``ReferencePersuadee.reference`` in slots ``idx``: the reference reply distribution."""
        return reply_distribution(self._reference_w(idx, cooperation), self.last_persuader[idx], legal,
                                  *MODELS["reference"](), lean_dev=self.lean_dev[idx])

    def human_proxy_reply(self, idx, legal) -> np.ndarray:
        """``human_proxy.reply_distribution`` in slots ``idx`` (its default assumptions)."""
        return reply_distribution(self.proxy_w[idx], self.last_persuader[idx], legal, *MODELS["human_proxy"]())

    def reference_weights(self, idx, legal, cooperation: float, sharpening: float) -> np.ndarray:
        """``sharpen(reference_reply, sharpening)`` up to each row's sum (``reply_weights``)."""
        return reply_weights(self._reference_w(idx, cooperation), self.last_persuader[idx], legal,
                             log_tables("reference", sharpening), lean_dev=self.lean_dev[idx])

    def human_proxy_weights(self, idx, legal) -> np.ndarray:
        """``human_proxy_reply`` up to each row's sum (``reply_weights``)."""
        return reply_weights(self.proxy_w[idx], self.last_persuader[idx], legal, log_tables("human_proxy", 1.0))

    def _reference_w(self, idx, cooperation: float) -> np.ndarray:
        rows = slice(None) if len(idx) == self.n else idx
        return (self.ref_base[rows] + self.ref_sum[rows]) + cooperation


# the part of the people split whose fit each batched reply model reads, and its (base gift distribution, neutral
# willingness, amount shift, that part)
MODEL_PART = {"reference": "train", "human_proxy": human_proxy.PART}
MODELS = {
    "reference": lambda: (reference.gift_distribution(), reference.neutral(), 0.0, MODEL_PART["reference"]),
    "human_proxy": lambda: (human_proxy.stated_distribution(), human_proxy.neutral(),
                            human_proxy.calibration("human_proxy_amount_shift"), MODEL_PART["human_proxy"]),
}


def reply_distribution(w, said, legal, gifts, center, shift, part, lean_dev=None) -> np.ndarray:
    """``reference.reply_distribution`` for rows of willingness ``w`` after persuader acts ``said``, in its
    floating-point order (the scalar game's and ``verbalize``'s), on ``part``'s fit; ``lean_dev``: each row's card lean deviation, for the
    reference model's reply tilt (``reference.disclosure``), none for the human proxy."""
    t = tables(part)
    dev = w - center
    log_tilt = t["tilt"] * dev[:, None]
    if lean_dev is not None:
        log_tilt = log_tilt + t["disclosure"][None] * lean_dev[:, None]
    base = t["base"][said] * np.exp(log_tilt)
    p = np.zeros((len(w), N_PERSUADEE_ACTS))
    p[:, t["reply_columns"]] = base[:, :-1]
    pos = gifts[1:][None] * np.exp((reference.AMOUNT_TILT * dev + shift)[:, None] * reference.AMOUNT_Z[None])
    s = 1.0 / (1.0 + np.exp(-w))
    amounts = np.empty((len(w), len(dialogue_acts.AMOUNT_BINS)))
    amounts[:, 0] = 1.0 - s
    amounts[:, 1:] = s[:, None] * pos / pos.sum(1, keepdims=True)
    p[:, FIRST_AMOUNT:] = base[:, -1:] * amounts
    p = np.where(legal, p, 0.0)
    total = p.sum(1, keepdims=True)
    ok = total[:, 0] > 0
    if ok.all():  # the usual case: no row needs the uniform fallback
        return p / total
    out = legal / legal.sum(1, keepdims=True)
    out[ok] = p[ok] / total[ok]
    return out


def reply_weights(w, said, legal, logs: dict, lean_dev=None) -> np.ndarray:
    """``reply_distribution ** sharpening`` up to each row's sum (what inverse-CDF sampling needs), zero
    off the legal acts: one exponential of log-weights that are linear in the row's terms (``log_tables``).
    The same distribution up to rounding; a row without mass is left zero (the caller's fallback)."""
    x = np.empty((len(w), len(logs["slope"])))  # a fourth term, the lean deviation, for the reference model
    if x.shape[1] > 3:
        x[:, 3] = lean_dev
    x[:, 0] = w
    np.logaddexp(0.0, w, out=x[:, 1])  # log(1 + e^w) = -log(1 - s)
    np.log(np.exp(np.multiply.outer(w, logs["amount_slope"])) @ logs["amount_weight"], out=x[:, 2])  # log S
    logit = logs["offset"].take(said, 0)
    logit += x @ logs["slope"]
    p = np.exp(logit, out=logit)
    p[:, logs["massless"]] = 0.0
    p *= legal
    return p


_LOGS: dict = {}  # (model, sharpening) -> (the params dict they were built from, the tables)


def log_tables(model: str, sharpening: float) -> dict:
    """``reply_distribution`` of ``MODELS[model]`` sharpened by ``sharpening``, in log space: for a row of
    willingness w after persuader act a, with s = sigmoid(w) and S = sum_k gifts_k exp((AMOUNT_TILT (w - center)
    + shift) AMOUNT_Z_k) over the positive bins,

        sharpening log p = offset[a] + (w, log(1 + e^w), log S[, lean deviation]) @ slope   (up to the row's normalizer)

    a reply act: log base + KAPPA valence (w - center); the $0 bin: that of the amount + log(1 - s), with
    log(1 - s) = -log(1 + e^w); a positive bin k: that of the amount + log s + log gifts_k + (AMOUNT_TILT (w -
    center) + shift) AMOUNT_Z_k - log S, with log s = w - log(1 + e^w). ``amount_slope`` and ``amount_weight``
    give S = exp(w amount_slope) @ amount_weight. The reference model has a fourth term, the card's lean
    deviation, times each reply act's ``disclosure`` (the amount reply's on every amount). ``massless``: the acts that never get mass (the no-op)."""
    key = (model, float(sharpening))
    p = personas.params(MODEL_PART[model])
    hit = _LOGS.get(key)
    if hit is None or hit[0] is not p:
        gifts, center, shift, part = MODELS[model]()
        t = tables(part)
        z = reference.AMOUNT_Z
        tilt = t["tilt"][0]
        with np.errstate(divide="ignore"):  # a zero frequency: -inf, no mass
            log_base = np.log(t["base"])
            log_gifts = np.log(gifts[1:])
        offset = np.full((N_PERSUADER_ACTS, N_PERSUADEE_ACTS), -np.inf)
        slope = np.zeros((4 if model == "reference" else 3, N_PERSUADEE_ACTS))
        offset[:, t["reply_index"]] = log_base[:, :-1] - tilt[:-1] * center
        slope[0, t["reply_index"]] = tilt[:-1]
        amount = log_base[:, -1:] - tilt[-1] * center  # the amount reply itself
        offset[:, FIRST_AMOUNT] = amount[:, 0]
        offset[:, FIRST_AMOUNT + 1 :] = amount + log_gifts + (shift - reference.AMOUNT_TILT * center) * z
        slope[0, FIRST_AMOUNT] = tilt[-1]
        slope[0, FIRST_AMOUNT + 1 :] = tilt[-1] + reference.AMOUNT_TILT * z + 1.0
        slope[1, FIRST_AMOUNT:] = -1.0
        slope[2, FIRST_AMOUNT + 1 :] = -1.0
        if model == "reference":  # the card's reply tilt: each reply act's, the amount reply's on every amount
            slope[3, t["reply_index"]] = t["disclosure"][:-1]
            slope[3, FIRST_AMOUNT:] = t["disclosure"][-1]
        # the acts that never have mass get offset 0 and are zeroed after the exponential: exp(-inf) is several
        # times slower than exp of a number
        massless = ~np.isfinite(offset).any(0)
        offset[:, massless] = 0.0
        tables_ = {"offset": sharpening * offset, "slope": sharpening * slope, "massless": np.flatnonzero(massless),
                   "amount_slope": reference.AMOUNT_TILT * z,
                   "amount_weight": gifts[1:] * np.exp((shift - reference.AMOUNT_TILT * center) * z)}
        hit = _LOGS[key] = (p, tables_)
    return hit[1]
