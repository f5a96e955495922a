"""How far the benchmark's statistics can be trusted: its declared choices beside the textbook's alternatives, on
a committed reference's records. Nothing here changes a verdict or a rule; it says what each verdict rests on.

The report's statistics (``scope_envs/bench/stats.py``, declared before the runs) are a percentile bootstrap for
every CI, Welch's t with Holm over the confirmatory family for the tests, and one MDE per game from the pooled sd of
the confirmatory arms. This script measures three things about them:

* **Coverage.** How often a nominal 95% CI of a difference of two means holds the true difference, by simulation
  (normal seeds, true difference 0, ``--reps`` draws): the report's ``stats.bootstrap_diff_ci`` and Welch's t
  interval, at 3 seeds and at each game's seeds in the reference. A percentile bootstrap cannot reach beyond the
  seeds it has, so it covers less than it says.
* **The MDE per comparison.** The report's MDE uses the pooled per-seed sd of frozen and the methods compared with
  it; a comparison whose two arms spread more than the pool resolves less. Here each comparison's own MDE
  (``stats.mde`` at the family's m, times the sd of its own two arms), as a fraction of the band.
* **An entrant at few seeds.** ``scope-envs bench --method ... --against REF`` tests an entrant of n seeds
  against the reference's rows of m by Welch's t: at n = 2, 3, 5 and 8 against each game's m, Welch's size (how
  often it rejects a true null at 0.05) and the bootstrap CI's coverage of the difference, by simulation.
* **Verdicts under the alternatives.** Every claim (``claims.json``) and the collapse split's tests recomputed
  with Welch's t intervals in place of the bootstrap; the confirmatory family with the paired t (a seed's methods
  are scored on the same held-out episodes, so the arms are not independent) in place of Welch's. Which verdicts
  change.

    python benchmarks/instrument_checks.py --out benchmarks/results/instrument_checks.json   # the default reference
    python benchmarks/instrument_checks.py --results benchmarks/results/full --reps 500 --out /tmp/checks.json
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from scipy import stats as sps

from scope_envs.arguments import count, existing_dir, output_file
from scope_envs.bench import entrants, records, split, stats
from scope_envs.files import finite, write_json

REPO = Path(__file__).resolve().parents[1]

MAX_REPS = 100_000
ENTRANT_SEEDS = (2, 3, 5, 8)  # an entrant's seed counts checked against each reference row's


def welch_interval(x, y, level: float = stats.LEVEL, **_) -> tuple:
    """Welch's t interval of mean(x) - mean(y) (Welch-Satterthwaite df): the textbook's, beside the bootstrap's."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or len(y) < 2:
        return (float("nan"), float("nan"))
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:
        d = float(x.mean() - y.mean())
        return (d, d)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    q = float(sps.t.ppf(0.5 + level / 2, df))
    d = float(x.mean() - y.mean())
    return (d - q * se, d + q * se)


def coverage(n: int, reps: int, seed: int = 0) -> dict:
    """The share of ``reps`` simulated pairs of n normal seeds (true difference 0) whose CI holds 0."""
    rng = np.random.default_rng([seed, n])
    hits = {"bootstrap": 0, "welch": 0}
    for _ in range(reps):
        x, y = rng.normal(0, 1, n), rng.normal(0, 1, n)
        for name, ci in (("bootstrap", stats.bootstrap_diff_ci), ("welch", welch_interval)):
            lo, hi = ci(x, y)
            hits[name] += lo <= 0 <= hi
    return {name: h / reps for name, h in hits.items()}


def entrant(n: int, m: int, reps: int, seed: int = 0) -> dict:
    """An entrant of ``n`` seeds against a reference row of ``m`` (true difference 0, normal seeds, ``reps``
    draws): how often Welch's test, the verdict's, rejects at 0.05 (its size) and how often the report's bootstrap
    CI of the difference holds 0 (its coverage)."""
    rng = np.random.default_rng([seed, n, m])
    rejected = covered = 0
    for _ in range(reps):
        x, y = rng.normal(0, 1, n), rng.normal(0, 1, m)
        rejected += stats.welch(x, y)["p"] < stats.ALPHA
        lo, hi = stats.bootstrap_diff_ci(x, y)
        covered += lo <= 0 <= hi
    return {"welch_size": rejected / reps, "bootstrap_coverage": covered / reps}


def verdicts(results: dict) -> dict:
    """(game, claim) -> held, and (game, row) -> the split's recovery flags, as the runner computes them."""
    out = {}
    st = entrants.stats_by_game(results)
    for c in stats.claims(entrants.builtin_results(results), st):
        out[f"{c['game']} claim {c['claim']}"] = c["held"]
    for game, s in split.split_all(results).items():
        if s["cost"] is not None:
            out[f"{game} collapse cost hurts"] = s["cost"]["hurts"]
        for row in s["recovery"]:
            out[f"{game} {row['method']} recovers most of the collapse cost"] = row["recovers_most"]
    return out


