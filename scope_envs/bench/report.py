"""``report.md``: the tables, the pre-declared tests, the claims, the game-specific figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scope_envs.bench.methods import DIAGNOSTICS, REALISM_METRICS
from scope_envs.bench.stats import (ALPHA, BASELINE, BOOT_RESAMPLES, BOOT_SEED, CEILING, CLAIM_DEFINITIONS, CLAIMS,
                                    FLOOR, LEVEL, PANEL, PANEL_FAMILIES, POWER, SUCCESS, aggregate, game_claims,
                                    game_stats, undefined_ci)
from scope_envs.games import game_names, game_spec, load


def mean_sd(xs) -> str:
    xs = np.asarray(xs, float)
    return f"{xs.mean():.3f} ± {xs.std(ddof=1):.3f}" if len(xs) > 1 else f"{xs.mean():.3f}"


LABELS = {g: game_spec(g).metric_label for g in game_names()}  # each game's success metric (GameSpec)
ROLES = {g: game_spec(g).role_label for g in game_names()}  # who agent_0 is in each game


def tau2_metrics(results: dict, runs: list[dict], game: str = "tau2") -> list[str]:
    """tau^2 per domain on held-out tasks and users, with the decoy writes and slips behind the failures."""
    from scope_envs.games.tau2.data import DOMAINS

    domains = [d for d in DOMAINS[:3] if any(r["outcomes"]["heldout"].get(d) for r in runs if r["game"] == game)]
    lines = ["### tau^2 per domain (held-out tasks of the test split, held-out human-proxy users)", "",
             "| method | " + " | ".join(f"{d} success" for d in domains) + " | decoy writes | user slips | steps |",
             "|---|" + "---|" * (len(domains) + 3)]
    for method in results[game]:
        outs = [r["outcomes"]["heldout"] for r in runs if r["game"] == game and r["method"] == method]
        if not outs:
            continue
        mean = {k: np.mean([o[k] for o in outs]) for k in outs[0]}
        per = [mean[f"{d}_success"] / mean[d] if mean[d] else float("nan") for d in domains]
        lines.append(f"| {method} | " + " | ".join(f"{x:.3f}" for x in per)
                     + f" | {mean['decoy_executed']:.3f} | {mean['slips']:.3f} | {mean['steps']:.1f} |")
    return lines


def cooperbench_metrics(results: dict, runs: list[dict], game: str = "cooperbench") -> list[str]:
    """CooperBench's own figures: conflicts, talk, and the solo baseline on the same held-out tasks."""
    from scope_envs.games.cooperbench import world

    solo = np.mean([world.solo_success(t, 12) for t in world.tasks("heldout")])
    lines = ["### CooperBench metrics on held-out partners and tasks", "",
             f"Solo baseline (one agent that knows both features, within one teammate's 12 turns): {solo:.2f}.", "",
             "| method | cooperative success | own feature | partner feature | merge-conflict rate | message share |",
             "|---|---|---|---|---|---|"]
    for method in results[game]:
        outs = [r["outcomes"]["heldout"] for r in runs if r["game"] == game and r["method"] == method]
        if not outs:
            continue
        mean = {k: np.mean([o[k] for o in outs]) for k in outs[0]}
        lines.append(f"| {method} | {mean['success']:.3f} | {mean['teammate_feature']:.3f} | "
                     f"{mean['partner_feature']:.3f} | {mean['merge_conflict']:.3f} | {mean['message_share']:.3f} |")
    return lines


def _f(x, fmt: str = ".3f") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)


def _ci(ci) -> str:
    return "n/a" if not all(np.isfinite(ci)) else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _signed_ci(ci) -> str:
    return "n/a" if not all(np.isfinite(ci)) else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _cell(e: dict, key: str) -> str:
    xs = [s[key] for s in e["per_seed"].values() if s.get(key) is not None]
    return mean_sd(xs) if xs and len(xs) == len(e["per_seed"]) else "—"


def _plain(e: dict, key: str) -> str:
    return _f(e[key]) if isinstance(e.get(key), (int, float)) else "—"


