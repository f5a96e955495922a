"""tau2 user behaviour: the cards (behaviour parameters) and the training-side reference user model.

A card's traits, all in [0, 1]:

``disclose``     how much the user says at once (1: identity, ids, request and question in its first message)
``patience``     how many agent messages it tolerates: ``4 + 26 * patience``
``insist``       how hard it insists on a request the agent refuses (the policy forbids)
``comply``       how readily it does what the agent asks (confirmations, phone actions)
``mind_change``  how likely it first asks for something else (the task's decoy) and retracts it later
``slip``         how likely it gives a wrong identity value first (a typo)
``verbose``      how wordy its messages are (text rendering only)

Cards of a split are drawn from seeded streams keyed by ``(split key, index)``:
``train`` and ``heldout`` are disjoint id spaces from disjoint seed streams
(docs/architecture.md §4.1). The ``default`` card is the collapsed simulator's mode: it
discloses everything, never insists, always complies, never changes its mind,
never slips, is endlessly patient — tau^2-bench's over-cooperative LLM user.

``reference_policy`` is the training-side user model (the reference that
collapsed simulators sharpen), one array rule over rows of users (``user_state.py``);
``reference_distribution`` asks it for one user. The held-out behaviour model is in
``human_proxy.py`` and is evaluation-only.

The cards need different agent moves (issue 28 §1; declared in the design note before any held-out number was
read). What a customer volunteers unasked scales with ``disclose``: a reserved customer gives its identity and
its ids only when asked for them, so an agent that never asks (the best response to the modal card, which tells
everything in its first message) fails with it. A reluctant customer (low ``comply``) declines a confirmation
about as often as it gives one, and on the act surface a write needs the customer's yes (``act_game.py``): an
agent that never meets a refusal (the modal card never declines) does not learn to ask again. ``patience``
bounds the agent messages it tolerates before it leaves, which ends the episode unsolved.
"""

from __future__ import annotations

import functools

import numpy as np

from scope_envs.core import seal
from scope_envs.core.game import Persona
from scope_envs.games.tau2.dialogue_acts import USER_ACTS, USER_INDEX
from scope_envs.games.tau2.user_state import S, Weights, branches, one_row, patience_turns

TRAITS = ("disclose", "patience", "insist", "comply", "mind_change", "slip", "verbose")
SPLIT_KEYS = {"train": 7_301, "heldout": 9_403}
SPLIT_SIZES = {"train": 1000, "heldout": 500}
# Beta(a, b) per trait: broad, so the population spans each behaviour
PRIOR = {"disclose": (1.2, 1.2), "patience": (1.5, 1.5), "insist": (1.0, 1.5), "comply": (2.5, 1.0),
         "mind_change": (1.0, 2.0), "slip": (1.0, 2.5), "verbose": (1.2, 1.2)}
VOLUNTEER = 0.4  # weight of volunteering the identity / the details unasked, per unit of ``disclose``


def card(split: str, i: int) -> Persona:
    if split == "heldout":  # (before the cache: a card drawn once stays sealed)
        seal.check(f"held-out card {i}")
    return _card(split, i)


@functools.lru_cache(maxsize=4096)
def _card(split: str, i: int) -> Persona:
    if split not in SPLIT_KEYS:
        raise ValueError(f"split must be one of {sorted(SPLIT_KEYS)}, got {split!r}")
    if not 0 <= i < SPLIT_SIZES[split]:
        raise ValueError(f"card index {i} out of range for split {split!r} ({SPLIT_SIZES[split]})")
    rng = np.random.default_rng([SPLIT_KEYS[split], i])
    traits = {t: round(float(rng.beta(*PRIOR[t])), 3) for t in TRAITS}
    return Persona(f"{split}-{i:04d}", split, traits, {})


def card_split(split: str) -> str:
    """The cards a scenario split deals from: ``heldout``'s for ``heldout``, else ``train``'s."""
    return "heldout" if split == "heldout" else "train"


@functools.lru_cache(maxsize=1)
def default_card() -> Persona:
    traits = {"disclose": 1.0, "patience": 1.0, "insist": 0.0, "comply": 1.0, "mind_change": 0.0, "slip": 0.0,
              "verbose": 0.5}
    return Persona("default-modal", "default", traits, {})


