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

from dataclasses import dataclass, fields

import numpy as np

from scope_envs.core.checks import check_int, check_number
from scope_envs.core.env import DirectAnswer
from scope_envs.wrappers.infos import InfosWrapper

WEIGHT_MODES = ("elicited", "softmax", "uniform")
SELECTIONS = ("random", "prob")  # SCOPE's names for its verbalized-sampling draw
PROB_FLOOR = 1e-6  # SCOPE's floor on stated probabilities under ``selection="prob"``
MAX_K = 1000  # the longest verbalized list: SCOPE asks for 5, and a k of 10**9 allocated each turn's k slots in infos


def check_selection(selection: str | None, weight_mode: str) -> None:
    """``selection`` is None or one of ``SELECTIONS``, and not given beside a non-default ``weight_mode``."""
    if selection is None:
        return
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS} (or None), got {selection!r}")
    if weight_mode != "elicited":
        raise ValueError(f"give either selection ({selection!r}) or weight_mode ({weight_mode!r}), not both: "
                         f"selection='random' is weight_mode='uniform'; selection='prob' is floored elicited weights")


@dataclass(frozen=True)
class VSOptions:
    """Verbalized sampling's options, checked once: what the scalar sampler (``VerbalizedSampler``) and the
    batched engine (``scope_envs.vec.batched``) both read. ``k`` candidates asked for; ``tau``, a floor on
    stated probabilities keeping at least ``min_survivors``; ``weight_mode`` / ``selection`` and
    ``temperature``, how a candidate is drawn (``candidate_weights``); ``tail``, ask for candidates each stated
    below it. ``VS_OPTIONS`` are their names, the ``vs`` regime's options besides ``user``."""

    k: int = 5
    tau: float | None = None
    min_survivors: int = 1
    weight_mode: str = "elicited"
    tail: float | None = None
    temperature: float = 2.0
    selection: str | None = None

    def __post_init__(self):
        # each refused with a ValueError naming it (never a comparison's or numpy's TypeError mid-episode); an
        # accepted value is kept as given
        check_int("k", self.k, 1, MAX_K)
        if self.tau is not None:  # a floor on stated probabilities: 0 floors nothing, above 1 keeps min_survivors
            check_number("tau", self.tau, 0.0, wanted="None or a finite number >= 0 (a floor on the stated "
                                                      "probabilities)")
        check_int("min_survivors", self.min_survivors, 1, self.k, wanted=f"an int in [1, k={self.k}]")
        if self.tail is not None:
            check_number("tail", self.tail, 0.0, 1.0, low_open=True, wanted="None or a number in (0, 1]")
        check_number("temperature", self.temperature, 0, low_open=True)
        if self.weight_mode not in WEIGHT_MODES:
            raise ValueError(f"weight_mode must be one of {WEIGHT_MODES}, got {self.weight_mode!r}")
        check_selection(self.selection, self.weight_mode)

    def weights(self, probs: np.ndarray, count: np.ndarray) -> np.ndarray:
        """``candidate_weights_rows`` under these options."""
        return candidate_weights_rows(probs, count, self.tau, self.min_survivors, self.weight_mode,
                                      self.temperature, self.selection)


VS_OPTIONS = tuple(f.name for f in fields(VSOptions))


