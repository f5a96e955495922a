"""The benchmark's PNG plots: learning curves, policy entropy, collapse diagnostics, and the performance profiles
of held-out success (Agarwal et al. 2021: ``performance_profiles.png``).

The band rows: ``random`` (the floor, no training) is drawn as a level, as ``untrained`` is; ``oracle`` (the
ceiling, trained against the human proxies on train scenarios) as a curve. Every learning-curve panel also
carries the floor's and the ceiling's final held-out success as dotted reference lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS, EXTRA_METHODS, METHODS
from scope_envs.bench.stats import performance_profile
from scope_envs.bench.report import LABELS, ROLES
from scope_envs.files import save_figure

BAND = {"random": "floor", "oracle": "ceiling"}


def rows_in_order(runs: list[dict]) -> list[str]:
    """The rows of ``runs``: the built-in ones in the benchmark's order, then the entrants in the order they ran."""
    known = METHODS + EXTRA_METHODS
    present = list(dict.fromkeys(r["method"] for r in runs))
    return [m for m in known if m in present] + [m for m in present if m not in known]


def colour(k: int):
    """The k-th row's colour, 20 apart (matplotlib's ten repeated as soon as a game had more rows): tab20's dark
    shades first, then its light ones."""
    import matplotlib

    return matplotlib.colormaps["tab20"]((2 * k + (k // 10) % 2) % 20)


def plot(out: Path, runs: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for game in sorted({r["game"] for r in runs}):
        mine = [r for r in runs if r["game"] == game]
        methods = rows_in_order(mine)
        cols = min(4, len(methods))
        rows_ = -(-len(methods) // cols)
        fig, axes = plt.subplots(rows_, cols, figsize=(4 * cols, 3 * rows_), squeeze=False, sharey=True)
        band = {m: float(np.mean([r["metrics"]["heldout_success"] for r in mine if r["method"] == m]))
                for m in ("random", "oracle") if m in methods}
        for ax, method in zip(axes.flat, methods):
            for m, level in band.items():  # the game's floor and ceiling on held-out proxies
                ax.axhline(level, color="0.5", ls=":", lw=1, label=f"{BAND[m]} ({m}), held-out")
            curves = [r.get("curve") or [] for r in mine if r["method"] == method]
            n = min(len(c) for c in curves)
            if n == 0:  # an entrant that reported no progress (a hand-written heuristic may not)
                ax.text(0.5, 0.5, "no learning curve reported", ha="center", va="center", transform=ax.transAxes)
                ax.set_title(method)
                continue
            x = np.array([c["agent_steps"] for c in curves[0][:n]])
            for key, label in (("train", "vs training simulator"), ("heldout", "vs held-out proxies")):
                y = np.array([[c[key] for c in cv[:n]] for cv in curves])
                if n == 1:  # untrained: one evaluation, drawn as a level across the axis
                    ax.axhline(y.mean(), color="C0" if key == "train" else "C1", label=label)
                    ax.set_xticks([])
                    continue
                ax.plot(x, y.mean(0), marker="o", label=label)
                ax.fill_between(x, y.min(0), y.max(0), alpha=0.2)
            ax.set_title(f"{method} ({BAND[method]})" if method in BAND else method)
            ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
        for ax in axes.flat[len(methods):]:
            ax.axis("off")
        axes[0, 0].set_ylabel(LABELS.get(game, "success"))
        axes[0, 0].legend(fontsize=8)
        fig.suptitle(f"{game}: learning curves (mean over seeds, band = min..max)")
        fig.tight_layout()
        save_figure(fig, out / f"{game}_learning_curves.png", dpi=100)
        plt.close(fig)

        # the ceiling trains its own, often far longer, budget: the axis spans the other rows' (a 1.1M-decision axis
        # squeezed them into its first 2%), and the ceiling is drawn over that span
        others = [r["training"][-1]["agent_steps"] for r in mine if r["method"] != "oracle" and r.get("training")]
        span = max(others) if others else None
        fig, ax = plt.subplots(figsize=(9.5, 4))
        for k, method in enumerate(methods):
            hist = [r["training"] for r in mine if r["method"] == method and r.get("training")]
            if not hist:  # not trained (random, untrained, a heuristic entrant): its evaluated entropy, as a level
                level = np.mean([r["metrics"]["policy_entropy"] for r in mine if r["method"] == method])
                ax.axhline(level, ls=":" if method == "random" else "--", lw=2.5 if method == "random" else 1.5,
                           color=colour(k), label=f"{method} (no training)")  # random ~ untrained: both show
                continue
            longest = max(h[-1]["agent_steps"] for h in hist)
            grid = np.linspace(0, min(longest, span) if span else longest, 50)
            y = np.mean([np.interp(grid, [h_["agent_steps"] for h_ in h], [h_["policy_entropy"] for h_ in h])
                         for h in hist], 0)
            ax.plot(grid, y, color=colour(k), label=method if longest <= (span or longest) else
                    f"{method} (to {longest:,} decisions; its first {span:,} here)")
        ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
        ax.set_ylabel(f"{ROLES.get(game, 'agent_0')} policy entropy (nats)")
        ax.set_title(f"{game}: policy entropy during training (the collapse)")
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the curves, not over them
        fig.tight_layout()
        save_figure(fig, out / f"{game}_entropy.png", dpi=100)
        plt.close(fig)

        grouped = [m for m in methods if any(DIAGNOSTICS[0] in h for r in mine if r["method"] == m
                                             for h in r.get("training") or ())]
        if grouped:  # the collapse diagnostics next to the learning curves
            fig, axes = plt.subplots(1, len(DIAGNOSTICS), figsize=(4 * len(DIAGNOSTICS), 3.2), sharey=True)
            for ax, key in zip(axes, DIAGNOSTICS):
                for method in grouped:
                    hist = [r["training"] for r in mine if r["method"] == method and r["training"]]
                    grid = np.linspace(0, max(h[-1]["agent_steps"] for h in hist), 50)
                    y = np.mean([np.interp(grid, [h_["agent_steps"] for h_ in h], [h_[key] for h_ in h])
                                 for h in hist], 0)
                    ax.plot(grid, y, label=method)
                ax.set_title(key.replace("_", " "))
                ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
            axes[0].set_ylabel("fraction of groups")
            axes[0].legend(fontsize=8)
            fig.suptitle(f"{game}: collapse diagnostics during training")
            fig.tight_layout()
            save_figure(fig, out / f"{game}_collapse.png", dpi=100)
            plt.close(fig)
    performance_profiles(out, runs)


PROFILE_POINTS = 101  # thresholds per profile


def performance_profiles(out: Path, runs: list[dict]) -> None:
    """``performance_profiles.png``: per game, for each method the fraction of its runs (seeds) whose held-out
    success exceeds each threshold tau, with pointwise 95% stratified-bootstrap bands (``stats.performance_profile``);
    beside them, all games together on normalized held-out success (each game's (x - random) / (oracle - random),
    the games as tasks, the first n seeds of each as in the report's *All games*). A curve above another is better
    at every threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = sorted({r["game"] for r in runs})
    held = {g: {} for g in games}
    for r in sorted(runs, key=lambda r: r["seed"]):
        if "heldout_success" in r["metrics"]:
            held[r["game"]].setdefault(r["method"], []).append(float(r["metrics"]["heldout_success"]))
    panels = [(g, {m: [np.asarray(v)] for m, v in held[g].items()}, LABELS.get(g, "held-out success"))
              for g in games if held[g]]
    banded = [g for g in games if {"random", "oracle"} <= set(held[g])
              and np.mean(held[g]["oracle"]) > np.mean(held[g]["random"])]
    if len(banded) > 1:
        common = [m for m in held[banded[0]] if all(m in held[g] for g in banded)]
        n = min(len(held[g][m]) for g in banded for m in common)  # the first n seeds of each game, as the report
        norm = {}
        for m in common:
            norm[m] = []
            for g in banded:
                lo, hi = np.mean(held[g]["random"]), np.mean(held[g]["oracle"])
                norm[m].append((np.asarray(held[g][m][:n]) - lo) / (hi - lo))
        panels.append(("all games", norm, "normalized held-out success"))
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    order = METHODS + EXTRA_METHODS
    for ax, (title, scores, label) in zip(axes[0], panels):
        values = np.concatenate([np.concatenate(v) for v in scores.values()])
        span = max(float(values.max() - values.min()), 1e-9)
        taus = np.linspace(values.min() - 0.02 * span, values.max() + 0.02 * span, PROFILE_POINTS)
        for k, method in enumerate(sorted(scores, key=lambda m: order.index(m) if m in order else len(order))):
            profile, lo, hi = performance_profile(scores[method], taus)
            style = {"ls": ":" if method in BAND else "-", "color": colour(k)}
            ax.plot(taus, profile, label=f"{method} ({BAND[method]})" if method in BAND else method, **style)
            if np.isfinite(lo).all():
                ax.fill_between(taus, lo, hi, alpha=0.12, color=style["color"])
        ax.set_title(title)
        ax.set_xlabel(f"{label} threshold τ")
        ax.set_ylim(-0.02, 1.02)
    axes[0, 0].set_ylabel("fraction of runs with score > τ")
    axes[0, -1].legend(fontsize=7)
    # on one narrow panel the title in one line was cut at both edges
    fig.suptitle("Performance profiles of held-out success" + (" " if len(panels) > 1 else "\n")
                 + "(95% stratified-bootstrap bands)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out / "performance_profiles.png", dpi=100)
    plt.close(fig)
