"""``scope-envs bench``: the simulator-collapse benchmark (games x methods x seeds).

For every method ``agent_0`` (the persuader, the teammate, the service agent) is
trained with the act-level PPO of
``scope_envs.train.act_ppo`` on the method's regime, then evaluated (a) against
the simulator(s) it trained with and (b) against the held-out human-proxy
population (``<game>-heldout``), which no training run and no setting here
ever reads beyond that evaluation (DESIGN.md §4).

=============  ==============================  ======================================
method         trains on                       evaluated "vs its training simulator" on
=============  ==============================  ======================================
untrained      nothing (the initial network)   ``<game>-frozen``
frozen         ``<game>-frozen``               ``<game>-frozen``
vs             ``<game>-vs`` (k=5)             ``<game>-vs``
rotation       ``<game>-rotation``             ``<game>-rotation``
cotrain        ``<game>-cotrain``              ``<game>-cotrain`` with the trained user
population     ``<game>-population``, SCOPE's  ``<game>-population`` with the live trained user
               checkpoint pool (K=5, a
               snapshot every 4 updates)
selfplay       ``<game>-cotrain``, one net     ``<game>-cotrain``, the same net as the user
=============  ==============================  ======================================

``population_members`` (not in the default grid) is this benchmark's earlier
population: K = 4 co-trained users, one per episode, with a diversity term.
``--user-reward``, ``--advantage grpo --group-size G`` run the grid SCOPE's way
(``scope_envs.core.rewards``; grouped runs add the collapse diagnostics
``zero_std_group_frac``, ``all_fail_group_frac``, ``all_success_group_frac``
to ``results.json`` and draw ``<game>_collapse.png``).

"Success" is each game's ``success_metric``: for p4g the mean *actual*
donation in dollars (0 to 2), for cooperbench the cooperative success rate
(both features complete, clean merge), next to its conflict rate, message
share and the solo baseline, for tau2 the task success rate (reward 1) with
per-domain figures. Outputs in ``--out``: ``results.json``,
``report.md``, ``curves.json``, ``<game>_learning_curves.png``,
``<game>_entropy.png``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from pathlib import Path

import numpy as np

METHODS = ("untrained", "frozen", "vs", "rotation", "cotrain", "population", "selfplay")
# runnable by name, not in the default grid: K co-trained users with a diversity term (this
# benchmark's population before SCOPE's checkpoint pool, kept so its old results can be reproduced)
EXTRA_METHODS = ("population_members",)
LEARNED_USER = ("cotrain", "population", "population_members", "selfplay")
PRESETS = {
    # finishes in < 10 min on a 2-core machine
    "default": {"seeds": 3, "steps": 20_000, "eval_episodes": 500, "curve_points": 4, "curve_episodes": 100,
                "steps_scale": {"tau2": 0.4}},  # tau2 learns in ~8k decisions, and its episodes are longer
    "full": {"seeds": 8, "steps": 100_000, "eval_episodes": 3000, "curve_points": 10, "curve_episodes": 300},
}
GAMES = ("p4g", "cooperbench", "tau2")
POPULATION_MEMBERS = 4
POOL = {"pool_size": 5, "snapshot_every": 4}  # SCOPE's checkpoint pool (wrappers/pool.py)
DIVERSITY_COEF = 0.02  # set a priori, never tuned (DESIGN.md §4)
DIAGNOSTICS = ("zero_std_group_frac", "all_fail_group_frac", "all_success_group_frac")  # grouped runs only
METRICS = ("train_success", "heldout_success", "gap", "policy_entropy", "sim_entropy", "train_zero_score_frac")
COST = {"population": 4, "vs": 1.3}  # rough relative run time, to start the slow runs first


def method_setup(game: str, method: str, user_reward: str | None = None, advantage: str = "gae",
                 group_size: int = 1) -> tuple[str, dict, dict]:
    """(training env id, env kwargs, PPOConfig overrides) of a method. ``user_reward`` goes to the methods
    with a learned user; ``advantage``/``group_size`` to every trained method."""
    if method not in METHODS + EXTRA_METHODS:
        raise ValueError(f"method must be one of {METHODS + EXTRA_METHODS}, got {method!r}")
    regime = {"untrained": "frozen", "selfplay": "cotrain", "population_members": "population"}.get(method, method)
    env_kwargs = {"population": dict(POOL), "population_members": {"members": POPULATION_MEMBERS}}.get(method, {})
    if user_reward is not None and method in LEARNED_USER:
        env_kwargs["user_reward"] = user_reward
    overrides = {"selfplay": method == "selfplay",
                 "diversity_coef": DIVERSITY_COEF if method == "population_members" else 0.0}
    if advantage != "gae" or group_size != 1:  # only then: the default config stays the default
        overrides.update(advantage=advantage, group_size=group_size,
                         episodes_per_iter=-(-64 // group_size) * group_size)
    return f"{game}-{regime}", env_kwargs, overrides


def run_one(game: str, method: str, seed: int, steps: int, eval_episodes: int, curve_points: int,
            curve_episodes: int, user_reward: str | None = None, advantage: str = "gae", group_size: int = 1) -> dict:
    """Train one (game, method, seed) and evaluate it; the held-out side only ever measures."""
    import torch

    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    env_id, env_kwargs, overrides = method_setup(game, method, user_reward, advantage, group_size)
    total = 0 if method == "untrained" else steps
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=env_kwargs, seed=seed, total_steps=total, **overrides))
    heldout_id = f"{game}-heldout"
    # the same evaluation episodes (seeds, hence cards) for every method: common random numbers
    train_seed, heldout_seed = 1_000_000 + 1000 * seed, 2_000_000 + 1000 * seed

    curve = []

    def checkpoint():
        tr = evaluate(trainer, env_id, curve_episodes, seed=train_seed + 500, **env_kwargs)
        ho = evaluate(trainer, heldout_id, curve_episodes, seed=heldout_seed + 500)
        curve.append({"agent_steps": trainer.agent_steps, "train": tr["success"], "heldout": ho["success"],
                      "policy_entropy": tr["policy_entropy"]})

    checkpoint()
    marks = list(np.linspace(0, total, curve_points + 1)[1:]) if total else []

    def on_iteration(row):
        while marks and row["agent_steps"] >= marks[0] - 1e-9:
            marks.pop(0)
            checkpoint()

    history = trainer.train(on_iteration) if total else []
    train_time = time.perf_counter() - t0
    tr = evaluate(trainer, env_id, eval_episodes, seed=train_seed, **env_kwargs)
    ho = evaluate(trainer, heldout_id, eval_episodes, seed=heldout_seed)
    metrics = {"train_success": tr["success"], "heldout_success": ho["success"], "gap": tr["success"] - ho["success"],
               "policy_entropy": tr["policy_entropy"], "sim_entropy": tr["sim_entropy"],
               "train_zero_score_frac": tr["zero_score_frac"]}
    last = history[-max(1, len(history) // 4):]  # collapse diagnostics: the final quarter of training
    metrics.update({k: float(np.mean([r[k] for r in last])) for k in DIAGNOSTICS if last and k in last[0]})
    return {
        "game": game, "method": method, "seed": seed,
        "metrics": metrics,
        "outcomes": {"train": tr["outcome"], "heldout": ho["outcome"]},
        "curve": curve,
        "training": [{k: r[k] for k in ("agent_steps", "return", "policy_entropy", "user_entropy", *DIAGNOSTICS)
                      if k in r} for r in history],
        "env_steps": trainer.env_steps,
        "env_steps_per_s": trainer.env_steps / max(train_time, 1e-9) if total else 0.0,
        "wall_s": time.perf_counter() - t0,
    }


def _run_task(task):
    return run_one(**task)


# -- statistics -------------------------------------------------------------------------
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


# -- outputs ---------------------------------------------------------------------------
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


def _fmt(xs) -> str:
    xs = np.asarray(xs, float)
    return f"{xs.mean():.3f} ± {xs.std(ddof=1):.3f}" if len(xs) > 1 else f"{xs.mean():.3f}"


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


LABELS = {"p4g": "mean donation ($)", "cooperbench": "cooperative success rate",
          "tau2": "task success rate (tau^2 reward 1)"}
ROLES = {"p4g": "persuader", "cooperbench": "teammate", "tau2": "service agent"}  # who agent_0 is in each game


def tau2_metrics(results: dict, runs: list[dict]) -> list[str]:
    """tau^2 per domain on held-out tasks and users, with the decoy writes and slips behind the failures."""
    from scope_envs.games.tau2.data import DOMAINS

    domains = [d for d in DOMAINS[:3] if any(r["outcomes"]["heldout"].get(d) for r in runs if r["game"] == "tau2")]
    lines = ["### tau^2 per domain (held-out tasks of the test split, held-out human-proxy users)", "",
             "| method | " + " | ".join(f"{d} success" for d in domains) + " | decoy writes | user slips | steps |",
             "|---|" + "---|" * (len(domains) + 3)]
    for method in results["tau2"]:
        outs = [r["outcomes"]["heldout"] for r in runs if r["game"] == "tau2" and r["method"] == method]
        mean = {k: np.mean([o[k] for o in outs]) for k in outs[0]}
        per = [mean[f"{d}_success"] / mean[d] if mean[d] else float("nan") for d in domains]
        lines.append(f"| {method} | " + " | ".join(f"{x:.3f}" for x in per)
                     + f" | {mean['decoy_executed']:.3f} | {mean['slips']:.3f} | {mean['steps']:.1f} |")
    return lines


def cooperbench_metrics(results: dict, runs: list[dict]) -> list[str]:
    """CooperBench's own figures: conflicts, talk, and the solo baseline on the same held-out tasks."""
    from scope_envs.games.cooperbench import world

    solo = np.mean([world.solo_success(t, 12) for t in world.tasks("heldout")])
    lines = ["### CooperBench metrics on held-out partners and tasks", "",
             f"Solo baseline (one agent that knows both features, within one teammate's 12 turns): {solo:.2f}.", "",
             "| method | cooperative success | own feature | partner feature | merge-conflict rate | message share |",
             "|---|---|---|---|---|---|"]
    for method in results["cooperbench"]:
        outs = [r["outcomes"]["heldout"] for r in runs if r["game"] == "cooperbench" and r["method"] == method]
        mean = {k: np.mean([o[k] for o in outs]) for k in outs[0]}
        lines.append(f"| {method} | {mean['success']:.3f} | {mean['teammate_feature']:.3f} | "
                     f"{mean['partner_feature']:.3f} | {mean['merge_conflict']:.3f} | {mean['message_share']:.3f} |")
    return lines


