"""The benchmark's PNG plots: learning curves, policy entropy, collapse diagnostics.

The band rows: ``random`` (the floor, no training) is drawn as a level, as ``untrained`` is; ``oracle`` (the
ceiling, trained against the human proxies on train scenarios) as a curve. Every learning-curve panel also
carries the floor's and the ceiling's final held-out success as dotted reference lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS, EXTRA_METHODS, METHODS
from scope_envs.bench.report import LABELS, ROLES
from scope_envs.files import save_figure

BAND = {"random": "floor", "oracle": "ceiling"}


def plot(out: Path, runs: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for game in sorted({r["game"] for r in runs}):
        mine = [r for r in runs if r["game"] == game]
        methods = [m for m in METHODS + EXTRA_METHODS if any(r["method"] == m for r in mine)]
        cols = min(4, len(methods))
        rows_ = -(-len(methods) // cols)
        fig, axes = plt.subplots(rows_, cols, figsize=(4 * cols, 3 * rows_), squeeze=False, sharey=True)
        band = {m: float(np.mean([r["metrics"]["heldout_success"] for r in mine if r["method"] == m]))
                for m in ("random", "oracle") if m in methods}
        for ax, method in zip(axes.flat, methods):
            for m, level in band.items():  # the game's floor and ceiling on held-out proxies
                ax.axhline(level, color="0.5", ls=":", lw=1, label=f"{BAND[m]} ({m}), held-out")
            curves = [r["curve"] for r in mine if r["method"] == method]
            n = min(len(c) for c in curves)
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

        fig, ax = plt.subplots(figsize=(7, 4))
        for k, method in enumerate(methods):
            hist = [r["training"] for r in mine if r["method"] == method and r["training"]]
            if not hist:  # not trained (random, untrained): its evaluated entropy, drawn as a level
                level = np.mean([r["metrics"]["policy_entropy"] for r in mine if r["method"] == method])
                ax.axhline(level, ls=":" if method == "random" else "--", lw=2.5 if method == "random" else 1.5,
                           color=f"C{k % 10}", label=f"{method} (no training)")  # random ~ untrained: both show
                continue
            grid = np.linspace(0, max(h[-1]["agent_steps"] for h in hist), 50)
            y = np.mean([np.interp(grid, [h_["agent_steps"] for h_ in h], [h_["policy_entropy"] for h_ in h])
                         for h in hist], 0)
            ax.plot(grid, y, color=f"C{k % 10}", label=method)
        ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
        ax.set_ylabel(f"{ROLES.get(game, 'agent_0')} policy entropy (nats)")
        ax.set_title(f"{game}: policy entropy during training (the collapse)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        save_figure(fig, out / f"{game}_entropy.png", dpi=100)
        plt.close(fig)

        grouped = [m for m in methods if any(DIAGNOSTICS[0] in h for r in mine if r["method"] == m
                                             for h in r["training"])]
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
