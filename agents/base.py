"""Shared pieces of the built-in simulators: the sharpened-reference model of a collapsed user."""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import check_number
from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.game import Persona
from scope_envs.core.simulator import Simulator, View

# the sharpest reference a simulator takes (diagnose fits the exponent on [0.01, 100]: ``measures.S_MAX``). Past a few
# hundred ``p ** sharpening`` underflows to 0 on every act: the scalar env stopped mid-episode with numpy's
# "Probabilities contain NaN" and the batched engine, in log space, drew from overflowed (NaN) weights
MAX_SHARPENING = 100.0


class SharpenedReference(Simulator):
    """A reference user model sharpened by the exponent ``sharpening`` (typicality bias; docs/architecture.md §1).

    Subclasses give ``reference(view)``, the unsharpened distribution, in which
    ``cooperation`` is the game's own over-cooperative bias. Direct
    answers come from ``reference ** sharpening``; the verbalized top-k reports the
    unsharpened reference with multiplicative calibration noise, which is what
    verbalized sampling recovers.

    What the batched engine (``scope_envs.vec.batched``) may compute for all slots at once is declared, not
    guessed: ``batched_reference`` names the batched reference model a game's reference class gives (the
    game's name; None here), ``batched_replies`` which answers follow this model (``"direct"``: sharpened
    draws, ``"verbalized"``: the noisy top-k). A subclass that defines ``reference`` (or ``distribution`` /
    ``act``, or ``verbalize``) in its body without declaring these leaves the batch: it is asked slot by slot.
    """

    batched_reference: str | None = None
    batched_replies: frozenset = frozenset({"direct", "verbalized"})

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        body = vars(cls)
        if "reference" in body and "batched_reference" not in body:
            cls.batched_reference = None
        if "batched_replies" not in body:
            replies = set(cls.batched_replies)
            if "distribution" in body or "act" in body:
                replies.discard("direct")
            if "verbalize" in body:
                replies.discard("verbalized")
            cls.batched_replies = frozenset(replies)

    def __init__(self, sharpening: float | None = None, persona: Persona | None = None,
                 calibration_noise: float = 0.25, name: str = "reference", *, cooperation: float = 0.0,
                 gamma: float | None = None):
        sharpening = check_number("sharpening", sharpening_of(sharpening, gamma, 1.0), 1, MAX_SHARPENING,
                                  wanted=f">= 1 and <= {MAX_SHARPENING:g}, a finite number (a sharpened reference)")
        self.sharpening, self.persona, self.cooperation = sharpening, persona, cooperation
        self.calibration_noise, self.name = calibration_noise, name

    def reference(self, view: View) -> np.ndarray:
        raise NotImplementedError

    def distribution(self, view: View) -> np.ndarray:
        return normalize(sharpen(self.reference(view), self.sharpening), view.legal)

    @property
    def gamma(self) -> float:
        """Deprecated name of ``sharpening`` (removed in the next release)."""
        return self.sharpening

    def verbalize(self, view, k, rng, tail: float | None = None):
        p = self.reference(view)
        stated = p * np.exp(self.calibration_noise * rng.standard_normal(len(p)))
        stated = stated / stated.sum()
        order = [int(a) for a in np.argsort(-stated, kind="stable") if view.legal[a] and stated[a] > 0]
        if tail is not None:
            order = [a for a in order if stated[a] < tail] or order[-1:]
        return [(a, float(stated[a])) for a in order[:k]]


def normalize(p: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``p`` on the legal acts, renormalized (uniform over them where none has mass); along the last axis, so a
    batch of rows (``scope_envs.vec``) is normalized row by row."""
    q = np.where(legal, np.maximum(p, 0.0), 0.0)
    s = q.sum(-1, keepdims=True)
    empty = s[..., 0] <= 0
    if empty.any():
        q = np.where(empty[..., None], legal, q).astype(float)
        s = q.sum(-1, keepdims=True)
    return q / s


def sharpen(p: np.ndarray, sharpening: float) -> np.ndarray:
    """Typicality bias: ``p^sharpening`` renormalized (docs/architecture.md §1), along the last axis."""
    q = np.power(p, sharpening)
    return q / q.sum(-1, keepdims=True)