def candidate_weights_rows(probs, count, tau: float | None = None, min_survivors: int = 1,
                           weight_mode: str = "elicited", temperature: float = 2.0,
                           selection: str | None = None) -> np.ndarray:
    """Sampling weights over verbalized candidates, for rows of them: row ``r``'s candidates are the first
    ``count[r]`` entries of ``probs[r]`` (stated probabilities, in any order; a non-finite or non-positive
    one counts as 0); weights past them are 0, and a row without candidates is left 0 (or NaN).

    ``tau``: drop candidates whose stated probability is below it, keeping at least the ``min_survivors``
    most probable (ties: the first). ``weight_mode``: ``elicited`` (as stated), ``softmax`` (of the log
    stated probabilities at ``temperature``; above 1 flattens) or ``uniform``. ``selection`` (SCOPE's names,
    instead of ``weight_mode``): ``random``, uniform over the surviving candidates; ``prob``, the stated
    probabilities floored at ``PROB_FLOOR`` and renormalised. Where no kept candidate has mass the weights
    are uniform over the kept ones. The one weighting of verbalized sampling: the scalar sampler calls it on
    one row (``candidate_weights``), the batched engine on all its slots; each row is summed over its own
    candidates, so a row's weights do not depend on the others (the two paths agree bit for bit)."""
    if weight_mode not in WEIGHT_MODES:
        raise ValueError(f"weight_mode must be one of {WEIGHT_MODES}, got {weight_mode!r}")
    check_selection(selection, weight_mode)
    probs = np.asarray(probs, dtype=float)
    count = np.asarray(count)
    width = probs.shape[1]
    valid = np.arange(width) < count[:, None]
    with np.errstate(invalid="ignore"):
        p = np.where(valid & np.isfinite(probs) & (probs > 0), probs, 0.0)
    keep = valid
    if tau is not None:
        keep = valid & (p >= tau)
        short = np.flatnonzero(keep.sum(1) < min_survivors)
        if len(short):  # the most probable, ties by position (a stable sort)
            top = np.argsort(np.where(valid[short], -p[short], np.inf), 1, kind="stable")[:, :min_survivors]
            keep[short[:, None], top] = True
            keep &= valid
    if selection == "prob":
        w = np.where(keep, np.maximum(p, PROB_FLOOR), 0.0)
    else:
        if selection == "random" or weight_mode == "uniform":
            w = keep.astype(float)
        elif weight_mode == "elicited":
            w = np.where(keep, p, 0.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                logits = np.where(keep, np.log(np.maximum(p, 1e-12)) / temperature, -np.inf)
                w = np.exp(logits - logits.max(1, keepdims=True))
            w[count == 0] = 0.0
        massless = ~(keep & (p > 0)).any(1)  # no kept candidate has mass: uniform over the kept ones
        if massless.any():
            w[massless] = keep[massless]
    total = np.empty((len(w), 1))
    if width < 8:  # sums of under 8 terms are sequential: the trailing zeros change nothing
        total[:, 0] = w.sum(1)
    else:  # numpy's pairwise sums depend on the length: each row summed over its own candidates
        for c in np.unique(count).tolist():
            rows = count == c
            total[rows, 0] = w[rows, :c].sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / total


def candidate_weights(
    probs, tau: float | None = None, min_survivors: int = 1, weight_mode: str = "elicited", temperature: float = 2.0,
    selection: str | None = None,
) -> np.ndarray:
    """Sampling weights over one list of verbalized candidates' stated probabilities (``candidate_weights_rows``
    on one row: see there)."""
    p = np.asarray(probs, dtype=float)
    if p.ndim != 1 or len(p) == 0:
        raise ValueError("probs must be a non-empty 1-d sequence")
    return candidate_weights_rows(p[None], np.array([len(p)]), tau, min_survivors, weight_mode, temperature,
                                  selection)[0]


class VerbalizedSampler:
    """A user-act sampler: one candidate drawn from the simulator's verbalized top-``k``. Its options are a
    ``VSOptions`` (``options``; the keywords build one), which the batched engine reads too."""

    batched = True  # the batched engine may run its draw (scope_envs.vec.batched); a subclass that changes
    # the draw (overrides __call__) is asked slot by slot unless it says otherwise

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__call__" in vars(cls) and "batched" not in vars(cls):
            cls.batched = False

    def __init__(self, k: int = 5, tau: float | None = None, min_survivors: int = 1,
                 weight_mode: str = "elicited", tail: float | None = None, temperature: float = 2.0,
                 selection: str | None = None, options: VSOptions | None = None):
        self.options = options if options is not None else VSOptions(k, tau, min_survivors, weight_mode, tail,
                                                                      temperature, selection)

    def __getattr__(self, name):  # sampler.k, sampler.tau, ...: the options' fields
        if name in VS_OPTIONS:
            return getattr(self.__dict__["options"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __call__(self, sim, view, rng):
        o = self.options
        cands = sim.verbalize(view, o.k, rng, tail=o.tail)
        if not cands:  # nothing verbalized (e.g. an unparseable LLM list): the direct answer
            choice, info = DirectAnswer()(sim, view, rng)
            return choice, {**self.empty(), "vs_fallback": 1, **info}
        probs = np.array([p for _, p in cands], dtype=float)
        w = candidate_weights(probs, o.tau, o.min_survivors, o.weight_mode, o.temperature, o.selection)
        chosen = int(rng.choice(len(cands), p=w))
        info = {**self.empty(), "vs_chosen": chosen, "vs_fallback": 0}
        info["vs_probs"][: len(cands)] = probs[: o.k]
        if isinstance(cands[0][0], str):  # a text player's candidates
            info["vs_texts"] = [c for c, _ in cands]
        else:
            info["vs_candidates"][: len(cands)] = [a for a, _ in cands][: o.k]
        return cands[chosen][0], info

    def empty(self) -> dict:
        k = self.options.k
        return {"vs_candidates": np.full(k, -1, dtype=np.int64), "vs_probs": np.zeros(k), "vs_chosen": -1,
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
