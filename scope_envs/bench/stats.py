"""The benchmark's statistics, declared before any result exists (docs/architecture.md §4, "The benchmark is an instrument").

Everything here is computed from per-seed numbers (``results[game][method]["per_seed"][seed]``):

* **Floor and ceiling.** ``random`` (uniform legal play) is the floor and ``oracle`` (trained against the
  held-out behaviour model on *train* personas) the ceiling; ``headroom = mean(oracle) - mean(random)`` on
  held-out success. A game whose ceiling does not clear its floor (headroom <= 0, or the 95% bootstrap CI of
  oracle - random includes 0) cannot judge methods.
* **Normalized scores.** ``normalized = (x - mean(random)) / headroom`` and
  ``recovered = (x - mean(frozen)) / (mean(oracle) - mean(frozen))``, per seed (x = that seed's held-out success)
  and for the mean over seeds (which equals the mean of the per-seed values); null where the rows it needs are
  missing or its denominator is <= 0, and ``recovered`` null too where the 95% CI of oracle - frozen reaches 0
  (``gap_to_recover``: a gap of a few thousandths would make a recovered share of -43).
* **Confirmatory family.** Each method against ``frozen`` on held-out success (measurement rows excluded):
  Welch's t, Holm-Bonferroni within that family only. Every other pair of methods is exploratory, with its own
  Holm correction over the exploratory pairs.
* **CIs.** 95% percentile bootstrap (``BOOT_RESAMPLES`` resamples, generator seeded with ``BOOT_SEED``): of a
  method's mean held-out success, and of the difference of two means (each arm resampled independently).
* **Minimum detectable effect.** The smallest true difference a two-sided two-sample t-test (n seeds per arm,
  df = 2n - 2) detects with power 0.8 at alpha 0.05/m, m = the confirmatory family's size (Holm's first and
  strictest step), with the pooled per-seed sd of the methods' held-out success; from the noncentral t. Welch's
  test has less power than that at few seeds; ``welch_power`` says how much, by simulation.
* **Aggregate metrics in the RL-benchmark convention** (Agarwal et al., NeurIPS 2021, "Deep RL at the edge of the
  statistical precipice"; the definitions of their ``rliable`` library, whose pins do not fit this project:
  rliable 1.2.0 needs ``arch < 8``, which does not import beside pandas 3): the **interquartile mean** (IQM, the
  mean of the middle 50% of runs, ``scipy.stats.trim_mean`` at 0.25 over all runs of all tasks), its
  **stratified bootstrap** CI (runs resampled with replacement within each task; percentile interval), the
  **probability of improvement** P(X > Y) (per task the Mann-Whitney U of X's runs against Y's over n_x n_y, ties
  counting a half, averaged over tasks; CI by resampling X and Y independently within each task) and the
  **performance profile** (the fraction of runs scoring above each threshold tau, with pointwise stratified
  bootstrap CIs). Within a game the task is its held-out side (the runs are its seeds); across games the tasks
  are the games, on normalized held-out success (``aggregate``).
* **Claims** (``claims``): see ``CLAIM_DEFINITIONS``.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS, EXTRA_METHODS, METHODS, METRICS, REALISM_METRICS

FLOOR, CEILING, BASELINE = "random", "oracle", "frozen"
UNCOLLAPSED = "uncollapsed"  # PPO against the users' own training-side model: the top of the collapse part
REFERENCE = (FLOOR, CEILING, UNCOLLAPSED)  # measurement rows: never judged, never in a test family
SUCCESS = "heldout_success"
ALPHA = 0.05
POWER = 0.8
LEVEL = 0.95
BOOT_RESAMPLES = 10_000
BOOT_SEED = 0
NEAR = 0.25  # claim 1: "near" = within this fraction of the headroom
RECOVERY = 0.5  # claims 2a/2b: "most of the gap"
PANEL, PANEL_FAMILIES = "panel_success", "panel_per_family"  # per run (methods.run_one); the latter a list
NO_BAND = "not judged (no floor/ceiling rows)"

CLAIMS = {
    "0": "0. The game can judge methods: its ceiling (oracle) clears its floor (random)",
    "1": "1. Frozen-simulator RL scores high on its simulator and stays near the untrained baseline on held-out users",
    "2a": "2a. VS recovers most of the gap on held-out users",
    "2b": "2b. Co-training recovers most of the gap on held-out users",
    "3": "3. Population co-training is best on held-out users",
}
CLAIM_DEFINITIONS = {
    "0": "oracle − random > 0 on mean held-out success and its 95% bootstrap CI excludes 0 (lies above it). "
         "Where it does not hold, no other claim of the game is judged.",
    "1": "(a) frozen's train success is above untrained's and the 95% bootstrap CI of frozen − untrained (train) "
         f"lies above 0; and (b) 'near' on held-out: the 95% CI of frozen − untrained (held-out) includes 0, or "
         f"lies within ±{NEAR:.0%} of the headroom (oracle − random).",
    "2a": f"recovered = (vs − frozen) / (oracle − frozen) on mean held-out success is >= {RECOVERY}, the difference "
          "vs − frozen is positive, and its 95% bootstrap CI lies above 0. A negative difference is never a "
          "recovery; with oracle − frozen <= 0, or its 95% bootstrap CI reaching 0, there is no gap to recover "
          "(not judged: a share of a gap within noise means nothing).",
    "2b": f"as 2a for cotrain: recovered >= {RECOVERY}, cotrain − frozen > 0 and its 95% CI lies above 0.",
    "3": "population has the strictly highest mean held-out success of all methods (floor, ceiling and "
         "uncollapsed rows excluded), and its confirmatory comparison with frozen is significant after Holm "
         "(p_Holm < 0.05).",
}


# ---------------------------------------------------------------------------------------------- tests, CIs, power

def holm(pvalues: list[float], m: int | None = None) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone) for a family of ``m`` (default: len) hypotheses;
    ``m`` larger than the list keeps a declared family's size when some of its comparisons could not be run."""
    p = np.asarray(pvalues, float)
    m = len(p) if m is None else m
    if m < len(p):
        raise ValueError(f"family size m={m} is smaller than the {len(p)} p-values")
    order = np.argsort(p, kind="stable")
    adj = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):  # argsort puts nan last: an undefined p moves no other's adjustment
        if np.isnan(p[i]):
            adj[i] = np.nan  # undefined stays undefined (Python's min/max would have made it 1.0)
            continue
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj.tolist()


