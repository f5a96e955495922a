"""The human-proxy persuadee: the evaluation-only behaviour model. Never train against it.

Only the ``heldout`` regime, ``scope-envs validate`` and the fitting script use
this module; a test checks that no training regime touches it (docs/architecture.md §4.1).

Fitted to the real data of the held-out part of the people split alone (``personas.params("heldout")``,
``params_heldout.json``):
  the propensity regression on the survey card, the per-use effect of each
  persuasion act, the reply frequencies and donor valence, the distribution of
  stated amounts, and the gap between stated and actual donation.
Calibrated on *train* personas facing the empirical persuader, checked on
  held-out ones by ``scope-envs validate``: ``calibration.human_proxy_offset``
  (willingness) matches the real give rate, ``human_proxy_amount_shift`` (a
  tilt of stated amounts) the real mean donation. The 300 annotated dialogues
  that give the intention gap are less generous than the full 1,017, so the
  stated amounts must lean higher than the annotated ones to meet both.
Assumptions (the data cannot pin them down):
  * only persuasion acts move willingness; greeting, thanks, confirmation,
    off-task talk and closing do not (their associations are reverse-causal);
  * effects differ by persona: each strategy's effect gets ``HETEROGENEITY``
    times a trait moderator with mean zero over personas (e.g. emotion appeals
    work on caring personas, logical appeals on rational ones), so the average
    effect stays the data's;
  * repetition wears out: the k-th use of the same strategy counts 1/k;
  * pushiness backfires: every donation request beyond the second costs
    ``PUSHINESS * (0.5 + reactance)``, reactance rising with freedom and
    self-direction and falling with agreeableness and conformity;
  * after stating an amount, a persona gives it in full with the real
    probability, nothing with the real probability, and otherwise the real
    median fraction of it; of those who state $0, the real share gives anyway.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from scope_envs.core.assumptions import check_magnitudes, resolve
from scope_envs.core.game import Persona
from scope_envs.games.p4g import dialogue_acts, reference
from scope_envs.games.p4g.personas import numeric_traits, params, standardize
from scope_envs.games.p4g.reference import persuader_acts, propensity_logit

HETEROGENEITY = 0.25
PUSHINESS = 0.3
REQUESTS = ("propose_donation", "ask_donation_amount")
PERSUASION = (*dialogue_acts.STRATEGIES, *REQUESTS)
MODERATORS = {
    "logical_appeal": ("rational", "open"),
    "emotion_appeal": ("care", "benevolence"),
    "credibility_appeal": ("conscientious", "authority"),
    "foot_in_the_door": ("agreeable", "conform"),
    "self_modeling": ("conform", "agreeable"),
    "personal_story": ("care", "extrovert"),
    "donation_information": ("rational", "conscientious"),
    "source_related_inquiry": ("open", "universalism"),
    "task_related_inquiry": ("extrovert", "open"),
    "personal_related_inquiry": ("extrovert", "agreeable"),
    "propose_donation": ("agreeable", "benevolence"),
    "ask_donation_amount": ("agreeable", "conform"),
}


@dataclass(frozen=True)
class Assumptions:
    """The held-out persuadee's untestable assumptions; the defaults are the benchmark's.

    ``moving_acts``: ``"persuasion"`` (strategies and requests move willingness) or ``"all"`` (every act
    with a fitted effect does, greeting, thanks and confirmation included, at its fitted coefficient, with
    wear-out; the frozen simulator's associational reading). ``wear_out``: the k-th use of an act counts
    1/k (False: every use counts in full). ``heterogeneity`` and ``pushiness``: the magnitudes above."""

    moving_acts: str = "persuasion"
    wear_out: bool = True
    heterogeneity: float = HETEROGENEITY
    pushiness: float = PUSHINESS

    def __post_init__(self):
        if self.moving_acts not in ("persuasion", "all"):
            raise ValueError(f"moving_acts must be 'persuasion' or 'all', got {self.moving_acts!r}")
        if not isinstance(self.wear_out, (bool, np.bool_)):  # a string such as "false" would read as true
            raise ValueError(f"wear_out must be a bool, got {self.wear_out!r}")
        check_magnitudes(self, ("heterogeneity", "pushiness"))


DEFAULT = Assumptions()
VARIANTS = {
    "default": DEFAULT,
    "all_acts_move": Assumptions(moving_acts="all"),
    "no_wear_out": Assumptions(wear_out=False),
    "homogeneous": Assumptions(heterogeneity=0.0),
    "heterogeneity_x2": Assumptions(heterogeneity=2 * HETEROGENEITY),
    "no_pushiness": Assumptions(pushiness=0.0),
    "pushiness_x2": Assumptions(pushiness=2 * PUSHINESS),
}


PART = "heldout"  # the people split's part whose fit it reads (``personas.params``)


def calibration(key: str) -> float:
    return reference.calibration(key, PART)


def _z(persona: Persona) -> dict[str, float]:
    return dict(zip(numeric_traits(PART), np.clip(standardize(persona, PART), -3, 3)))


def reactance(z: dict[str, float]) -> float:
    """How much pushing backfires, from standardized traits (``_z``)."""
    return max(0.0, (z["freedom"] + z["self_direction"] - z["agreeable"] - z["conform"]) / 2)


def neutral() -> float:
    return params(PART)["propensity"]["intercept"] + calibration("human_proxy_offset")


def reply_distribution(persona: Persona, history, legal: np.ndarray,
                       assumptions: Assumptions = DEFAULT) -> np.ndarray:
    return reference.reply_distribution(
        willingness(persona, history, assumptions), history, legal, stated_distribution(), neutral(),
        calibration("human_proxy_amount_shift"), part=PART,
    )


def willingness(persona: Persona, history, assumptions: Assumptions = DEFAULT) -> float:
    offset = calibration("human_proxy_offset")
    coef = params(PART)["strategy_effects"]["coef"]
    moving = PERSUASION if assumptions.moving_acts == "persuasion" else tuple(coef)
    z = _z(persona)
    w = propensity_logit(persona, PART) + offset
    uses: Counter = Counter()
    for a in persuader_acts(history):
        if a not in moving:
            continue
        uses[a] += 1
        effect = coef[a]
        if a in MODERATORS:
            t1, t2 = MODERATORS[a]
            effect += assumptions.heterogeneity * (z[t1] + z[t2]) / 2
        w += effect / uses[a] if assumptions.wear_out else effect
        if a in REQUESTS and uses["propose_donation"] + uses["ask_donation_amount"] > 2:
            w -= assumptions.pushiness * (0.5 + reactance(z))
    return w


def assumptions_from(value) -> Assumptions:
    """``None`` (the default), a ``VARIANTS`` name, a dict of ``Assumptions`` fields, or an ``Assumptions``."""
    return resolve(value, Assumptions, VARIANTS, "p4g")


def stated_distribution() -> np.ndarray:
    """What real persuadees said they would give (the base of a stated amount)."""
    return np.array(params(PART)["gap"]["intended_probs"], dtype=float)


def follow_through(intended: float, rng: np.random.Generator) -> float:
    """The intention-action gap, with the real rates."""
    return gap_draw(params(PART)["gap"], params(PART)["amounts"]["given_give"], intended, rng)


def gap_draw(gap: dict, gifts, intended: float, rng: np.random.Generator, cap: float | None = None) -> float:
    """The form of the intention-action gap, given its rates (``gap``) and the frequencies of the positive gifts
    (``gifts``, by amount bin): who stated more than $0 gives nothing, exactly that, or its median fraction (at
    most ``cap``); who stated $0 gives anyway at the real share, a gift drawn from ``gifts``."""
    if intended > 0:
        u = rng.random()
        if u < gap["p_zero_if_intended"]:
            return 0.0
        if u < gap["p_zero_if_intended"] + gap["p_exact_if_intended"]:
            return intended
        gift = round(intended * gap["ratio_if_other_median"], 2)
        return gift if cap is None else min(gift, cap)
    if rng.random() < gap["p_give_if_intended_zero"]:
        gifts = np.asarray(gifts, dtype=float)
        return dialogue_acts.AMOUNT_BINS[int(rng.choice(len(gifts), p=gifts / gifts.sum()))]
    return 0.0
