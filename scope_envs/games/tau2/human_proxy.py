"""The tau2 human-proxy user: the evaluation-only behaviour model. Never train against it.

Only the ``heldout`` regime (and ``scope-envs validate``) use this module; a test
checks that no training regime touches it (docs/architecture.md §4.1). It plays held-out
cards (``behaviour.card("heldout", i)``) on the tasks of the ``test`` split.

It differs from the training-side reference in the ways real users differ from a
prompted model: per-episode coin flips (a user who slips, slips on its first
identity answer; a user who changes its mind does so at its first chance), a
patience that runs out faster after tool errors, half-answers to slot requests
(it may restate its request instead), and unprompted questions. Its parameters
were set a priori from the trait definitions and are never tuned toward any
benchmark result (docs/architecture.md §4.4).

Three of them are assumptions no data here pins down, each with a switch
(``Assumptions``): how often users slip (``slips``, a factor on the card's slip
probability), how often they retract a request (``retractions``, a factor on its
mind-change probability) and how long they stay (``patience``, a factor on the
agent messages they tolerate, after tool errors too). ``VARIANTS`` names the
alternatives the benchmark's ``--sensitivity`` run re-evaluates every trained
policy under (``scope_envs.make("tau2-heldout", assumptions="no_slips")``); they
were fixed before any sensitivity result existed: each switch off (or halved,
for patience) and doubled.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from scope_envs.core.assumptions import check_magnitudes, resolve
from scope_envs.games.tau2.dialogue_acts import USER_ACTS
from scope_envs.games.tau2.user_state import S, T, Weights, branches, one_row, patience_turns, python_pow


@dataclass(frozen=True)
class Assumptions:
    """Factors on the held-out user's slips, retractions (mind changes) and patience; 1.0 is the default."""

    slips: float = 1.0
    retractions: float = 1.0
    patience: float = 1.0

    def __post_init__(self):
        check_magnitudes(self, ("slips", "retractions", "patience"))


DEFAULT = Assumptions()
VARIANTS = {
    "default": DEFAULT,
    "no_slips": Assumptions(slips=0.0),
    "slips_x2": Assumptions(slips=2.0),
    "no_retractions": Assumptions(retractions=0.0),
    "retractions_x2": Assumptions(retractions=2.0),
    "patience_half": Assumptions(patience=0.5),
    "patience_x2": Assumptions(patience=2.0),
}


def assumptions_from(value) -> Assumptions:
    """``None`` (the default), a ``VARIANTS`` name, a dict of ``Assumptions`` fields, or an ``Assumptions``."""
    return resolve(value, Assumptions, VARIANTS, "tau2")


def _coin(seed: int, what: str, p: float) -> bool:
    """A coin flipped once per episode (``seed``) and purpose: the same answer all episode long."""
    return _coin_draw(seed, what) < p


@functools.lru_cache(maxsize=1 << 16)
def _coin_draw(seed: int, what: str) -> float:
    # the coin's uniform draw, asked at every turn of the episode: a generator built once per (episode, purpose).
    # The cache holds more than a step's live episodes (a row's seeds x slots x 2 purposes): at fewer, a step
    # evicts each draw just before the next step asks for it again, and every turn builds a generator.
    h = (seed * 1_000_003 + sum(ord(c) * 31 ** i for i, c in enumerate(what))) % (2**32)
    return np.random.default_rng(h).random()


def coins(seeds, traits: np.ndarray, assumptions: Assumptions = DEFAULT) -> np.ndarray:
    """Each episode's two coins (it slips; it changes its mind), for episode seeds ``seeds`` and rows of
    ``user_state.TRAITS``: (rows, 2) bools."""
    a = assumptions
    return np.array([[_coin(s, "slip", slip * a.slips), _coin(s, "mind", mind * a.retractions)]
                     for s, slip, mind in zip(np.asarray(seeds).tolist(), traits[:, T["slip"]].tolist(),
                                              traits[:, T["mind_change"]].tolist())], bool).reshape(len(traits), 2)


