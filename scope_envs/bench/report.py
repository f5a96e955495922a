"""``report.md``: the tables, the tests, the claims, the game-specific figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS
from scope_envs.bench.stats import claims, pairwise_tests


def mean_sd(xs) -> str:
    xs = np.asarray(xs, float)
    return f"{xs.mean():.3f} ± {xs.std(ddof=1):.3f}" if len(xs) > 1 else f"{xs.mean():.3f}"


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
            lines.append(f"| {method} | {mean_sd([s['train_success'] for s in ps])} | "
                         f"{mean_sd([s['heldout_success'] for s in ps])} | {mean_sd([s['gap'] for s in ps])} | "
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
