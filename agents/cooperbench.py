"""Built-in CooperBench partners (styles in ``scope_envs.games.cooperbench.styles``).

* ``ReferencePartner``: the population-average teammate policy, playing the
  dealt style card (or ``persona``) with ``cooperation`` added to every
  probability, sharpened by ``sharpening``.
* ``CollapsedPartner``: "one frozen chat model as a teammate": the modal
  style, over-cooperative (+0.3), sharpened by ``sharpening = 3`` — it announces its
  plan, answers, keeps its claims and respects yours, every time, and (its
  ``talk`` lifted above 1/2) leads: it claims and integrates the shared
  regions itself, so a teammate trained on it learns to yield them or claim
  first, which the reference's quiet cards punish (``styles``). Its
  verbalized top-k reports the unsharpened reference.
* ``HumanProxyPartner``: the held-out population; each persona's coins are
  flipped once per task, so a claim-breaker breaks the same claim all episode.
"""

from __future__ import annotations

import numpy as np

from scope_envs.agents.base import SharpenedReference
from scope_envs.core import seal
from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.simulator import Simulator, View
from scope_envs.core.game import Persona
from scope_envs.games.cooperbench import styles


def _cooperative(persona: Persona, cooperation: float) -> Persona:
    if not cooperation:
        return persona
    traits = {t: min(1.0, v + cooperation) for t, v in persona.traits.items()}
    return Persona(persona.id, persona.split, traits, persona.attributes)


class ReferencePartner(SharpenedReference):
    batched_reference = "cooperbench"  # the batched engine computes this reference for all slots (vec/games.py)

    def reference(self, view: View) -> np.ndarray:
        style = _cooperative(view.persona, self.cooperation)
        return styles.decide(style, view.private, view.legal, sampled=False)


class CollapsedPartner(ReferencePartner):
    def __init__(self, sharpening: float | None = None, persona: Persona | None = None, cooperation: float = 0.3,
                 calibration_noise: float = 0.25, name: str = "collapsed", *, gamma: float | None = None):
        super().__init__(sharpening_of(sharpening, gamma, 3.0), persona or styles.default_persona(),
                         calibration_noise, name, cooperation=cooperation)


class HumanProxyPartner(Simulator):
    name = "human_proxy"
    persona = None

    def __init__(self, assumptions=None):
        seal.check("HumanProxyPartner (the held-out human proxies)")
        if assumptions not in (None, "default"):  # its styles are the game's; no untestable switch is modelled
            raise ValueError(f"the cooperbench human proxy has no assumption variants (only 'default'), "
                             f"got {assumptions!r}")

    def distribution(self, view: View) -> np.ndarray:
        return styles.decide(view.persona, view.private, view.legal, sampled=True)


def rotation_members() -> list[CollapsedPartner]:
    """Several frozen partners: different train styles and sharpness."""
    cards = [styles.default_persona(), *(styles.persona("train", i) for i in (3, 17, 42))]
    return [CollapsedPartner(g, c, name=f"collapsed-{c.id}-g{g:g}") for c, g in zip(cards, (3.0, 2.0, 4.0, 6.0))]


class ScriptedTeammate(Simulator):
    """A coordinating teammate for the ``teammate`` role: announces, claims the shared
    regions it learns of and does them combined, respects claims, submits when done."""

    name = "scripted_teammate"

    def __init__(self, communicate: bool = True):
        self.communicate = communicate
        self._style = Persona("scripted", "default", dict.fromkeys(styles.TRAITS, 1.0 if communicate else 0.0),
                              {"style": "scripted"})
        if not communicate:  # a silent worker still keeps its own plan
            self._style.traits.update(keep=1.0)

    def distribution(self, view: View) -> np.ndarray:
        return styles.decide(self._style, view.private, view.legal, sampled=False)