def definitions() -> list[str]:
    """The pre-declared analysis, as the report states it once at the top."""
    return [
        "## Pre-declared analysis (fixed before any result; docs/architecture.md §4)", "",
        f"* **Floor and ceiling.** `{FLOOR}` (uniform legal play) is each game's floor, `{CEILING}` (PPO trained "
        "against the held-out behaviour model on *train* personas/tasks) its ceiling; headroom = mean(oracle) − "
        "mean(random) on held-out success. A game whose ceiling does not clear its floor (headroom <= 0, or the "
        f"{LEVEL:.0%} CI of oracle − random includes 0) **cannot judge methods**, and none of its claims is judged.",
        "* **normalized** = (x − mean(random)) / (mean(oracle) − mean(random)); **recovered** = (x − mean(frozen)) / "
        "(mean(oracle) − mean(frozen)); x = held-out success, per seed and its mean (the table shows mean ± sd of "
        "the per-seed values). Absent (—) where the rows they need are missing or the denominator is <= 0; "
        f"recovered also where the {LEVEL:.0%} CI of oracle − frozen reaches 0 (no gap to recover).",
        f"* **Confirmatory family**: each method against `{BASELINE}` on held-out success — Welch's t-test, "
        f"Holm-Bonferroni within this family only (significant: p_Holm < {ALPHA}). Every other pair is "
        "**exploratory**: reported in its own table, with Holm over the exploratory pairs, and no claim rests on it. "
        "The floor, ceiling and uncollapsed rows are in neither family.",
        f"* **CIs**: {LEVEL:.0%} percentile bootstrap, {BOOT_RESAMPLES} resamples, generator seed {BOOT_SEED}: of "
        "a method's mean held-out success, and of a difference of two means (each arm resampled on its own). "
        "A percentile bootstrap cannot reach beyond the observed seeds: with few seeds its intervals are too "
        "narrow (at 3 seeds a nominal 95% interval of a difference covers about 80% for normal data), so claims "
        "that need a CI to exclude 0 are lenient, and claims that need it to include 0 are strict, at small n.",
        f"* **Minimum detectable effect (MDE)**: the smallest true held-out difference to frozen that a two-sided "
        f"two-sample t-test at n seeds per arm (df = 2n − 2) detects with power {POWER} at alpha {ALPHA}/m, m = the "
        "confirmatory family's size (Holm's first, strictest step), with the pooled per-seed sd of the methods' "
        "held-out success (noncentral t). Given as an absolute effect and as a fraction of the headroom, with the "
        "power that Welch's test (lower at few seeds) has at that effect, by simulation.",
        "* **Aggregate metrics in the RL-benchmark convention** (Agarwal et al., NeurIPS 2021; the definitions of "
        "their `rliable` library), beside the tests above and not a substitute for them: the **IQM** (interquartile "
        "mean: the mean of the middle 50% of runs) of held-out success with its 95% **stratified bootstrap** CI "
        f"(runs resampled within each task, percentile, {BOOT_RESAMPLES} resamples, seed {BOOT_SEED}), and the "
        f"**probability of improvement** P(method > {BASELINE}) (the Mann-Whitney U over n_method × n_frozen, ties "
        "a half) with its CI (both sides resampled independently). Within a game the runs are its seeds; across "
        "games (*All games*) the games are the tasks, on normalized held-out success, each giving the same number "
        "of seeds. `performance_profiles.png`: the fraction of runs whose held-out success exceeds each threshold, "
        "per method, with pointwise 95% stratified-bootstrap bands.",
        "* **Claims** (also in `claims.json`, from the per-seed numbers):",
        *(f"  * *{CLAIMS[k]}* — {CLAIM_DEFINITIONS[k]}" for k in CLAIMS), ""]


def aggregate_table(table: dict) -> list[str]:
    """The game's IQM and probability of improvement over frozen (``stats.add_aggregates``'s fields)."""
    rows = [(m, e) for m, e in table.items() if e.get("heldout_iqm") is not None]
    if not rows:
        return []
    lines = ["", f"### Aggregate metrics (Agarwal et al. 2021): IQM and P(method > {BASELINE}) on held-out success",
             "", f"| method | IQM | IQM {LEVEL:.0%} CI (stratified bootstrap) | P(method > {BASELINE}) | "
             f"{LEVEL:.0%} CI | seeds |", "|---|---|---|---|---|---|"]
    for method, e in rows:
        ci = tuple(np.nan if v is None else v for v in e["heldout_iqm_ci"])
        p = e.get("p_improvement")
        p_ci = tuple(np.nan if v is None else v for v in e.get("p_improvement_ci", (None, None)))
        lines.append(f"| {method} | {_f(e['heldout_iqm'])} | {_ci(ci)} | {'—' if p is None else _f(p)} | "
                     f"{'—' if p is None else _ci(p_ci)} | {len(e['per_seed'])} |")
    return lines


