"""``scope-envs study analyze``: the study's numbers as the SCOPE paper reports its human study (Table 3).

Measures (completed sessions only): the outcome question (P4G: ``donation``, the person's self-reported
donation, $0-2; tau^2: ``solved``, 1 when they say their issue was solved), the outcome the game recorded
in the chat (P4G: ``stated_in_chat``, the amount stated; tau^2: ``task_success``, the tau^2 evaluation's
reward 1) and every survey item (1-7). Per condition and measure: N, the mean and its 95% percentile bootstrap CI. Against the baseline
condition: Welch's t, Cohen's d (the average of the two variances) and the p-value with Holm's correction
across the whole family (every other condition x every measure). The statistics are the benchmark's
(``scope_envs.bench.stats``), so a study and a benchmark run are read the same way.

Beside the people, the same policies on the held-out human proxies (``<game>-heldout``: P4G's intended and
actual donation, tau^2's task success) and on the held-out panel of six simulator families: does a proxy order the conditions as
people do? With three or more conditions, the Spearman rank correlation of the condition means says it in
one number.

``analysis.json`` is strict JSON: a number that does not exist (the mean of no session, the CI of one, the
correlation of fewer than three conditions) is ``null``, never ``NaN`` (``scope_envs.files.jsonable``).
The in-chat measure reads the game's outcome key named in its label, which is also the export's column
(P4G: ``outcome_intended``, the amount the person chose from the list in their final message; the export's
``outcome_stated`` is a 0/1 flag, an amount was stated, not dollars).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from scope_envs.bench.stats import bootstrap_ci, holm, welch
from scope_envs.files import jsonable, save_figure, write_atomic, write_json
from scope_envs.study.config import StudyConfig
from scope_envs.study.games import spec
from scope_envs.study.store import Store, StoreError, outcome_of, sqlite_file

ALPHA = 0.05


def collect(cfg: StudyConfig, store: Store | None = None) -> dict[str, dict[str, list[float]]]:
    """condition -> measure -> values of the completed sessions. ``StoreError`` for an SQLite file that does not
    exist: the study was never served (opening it would leave an empty database in the folder)."""
    from scope_envs.study.engine import check_assignment

    if store is None:
        path = sqlite_file(cfg.database_url)
        if path is not None and not path.exists():
            raise StoreError(f"no database yet: {path} does not exist; serve the study first "
                             f"(scope-envs study serve --config {cfg.folder})")
        store = Store(cfg.database_url, create=False)
    check_assignment(cfg, store, slots=False)  # a renamed condition's people are not left out in silence
    answers = store.answers()
    data = {c.name: {m: [] for m in measures(cfg)} for c in cfg.conditions}
    for row in store.all_sessions():
        if row.stage != "complete" or row.condition not in data:
            continue
        a = answers.get(row.id, {})
        values = dict(a)
        outcome = outcome_of(row)
        measure, key = spec(cfg).in_chat
        if key in outcome:
            values[measure] = outcome[key]
        for m in measures(cfg):
            if m in values:
                try:
                    data[row.condition][m].append(float(values[m]))
                except (TypeError, ValueError):
                    raise StoreError(f"session {row.id}'s {m} is {str(values[m])[:40]!r}, not a number: the database "
                                     "holds a value the study server did not write") from None
    return data


def measures(cfg: StudyConfig) -> list[str]:
    g = spec(cfg)
    return [g.outcome_item, g.in_chat[0], *[s["id"] for s in cfg.survey]]


def label(cfg: StudyConfig, measure: str) -> str:
    g = spec(cfg)
    labels = {g.outcome_item: g.outcome_label, g.in_chat[0]: g.in_chat_label}
    return labels.get(measure) or measure.replace("_", " ").capitalize() + " (1-7)"


def summarize(cfg: StudyConfig, data: dict, baseline: str, resamples: int = 10_000) -> dict:
    cells = {c: {m: {"n": len(v), "mean": float(np.mean(v)) if v else float("nan"),
                     "ci": list(bootstrap_ci(v, resamples=resamples))} for m, v in per.items()}
             for c, per in data.items()}
    tests = []
    for c in data:
        if c == baseline:
            continue
        for m in measures(cfg):
            x, y = data[c][m], data[baseline][m]
            if len(x) >= 2 and len(y) >= 2:
                tests.append({"condition": c, "measure": m, **welch(x, y)})
    family = sum(1 for c in data if c != baseline) * len(measures(cfg))
    for t, adj in zip(tests, holm([t["p"] for t in tests], m=max(family, len(tests)))):
        t["p_holm"] = adj
    return {"baseline": baseline, "cells": cells, "tests": tests, "family_size": family}


def proxies(cfg: StudyConfig, episodes: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Each condition's policy on the held-out human proxies and on the held-out panel (evaluation only)."""
    import torch

    from scope_envs.bench.methods import evaluate_panel, panel_episodes
    from scope_envs.study.agents import load_policy
    from scope_envs.train.act_ppo import evaluate

    torch.set_num_threads(1)
    g = spec(cfg)
    out = {}
    for c in cfg.conditions:
        trainer = load_policy(cfg, c)
        ho = evaluate(trainer, f"{cfg.game}-heldout", episodes, seed=2_000_000 + seed, num_envs=8, **g.env_kwargs())
        pa = evaluate_panel(trainer, cfg.game, panel_episodes(episodes), seed)
        out[c.name] = {f"heldout_{g.in_chat[1]}": ho["outcome"][g.in_chat[1]], "heldout_success": ho["success"],
                       "panel_success": pa["success"]}
    return out