def write_report(out: Path, results: dict, runs: list[dict], settings: dict, wall_s: float) -> None:
    lines = ["# scope-envs bench", "", "| setting | value |", "|---|---|",
             *(f"| {k} | {', '.join(map(str, v)) if isinstance(v, list) else v} |" for k, v in settings.items()),
             f"| wall time | {wall_s:.0f} s |", "",
             "Success is each game's success metric: for p4g the mean **actual donation in dollars** "
             "($0-$2; held-out human proxies do not always give what they state), for cooperbench the "
             "**cooperative success rate** (both features complete and a clean merge), for tau2 the **task success "
             "rate** (tau^2 reward 1; held-out = test-split tasks). *train* is measured against the "
             "simulator(s) the method trained with (untrained: the frozen simulator), *held-out* against "
             "`<game>-heldout`, never used in training. Means ± sd across seeds; entropies in nats "
             "(policy: `agent_0`'s per-decision entropy against its training simulator; sim: entropy of the "
             "user's act frequencies there). `agent_0` is the " + ", the ".join(
                 f"{ROLES[g]} in {g}" for g in results if g in ROLES) + ".", ""]
    for game, table in results.items():
        unit = LABELS.get(game, "success")
        lines += [f"## {game}: {unit} (agent_0 = the {ROLES.get(game, 'agent')})", "",
                  "| method | train | held-out | gap | policy entropy | sim entropy | seeds |",
                  "|---|---|---|---|---|---|---|"]
        for method, e in table.items():
            ps = e["per_seed"].values()
            lines.append(f"| {method} | {_fmt([s['train_success'] for s in ps])} | "
                         f"{_fmt([s['heldout_success'] for s in ps])} | {_fmt([s['gap'] for s in ps])} | "
                         f"{e['policy_entropy']:.3f} | {e['sim_entropy']:.3f} | {len(e['per_seed'])} |")
        tests = pairwise_tests({m: [s["heldout_success"] for s in e["per_seed"].values()] for m, e in table.items()})
        lines += ["", f"### Held-out success, pairwise Welch t-tests ({len(tests)} pairs, Holm-Bonferroni)", "",
                  "| A | B | A − B | t | p | p (Holm) | Cohen's d | significant (0.05, Holm) |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in sorted(tests, key=lambda r: r["p"]):
            d = "n/a" if r["degenerate"] else f"{r['d']:+.2f}"
            lines.append(f"| {r['a']} | {r['b']} | {r['diff']:+.3f} | {r['t']:.2f} | {r['p']:.2g} | {r['p_holm']:.2g} "
                         f"| {d} | {'yes' if r['p_holm'] < 0.05 else 'no'} |")
        if any(r["degenerate"] for r in tests):
            lines += ["", "Cohen's d is n/a where one method's held-out score did not vary across seeds (sd ≈ 0): "
                          "d divides by a standard deviation that is then the other method's alone, and it "
                          "grows without bound as that one shrinks, so it says nothing about the size of the effect."]
        grouped = [m for m, e in table.items() if DIAGNOSTICS[0] in e]
        if grouped:
            lines += ["", "### Collapse diagnostics (grouped rollouts; mean over the final quarter of training)", "",
                      "| method | zero-variance groups | all-fail groups | all-success groups |", "|---|---|---|---|",
                      *(f"| {m} | {table[m]['zero_std_group_frac']:.3f} | {table[m]['all_fail_group_frac']:.3f} | "
                        f"{table[m]['all_success_group_frac']:.3f} |" for m in grouped)]
        if game == "cooperbench":
            lines += ["", *cooperbench_metrics(results, runs)]
        if game == "tau2":
            lines += ["", *tau2_metrics(results, runs)]
        lines += ["", "### The paper's claims, checked against these numbers", "", *claims(table), "",
                  f"Plots: `{game}_learning_curves.png`, `{game}_entropy.png`.", ""]
    speeds = [r["env_steps_per_s"] for r in runs if r["env_steps_per_s"]]
    if speeds:
        lines += [f"Trainer throughput during these runs (one core each, with the learning-curve evaluations "
                  f"included): median {np.median(speeds):.0f} env steps/s.", ""]
    (out / "report.md").write_text("\n".join(lines))


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
        for ax, method in zip(axes.flat, methods):
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
            ax.set_title(method)
            ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
        for ax in axes.flat[len(methods):]:
            ax.axis("off")
        axes[0, 0].set_ylabel(LABELS.get(game, "success"))
        axes[0, 0].legend(fontsize=8)
        fig.suptitle(f"{game}: learning curves (mean over seeds, band = min..max)")
        fig.tight_layout()
        fig.savefig(out / f"{game}_learning_curves.png", dpi=100)
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(7, 4))
        for method in methods:
            hist = [r["training"] for r in mine if r["method"] == method and r["training"]]
            if not hist:
                continue
            grid = np.linspace(0, max(h[-1]["agent_steps"] for h in hist), 50)
            y = np.mean([np.interp(grid, [h_["agent_steps"] for h_ in h], [h_["policy_entropy"] for h_ in h])
                         for h in hist], 0)
            ax.plot(grid, y, label=method)
        ax.set_xlabel(f"{ROLES.get(game, 'agent_0')} decisions")
        ax.set_ylabel(f"{ROLES.get(game, 'agent_0')} policy entropy (nats)")
        ax.set_title(f"{game}: policy entropy during training (the collapse)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"{game}_entropy.png", dpi=100)
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
            fig.savefig(out / f"{game}_collapse.png", dpi=100)
            plt.close(fig)


# -- entry point -------------------------------------------------------------------------
def add_arguments(ap: argparse.ArgumentParser) -> None:
    from scope_envs.arguments import game_name, positive_int
    from scope_envs.core.rewards import SIMULATOR_REWARDS

    ap.add_argument("--full", action="store_true", help="more seeds, steps and evaluation episodes (see PRESETS)")
    ap.add_argument("--games", nargs="+", type=game_name, default=list(GAMES))
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS + EXTRA_METHODS)
    ap.add_argument("--seeds", type=positive_int, default=None, help="number of seeds (0..N-1)")
    ap.add_argument("--steps", type=positive_int, default=None,
                    help="training budget per run, in decisions of agent_0")
    ap.add_argument("--eval-episodes", type=positive_int, default=None, help="evaluation episodes per side")
    ap.add_argument("--jobs", type=positive_int, default=None, help="parallel worker processes (default: CPU count)")
    ap.add_argument("--user-reward", default=None, choices=SIMULATOR_REWARDS,
                    help="the learned user's reward (cotrain, population, selfplay); default: each game's own")
    ap.add_argument("--advantage", default="gae", choices=("gae", "grpo"), help="gae (default) or SCOPE's grpo")
    ap.add_argument("--group-size", type=positive_int, default=1,
                    help="episodes per scenario (SCOPE: 8); grpo and the curriculum reward need >= 2")
    ap.add_argument("--out", default="results")