def all_games(results: dict) -> list[str]:
    """Across games (the tasks), on normalized held-out success: ``stats.aggregate``."""
    agg = aggregate(results)
    if len(agg["games"]) < 2 or not agg["methods"]:
        return []
    lines = [f"## All games: normalized held-out success (games {', '.join(agg['games'])}; the first "
             f"{agg['runs_per_game']} seeds of each)", "",
             f"| method | IQM | {LEVEL:.0%} CI (stratified bootstrap) | P(method > {BASELINE}) | {LEVEL:.0%} CI |",
             "|---|---|---|---|---|"]
    for method, row in agg["methods"].items():
        p = row.get("p_improvement")
        lines.append(f"| {method} | {_f(row['iqm'])} | {_ci(row['iqm_ci'])} | {'—' if p is None else _f(p)} | "
                     f"{'—' if p is None else _ci(row['p_improvement_ci'])} |")
    return lines + ["", "Performance profiles of held-out success per method: `performance_profiles.png`.", ""]


def panel_families(game: str, table: dict, runs: list[dict]) -> list[str]:
    """Held-out panel success per simulator family (``panel_per_family``: a list per seed, in panel order;
    the family names from the runs' ``panel`` record)."""
    per = {m: [s[PANEL_FAMILIES] for s in e["per_seed"].values() if isinstance(s.get(PANEL_FAMILIES), list)]
           for m, e in table.items()}
    per = {m: np.asarray(v, float) for m, v in per.items() if v and len({len(x) for x in v}) == 1}
    if not per:
        return []
    width = max(v.shape[1] for v in per.values())
    names = next((r["panel"]["families"] for r in runs if r["game"] == game and isinstance(r.get("panel"), dict)
                  and len(r["panel"].get("families", [])) == width), [f"family {j + 1}" for j in range(width)])
    lines = ["", "### Held-out panel per simulator family (success, mean over seeds)", "",
             "| method | " + " | ".join(map(str, names)) + " | panel |", "|---|" + "---|" * (width + 1)]
    for method, v in per.items():
        cells = [f"{x:.3f}" for x in v.mean(0)] + ["—"] * (width - v.shape[1])
        lines.append(f"| {method} | " + " | ".join(cells) + f" | {_plain(table[method], PANEL)} |")
    return lines


def realism_lines(game: str, table: dict) -> list[str]:
    """The realism-paid users' own figures (``methods.REALISM_METRICS``), mean over seeds: the discriminator's
    accuracy in the final quarter of training, on its fit fold and on the held-back real persuadees, and the
    user's distance to the training part's real reply pairs at the start of training and at its end."""
    rows = {m: e for m, e in table.items() if all(k in e for k in REALISM_METRICS)}
    if not rows:
        return []
    return ["", "### Realism-paid users (the discriminator in the final quarter of training; the user's distance to "
                "the training part's real reply pairs, Jensen-Shannon bits, replying to the probe agent at the start "
                "and the end of training)", "",
            "| method | discriminator accuracy | on held-back real persuadees | distance at start | at end | seeds |",
            "|---|---|---|---|---|---|",
            *(f"| {m} | {e['discriminator_accuracy_end']:.3f} | {e['discriminator_held_back_accuracy_end']:.3f} | "
              f"{e['realism_distance_start']:.3f} | {e['realism_distance_end']:.3f} | {len(e['per_seed'])} |"
              for m, e in rows.items())]