def with_interval(interval, results: dict) -> dict:
    """``verdicts`` with every difference CI computed by ``interval``."""
    saved = stats.bootstrap_diff_ci, split.bootstrap_diff_ci
    stats.bootstrap_diff_ci = split.bootstrap_diff_ci = interval
    try:
        return verdicts(results)
    finally:
        stats.bootstrap_diff_ci, split.bootstrap_diff_ci = saved


def per_comparison(results: dict) -> dict:
    """Per game: the report's MDE fraction, each confirmatory comparison's own, and Welch's and the paired t's
    significance after Holm."""
    out = {}
    for game, table in results.items():
        st = stats.game_stats(table)
        if not st["family"] or not st["band"]["present"] or st["band"]["headroom"] <= 0:
            continue
        held = {m: stats.per_seed(e) for m, e in table.items()}
        frozen = held[stats.BASELINE]
        seeds = {m: sorted(table[m]["per_seed"]) for m in st["family"] + [stats.BASELINE]}
        paired_p = []
        for m in st["family"]:
            common = [s for s in seeds[m] if s in set(seeds[stats.BASELINE])]
            a = np.array([table[m]["per_seed"][s][stats.SUCCESS] for s in common])
            b = np.array([table[stats.BASELINE]["per_seed"][s][stats.SUCCESS] for s in common])
            paired_p.append(float(sps.ttest_rel(a, b).pvalue))
        paired_holm = stats.holm(paired_p)
        d = stats.mde(st["n"], family=len(st["family"]))
        rows = {}
        for m, row, p, ph in zip(st["family"], st["confirmatory"], paired_p, paired_holm):
            own_sd = math.sqrt((held[m].var(ddof=1) + frozen.var(ddof=1)) / 2)
            rows[m] = {"mde_frac": d * own_sd / st["band"]["headroom"], "welch_p_holm": row["p_holm"],
                       "paired_p_holm": ph, "welch_significant": row["p_holm"] < stats.ALPHA,
                       "paired_significant": ph < stats.ALPHA,
                       "same_seed_correlation": float(np.corrcoef(held[m][:len(frozen)], frozen[:len(held[m])])[0, 1])
                       if len(held[m]) == len(frozen) else None}
        out[game] = {"seeds": st["n"], "mde_frac": st["mde_frac"], "comparisons": rows,
                     "largest_mde_frac": max(r["mde_frac"] for r in rows.values())}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", type=existing_dir, default=str(REPO / "benchmarks/results/default"),
                   help="a bench output folder whose run records are read (default: the default reference)")
    p.add_argument("--reps", type=count(MAX_REPS, low=10), default=2000,
                   help=f"simulated pairs per seed count for the coverage (10..{MAX_REPS:,}; default 2000)")
    p.add_argument("--out", type=output_file, help="write the JSON here (atomically); default: print it")
    args = p.parse_args(argv)
    if not records.has_records(Path(args.results)):
        p.error(f"argument --results: {args.results} holds no run records (runs/ or {records.PACKED}): give a "
                "scope-envs bench output folder")
    try:
        runs = [r["result"] for _, r in records.read(Path(args.results))]
    except records.RecordError as e:
        p.error(f"argument --results: {e}")
    results = stats.summarize(runs)
    comparisons = per_comparison(results)
    sizes = sorted({3} | {c["seeds"] for c in comparisons.values()})
    bootstrap, welch = verdicts(results), with_interval(welch_interval, results)
    report = {
        "results": str(args.results), "reps": args.reps,
        "coverage": {str(n): coverage(n, args.reps) for n in sizes},
        # an entrant's seeds against the reference's (the verdict's caution below entrants.FEW_SEEDS)
        "entrant": {f"{n} vs {m}": entrant(n, m, args.reps) for n in ENTRANT_SEEDS
                    for m in sorted({c["seeds"] for c in comparisons.values()})},
        "per_comparison": comparisons,
        "verdicts_changed_by_welch_intervals": sorted(k for k in bootstrap if welch.get(k) != bootstrap[k]),
        "significance_changed_by_paired_t": sorted(f"{g} {m}" for g, c in comparisons.items()
                                                   for m, r in c["comparisons"].items()
                                                   if r["welch_significant"] != r["paired_significant"]),
        "verdicts_judged": len(bootstrap),
    }
    if args.out:
        write_json(args.out, report)
        print(f"wrote {args.out}")
    else:
        import json

        print(json.dumps(finite(report), indent=1))


if __name__ == "__main__":
    main()
