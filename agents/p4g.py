"""Built-in players of Persuasion for Good.

* ``ReferencePersuadee``: the reference model playing the dealt card.
* ``CollapsedPersuadee``: "one frozen aligned LLM playing a user". The reference
  persuadee model with a modal default persona, an over-cooperative bias
  (``cooperation`` added to its willingness) and typicality bias: its replies
  are the reference distribution sharpened by ``sharpening > 1``. Its verbalized
  top-k reports the *unsharpened* reference with calibration noise.
* ``GroundedPersuadee``: a frozen simulator fitted to the training part of the
  real dialogues (``games.p4g.grounded``: the real reply frequencies given the
  persuader's act and the turn's phase, stated amounts and follow-through),
  playing the card the episode deals. The user of ``p4g-grounded``.
* ``HumanProxyPersuadee``: the held-out human-proxy behaviour model, playing the
  card the episode deals. Evaluation only.
* ``EmpiricalPersuader``: replays the per-turn strategy frequencies of the real
  persuaders (the reference persuader of ``scope-envs validate``).
* ``ScriptedPersuader``: a fixed, sensible script, for demonstrations.
"""

from __future__ import annotations

import numpy as np

from scope_envs.agents.base import SharpenedReference, normalize
from scope_envs.core import seal
from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.simulator import Simulator, View
from scope_envs.core.game import Persona
from scope_envs.games.p4g import dialogue_acts, personas, reference

PERSUADEE_ACTS = dialogue_acts.PERSUADEE_ACTS


class ReferencePersuadee(SharpenedReference):
    """The reference persuadee model playing the dealt card (or ``persona``), sharpened by ``sharpening``."""

    batched_reference = "p4g"  # the batched engine computes this reference for all slots (vec/games.py)

    def reference(self, view: View) -> np.ndarray:
        w = reference.willingness(view.persona, view.history) + self.cooperation
        return reference.reply_distribution(w, view.history, view.legal, reference.gift_distribution(),
                                            reference.neutral(), tilt=reference.disclosure(view.persona))


class CollapsedPersuadee(ReferencePersuadee):
    def __init__(self, sharpening: float | None = None, persona: Persona | None = None, cooperation: float = 1.0,
                 calibration_noise: float = 0.25, name: str = "collapsed", *, gamma: float | None = None):
        super().__init__(sharpening_of(sharpening, gamma, 3.0), persona or personas.default_persona(),
                         calibration_noise, name, cooperation=cooperation)


class GroundedPersuadee(Simulator):
    """The persuadee fitted to the training part of the real dialogues, playing the dealt card; ``params``: a dict
    of ``grounded_params.json``'s form (default: the committed one)."""

    persona = None

    def __init__(self, params: dict | None = None, name: str = "grounded"):
        from scope_envs.games.p4g import grounded

        self.model = grounded.model() if params is None else grounded.GroundedModel(params)
        self.name = name

    def distribution(self, view: View) -> np.ndarray:
        return self.model.reply_distribution(view.persona, view.history, view.legal)

    def follow_through(self, intended, rng):
        return self.model.follow_through(intended, rng)


class HumanProxyPersuadee(Simulator):
    """The held-out persuadee (evaluation only); ``assumptions``: see ``games.p4g.human_proxy.Assumptions``."""

    name = "human_proxy"
    persona = None

    def __init__(self, assumptions=None):
        seal.check("HumanProxyPersuadee (the held-out human proxies)")
        from scope_envs.games.p4g import human_proxy

        self.assumptions = human_proxy.assumptions_from(assumptions)

    def distribution(self, view: View) -> np.ndarray:
        from scope_envs.games.p4g import human_proxy

        return human_proxy.reply_distribution(view.persona, view.history, view.legal, self.assumptions)

    def follow_through(self, intended, rng):
        from scope_envs.games.p4g import human_proxy

        return human_proxy.follow_through(intended, rng)


class EmpiricalPersuader(Simulator):
    """The real persuaders' per-turn strategy frequencies, as ``part`` of the people split fitted them: the
    training side's (the calibration of the reference, diagnose's probe) or the held-out side's (validate)."""

    name = "empirical_persuader"

    def __init__(self, part: str = "train"):
        self.part = personas.check_part(part)

    def distribution(self, view: View) -> np.ndarray:
        emp = personas.params(self.part)["empirical_persuader"]
        turn = min(view.public["persuader_turns"], len(emp["by_turn"]) - 1)
        p = np.zeros(len(dialogue_acts.PERSUADER_ACTS))
        for name, q in zip(emp["acts"], emp["by_turn"][turn]):
            p[dialogue_acts.PERSUADER_INDEX[name]] = q
        return normalize(p, view.legal)


class ScriptedPersuader(Simulator):
    name = "scripted_persuader"
    SCRIPT = (
        "greeting", "source_related_inquiry", "credibility_appeal", "emotion_appeal", "logical_appeal",
        "propose_donation", "ask_donation_amount", "confirm_donation", "thank", "close",
    )

    def distribution(self, view: View) -> np.ndarray:
        step = min(view.public["persuader_turns"], len(self.SCRIPT) - 1)
        p = np.zeros(len(dialogue_acts.PERSUADER_ACTS))
        p[dialogue_acts.PERSUADER_INDEX[self.SCRIPT[step]]] = 1.0
        return normalize(p, view.legal)


def rotation_members() -> list[CollapsedPersuadee]:
    """Several frozen simulators: different default personas (train split) and sharpness."""
    cards = [personas.default_persona(), personas.persona("train", 11), personas.persona("train", 222),
             personas.persona("train", 333)]
    sharpenings = [3.0, 2.0, 4.0, 6.0]
    return [CollapsedPersuadee(g, c, name=f"collapsed-{c.id}-g{g:g}") for c, g in zip(cards, sharpenings)]