def spearman(a: list[float], b: list[float]) -> float:
    from scipy import stats

    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def correlations(cfg: StudyConfig, summary: dict, proxy: dict | None) -> dict[str, float] | None:
    """Per proxy column, the Spearman rank correlation of the condition means with the people's outcome (nan
    where it does not exist); None without proxies."""
    if not proxy:
        return None
    names = [c.name for c in cfg.conditions]
    people = [summary["cells"][n][measures(cfg)[0]]["mean"] for n in names]
    return {k: spearman(people, [proxy[n][k] for n in names]) for k in proxy[names[0]]}


def _num(x: float) -> str:
    """A number of the report, or "–" where there is none (no session, a correlation that is not defined)."""
    return f"{x:.2f}" if np.isfinite(x) else "–"


def _ci(cell: dict) -> str:
    if cell["n"] == 0:
        return "–"
    lo, hi = cell["ci"]
    ci = "" if np.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
    return f"{cell['mean']:.2f}{ci}"


def plot(cfg: StudyConfig, summary: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    names = [c.name for c in cfg.conditions]
    for m in measures(cfg):
        cells = [summary["cells"][n][m] for n in names]
        means = np.array([c["mean"] for c in cells])
        lo = np.array([c["ci"][0] for c in cells])
        hi = np.array([c["ci"][1] for c in cells])
        err = np.nan_to_num(np.vstack([means - lo, hi - means]), nan=0.0)
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 3.4))
        colors = ["#98a2b3" if n == summary["baseline"] else "#3b6fd8" for n in names]
        ax.bar(names, np.nan_to_num(means), yerr=err, capsize=5, color=colors)
        ax.set_ylabel(label(cfg, m))
        ax.set_title(f"{label(cfg, m)}: mean and 95% bootstrap CI", fontsize=10)
        if m not in measures(cfg)[:2]:
            ax.set_ylim(1, 7)
        for i, c in enumerate(cells):
            ax.text(i, 0.02, f"n={c['n']}", ha="center", va="bottom", transform=ax.get_xaxis_transform(), fontsize=8)
        fig.tight_layout()
        name = f"study_{m}.png"
        save_figure(fig, out / name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files


def report(cfg: StudyConfig, summary: dict, proxy: dict | None, charts: list[str]) -> str:
    names = [c.name for c in cfg.conditions]
    ms = measures(cfg)
    base = summary["baseline"]
    sig = {(t["condition"], t["measure"]): t["p_holm"] < ALPHA for t in summary["tests"]}
    lines = [f"# {html.escape(cfg.title, quote=False)}: human study", "",  # the title is text, not HTML
             f"Game `{cfg.game}`; completed sessions per condition: "
             + ", ".join(f"{n} {summary['cells'][n][ms[0]]['n']}" for n in names)
             + f". Mean [95% bootstrap CI]; `*`: differs from the baseline `{base}` by Welch's t, p < {ALPHA} after "
               f"Holm's correction across {summary['family_size']} comparisons.", "",
             "| Condition | " + " | ".join(label(cfg, m) for m in ms) + " |",
             "|---|" + "---|" * len(ms)]
    for n in names:
        cells = [_ci(summary["cells"][n][m]) + (" *" if sig.get((n, m)) else "") for m in ms]
        lines.append(f"| {n}{' (baseline)' if n == base else ''} | " + " | ".join(cells) + " |")
    lines += ["", f"## Tests against `{base}`", "",
              "| Condition | Measure | Difference | Welch t | p | p (Holm) | Cohen's d |", "|---|---|---|---|---|---|---|"]
    for t in summary["tests"]:
        lines.append(f"| {t['condition']} | {t['measure']} | {t['diff']:+.3f} | {t['t']:.2f} | {t['p']:.4f} | "
                     f"{t['p_holm']:.4f} | {t['d']:.2f} |")
    if not summary["tests"]:
        lines.append("| – | no comparison has at least two sessions in both arms | | | | | |")
    if proxy:
        people = [summary["cells"][n][ms[0]]["mean"] for n in names]
        keys = list(proxy[names[0]])
        lines += ["", "## People and the held-out proxies, the same policies", "",
                  f"| Condition | People: {label(cfg, ms[0])} | " + " | ".join(keys) + " |", "|---|---|" + "---|" * len(keys)]
        for n, p in zip(names, people):
            lines.append(f"| {n} | {_num(p)} | " + " | ".join(_num(proxy[n][k]) for k in keys) + " |")
        rho = correlations(cfg, summary, proxy)
        lines += ["", f"`heldout_*`: the held-out human proxies (`{cfg.game}-heldout`); `panel_success`: the held-out "
                  "panel of six simulator families (the game's default options). "
                  f"Spearman rank correlation of the condition means with the people's {ms[0]}: "
                  + ", ".join(f"{k} {_num(v)}" for k, v in rho.items())
                  + " (–: fewer than three conditions with sessions, or a column that does not vary)."]
    measure, key = spec(cfg).in_chat
    lines += ["", f"`{measure}`: the game's outcome `{key}` (export.csv's `outcome_{key}`)"
              + (": the amount chosen from the list in the final message, not amounts typed in words; "
                 "`outcome_stated` is a 0/1 flag (an amount was stated), not dollars" if spec(cfg).amounts else "")
              + "."]
    lines += ["", "Charts: " + ", ".join(f"![{c}]({c})" for c in charts), ""]
    return "\n".join(lines)


def analyze(cfg: StudyConfig, baseline: str | None = None, proxy_episodes: int = 200, resamples: int = 10_000,
            out: str | Path | None = None) -> str:
    """Write ``report.md``, ``analysis.json`` and the charts into ``out`` (the study folder); returns the report."""
    from scope_envs.files import check_output_dir

    data = collect(cfg)  # the database first: StoreError when it cannot be opened
    out = check_output_dir(out or cfg.folder)
    summary = summarize(cfg, data, baseline or cfg.baseline, resamples)
    proxy = proxies(cfg, proxy_episodes) if proxy_episodes else None
    charts = plot(cfg, summary, out)
    text = report(cfg, summary, proxy, charts)
    write_atomic(out / "report.md", text)
    # strict JSON: a mean, CI, t or p that is not a finite number (no session, one session) is null, never NaN
    rho = correlations(cfg, summary, proxy)
    write_json(out / "analysis.json", jsonable({**summary, "proxies": proxy, "spearman": rho}))
    return text