def welch(x, y) -> dict:
    """Welch's t-test of mean(x) - mean(y), Cohen's d (average of the two variances), and whether d is
    degenerate (one arm did not vary). Both arms need >= 2 values, all finite: otherwise t, p and d are nan
    (undefined, never significant) and ``degenerate`` is True."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or len(y) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        nan = float("nan")
        diff = float(x.mean() - y.mean()) if len(x) and len(y) else nan
        return {"diff": diff, "t": nan, "p": nan, "d": nan, "degenerate": True}
    with warnings.catch_warnings():  # an arm of (nearly) equal values: scipy warns of precision, `degenerate` says it
        warnings.simplefilter("ignore", RuntimeWarning)
        t, p = stats.ttest_ind(x, y, equal_var=False)
    sd = np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
    diff = float(x.mean() - y.mean())
    d = diff / sd if sd > 0 else (0.0 if diff == 0 else float(np.sign(diff)) * float("inf"))
    p = float(p) if np.isfinite(p) else (1.0 if diff == 0 else 0.0)
    return {"diff": diff, "t": float(t) if np.isfinite(t) else float("nan"), "p": p, "d": float(d),
            "degenerate": bool(min(x.std(ddof=1), y.std(ddof=1)) < 1e-9)}


def pairwise_tests(per_method: dict[str, list[float]], pairs=None, m: int | None = None) -> list[dict]:
    """Welch's t-test for ``pairs`` (default: every pair of ``per_method``), Holm-corrected within exactly
    those pairs (family size ``m``, default the number of pairs). Pairs with an arm of < 2 seeds are left out."""
    pairs = list(itertools.combinations(per_method, 2)) if pairs is None else list(pairs)
    rows = [{"a": a, "b": b, **welch(per_method[a], per_method[b])} for a, b in pairs
            if len(per_method[a]) >= 2 and len(per_method[b]) >= 2]
    for row, adj in zip(rows, holm([r["p"] for r in rows], m=max(len(rows), m or len(pairs)))):
        row["p_holm"] = adj
    return rows


def _resampled_means(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The means of ``resamples`` bootstrap resamples of x."""
    return x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(1)


def bootstrap_ci(x, level: float = LEVEL, resamples: int = BOOT_RESAMPLES, seed: int = BOOT_SEED) -> tuple:
    """Percentile bootstrap CI of mean(x); deterministic (fixed seed). (nan, nan) below 2 values."""
    x = np.asarray(x, float)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    means = _resampled_means(x, np.random.default_rng(seed), resamples)
    lo, hi = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