def distribution(traits: dict, st: dict, legal: np.ndarray, assumptions: Assumptions = DEFAULT) -> np.ndarray:
    """The held-out user's next act: a batch of one of ``proxy_policy``."""
    t, row = one_row(traits, st)
    flips = coins([st["episode_seed"]], t, assumptions)
    return proxy_policy(t, row, flips, np.asarray(legal, bool)[None], assumptions)[0]


def proxy_policy(t: np.ndarray, st: np.ndarray, flips: np.ndarray, legal: np.ndarray,
                 assumptions: Assumptions = DEFAULT) -> np.ndarray:
    """The held-out users' next-act distributions for rows of traits ``t`` (``user_state.TRAITS``), states ``st``
    (``user_state.STATE``), their episodes' ``coins`` and legal masks: the first branch that holds sets the
    weights."""
    rows = len(st)
    w = np.zeros((rows, len(USER_ACTS)))
    f = lambda k: st[:, S[k]]  # noqa: E731
    patience = patience_turns(t) - 2 * f("tool_errors")
    if assumptions.patience != 1.0:  # scaled only when switched, so that the default's arithmetic stays as it was
        patience = assumptions.patience * patience
    slips, changes = flips[:, 0], flips[:, 1]
    (transfer, first, stop, instructed, decoy, real, identity, record, insist,
     rest) = branches(rows, [f("transfer_pending") != 0, f("first_turn") != 0,
                             (f("satisfied") != 0) | (f("agent_msgs") > patience), f("instructed") != 0,
                             f("confirm_decoy") != 0, f("confirm_real") != 0, f("ask_identity") != 0,
                             f("ask_record") != 0, (f("denied") != 0) & (f("decoy_forbidden") != 0)])
    weigh = Weights(w, t, st)
    if weigh.on(transfer):
        weigh(transfer=1.0)
    mind_first = first & changes & (f("decoy_mind") != 0)
    if weigh.on(mind_first):
        weigh(change_mind=1.0)
    if weigh.on(first & ~mind_first):
        disclose2 = python_pow(weigh.trait("disclose"), 2)
        weigh(inform_all=disclose2, state_request=1 - disclose2 + 0.05)
    if weigh.on(stop):
        weigh(stop=1.0)
    if weigh.on(instructed):
        root = python_pow(weigh.trait("comply"), 0.5)
        weigh(phone_action=root, deny=1 - root + 0.02)
    mind = decoy & (f("decoy_mind") != 0)
    if weigh.on(mind):
        weigh(change_mind=1.0)
    if weigh.on(decoy & ~mind):
        weigh(confirm=1.0)
    if weigh.on(real):
        weigh(confirm=1.0, deny=0.15 * (1 - weigh.trait("comply")))
    slip_now = identity & slips & (f("slipped") == 0)
    if weigh.on(slip_now):
        weigh(inform_slip=1.0)
    if weigh.on(identity & ~slip_now):
        weigh(inform_identity=1.0,
              state_request=0.2 * (1 - weigh.trait("disclose")) * (1 - weigh.state("stated")))
    if weigh.on(record):
        weigh(inform_details=0.6 + 0.4 * weigh.trait("disclose"),
              ask_question=0.2 * weigh.state("has_question") * (1 - weigh.state("asked")))
    if weigh.on(insist):
        tr, sf = weigh.trait, weigh.state
        keeps = sf("insisted") < 1 + 3 * tr("insist")
        weigh(insist=tr("insist") * keeps, state_request=0.5 * sf("real_pending"),
              stop=(1 - tr("insist")) * (sf("real_pending") == 0) + 0.1 * ~keeps)
    if weigh.on(rest):
        tr, sf = weigh.trait, weigh.state
        weigh(state_request=0.5 * (1 - sf("stated")) + 0.15,
              ask_question=0.4 * sf("has_question") * (1 - sf("asked")),
              inform_details=0.15 * (1 - sf("details_given")) * tr("disclose"),
              change_mind=0.5 * changes[rest] * sf("decoy_open"),
              stop=0.1 * sf("agent_msgs") / np.maximum(1, patience[rest]))
    w = np.where(legal, w, 0.0)
    total = w.sum(1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():  # no legal act has weight: uniform over the legal ones
        w[empty] = legal[empty]
        total[empty, 0] = legal[empty].sum(1)
    return w / total
