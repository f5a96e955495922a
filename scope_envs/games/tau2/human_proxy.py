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
from scope_envs.games.tau2.behaviour import patience_turns
from scope_envs.games.tau2.dialogue_acts import USER_ACTS, USER_INDEX


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


@functools.lru_cache(maxsize=1024)
def _coin_draw(seed: int, what: str) -> float:
    # the coin's uniform draw, asked at every turn of the episode: a generator built once per (episode, purpose)
    h = (seed * 1_000_003 + sum(ord(c) * 31 ** i for i, c in enumerate(what))) % (2**32)
    return np.random.default_rng(h).random()


def distribution(traits: dict, st: dict, legal: np.ndarray, assumptions: Assumptions = DEFAULT) -> np.ndarray:
    t, seed, a = traits, st["episode_seed"], assumptions
    w = np.zeros(len(USER_ACTS))
    patience = patience_turns(t) - 2 * st["tool_errors"]
    if a.patience != 1.0:  # scaled only when switched, so that the default's arithmetic stays bit for bit
        patience = a.patience * patience
    slips = _coin(seed, "slip", t["slip"] * a.slips)
    changes = _coin(seed, "mind", t["mind_change"] * a.retractions)
    if st["transfer_pending"]:
        w[USER_INDEX["transfer"]] = 1.0
    elif st["first_turn"]:
        if changes and st["decoy_kind"] == "mind_change":
            w[USER_INDEX["change_mind"]] = 1.0
        else:
            w[USER_INDEX["inform_all"]] = t["disclose"] ** 2
            w[USER_INDEX["state_request"]] = 1 - t["disclose"] ** 2 + 0.05
    elif st["satisfied"] or st["agent_msgs"] > patience:
        w[USER_INDEX["stop"]] = 1.0
    elif st["instructed"]:
        w[USER_INDEX["phone_action"]] = t["comply"] ** 0.5
        w[USER_INDEX["deny"]] = 1 - t["comply"] ** 0.5 + 0.02
    elif st["confirm_target"] == "decoy":
        w[USER_INDEX["change_mind" if st["decoy_kind"] == "mind_change" else "confirm"]] = 1.0
    elif st["confirm_target"] == "real":
        w[USER_INDEX["confirm"]] = 1.0
        w[USER_INDEX["deny"]] = 0.15 * (1 - t["comply"])
    elif st["asked_slot"] in ("user_id", "email", "name_zip", "phone"):
        if slips and not st["slipped"]:
            w[USER_INDEX["inform_slip"]] = 1.0
        else:
            w[USER_INDEX["inform_identity"]] = 1.0
            w[USER_INDEX["state_request"]] = 0.2 * (1 - t["disclose"]) * (1 - st["stated"])
    elif st["asked_slot"] in ("record_id", "details"):
        w[USER_INDEX["inform_details"]] = 0.6 + 0.4 * t["disclose"]
        w[USER_INDEX["ask_question"]] = 0.2 * st["has_question"] * (1 - st["asked"])
    elif st["denied"] and st["decoy_kind"] == "forbidden":
        keeps = st["insisted"] < 1 + 3 * t["insist"]
        w[USER_INDEX["insist"]] = t["insist"] * keeps
        w[USER_INDEX["state_request"]] = 0.5 * st["real_pending"]
        w[USER_INDEX["stop"]] = (1 - t["insist"]) * (not st["real_pending"]) + 0.1 * (not keeps)
    else:
        w[USER_INDEX["state_request"]] = 0.5 * (1 - st["stated"]) + 0.15
        w[USER_INDEX["ask_question"]] = 0.4 * st["has_question"] * (1 - st["asked"])
        w[USER_INDEX["inform_details"]] = 0.15 * (1 - st["details_given"]) * t["disclose"]
        w[USER_INDEX["change_mind"]] = 0.5 * changes * st["decoy_open"]
        w[USER_INDEX["stop"]] = 0.1 * st["agent_msgs"] / max(1, patience)
    w = np.where(legal, w, 0.0)
    if w.sum() <= 0:
        w = np.where(legal, 1.0, 0.0)
    return w / w.sum()
