"""The reference persuadee model: what a language model "knows" about persuadees.

This is the training-side user model. Collapsed simulators sharpen it, the
verbalized list reports it, and persona rewards use its card-only propensity.
It reads nothing of the held-out behaviour model (``human_proxy``), and its
parameters are the training part's (``personas.params("train")``); the held-out
proxies call its shared forms with ``part="heldout"``.

* Willingness to give (log-odds) = the propensity regression on the persona
  card + the effect of each persuader act seen so far *on this card*
  (``act_effects``) + a calibration offset. An act's effect is its
  *associational* main effect (``strategy_effects``: a regression of giving on
  act counts in the 300 annotated dialogues) plus its persona x act
  interaction times the card's decision lean above the data's mean lean
  (``strategy_interactions``: ``personas.decision_lean``, rational minus
  intuitive, clipped to +-1; fitted on the same dialogues, ``fit.py``). So what
  moves a persuadee depends on who they are: on the fitted numbers a rational
  card is moved most by confirming a donation, an intuitive one by donation
  information and foot-in-the-door, and the modal card (every trait at its
  mean: a rational lean, like most cards) is not the population's average
  persuadee. The interactions are ridge point estimates; their bootstrap
  intervals exclude zero for one act only (off_task), so the rest is the data's
  best guess, not an established fact: the single axis, its linearity and clip
  are assumptions (``fit.py``). The associational effects include
  reverse-causal ones (persuaders confirm and thank after a yes), just as a
  model trained on dialogue text would absorb them. Assumption.
* Reply to the last persuader act: the real conditional frequencies
  (``responses``), tilted towards acts donors use (``valence``) by
  ``KAPPA * (willingness - neutral)``, neutral being an average persona's
  willingness before persuasion (KAPPA is an assumption), and by the card's
  own way of talking (``disclosure``: ``reply_disclosure``, a log-linear tilt
  of each reply act per unit of lean deviation, fitted on the real response
  pairs): intuitive-lean persuadees disagree more, rational-lean ones greet,
  ask personal questions and thank more. This is how a persuader, who never
  sees the card, can tell whom it faces.
* A stated amount: $0 with probability 1 - sigmoid(willingness), otherwise a
  bin from the real distribution of gifts, tilted towards larger bins as
  willingness grows (``AMOUNT_TILT``, assumption).
"""

from __future__ import annotations

import functools

import numpy as np

from scope_envs.core.game import Persona, Turn
from scope_envs.games.p4g import dialogue_acts, personas
from scope_envs.games.p4g.personas import params, standardize

KAPPA = 0.5
AMOUNT_TILT = 0.5
PERSUADER = "persuader"

# standardized log amounts of the positive bins: the axis along which willingness tilts a gift
_LOG_AMOUNTS = np.log(np.array(dialogue_acts.AMOUNT_BINS[1:]))
AMOUNT_Z = (_LOG_AMOUNTS - _LOG_AMOUNTS.mean()) / _LOG_AMOUNTS.std()


def sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


def propensity_logit(persona: Persona, part: str = "train") -> float:
    """Log-odds of giving from the card alone (the data's propensity regression, as ``part`` fitted it)."""
    prop = params(part)["propensity"]
    z = np.clip(standardize(persona, part), -4, 4)
    coef = np.array([prop["coef"][t] for t in params(part)["persona_model"]["numeric"]])
    return float(prop["intercept"] + coef @ z)


def expected_gift(persona: Persona) -> float:
    """Expected donation in dollars implied by the card alone."""
    gifts = np.array(params("train")["amounts"]["given_give"])
    return sigmoid(propensity_logit(persona)) * float(gifts @ np.array(dialogue_acts.AMOUNT_BINS))


def persuader_acts(history: tuple[Turn, ...] | list[Turn]) -> list[str]:
    return [dialogue_acts.PERSUADER_ACTS[t.act] for t in history if t.role == PERSUADER]


def calibration(key: str, part: str = "train") -> float:
    return params(part).get("calibration", {}).get(key, 0.0)


def lean_deviation(persona: Persona) -> float:
    """The card's decision lean above the fitted sample's mean lean: what scales its persona x act interactions
    (0 with parameters that have no ``strategy_interactions``)."""
    inter = params("train").get("strategy_interactions")
    return personas.decision_lean(persona.traits) - inter["centre"] if inter else 0.0