def run(games=GAMES, methods=METHODS, seeds=None, steps=None, eval_episodes=None, full=False, out="results",
        jobs=None, progress=True, user_reward=None, advantage="gae", group_size=1) -> dict:
    """Run the benchmark and write its outputs; returns the results.json dict."""
    import scope_envs

    if advantage not in ("gae", "grpo"):
        raise ValueError(f"advantage must be 'gae' or 'grpo', got {advantage!r}")
    if group_size < 2 and (advantage == "grpo" or user_reward == "curriculum"):
        raise ValueError(f"group_size must be >= 2 with advantage='grpo' or user_reward='curriculum', got {group_size}")

    settings = dict(PRESETS["full" if full else "default"])
    for key, value in (("seeds", seeds), ("steps", steps), ("eval_episodes", eval_episodes)):
        if value is not None:
            settings[key] = value
    if steps is not None and eval_episodes is None and steps < 5000:  # a smoke run: keep evaluation small too
        settings["eval_episodes"] = min(settings["eval_episodes"], 200)
        settings["curve_episodes"] = min(settings["curve_episodes"], 50)
        settings["curve_points"] = min(settings["curve_points"], 3)
    for key in ("seeds", "steps", "eval_episodes"):
        if not isinstance(settings[key], int) or settings[key] < 1:
            raise ValueError(f"{key} must be a positive int, got {settings[key]!r}")
    for game in games:
        if f"{game}-heldout" not in scope_envs.registry:
            known = sorted({s.game for s in scope_envs.registry.values()})
            raise ValueError(f"unknown game {game!r}; known games: {known}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    scale = settings.pop("steps_scale", {}) if steps is None else {}  # preset budgets only; --steps is exact
    settings.pop("steps_scale", None)
    scope = {"user_reward": user_reward, "advantage": advantage, "group_size": group_size}
    tasks = [dict(game=g, method=m, seed=s, steps=int(settings["steps"] * scale.get(g, 1.0)),
                  eval_episodes=settings["eval_episodes"],
                  curve_points=settings["curve_points"], curve_episodes=settings["curve_episodes"], **scope)
             for g in games for m in methods for s in range(settings["seeds"])]
    tasks.sort(key=lambda t: -COST.get(t["method"], 1.0 if t["method"] != "untrained" else 0.1))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    t0 = time.perf_counter()
    runs = []
    from tqdm import tqdm

    bar = tqdm(total=len(tasks), desc="bench", unit="run", disable=not progress)
    if jobs == 1:
        for task in tasks:
            runs.append(run_one(**task))
            bar.set_postfix_str(f"{task['method']} seed {task['seed']}")
            bar.update()
    else:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            for r in pool.imap_unordered(_run_task, tasks):
                runs.append(r)
                bar.set_postfix_str(f"{r['method']} seed {r['seed']}")
                bar.update()
    bar.close()
    wall = time.perf_counter() - t0
    results = summarize(runs)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "curves.json").write_text(json.dumps({"settings": settings, "wall_s": wall, "runs": runs}, indent=1))
    write_report(out, results, runs, {**settings, "games": list(games), "methods": list(methods), "jobs": jobs,
                                      "user_reward": user_reward or "each game's default", "advantage": advantage,
                                      "group_size": group_size}, wall)
    plot(out, runs)
    return results


def main(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    if args.group_size < 2 and (args.advantage == "grpo" or args.user_reward == "curriculum"):
        args.parser.error(f"argument --group-size: must be >= 2 with --advantage grpo or --user-reward curriculum, "
                          f"got {args.group_size}")
    run(games=args.games, methods=args.methods, seeds=args.seeds, steps=args.steps,
        eval_episodes=args.eval_episodes, full=args.full, out=args.out, jobs=args.jobs,
        user_reward=args.user_reward, advantage=args.advantage, group_size=args.group_size)
    print(f"wrote {args.out}/results.json, report.md and plots in {time.perf_counter() - t0:.0f} s")
    print((Path(args.out) / "report.md").read_text())
