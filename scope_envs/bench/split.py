"""The held-out gap split into *collapse* and *misspecification* (a confirmatory definition, declared
before any run that reports it).

Every run is evaluated on a fourth side (``scope_envs.bench.protocol``): the game's training-side reference
model — the model the collapsed simulator sharpens, without its defects (sharpening 1, the dealt card, no
cooperation bias) — on the held-out side's very scenarios. Its success is ``reference_success``, and the run's
gap (train − held-out) is the sum of

* ``collapse_gap = train − reference``: what the training simulator's defects (typicality, one modal card,
  over-cooperation) hide, measured inside the training-side world; the part a simulator-side remedy can reach;
* ``misspecification_gap = reference − held-out``: the training-side model against the held-out proxies on the
  same cards and tasks (its associational effects against theirs); no simulator-side remedy can fix it, because
  every remedy is built from the training-side model.

**The test** (``split``): on mean ``reference_success`` over seeds,

* *collapse cost* ``C = uncollapsed − frozen``, ``uncollapsed`` being PPO with frozen's config and budget
  against the users' own model (``<game>-frozen``, ``user="reference"``); collapse *hurts* when C > 0 and the
  95% bootstrap CI of the difference lies above 0. Otherwise no recovery is judged: there is no collapse cost;
* each method m of the confirmatory family (every judged row but frozen) against frozen: Welch's t on
  ``reference_success``, Holm-Bonferroni over that family; its *recovered share of the collapse cost*
  ``(m − frozen) / C``; m *recovers collapse* when p_Holm < 0.05 and m − frozen > 0, and *most of it* when,
  besides, the share is >= ``stats.RECOVERY`` (0.5) and the bootstrap CI of m − frozen lies above 0 (claim 2a's
  rule, on the part it could recover). The family is the built-in rows' alone, so an entrant (a ``--method``
  plug-in, an SB3 row) leaves every built-in p-value as it is; each entrant is tested against frozen on its own
  (a family of one, ``entrant: true``).

Tables: ``split.json`` (per game: every row's collapse / misspecification means and CIs, the cost, the
tests) and the report's section "The gap, split" (``markdown``).
"""

from __future__ import annotations

import numpy as np

from scope_envs.bench.entrants import builtin, entrant_names
from scope_envs.bench.stats import (ALPHA, BASELINE, RECOVERY, UNCOLLAPSED, bootstrap_ci, bootstrap_diff_ci,
                                    confirmatory_family, pairwise_tests, per_seed)

PARTS = ("collapse_gap", "misspecification_gap")
REFERENCE_SUCCESS = "reference_success"


def _mean_ci(x: np.ndarray) -> dict:
    return {"mean": float(x.mean()) if len(x) else None,
            "ci": list(bootstrap_ci(x)) if len(x) >= 2 else [None, None]}