def game_section(game: str, table: dict, results: dict, runs: list[dict], st: dict, game_claims_: list[dict]) -> list:
    unit = LABELS.get(game, "success")
    b = st["band"]
    lines = [f"## {game}: {unit} (agent_0 = the {ROLES.get(game, 'agent')})", ""]
    if not b["present"]:
        lines += [f"No floor/ceiling rows in this run (methods `{FLOOR}`, `{CEILING}`): normalized and recovered "
                  "scores, the MDE as a fraction of the headroom and claims 1, 2a, 2b are not computed.", ""]
    elif b["clears"]:
        lines += [f"Floor (random) {b['floor']:.3f}, ceiling (oracle) {b['ceiling']:.3f}: headroom "
                  f"{b['headroom']:+.3f}, {LEVEL:.0%} CI {_signed_ci(b['ci'])}. The ceiling clears the floor: this "
                  "game can judge methods.", ""]
    else:
        why = ("one seed cannot show its ceiling clearing its floor (run --seeds 2 or more)"
               if undefined_ci(b["ci"]) else "its ceiling does not clear its floor")
        lines += [f"**This game cannot judge methods**: {why} (random "
                  f"{b['floor']:.3f}, oracle {b['ceiling']:.3f}, headroom {b['headroom']:+.3f}, {LEVEL:.0%} CI "
                  f"{_signed_ci(b['ci'])}). The tables below are descriptive; no claim is judged on this game.", ""]
    panel = any(PANEL in s for e in table.values() for s in e["per_seed"].values())
    head = ["method", "train", "held-out", *(["panel"] if panel else []), f"held-out {LEVEL:.0%} CI", "gap",
            "normalized", "recovered", "policy entropy", "sim entropy", "seeds"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method, e in table.items():
        cells = [method, _cell(e, "train_success"), _cell(e, SUCCESS), *([_cell(e, PANEL)] if panel else []),
                 _ci(st["ci"][method]), _cell(e, "gap"), _cell(e, "normalized"), _cell(e, "recovered"),
                 _plain(e, "policy_entropy"), _plain(e, "sim_entropy"), str(len(e["per_seed"]))]
        lines.append("| " + " | ".join(cells) + " |")
    if panel:
        lines += ["", "*panel*: mean success on the held-out panel of simulator families (evaluation only)."]

    m = len(st["family"])
    conf = st["confirmatory"]
    lines += ["", f"### Confirmatory: each method against {BASELINE} on held-out success "
                  f"(m = {m} comparisons, declared before the run; Welch's t, Holm within these {m})", ""]
    if conf:
        lines += [f"| method | method − {BASELINE} | {LEVEL:.0%} CI (bootstrap) | t | p | p (Holm, m = {m}) | "
                  f"Cohen's d | significant ({ALPHA}, Holm) |", "|---|---|---|---|---|---|---|---|"]
        for r in conf:
            d = "n/a" if r["degenerate"] else f"{r['d']:+.2f}"
            lines.append(f"| {r['a']} | {r['diff']:+.3f} | {_signed_ci(r['ci'])} | {r['t']:.2f} | {r['p']:.2g} | "
                         f"{r['p_holm']:.2g} | {d} | {'yes' if r['p_holm'] < ALPHA else 'no'} |")
    else:
        lines.append(f"No confirmatory test ({BASELINE} not in this run, or fewer than 2 seeds per method).")
    frac = (f" = {st['mde_frac']:.0%} of the headroom" if np.isfinite(st["mde_frac"]) else
            " (no headroom to compare it with)")
    lines += ["", f"Minimum detectable effect at n = {st['n']} seeds per method (power {POWER}, two-sided alpha "
                  f"{ALPHA}/{max(1, m)}, pooled per-seed sd {_f(st['sd'])}): "
                  + (f"{st['mde']:.3f} in held-out success (d = {st['mde_d']:.2f}){frac}. Differences to frozen "
                     "smaller than this are likely to be missed at this number of seeds; Welch's test, which the "
                     f"table uses, has power {st['mde_welch_power']:.2f} at that effect (simulated)."
                     if np.isfinite(st["mde"]) else "n/a (fewer than 2 seeds per method).")]

    lines += aggregate_table(table)

    explo = st["exploratory"]
    if explo:
        lines += ["", f"### Exploratory: every other pair of methods ({len(explo)} pairs; Welch's t, Holm within "
                      "these pairs; no claim rests on them)", "",
                  "| A | B | A − B | t | p | p (Holm, exploratory) | Cohen's d |", "|---|---|---|---|---|---|---|"]
        for r in sorted(explo, key=lambda r: r["p"]):
            d = "n/a" if r["degenerate"] else f"{r['d']:+.2f}"
            lines.append(f"| {r['a']} | {r['b']} | {r['diff']:+.3f} | {r['t']:.2f} | {r['p']:.2g} | "
                         f"{r['p_holm']:.2g} | {d} |")
    if any(r["degenerate"] for r in conf + explo):
        lines += ["", "Cohen's d is n/a where one method's held-out score did not vary across seeds (sd ≈ 0): "
                      "d divides by a standard deviation that is then the other method's alone, and it "
                      "grows without bound as that one shrinks, so it says nothing about the size of the effect."]

    from scope_envs.bench.entrants import report_lines as entrant_lines  # --method rows: their own tests

    lines += entrant_lines(game, st)
    lines += panel_families(game, table, runs)

    grouped = [mt for mt, e in table.items() if DIAGNOSTICS[0] in e]
    if grouped:
        lines += ["", "### Collapse diagnostics (grouped rollouts; mean over the final quarter of training)", "",
                  "| method | zero-variance groups | all-fail groups | all-success groups |", "|---|---|---|---|",
                  *(f"| {mt} | {table[mt]['zero_std_group_frac']:.3f} | {table[mt]['all_fail_group_frac']:.3f} | "
                    f"{table[mt]['all_success_group_frac']:.3f} |" for mt in grouped)]
    lines += realism_lines(game, table)
    extras = game_spec(game).report if game in game_names() else None  # the game's own figures (GameSpec.report)
    if extras:
        lines += ["", *load(extras)(results, runs, game)]
    verdict = {True: "**held**", False: "**not held**", None: "**not judged**"}
    lines += ["", "### The paper's claims, judged from the per-seed numbers (definitions: Pre-declared analysis)",
              ""]
    for c in game_claims_:
        lines += [f"* {c['claim']}: {verdict[c['held']]}. {c['evidence']}."]
    lines += ["", f"Plots: `{game}_learning_curves.png`, `{game}_entropy.png`.", ""]
    return lines


def write_report(out: Path, results: dict, runs: list[dict], settings: dict, wall_s: float,
                 stats_by_game: dict | None = None, trained_here: list[dict] | None = None) -> None:
    """report.md. ``trained_here``: the runs of this benchmark (default ``runs``; with ``--against`` the
    reference's were trained elsewhere), whose clocks and speeds the settings and the throughput line read."""
    stats_by_game = stats_by_game or {g: game_stats(t) for g, t in results.items()}
    here = runs if trained_here is None else trained_here
    lines = ["# scope-envs bench", "", "| setting | value |", "|---|---|",
             *(f"| {k} | {', '.join(map(str, v)) if isinstance(v, list) else v} |" for k, v in settings.items()),
             f"| wall time | {wall_s:.0f} s (this process; with --resume, what it ran) |",
             f"| the runs' own clocks | {sum(r.get('wall_s', 0.0) for r in here):.0f} worker-s |", "",
             "Success is each game's success metric: " + ", ".join(
                 f"for {g} {game_spec(g).success_note or 'the ' + LABELS[g]}" for g in results if g in LABELS)
             + ". *train* is measured against the "
             "simulator(s) the method trained with (untrained: the frozen simulator), *held-out* against "
             "`<game>-heldout`, never used in training. Means ± sd across seeds; entropies in nats "
             "(policy: `agent_0`'s per-decision entropy against its training simulator; sim: entropy of the "
             "user's act frequencies there). `agent_0` is the " + ", the ".join(
                 f"{ROLES[g]} in {g}" for g in results if g in ROLES) + ".", "", *definitions()]
    for game, table in results.items():
        st = stats_by_game[game]
        from scope_envs.bench.entrants import builtin  # the claims are the built-in rows' alone

        lines += game_section(game, table, results, runs, st, game_claims(game, builtin(table), st))
    lines += all_games(results)
    speeds = [r["env_steps_per_s"] for r in here
              if r.get("env_steps_per_s")]
    if speeds:
        lines += [f"Trainer throughput during the runs trained here (one core each, with the learning-curve "
                  f"evaluations included): median {np.median(speeds):.0f} env steps/s.", ""]
    from scope_envs.files import write_atomic

    write_atomic(out / "report.md", "\n".join(lines))