def bootstrap_diff_ci(x, y, level: float = LEVEL, resamples: int = BOOT_RESAMPLES, seed: int = BOOT_SEED) -> tuple:
    """Percentile bootstrap CI of mean(x) - mean(y), each arm resampled independently (as Welch's t treats them);
    deterministic (fixed seed). (nan, nan) when an arm has < 2 values."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or len(y) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    bx, by = _resampled_means(x, rng, resamples), _resampled_means(y, rng, resamples)  # x's draws first
    lo, hi = np.percentile(bx - by, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


def power_two_sample(d: float, n: int, alpha: float, n2: int | None = None) -> float:
    """Power of the two-sided two-sample t-test (n per arm, df = 2n - 2; or n and ``n2`` seeds, df = n + n2 - 2)
    for a standardized effect d."""
    from scipy import stats

    if n2 is None:
        df = 2 * n - 2
        nc = d * math.sqrt(n / 2)
    else:  # an entrant's own seeds against the reference's
        df = n + n2 - 2
        nc = d * math.sqrt(n * n2 / (n + n2))
    tc = stats.t.ppf(1 - alpha / 2, df)
    # the lower tail P(T' < -tc) as P(T' > tc) at -nc: scipy's nct.cdf far in the tail can return nan
    lower = stats.nct.sf(tc, df, -nc)
    return float(stats.nct.sf(tc, df, nc) + (lower if np.isfinite(lower) else 0.0))


def mde(n: int, family: int = 1, alpha: float = ALPHA, power: float = POWER, n2: int | None = None) -> float:
    """Minimum detectable standardized effect (Cohen's d) at n seeds per arm (or n and ``n2``), power ``power``,
    two-sided alpha / family (Holm's strictest step over the confirmatory family). nan below 2 seeds an arm."""
    from scipy.optimize import brentq

    if n < 2 or (n2 is not None and n2 < 2):
        return float("nan")
    a = alpha / max(1, family)
    hi = 1.0
    while power_two_sample(hi, n, a, n2) < power:
        hi *= 2
    return float(brentq(lambda d: power_two_sample(d, n, a, n2) - power, 0.0, hi, xtol=1e-10))


def welch_power(d: float, n: int, alpha: float, draws: int = 20_000, seed: int = BOOT_SEED,
                n2: int | None = None) -> float:
    """Power of Welch's test (the one the confirmatory comparisons use) at a standardized effect d, n seeds per
    arm (or n and ``n2``), two-sided ``alpha``: by simulation of normal seeds (fixed seed). Below the
    noncentral-t power of the pooled test at small n, since Welch's degrees of freedom shrink with the sample
    variances."""
    from scipy import stats

    if n < 2 or (n2 is not None and n2 < 2) or not np.isfinite(d):
        return float("nan")
    rng = np.random.default_rng(seed)
    x, y = rng.normal(d, 1.0, (draws, n)), rng.normal(0.0, 1.0, (draws, n if n2 is None else n2))
    return float((stats.ttest_ind(x, y, axis=1, equal_var=False).pvalue < alpha).mean())


def bootstrap_share_ci(x, base, top, level: float = LEVEL, resamples: int = BOOT_RESAMPLES,
                       seed: int = BOOT_SEED) -> tuple:
    """Percentile bootstrap CI of the share (mean(x) - mean(base)) / (mean(top) - mean(base)), each arm
    resampled independently (x's draws first, then base's, then top's; fixed seed); resamples whose
    denominator is 0 are left out. (nan, nan) when an arm has < 2 values."""
    arms = [np.asarray(a, float) for a in (x, base, top)]
    if min(len(a) for a in arms) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    bx, bb, bt = (_resampled_means(a, rng, resamples) for a in arms)
    scale = bt - bb
    ok = scale != 0
    if not ok.any():
        return (float("nan"), float("nan"))
    lo, hi = np.percentile((bx[ok] - bb[ok]) / scale[ok], [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


def pooled_sd(groups) -> float:
    """sqrt(sum (n_i - 1) s_i^2 / sum (n_i - 1)) over the groups with >= 2 values; nan if none."""
    groups = [np.asarray(g, float) for g in groups if len(g) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    return float(np.sqrt(sum((len(g) - 1) * g.var(ddof=1) for g in groups) / dof)) if dof else float("nan")


# ------------------------------------------------------------------ aggregate metrics (Agarwal et al. 2021, rliable)

IQM_CUT = 0.25  # the IQM trims this fraction of the runs from each end


def _tasks(scores) -> list[np.ndarray]:
    """Scores as one array of runs per task: a 1-D array (one task), a 2-D (runs x tasks) array as rliable
    takes them, or a list of per-task arrays (tasks may have different numbers of runs)."""
    if isinstance(scores, np.ndarray) or (isinstance(scores, (list, tuple)) and scores
                                          and np.isscalar(scores[0])):
        a = np.asarray(scores, float)
        return [a] if a.ndim == 1 else [a[:, j] for j in range(a.shape[1])]
    return [np.asarray(t, float).ravel() for t in scores]


def iqm(scores) -> float:
    """The interquartile mean of all runs of all tasks (rliable's ``aggregate_iqm``): ``trim_mean`` at 0.25."""
    from scipy.stats import trim_mean

    tasks = _tasks(scores)
    runs = np.concatenate(tasks) if tasks else np.empty(0)
    return float(trim_mean(runs, IQM_CUT)) if len(runs) else float("nan")


def _resample(tasks: list[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Stratified bootstrap: each task's runs resampled with replacement within the task; (resamples, all runs)."""
    return np.concatenate([t[rng.integers(0, len(t), size=(resamples, len(t)))] for t in tasks], 1)


def iqm_ci(scores, level: float = LEVEL, resamples: int = BOOT_RESAMPLES, seed: int = BOOT_SEED) -> tuple:
    """Percentile stratified-bootstrap CI of ``iqm`` (deterministic: fixed seed); (nan, nan) with a task of
    fewer than 2 runs."""
    from scipy.stats import trim_mean

    tasks = _tasks(scores)
    if not tasks or min(len(t) for t in tasks) < 2:
        return (float("nan"), float("nan"))
    boot = trim_mean(_resample(tasks, np.random.default_rng(seed), resamples), IQM_CUT, axis=1)
    lo, hi = np.percentile(boot, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


def _improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 between the last axes' runs of x (..., n) and y (..., m): U / (n m)."""
    gt = (x[..., :, None] > y[..., None, :]).mean((-2, -1))
    eq = (x[..., :, None] == y[..., None, :]).mean((-2, -1))
    return gt + 0.5 * eq


def probability_of_improvement(x, y) -> float:
    """P(X > Y) averaged over tasks (rliable's ``probability_of_improvement``): per task the Mann-Whitney U of
    X's runs against Y's divided by n_x n_y (a tie counts a half)."""
    xs, ys = _tasks(x), _tasks(y)
    if len(xs) != len(ys):
        raise ValueError(f"X has {len(xs)} tasks and Y {len(ys)}: the same tasks are needed")
    if not xs or min(len(t) for t in xs + ys) < 1:
        return float("nan")
    return float(np.mean([_improvement(a, b) for a, b in zip(xs, ys)]))


def probability_of_improvement_ci(x, y, level: float = LEVEL, resamples: int = BOOT_RESAMPLES,
                                  seed: int = BOOT_SEED) -> tuple:
    """Percentile CI of ``probability_of_improvement``, X's and Y's runs resampled independently within each task
    (rliable's ``StratifiedIndependentBootstrap``); (nan, nan) with a task of fewer than 2 runs on a side."""
    xs, ys = _tasks(x), _tasks(y)
    if not xs or len(xs) != len(ys) or min(len(t) for t in xs + ys) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    per_task = []
    for a, b in zip(xs, ys):  # X's draws first, then Y's, task by task
        ia = rng.integers(0, len(a), size=(resamples, len(a)))
        ib = rng.integers(0, len(b), size=(resamples, len(b)))
        # a resample's U counts each original pair (i, j) as often as i and j were drawn: the pair table weighted by
        # the draw counts (whole numbers and halves: exact sums)
        pairs = (a[:, None] > b[None]) + 0.5 * (a[:, None] == b[None])
        per_task.append(((_draw_counts(ia, len(a)) @ pairs) * _draw_counts(ib, len(b))).sum(1) / (len(a) * len(b)))
    lo, hi = np.percentile(np.mean(per_task, 0), [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))


def _draw_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each of n items was drawn in each row of bootstrap indices ``idx`` (rows, draws): (rows, n)."""
    rows = len(idx)
    flat = (idx + n * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(float)


def performance_profile(scores, taus, level: float = LEVEL, resamples: int = 2000,
                        seed: int = BOOT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run-score distribution (rliable's ``create_performance_profile`` with ``use_score_distribution``):
    at each threshold in ``taus`` the fraction of all runs of all tasks scoring above it; with pointwise
    percentile stratified-bootstrap bands (``resamples``, as rliable's default 2000). Returns (profile, low,
    high), each of len(taus)."""
    tasks = _tasks(scores)
    taus = np.asarray(taus, float)
    runs = np.concatenate(tasks)
    profile = (runs[:, None] > taus[None]).mean(0)
    if min(len(t) for t in tasks) < 2:
        return profile, np.full(len(taus), np.nan), np.full(len(taus), np.nan)
    boot = _resample(tasks, np.random.default_rng(seed), resamples)
    above = (boot[:, :, None] > taus[None, None]).mean(1)
    lo, hi = np.percentile(above, [50 * (1 - level), 50 * (1 + level)], axis=0)
    return profile, lo, hi


def add_aggregates(table: dict) -> dict:
    """Sets, in place, on every method of one game's table: ``heldout_iqm`` and ``heldout_iqm_ci`` (over its
    seeds), and beside ``frozen`` (for every other method) ``p_improvement`` = P(method > frozen) on held-out
    success with ``p_improvement_ci``. Values that cannot be computed are None (JSON null)."""
    held = {m: per_seed(e) for m, e in table.items()}
    base = held.get(BASELINE)

    def clean(x):
        return None if x is None or not np.isfinite(x) else float(x)

    for method, entry in table.items():
        x = held[method]
        entry["heldout_iqm"] = clean(iqm(x)) if len(x) else None
        entry["heldout_iqm_ci"] = [clean(v) for v in iqm_ci(x)] if len(x) else [None, None]
        if base is not None and method != BASELINE and len(x) and len(base):
            entry["p_improvement"] = clean(probability_of_improvement(x, base))
            entry["p_improvement_ci"] = [clean(v) for v in probability_of_improvement_ci(x, base)]
    return table


def aggregate(results: dict, key: str = "normalized") -> dict:
    """Across games, the field's aggregate of each method: the games are the tasks and the runs their seeds, on
    normalized held-out success (``key``; games without a band are left out). Every game gives the same number
    of runs, its first n seeds (n the smallest count among the games), so that each weighs alike, as in rliable's
    (runs x tasks) matrix. Returns ``{"games", "runs_per_game", "methods": {method: {"iqm", "iqm_ci",
    "p_improvement", "p_improvement_ci"}}}`` for the methods present in every such game."""
    games = [g for g, t in results.items() if all(isinstance(s.get(key), (int, float)) for e in t.values()
                                                     for s in e["per_seed"].values())
             and FLOOR in t and CEILING in t]
    out: dict = {"games": games, "runs_per_game": 0, "methods": {}}
    if not games:
        return out
    methods = [m for m in results[games[0]] if all(m in results[g] for g in games)]

    def runs(g, m):
        seeds = sorted(results[g][m]["per_seed"], key=int)
        return [results[g][m]["per_seed"][s][key] for s in seeds]

    n = min(len(runs(g, m)) for g in games for m in methods)
    out["runs_per_game"] = n
    scores = {m: [np.asarray(runs(g, m)[:n], float) for g in games] for m in methods}
    for m in methods:
        row = {"iqm": iqm(scores[m]), "iqm_ci": iqm_ci(scores[m])}
        if BASELINE in scores and m != BASELINE:
            row["p_improvement"] = probability_of_improvement(scores[m], scores[BASELINE])
            row["p_improvement_ci"] = probability_of_improvement_ci(scores[m], scores[BASELINE])
        out["methods"][m] = row
    return out


# ---------------------------------------------------------------------------------------------------- results.json

def _order(method: str):
    known = METHODS + EXTRA_METHODS
    return (known.index(method), "") if method in known else (len(known), method)


def _sorted_keys(value):
    """``value`` with every dict in it in sorted key order (a copy)."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    return [_sorted_keys(v) for v in value] if isinstance(value, (list, tuple)) else value


def per_seed(entry: dict, key: str = SUCCESS) -> np.ndarray:
    return np.asarray([s[key] for s in entry["per_seed"].values() if key in s], float)


def summarize(runs: list[dict]) -> dict:
    """results.json: game -> method -> means over seeds, ``per_seed``, ``normalized`` / ``recovered`` (per seed
    too; null where undefined: see ``normalize``), and the field's aggregates of held-out success
    (``add_aggregates``: IQM with its stratified-bootstrap CI, the probability of improvement over frozen), and
    ``data``: what the row's runs played (their fingerprint's ``data``: for tau2 the task source and version). A
    run's metrics are written in sorted key order, as its record reads back from a packed file, so that a run from
    scratch and one resumed from records write the same bytes."""
    out: dict = {}
    for r in sorted(runs, key=lambda r: (r["game"], _order(r["method"]), r["seed"])):
        entry = out.setdefault(r["game"], {}).setdefault(r["method"], {"per_seed": {}})
        entry["per_seed"][str(r["seed"])] = _sorted_keys(r["metrics"])
        if "fingerprint" in r:
            entry["data"] = _sorted_keys(r["fingerprint"]["data"])
    for game in out.values():
        for entry in game.values():
            seeds = entry["per_seed"].values()
            for k in METRICS + DIAGNOSTICS + REALISM_METRICS:  # panel_per_family (a list per seed) stays per seed
                if all(k in s for s in seeds):
                    entry[k] = float(np.mean([s[k] for s in seeds]))
    normalize(out)
    for table in out.values():
        add_aggregates(table)
    return out


def gap_to_recover(ceiling, frozen) -> tuple[float, tuple | None]:
    """The gap a ``recovered`` share is read against, mean(ceiling) - mean(frozen) over seeds, and its 95%
    bootstrap CI (None where the gap is not positive). The share is read only where that CI lies above 0: in
    ``results.json``, in claims 2a and 2b, and in ``scope-envs score`` alike (``recoverable``)."""
    ceiling, frozen = np.asarray(ceiling, float), np.asarray(frozen, float)
    gap = float(ceiling.mean() - frozen.mean()) if len(ceiling) and len(frozen) else float("nan")
    return gap, (bootstrap_diff_ci(ceiling, frozen) if gap > 0 else None)


def recoverable(gap_ci: tuple | None) -> bool:
    """Whether ``gap_to_recover``'s CI lies above 0 (nan, from one seed, does not)."""
    return gap_ci is not None and bool(gap_ci[0] > 0)


def normalize(results: dict) -> dict:
    """Sets, in place, ``normalized`` (needs random and oracle, oracle - random > 0) and ``recovered`` (needs
    frozen and oracle, the 95% CI of oracle - frozen above 0: ``gap_to_recover``) on every method of every game,
    per seed and as the mean; None (JSON null) where the rows it needs are missing or its denominator is not
    read, so that no sign-flipped, infinite or noise-sized score is ever written and every entry has the same
    keys."""
    for table in results.values():
        means = {m: float(per_seed(e).mean()) for m, e in table.items() if len(per_seed(e))}
        scales = {"normalized": (FLOOR, CEILING), "recovered": (BASELINE, CEILING)}
        for key, (low, high) in scales.items():
            origin = means.get(low)
            scale = means[high] - origin if low in means and high in means else float("nan")
            ok = scale > 0
            if key == "recovered" and ok:
                ok = recoverable(gap_to_recover(per_seed(table[high]), per_seed(table[low]))[1])
            for method, entry in table.items():
                for s in entry["per_seed"].values():
                    s[key] = (s[SUCCESS] - origin) / scale if ok and SUCCESS in s else None
                entry[key] = (means[method] - origin) / scale if ok and method in means else None
    return results


# ---------------------------------------------------------------------------------------------- one game's numbers

def judged_methods(table: dict) -> list[str]:
    """The methods of a game's table (the floor, ceiling and uncollapsed rows are measurements, not methods)."""
    return [m for m in table if m not in REFERENCE]


def confirmatory_family(table: dict) -> list[str]:
    """The methods compared with frozen, declared by the run's method list before any result exists."""
    return [m for m in judged_methods(table) if m != BASELINE] if BASELINE in table else []


def band(table: dict) -> dict:
    """The floor/ceiling band on held-out success: ``present``; and where present ``floor``, ``ceiling``,
    ``headroom``, ``ci`` (of oracle - random) and ``clears`` (headroom > 0 and the CI lies above 0)."""
    if FLOOR not in table or CEILING not in table:
        return {"present": False}
    lo_row, hi_row = per_seed(table[FLOOR]), per_seed(table[CEILING])
    headroom = float(hi_row.mean() - lo_row.mean())
    ci = bootstrap_diff_ci(hi_row, lo_row)
    return {"present": True, "floor": float(lo_row.mean()), "ceiling": float(hi_row.mean()), "headroom": headroom,
            "ci": ci, "clears": bool(headroom > 0 and ci[0] > 0)}


def game_stats(table: dict) -> dict:
    """Everything the report and the claims read about one game: ``band``, per-method ``ci`` (held-out mean),
    ``confirmatory`` rows (a = method, b = frozen; with ``ci`` of the difference), ``exploratory`` rows,
    ``family`` (its size ``m``), ``n`` (seeds per arm), ``sd`` (pooled), ``mde_d``, ``mde``, ``mde_frac`` and
    ``mde_welch_power`` (the power Welch's test actually has at that effect)."""
    held = {m: per_seed(e) for m, e in table.items()}
    methods = judged_methods(table)
    family = confirmatory_family(table)
    conf = pairwise_tests(held, [(m, BASELINE) for m in family], m=len(family))
    for row in conf:
        row["ci"] = bootstrap_diff_ci(held[row["a"]], held[row["b"]])
    explo_pairs = [(a, b) for a, b in itertools.combinations(methods, 2) if BASELINE not in (a, b)]
    explo = pairwise_tests(held, explo_pairs)
    b = band(table)
    arms = [held[m] for m in ([BASELINE] if BASELINE in table else []) + family]
    n = min((len(x) for x in arms), default=0)
    sd = pooled_sd(arms)
    d = mde(n, family=max(1, len(family)))
    absolute = d * sd if np.isfinite(d) and np.isfinite(sd) else float("nan")
    frac = absolute / b["headroom"] if b["present"] and b["headroom"] > 0 and np.isfinite(absolute) else float("nan")
    return {"band": b, "ci": {m: bootstrap_ci(x) for m, x in held.items()}, "confirmatory": conf,
            "exploratory": explo, "family": family, "n": n, "sd": sd, "mde_d": d, "mde": absolute, "mde_frac": frac,
            "mde_welch_power": welch_power(d, n, ALPHA / max(1, len(family)))}


# ------------------------------------------------------------------------------------------------------- the claims

def _f(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.3f}"


def _ci(ci: tuple) -> str:
    return "[n/a]" if not all(np.isfinite(ci)) else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def undefined_ci(*cis) -> bool:
    """Any of these CIs is undefined: fewer than 2 seeds (or a NaN) gave no interval."""
    return any(not all(np.isfinite(ci)) for ci in cis)


def game_claims(game: str, table: dict, st: dict | None = None) -> list[dict]:
    """The claims of one game, each ``{game, claim, held, evidence}``; ``held`` is True, False or None (not
    judged, the evidence says why)."""
    st = game_stats(table) if st is None else st
    b = st["band"]
    held = {m: per_seed(e) for m, e in table.items()}
    mean = {m: float(x.mean()) for m, x in held.items() if len(x)}
    out = []

    def add(key, verdict, evidence):
        out.append({"game": game, "claim": CLAIMS[key], "held": verdict, "evidence": evidence})

    # 0: the band
    if not b["present"]:
        absent = [m for m in (FLOOR, CEILING) if m not in table]
        add("0", None, f"{NO_BAND}: " + (f"method {absent[0]!r} was not run" if len(absent) == 1 else
                                         f"methods {FLOOR!r} and {CEILING!r} were not run"))
        gate = None  # claim 3 does not need the band; claims 1, 2a, 2b check for it themselves
    else:
        ev = (f"floor (random) {_f(b['floor'])}, ceiling (oracle) {_f(b['ceiling'])}; headroom oracle − random "
              f"{b['headroom']:+.3f}, 95% CI {_ci(b['ci'])}" + (" (fewer than 2 seeds: no CI)" if undefined_ci(b["ci"])
                                                                  else ""))
        if undefined_ci(b["ci"]):  # one seed cannot show the band either way: not a failed claim
            add("0", None, f"not judged; {ev}; this game cannot judge methods (run --seeds 2 or more)")
        else:
            add("0", b["clears"], ev + ("" if b["clears"] else "; the ceiling does not clear the floor, so this game "
                                        "cannot judge methods"))
        gate = None if b["clears"] else f"not judged (this game cannot judge methods: {ev})"
    headroom = b.get("headroom", float("nan"))

    # 1: frozen high on its simulator, near untrained on held-out
    if not {BASELINE, "untrained"} <= set(table):
        add("1", None, "not judged (frozen and untrained are not both in this run)")
    else:
        tf, tu = per_seed(table[BASELINE], "train_success"), per_seed(table["untrained"], "train_success")
        ci_t = bootstrap_diff_ci(tf, tu)
        ci_h = bootstrap_diff_ci(held[BASELINE], held["untrained"])
        diff_t, diff_h = float(tf.mean() - tu.mean()), mean[BASELINE] - mean["untrained"]
        high = bool(diff_t > 0 and ci_t[0] > 0)
        ev = (f"train: frozen {_f(tf.mean())} vs untrained {_f(tu.mean())}, difference {diff_t:+.3f}, 95% CI "
              f"{_ci(ci_t)} (above 0: {'yes' if high else 'no'}); held-out: frozen {_f(mean[BASELINE])} vs "
              f"untrained {_f(mean['untrained'])}, difference {diff_h:+.3f}, 95% CI {_ci(ci_h)}")
        if gate:
            add("1", None, f"{gate}; {ev}")
        elif not b["present"]:
            add("1", None, f"{NO_BAND}; {ev}")
        elif undefined_ci(ci_t, ci_h):
            add("1", None, f"not judged (fewer than 2 seeds: no CI); {ev}")
        else:
            includes0 = ci_h[0] <= 0 <= ci_h[1]
            within = -NEAR * headroom <= ci_h[0] and ci_h[1] <= NEAR * headroom
            near = bool(includes0 or within)
            ev += (f"; {NEAR:.0%} of the headroom {headroom:.3f} = {NEAR * headroom:.3f}; CI includes 0: "
                   f"{'yes' if includes0 else 'no'}, CI within ±{NEAR * headroom:.3f}: {'yes' if within else 'no'} "
                   f"(near: {'yes' if near else 'no'})")
            add("1", high and near, ev)

    # 2a / 2b: recovering most of the gap oracle − frozen (it and its CI computed once for both)
    gap, gap_ci = gap_to_recover(held[CEILING], held[BASELINE]) if b["present"] and BASELINE in mean \
        else (float("nan"), None)
    for key, method in (("2a", "vs"), ("2b", "cotrain")):
        if not {BASELINE, method} <= set(table):
            add(key, None, f"not judged ({BASELINE} and {method} are not both in this run)")
            continue
        diff = mean[method] - mean[BASELINE]
        ci = bootstrap_diff_ci(held[method], held[BASELINE])
        ev = (f"held-out: {method} {_f(mean[method])} vs frozen {_f(mean[BASELINE])}, difference {diff:+.3f}, "
              f"95% CI {_ci(ci)}")
        if not b["present"]:
            add(key, None, f"{NO_BAND}; {ev}")
            continue
        ev += f"; gap to recover oracle − frozen {gap:+.3f}"
        if gate:
            add(key, None, f"{gate}; {ev}")
        elif not gap > 0:
            add(key, None, f"not judged (frozen is at or above the ceiling: no gap to recover); {ev}")
        elif undefined_ci(ci):
            add(key, None, f"not judged (fewer than 2 seeds: no CI); {ev}")
        elif not recoverable(gap_ci):
            add(key, None, f"not judged (the ceiling is above frozen within noise: the 95% CI of oracle − frozen "
                           f"{_ci(gap_ci)} reaches 0, no gap to recover); {ev}")
        else:
            recovered = diff / gap
            verdict = bool(diff > 0 and recovered >= RECOVERY and ci[0] > 0)
            row = next((r for r in st["confirmatory"] if r["a"] == method), None)
            test = "" if row is None else (f"; for reference, its confirmatory Welch test: p {row['p']:.2g}, "
                                           f"p_Holm {row['p_holm']:.2g}")
            add(key, verdict, f"{ev}; recovered {recovered:+.3f} (>= {RECOVERY}: "
                              f"{'yes' if recovered >= RECOVERY else 'no'}; difference positive: "
                              f"{'yes' if diff > 0 else 'no'}; CI above 0: {'yes' if ci[0] > 0 else 'no'}){test}")

    # 3: population best on held-out
    if not {BASELINE, "population"} <= set(table):
        add("3", None, "not judged (frozen and population are not both in this run)")
    else:
        ranked = sorted((m for m in judged_methods(table) if m in mean), key=lambda m: -mean[m])
        best, runner_up = ranked[0], next(m for m in ranked if m != "population")
        highest = mean["population"] > mean[runner_up]
        row = next((r for r in st["confirmatory"] if r["a"] == "population"), None)
        ev = (f"held-out: population {_f(mean['population'])}, best of the others {runner_up} "
              f"{_f(mean[runner_up])} (population strictly highest: {'yes' if highest else 'no'}; best: {best})")
        if row is None:
            add("3", None, f"not judged (fewer than 2 seeds: no test); {ev}")
        else:
            sig = row["p_holm"] < ALPHA
            ev += (f"; population − frozen {row['diff']:+.3f}, Welch p {row['p']:.2g}, p_Holm {row['p_holm']:.2g} "
                   f"over the {len(st['family'])} confirmatory comparisons (significant: {'yes' if sig else 'no'})")
            add("3", None if gate else bool(highest and sig and row["diff"] > 0),
                f"{gate}; {ev}" if gate else ev)
    return out


def claims(results: dict, stats_by_game: dict | None = None) -> list[dict]:
    """claims.json: the paper's claims for every game, judged from the per-seed numbers (``CLAIM_DEFINITIONS``);
    a list of ``{"game", "claim", "held", "evidence"}``, ``held`` True / False / None (= not judged)."""
    stats_by_game = stats_by_game or {}
    return [c for game, table in results.items() for c in game_claims(game, table, stats_by_game.get(game))]
