"""Verbalized sampling of the user role (Zhang et al. 2025).

At every simulator turn the simulator is asked for its top-``k`` replies with
stated probabilities, and one is sampled from that verbalized distribution
instead of taking its single direct answer.

How the candidate is drawn: ``weight_mode`` (``elicited`` as stated,
``softmax``, ``uniform``; the reference package's names), or ``selection`` as
SCOPE names it: ``random`` (uniform over the k candidates, SCOPE's main runs;
the same weights as ``weight_mode="uniform"``) or ``prob`` (by stated
probability floored at ``PROB_FLOOR`` = 1e-6, then renormalised). ``selection``
is None by default (``weight_mode`` decides, as before); giving it together
with a ``weight_mode`` other than ``elicited`` is an error. SCOPE's setting is
``scope_envs.make("<game>-vs", k=5, selection="random")``.

Example::

    >>> import scope_envs
    >>> from scope_envs.wrappers import VerbalizedSampling
    >>> env = VerbalizedSampling(scope_envs.make("p4g-frozen"), k=5, tau=0.05, min_survivors=2)
    >>> obs, infos = env.reset(seed=0)
    >>> obs, rew, term, trunc, infos = env.step({"agent_0": 1})
    >>> infos["agent_0"]["vs_candidates"].shape
    (5,)
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.env import DirectAnswer
from scope_envs.wrappers.infos import InfosWrapper

WEIGHT_MODES = ("elicited", "softmax", "uniform")
SELECTIONS = ("random", "prob")  # SCOPE's names for its verbalized-sampling draw
PROB_FLOOR = 1e-6  # SCOPE's floor on stated probabilities under ``selection="prob"``


def check_selection(selection: str | None, weight_mode: str) -> None:
    """``selection`` is None or one of ``SELECTIONS``, and not given beside a non-default ``weight_mode``."""
    if selection is None:
        return
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS} (or None), got {selection!r}")
    if weight_mode != "elicited":
        raise ValueError(f"give either selection ({selection!r}) or weight_mode ({weight_mode!r}), not both: "
                         f"selection='random' is weight_mode='uniform'; selection='prob' is floored elicited weights")


def candidate_weights(
    probs, tau: float | None = None, min_survivors: int = 1, weight_mode: str = "elicited", temperature: float = 2.0,
    selection: str | None = None,
) -> np.ndarray:
    """Sampling weights over verbalized candidates.

    ``tau``: drop candidates whose stated probability is below it, keeping at
    least the ``min_survivors`` most probable. ``weight_mode``: ``elicited``
    (as stated), ``softmax`` (of the log stated probabilities at ``temperature``;
    above 1 flattens) or ``uniform``. ``selection`` (SCOPE's names, instead of
    ``weight_mode``): ``random``, uniform over the surviving candidates;
    ``prob``, the stated probabilities floored at ``PROB_FLOOR`` and renormalised.
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim != 1 or len(p) == 0:
        raise ValueError("probs must be a non-empty 1-d sequence")
    if weight_mode not in WEIGHT_MODES:
        raise ValueError(f"weight_mode must be one of {WEIGHT_MODES}, got {weight_mode!r}")
    check_selection(selection, weight_mode)
    p = np.where(np.isfinite(p) & (p > 0), p, 0.0)
    keep = np.ones(len(p), dtype=bool)
    if tau is not None:
        keep = p >= tau
        if keep.sum() < min_survivors:
            keep[np.argsort(-p, kind="stable")[:min_survivors]] = True
    if selection == "prob":
        w = np.where(keep, np.maximum(p, PROB_FLOOR), 0.0)
        return w / w.sum()
    if selection == "random" or weight_mode == "uniform" or p[keep].sum() == 0:
        w = keep.astype(float)
    elif weight_mode == "elicited":
        w = np.where(keep, p, 0.0)
    else:
        logits = np.where(keep, np.log(np.maximum(p, 1e-12)) / temperature, -np.inf)
        w = np.exp(logits - logits[keep].max())
    return w / w.sum()


class VerbalizedSampler:
    """A user-act sampler: one candidate drawn from the simulator's verbalized top-``k``."""

    def __init__(self, k: int = 5, tau: float | None = None, min_survivors: int = 1,
                 weight_mode: str = "elicited", tail: float | None = None, temperature: float = 2.0,
                 selection: str | None = None):
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not 1 <= min_survivors <= k:
            raise ValueError(f"min_survivors must be in [1, k={k}], got {min_survivors}")
        if tail is not None and not 0 < tail <= 1:
            raise ValueError(f"tail must be in (0, 1], got {tail}")
        if weight_mode not in WEIGHT_MODES:
            raise ValueError(f"weight_mode must be one of {WEIGHT_MODES}, got {weight_mode!r}")
        check_selection(selection, weight_mode)
        self.k, self.tau, self.min_survivors = k, tau, min_survivors
        self.weight_mode, self.tail, self.temperature = weight_mode, tail, temperature
        self.selection = selection

    def __call__(self, sim, view, rng):
        cands = sim.verbalize(view, self.k, rng, tail=self.tail)
        if not cands:  # nothing verbalized (e.g. an unparseable LLM list): the direct answer
            choice, info = DirectAnswer()(sim, view, rng)
            return choice, {**self.empty(), "vs_fallback": 1, **info}
        probs = np.array([p for _, p in cands], dtype=float)
        w = candidate_weights(probs, self.tau, self.min_survivors, self.weight_mode, self.temperature, self.selection)
        chosen = int(rng.choice(len(cands), p=w))
        info = {**self.empty(), "vs_chosen": chosen, "vs_fallback": 0}
        info["vs_probs"][: len(cands)] = probs[: self.k]
        if isinstance(cands[0][0], str):  # a text player's candidates
            info["vs_texts"] = [c for c, _ in cands]
        else:
            info["vs_candidates"][: len(cands)] = [a for a, _ in cands][: self.k]
        return cands[chosen][0], info

    def empty(self) -> dict:
        return {"vs_candidates": np.full(self.k, -1, dtype=np.int64), "vs_probs": np.zeros(self.k), "vs_chosen": -1,
                "vs_fallback": 0}


class VerbalizedSampling(InfosWrapper):
    """Replace the user simulator's direct answer with a draw from its verbalized top-k.

    The wrapper gives the env a ``VerbalizedSampler`` as its user-act sampler and
    keeps the ``vs_*`` keys in every step's infos. Candidates (act ids, padded
    with -1), their stated probabilities and the chosen index go into
    ``infos[agent]`` as ``vs_candidates``, ``vs_probs``, ``vs_chosen``; a text
    player's candidate messages as ``vs_texts``. ``vs_fallback`` is 1 when the
    simulator verbalized nothing usable and its direct answer was taken.
    ``selection`` (``random`` | ``prob``, SCOPE's names) draws the candidate
    instead of ``weight_mode``; see the module docstring.
    """

    def __init__(self, env, k: int = 5, tau: float | None = None, min_survivors: int = 1,
                 weight_mode: str = "elicited", tail: float | None = None, temperature: float = 2.0,
                 selection: str | None = None):
        super().__init__(env)
        self.sampler = VerbalizedSampler(k, tau, min_survivors, weight_mode, tail, temperature, selection)
        env.unwrapped.user_sampler = self.sampler

    @property
    def k(self) -> int:
        return self.sampler.k

    def annotate(self, infos):
        # the same keys every step, also before the first user turn and after the last: TorchRL
        # builds its info spec from one step and then expects those keys on every step
        for info in infos.values():
            for key, value in self.sampler.empty().items():
                info.setdefault(key, value)
        return infos