def act_effects(persona: Persona) -> dict[str, float]:
    """The change of this card's willingness (log-odds) per use of each persuader act: the main effect plus the
    persona x act interaction times the card's ``lean_deviation``."""
    coef = params("train")["strategy_effects"]["coef"]
    inter = params("train").get("strategy_interactions", {}).get("coef", {})
    dev = lean_deviation(persona)
    return {a: coef[a] + inter.get(a, 0.0) * dev for a in coef}


# The training-side world's assumption that the data can least support: the persona x act interactions (their
# bootstrap intervals exclude zero for one act only). "no-interactions" sets them all to zero (an act then moves
# every card alike; the card's propensity and way of talking stay): the calibration's sensitivity to it.
def _use_world(name: str) -> None:
    """Put the world ``name`` in place in this process: the parameters the training side's models read
    (``personas.set_params(..., "train")``; the held-out side's stay as they are); "fitted" puts the packaged ones
    back (nothing to do where they are in place)."""
    shipped = personas.packaged("train")
    if name == "fitted":
        if params("train") is not shipped:
            personas.set_params(shipped, "train")
        return
    inter = dict(shipped["strategy_interactions"], coef={a: 0.0 for a in shipped["strategy_interactions"]["coef"]})
    personas.set_params({**shipped, "strategy_interactions": inter}, "train")


WORLDS = {name: functools.partial(_use_world, name) for name in ("fitted", "no-interactions")}


def willingness(persona: Persona, history) -> float:
    effect = act_effects(persona)
    return propensity_logit(persona) + calibration("reference_offset") + sum(effect[a] for a in persuader_acts(history))


def neutral() -> float:
    """The willingness of an average persona before any persuasion."""
    return params("train")["propensity"]["intercept"] + calibration("reference_offset")


def amount_probs(w: float, gifts: np.ndarray, center: float, shift: float = 0.0) -> np.ndarray:
    """Distribution over AMOUNT_BINS given willingness ``w`` (relative to ``center``),
    a base gift distribution and a ``shift`` of the log-amount tilt."""
    pos = gifts[1:] * np.exp((AMOUNT_TILT * (w - center) + shift) * AMOUNT_Z)
    out = np.empty(len(dialogue_acts.AMOUNT_BINS))
    out[0] = 1.0 - sigmoid(w)
    out[1:] = sigmoid(w) * pos / pos.sum()
    return out


def disclosure(persona: Persona) -> np.ndarray:
    """How this card tilts its replies, as log multipliers of the ``responses`` acts: the fitted
    ``reply_disclosure`` times the card's ``lean_deviation`` (zeros with parameters that have none)."""
    coef = params("train").get("reply_disclosure", {}).get("coef")
    if not coef:
        return np.zeros(len(params("train")["responses"]["acts"]))
    return np.array([coef[a] for a in params("train")["responses"]["acts"]]) * lean_deviation(persona)


def reply_distribution(
    w: float, history, legal: np.ndarray, gifts: np.ndarray, center: float, shift: float = 0.0,
    tilt: np.ndarray | None = None, part: str = "train",
) -> np.ndarray:
    """Probabilities over PERSUADEE_ACTS for a persuadee of willingness ``w`` (``center``: an average one's);
    ``tilt``: the card's log multipliers of the reply acts (``disclosure``), none for a model without them;
    the reply frequencies and valences ``part`` fitted."""
    resp = params(part)["responses"]
    said = persuader_acts(history)
    base = np.array(resp["given"][said[-1]] if said else resp["start"])
    valence = np.array([params(part)["valence"][a] for a in resp["acts"]])
    log_tilt = KAPPA * valence * (w - center)
    if tilt is not None:
        log_tilt = log_tilt + tilt
    base = base * np.exp(log_tilt)
    p = np.zeros(len(dialogue_acts.PERSUADEE_ACTS))
    for name, mass in zip(resp["acts"][:-1], base[:-1]):
        p[dialogue_acts.PERSUADEE_INDEX[name]] = mass
    p[dialogue_acts.FIRST_AMOUNT:] = base[-1] * amount_probs(w, gifts, center, shift)
    p = np.where(legal, p, 0.0)
    total = p.sum()
    return p / total if total > 0 else legal / legal.sum()  # off-turn: only the no-op


def gift_distribution() -> np.ndarray:
    return np.array(params("train")["amounts"]["given_give"], dtype=float)