def split(table: dict) -> dict:
    """One game's split (the module docstring): ``rows`` (method -> gap, collapse and misspecification, each
    ``{mean, ci}``), ``cost`` (C with its CI and ``hurts``; None without the frozen and uncollapsed rows) and
    ``recovery`` (one row per method of the family: diff, share, p, p_Holm, ``recovers``, ``recovers_most``)."""
    rows = {}
    for method, entry in table.items():
        parts = {k: per_seed(entry, k) for k in ("gap", *PARTS, REFERENCE_SUCCESS)}
        if not len(parts["collapse_gap"]):
            continue  # a run from before the reference side existed
        rows[method] = {k: _mean_ci(v) for k, v in parts.items()}
    out = {"rows": rows, "cost": None, "recovery": []}
    if not {BASELINE, UNCOLLAPSED} <= set(rows):
        return out
    ref = {m: per_seed(table[m], REFERENCE_SUCCESS) for m in rows}
    cost = float(ref[UNCOLLAPSED].mean() - ref[BASELINE].mean())
    ci = bootstrap_diff_ci(ref[UNCOLLAPSED], ref[BASELINE])
    hurts = bool(cost > 0 and np.isfinite(ci[0]) and ci[0] > 0)
    out["cost"] = {"mean": cost, "ci": list(ci), "hurts": hurts}
    family = [m for m in confirmatory_family(builtin(table)) if m in rows]
    tests = pairwise_tests(ref, [(m, BASELINE) for m in family], m=len(family))
    tests += [row for m in entrant_names(table) if m in rows for row in pairwise_tests(ref, [(m, BASELINE)], m=1)]
    for row in tests:
        diff_ci = bootstrap_diff_ci(ref[row["a"]], ref[BASELINE])
        share = row["diff"] / cost if hurts else None
        recovers = bool(hurts and row["p_holm"] < ALPHA and row["diff"] > 0)
        out["recovery"].append({"method": row["a"], "diff": row["diff"], "ci": list(diff_ci), "share": share,
                                "p": row["p"], "p_holm": row["p_holm"], "recovers": recovers,
                                "recovers_most": bool(recovers and share >= RECOVERY and diff_ci[0] > 0),
                                **({} if row["a"] in family else {"entrant": True})})
    return out


def split_all(results: dict) -> dict:
    """``split`` for every game of results.json."""
    return {game: split(table) for game, table in results.items()}


def _cell(part: dict) -> str:
    mean, (lo, hi) = part["mean"], part["ci"]
    if mean is None:
        return "n/a"
    return f"{mean:+.3f}" + ("" if lo is None or not np.isfinite(lo) else f" [{lo:+.3f}, {hi:+.3f}]")


def markdown(splits: dict) -> str:
    """The report's section: per game, every row's gap in its two parts, the collapse cost and each method's
    recovery of it."""
    lines = ["## The gap, split: collapse and misspecification", "",
             "gap (train − held-out) = collapse (train − reference) + misspecification (reference − held-out); "
             "reference = the training-side reference model on the held-out scenarios (`scope_envs.bench.split`). "
             "Means over seeds, 95% bootstrap CIs.", ""]
    for game, sp in splits.items():
        if not sp["rows"]:
            continue
        lines += [f"### {game}", "", "| row | reference success | gap | collapse | misspecification |",
                  "|---|---|---|---|---|"]
        lines += [f"| {m} | {_cell(r[REFERENCE_SUCCESS])} | {_cell(r['gap'])} | {_cell(r['collapse_gap'])} | "
                  f"{_cell(r['misspecification_gap'])} |" for m, r in sp["rows"].items()]
        cost = sp["cost"]
        if cost is None:
            absent = " and ".join(f"`{m}`" for m in (BASELINE, UNCOLLAPSED) if m not in sp["rows"])
            lines += ["", f"No collapse cost: the run has no {absent} row{'s' if ' and ' in absent else ''} "
                          "with a reference side.", ""]
            continue
        lines += ["", f"Collapse cost ({UNCOLLAPSED} − {BASELINE} on reference success): "
                      f"{_cell({'mean': cost['mean'], 'ci': cost['ci']})}; collapse hurts: "
                      f"{'yes' if cost['hurts'] else 'no (no recovery is judged)'}.", ""]
        if sp["recovery"]:
            lines += ["| method | − frozen (reference success) | share of the collapse cost | p_Holm | recovers | "
                      "most |", "|---|---|---|---|---|---|"]
            for r in sp["recovery"]:
                share = "n/a" if r["share"] is None else f"{r['share']:+.2f}"
                name = f"{r['method']} (entrant: its own test)" if r.get("entrant") else r["method"]
                lines.append(f"| {name} | {_cell({'mean': r['diff'], 'ci': r['ci']})} | {share} | "
                             f"{r['p_holm']:.2g} | {'yes' if r['recovers'] else 'no'} | "
                             f"{'yes' if r['recovers_most'] else 'no'} |")
            lines.append("")
    return "\n".join(lines) + "\n"
