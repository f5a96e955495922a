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

``reference_distribution`` is the training-side user model (the reference that
collapsed simulators sharpen). The held-out behaviour model is in
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

from scope_envs.core.game import Persona
from scope_envs.games.tau2.dialogue_acts import USER_ACTS, USER_INDEX

TRAITS = ("disclose", "patience", "insist", "comply", "mind_change", "slip", "verbose")
SPLIT_KEYS = {"train": 7_301, "heldout": 9_403}
SPLIT_SIZES = {"train": 1000, "heldout": 500}
# Beta(a, b) per trait: broad, so the population spans each behaviour
PRIOR = {"disclose": (1.2, 1.2), "patience": (1.5, 1.5), "insist": (1.0, 1.5), "comply": (2.5, 1.0),
         "mind_change": (1.0, 2.0), "slip": (1.0, 2.5), "verbose": (1.2, 1.2)}
VOLUNTEER = 0.4  # weight of volunteering the identity / the details unasked, per unit of ``disclose``



@functools.lru_cache(maxsize=4096)
def card(split: str, i: int) -> Persona:
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


def patience_turns(traits: dict) -> int:
    return int(4 + 26 * traits["patience"])


def reference_distribution(traits: dict, st: dict, legal: np.ndarray) -> np.ndarray:
    """The reference user's next act, from its card and what it knows of the dialogue (``st``)."""
    # weights in a list, one array at the end: asked at every user turn, and a numpy scalar store per act costs
    # more than the arithmetic (the array, its sum and the division are the same as numpy's, bit for bit)
    w = [0.0] * len(USER_ACTS)
    t = traits
    if st["transfer_pending"]:
        w[USER_INDEX["transfer"]] = 1.0
    elif st["first_turn"]:
        w[USER_INDEX["inform_all"]] = 0.05 + t["disclose"]
        w[USER_INDEX["state_request"]] = 1.05 - t["disclose"]
        w[USER_INDEX["change_mind"]] = 0.5 * t["mind_change"]
    elif st["satisfied"]:
        w[USER_INDEX["stop"]] = 1.0
        w[USER_INDEX["ask_question"]] = 0.2 * (1 - st["asked"])
    elif st["agent_msgs"] > patience_turns(t):
        w[USER_INDEX["stop"]] = 1.0
    elif st["instructed"]:
        w[USER_INDEX["phone_action"]] = 0.1 + t["comply"]
        w[USER_INDEX["deny"]] = 0.3 * (1 - t["comply"])
    elif st["confirm_target"] == "decoy":
        if st["decoy_kind"] == "mind_change":
            w[USER_INDEX["change_mind"]] = 0.2 + t["mind_change"]
            w[USER_INDEX["confirm"]] = 0.2 * (1 - t["mind_change"])
        else:
            w[USER_INDEX["confirm"]] = 1.0
    elif st["confirm_target"] == "real":
        w[USER_INDEX["confirm"]] = 0.2 + t["comply"]
        w[USER_INDEX["deny"]] = 0.2 * (1 - t["comply"])
    elif st["asked_slot"] in ("user_id", "email", "name_zip", "phone"):
        w[USER_INDEX["inform_identity"]] = 1.0 - 0.8 * t["slip"] * (1 - st["slipped"])
        w[USER_INDEX["inform_slip"]] = 0.8 * t["slip"] * (1 - st["slipped"])
        w[USER_INDEX["inform_all"]] = 0.3 * t["disclose"]
    elif st["asked_slot"] in ("record_id", "details"):
        w[USER_INDEX["inform_details"]] = 1.0
        w[USER_INDEX["state_request"]] = 0.3 * (1 - st["stated"])
    elif st["denied"] and st["decoy_kind"] == "forbidden":
        w[USER_INDEX["insist"]] = t["insist"] * max(0.0, 1 - 0.3 * st["insisted"])
        w[USER_INDEX["stop"]] = 0.3 * (1 - t["insist"]) * (not st["real_pending"])
        w[USER_INDEX["state_request"]] = 0.3 * st["real_pending"]
    else:
        w[USER_INDEX["state_request"]] = 0.6 * (1 - st["stated"]) + 0.1
        # volunteered, unasked: in proportion to the card's openness (a reserved customer gives its identity and
        # its ids only when asked for them); 0.4 keeps the population's mean (E[disclose] = 0.5) at the card-free 0.2
        w[USER_INDEX["inform_details"]] = VOLUNTEER * t["disclose"] * (1 - st["details_given"])
        w[USER_INDEX["inform_identity"]] = VOLUNTEER * t["disclose"] * (1 - st["identity_given"])
        w[USER_INDEX["ask_question"]] = 0.3 * st["has_question"] * (1 - st["asked"])
        w[USER_INDEX["change_mind"]] = 0.3 * t["mind_change"] * st["decoy_open"]
        w[USER_INDEX["stop"]] = 0.05 * st["agent_msgs"] / max(1, patience_turns(t))
    w = np.array([float(x) if ok else 0.0 for x, ok in zip(w, legal.tolist())])
    total = w.sum()
    if total <= 0:
        w = np.where(legal, 1.0, 0.0)
        if legal[USER_INDEX["stop"]] and legal.sum() > 1:
            w[USER_INDEX["stop"]] = 0.1
        total = w.sum()
    return w / total
