"""The plateau rule: how long a row must train before the benchmark reads it (issue 46, item 2).

A budget below the learner's plateau measures which simulator teaches *faster*, not which one teaches the
right thing; a collapsed simulator then costs nothing, because nothing trained long enough to exploit it.
So a game's default budget is not chosen, it is derived, on the training side only, by this rule:

* **The learner and its simulator**: PPO with ``frozen``'s config against the defect-free training-side
  simulator (the ``uncollapsed`` row: the users' own training-side model on train cards). The ceiling
  (``oracle``) gets the same rule on its own training env (the held-out behaviour model on *train*
  cards, the one env it trains on).
* **The ladder**: budgets ``base x LADDER_STEP ** k`` (``base``: the game's budget before this rule,
  ``GameSpec.ladder_base``; rounded to a thousand decisions), so that ``PLATEAU_FACTOR`` times a rung is two
  rungs up and every run serves two comparisons.
* **The score** of a budget: the mean over ``PLATEAU_SEEDS`` seeds of the run's training-side success
  (``eval_episodes`` episodes against the env it trained on, the benchmark's train-side seeds), above
  the floor (uniform play on the same env and seeds).
* **At the plateau**: the smallest rung ``B`` whose score is at least ``PLATEAU_SHARE`` of the score at
  ``PLATEAU_FACTOR x B``. Rungs are tried from the bottom; the search stops at ``MAX_RUNG`` (then the
  budget is reported as not at its plateau, and the rung used is said).
* **The ceiling trains at least as long as the methods**: its budget is the larger of its own plateau budget and
  the methods' (``ceiling_budget``). A ceiling whose own curve levels off early (cooperbench's: 20k decisions by
  the rule, its training-side success flat from 20k to 100k) would otherwise train on less than the rows it bounds
  (declared 2026-12-04, from those training-side numbers only, before any held-out run at these budgets).

The rule and these numbers are declared before any run that reads them; ``benchmarks/plateau_budget.py``
runs it and writes what it finds (``benchmarks/results/plateau_budget/``). Nothing held out is read: neither
the held-out proxies' scores, nor held-out cards, nor the panel.
"""

from __future__ import annotations

import math

PLATEAU_SHARE = 0.9  # a budget is at the plateau when it reaches this share of ...
PLATEAU_FACTOR = 5  # ... what this many times the budget reaches (above the floor)
LADDER_STEP = math.sqrt(PLATEAU_FACTOR)  # rungs: PLATEAU_FACTOR x a rung is two rungs up
PLATEAU_SEEDS = 3
MAX_RUNG = 5  # the highest rung judged (base x 5 ** 2.5, ~56x); it needs rung MAX_RUNG + 2 run
ROWS = ("uncollapsed", "oracle")  # the rows the rule sizes: the methods' budget, the ceiling's
RUNG_OFFSET = 2  # PLATEAU_FACTOR x rung k is rung k + RUNG_OFFSET


def rung_budget(base: int, rung: int) -> int:
    """The budget of ``rung`` on the ladder that starts at ``base`` decisions (rounded to a thousand)."""
    if rung < 0:
        raise ValueError(f"rung must be >= 0, got {rung}")
    unit = 1000 if base >= 1000 else 1  # (a smaller base: a quick check of the script, not a budget)
    return max(unit, int(round(base * LADDER_STEP**rung / unit)) * unit)


def at_plateau(score: float, score_at_factor: float, floor: float) -> bool:
    """Whether a budget scoring ``score`` is at its plateau, given ``score_at_factor`` at ``PLATEAU_FACTOR``
    times it and the ``floor`` (uniform play). A learner that gains nothing above the floor by the larger
    budget is at its plateau."""
    gain_large = score_at_factor - floor
    if gain_large <= 0:
        return True
    return score - floor >= PLATEAU_SHARE * gain_large


def plateau_rung(scores: dict[int, float], floor: float, max_rung: int = MAX_RUNG) -> int | None:
    """The smallest rung at its plateau given mean ``scores`` per rung; None if no judged rung holds (a rung is
    judged when it and the rung ``RUNG_OFFSET`` above are in ``scores``, up to ``max_rung``)."""
    for rung in range(max_rung + 1):
        if rung not in scores or rung + RUNG_OFFSET not in scores:
            return None
        if at_plateau(scores[rung], scores[rung + RUNG_OFFSET], floor):
            return rung
    return None


def next_rungs(scores: dict[int, float], floor: float, max_rung: int = MAX_RUNG) -> list[int]:
    """The rungs still to run before ``plateau_rung`` can answer: [] when it has (found, or ``max_rung`` failed)."""
    for rung in range(max_rung + 1):
        need = [r for r in (rung, rung + RUNG_OFFSET) if r not in scores]
        if need:
            return need
        if at_plateau(scores[rung], scores[rung + RUNG_OFFSET], floor):
            return []
    return []


def ceiling_budget(own: int, methods: int) -> int:
    """The ceiling's budget: its own plateau budget, but never less than the methods' (see the module)."""
    return max(own, methods)