def reference_distribution(traits: dict, st: dict, legal: np.ndarray) -> np.ndarray:
    """The reference user's next act, from its card and what it knows of the dialogue (``st``): a batch of one of
    ``reference_policy``."""
    t, row = one_row(traits, st)
    return reference_policy(t, row, np.asarray(legal, bool)[None])[0]


def reference_policy(t: np.ndarray, st: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The reference user's next-act distributions for rows of traits ``t`` (``user_state.TRAITS``), states ``st``
    (``user_state.STATE``) and legal masks ``legal``: the first branch that holds sets the weights."""
    rows = len(st)
    w = np.zeros((rows, len(USER_ACTS)))
    patience = patience_turns(t)
    f = lambda k: st[:, S[k]]  # noqa: E731
    (transfer, first, satisfied, impatient, instructed, decoy, real, identity, record, insist,
     rest) = branches(rows, [f("transfer_pending") != 0, f("first_turn") != 0, f("satisfied") != 0,
                             f("agent_msgs") > patience, f("instructed") != 0, f("confirm_decoy") != 0,
                             f("confirm_real") != 0, f("ask_identity") != 0, f("ask_record") != 0,
                             (f("denied") != 0) & (f("decoy_forbidden") != 0)])
    weigh = Weights(w, t, st)
    if weigh.on(transfer):
        weigh(transfer=1.0)
    if weigh.on(first):
        tr = weigh.trait
        weigh(inform_all=0.05 + tr("disclose"), state_request=1.05 - tr("disclose"),
              change_mind=0.5 * tr("mind_change"))
    if weigh.on(satisfied):
        weigh(stop=1.0, ask_question=0.2 * (1 - weigh.state("asked")))
    if weigh.on(impatient):
        weigh(stop=1.0)
    if weigh.on(instructed):
        weigh(phone_action=0.1 + weigh.trait("comply"), deny=0.3 * (1 - weigh.trait("comply")))
    mind = decoy & (f("decoy_mind") != 0)
    if weigh.on(mind):
        weigh(change_mind=0.2 + weigh.trait("mind_change"), confirm=0.2 * (1 - weigh.trait("mind_change")))
    if weigh.on(decoy & ~mind):
        weigh(confirm=1.0)
    if weigh.on(real):
        weigh(confirm=0.2 + weigh.trait("comply"), deny=0.2 * (1 - weigh.trait("comply")))
    if weigh.on(identity):
        slip = 0.8 * weigh.trait("slip") * (1 - weigh.state("slipped"))
        weigh(inform_identity=1.0 - slip, inform_slip=slip, inform_all=0.3 * weigh.trait("disclose"))
    if weigh.on(record):
        weigh(inform_details=1.0, state_request=0.3 * (1 - weigh.state("stated")))
    if weigh.on(insist):
        tr, sf = weigh.trait, weigh.state
        weigh(insist=tr("insist") * np.maximum(0.0, 1 - 0.3 * sf("insisted")),
              stop=0.3 * (1 - tr("insist")) * (sf("real_pending") == 0), state_request=0.3 * sf("real_pending"))
    if weigh.on(rest):
        tr, sf = weigh.trait, weigh.state
        # volunteered, unasked: in proportion to the card's openness (a reserved customer gives its identity and
        # its ids only when asked for them); 0.4 keeps the population's mean (E[disclose] = 0.5) at the card-free
        # 0.2
        weigh(state_request=0.6 * (1 - sf("stated")) + 0.1,
              inform_details=VOLUNTEER * tr("disclose") * (1 - sf("details_given")),
              inform_identity=VOLUNTEER * tr("disclose") * (1 - sf("identity_given")),
              ask_question=0.3 * sf("has_question") * (1 - sf("asked")),
              change_mind=0.3 * tr("mind_change") * sf("decoy_open"),
              stop=0.05 * sf("agent_msgs") / np.maximum(1, patience[rest]))
    w = np.where(legal, w, 0.0)
    total = w.sum(1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():  # no legal act has weight: uniform over the legal ones, the stop act at 0.1 beside others
        fallback = legal[empty].astype(float)
        stop = legal[empty, USER_INDEX["stop"]] & (legal[empty].sum(1) > 1)
        fallback[stop, USER_INDEX["stop"]] = 0.1
        w[empty] = fallback
        total[empty, 0] = fallback.sum(1)
    return w / total
