"""The benchmark's statistics: summaries over seeds, Welch t-tests with Holm-Bonferroni, the claims."""

from __future__ import annotations

import itertools

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS, EXTRA_METHODS, METHODS, METRICS


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone)."""
    p = np.asarray(pvalues, float)
    order = np.argsort(p)
    adj = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adj[i] = running
    return adj.tolist()


def pairwise_tests(per_method: dict[str, list[float]]) -> list[dict]:
    """Welch's t-test on held-out success for every pair of methods, Holm-corrected across pairs.
    Effect size: Cohen's d with the average of the two variances (and the raw difference in dollars)."""
    from scipy import stats

    rows = []
    for a, b in itertools.combinations(per_method, 2):
        x, y = np.asarray(per_method[a]), np.asarray(per_method[b])
        if len(x) < 2 or len(y) < 2:
            continue
        t, p = stats.ttest_ind(x, y, equal_var=False)
        sd = np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
        degenerate = min(x.std(ddof=1), y.std(ddof=1)) < 1e-9
        diff = float(x.mean() - y.mean())
        d = diff / sd if sd > 0 else (0.0 if diff == 0 else float(np.sign(diff)) * float("inf"))
        p = float(p) if np.isfinite(p) else (1.0 if diff == 0 else 0.0)
        rows.append({"a": a, "b": b, "diff": diff, "t": float(t) if np.isfinite(t) else float("nan"), "p": p, "d": d,
                     "degenerate": bool(degenerate)})
    for row, adj in zip(rows, holm([r["p"] for r in rows])):
        row["p_holm"] = adj
    return rows


def summarize(runs: list[dict]) -> dict:
    """results.json: game -> method -> means over seeds, and ``per_seed``."""
    out: dict = {}
    for r in sorted(runs, key=lambda r: (r["game"], (METHODS + EXTRA_METHODS).index(r["method"]), r["seed"])):
        entry = out.setdefault(r["game"], {}).setdefault(r["method"], {"per_seed": {}})
        entry["per_seed"][str(r["seed"])] = dict(r["metrics"])
    for game in out.values():
        for entry in game.values():
            seeds = entry["per_seed"].values()
            for k in METRICS + DIAGNOSTICS:
                if all(k in s for s in seeds):
                    entry[k] = float(np.mean([s[k] for s in seeds]))
    return out


def claims(table: dict) -> list[str]:
    """The paper's claims, checked mechanically against this run's means (see benchmarks/README.md)."""
    m = {k: v for k, v in table.items()}
    lines = []
    if {"untrained", "frozen"} <= set(m):
        u, f = m["untrained"], m["frozen"]
        high = f["train_success"] > u["train_success"]
        near = abs(f["heldout_success"] - u["heldout_success"]) <= 0.25 * max(f["gap"], 1e-9)
        lines.append(
            f"1. Frozen-simulator RL scores high on its simulator ({f['train_success']:.3f} vs untrained "
            f"{u['train_success']:.3f}: {'yes' if high else 'no'}) and near the untrained baseline on held-out users "
            f"({f['heldout_success']:.3f} vs {u['heldout_success']:.3f}; 'near' = within a quarter of frozen's gap "
            f"{f['gap']:.3f}: {'yes' if near else 'no'}).")
    if "frozen" in m:
        f = m["frozen"]
        for label, k in (("2a", "vs"), ("2b", "cotrain")):
            if k in m:
                g = m[k]
                rec = (g["heldout_success"] - f["heldout_success"])
                smaller = g["gap"] < 0.5 * f["gap"]
                lines.append(
                    f"{label}. {k}: gap {g['gap']:.3f} vs frozen's {f['gap']:.3f} (less than half: "
                    f"{'yes' if smaller else 'no'}); held-out {g['heldout_success']:.3f}, "
                    f"{'+' if rec >= 0 else ''}{rec:.3f} vs frozen ({'better' if rec > 0 else 'not better'}). "
                    f"Recovers most of the gap (both): {'yes' if smaller and rec > 0 else 'no'}.")
    if "population" in m:
        best = max(m, key=lambda k: m[k]["heldout_success"])
        lines.append(f"3. Population co-training best on held-out: the best method is {best} "
                     f"({m[best]['heldout_success']:.3f}; population {m['population']['heldout_success']:.3f}): "
                     f"{'yes' if best == 'population' else 'no'} (significance: see the tests above).")
    return lines
