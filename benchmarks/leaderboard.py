"""The leaderboard of a benchmark output folder: every row, built-in and entrant, per game, as Markdown.

    python benchmarks/leaderboard.py benchmarks/results/default [--out FILE.md]

Columns: held-out success, normalized, recovered and panel success, each the mean over seeds with its 95%
percentile-bootstrap CI over the seeds (``scope_envs.bench.stats.bootstrap_ci``: 10,000 resamples, seed 0), and
the number of seeds; rows sorted by held-out success within each game, the band's rows (random, oracle) marked.
Reads ``results.json`` only (the per-seed values), so any folder ``scope-envs bench`` wrote will do.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from scope_envs.arguments import output_file
from scope_envs.bench.entrants import builtin_names
from scope_envs.bench.stats import CEILING, FLOOR, bootstrap_ci


def cell(values) -> str:
    xs = [v for v in values if v is not None]
    if not xs:
        return "—"
    lo, hi = bootstrap_ci(xs)
    ci = "" if not np.isfinite(lo) else f" [{lo:.3f}, {hi:.3f}]"
    return f"{np.mean(xs):.3f}{ci}"


def not_results(results) -> str | None:
    """Why ``results`` is not a ``scope-envs bench`` results.json (game -> row -> per_seed -> seed -> held-out
    success), None when it is one."""
    if not isinstance(results, dict) or not results:
        return "not a JSON object of games"
    for game, table in results.items():
        if not isinstance(table, dict):
            return f"its {game!r} is not a table of rows"
        for method, row in table.items():
            seeds = row.get("per_seed") if isinstance(row, dict) else None
            if not isinstance(seeds, dict) or not seeds or not all(
                    isinstance(s, dict) and isinstance(s.get("heldout_success"), (int, float)) for s in seeds.values()):
                return f"its {game} row {method!r} has no per-seed held-out success"
    return None


def leaderboard(results: dict) -> str:
    lines = []
    for game, table in results.items():
        lines += [f"**{game}**", "", "| row | held-out success | normalized | recovered | panel | seeds |",
                  "|---|---|---|---|---|---|"]
        order = sorted(table, key=lambda m: -np.mean([s["heldout_success"] for s in table[m]["per_seed"].values()]))
        for method in order:
            seeds = list(table[method]["per_seed"].values())
            tag = " (floor)" if method == FLOOR else " (ceiling)" if method == CEILING else \
                "" if method in builtin_names() else " (entrant)"
            lines.append(f"| {method}{tag} | {cell(s['heldout_success'] for s in seeds)} | "
                         f"{cell(s.get('normalized') for s in seeds)} | {cell(s.get('recovered') for s in seeds)} | "
                         f"{cell(s.get('panel_success') for s in seeds)} | {len(seeds)} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a scope-envs bench output folder (its results.json)")
    ap.add_argument("--out", type=output_file, default=None,
                    help="write the Markdown to this file (its folder is created; default: print it)")
    args = ap.parse_args(argv)
    path = args.folder / "results.json"
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        ap.error(f"argument folder: cannot read {path}: {e}")
    problem = not_results(results)
    if problem is not None:
        ap.error(f"argument folder: {path} is not a scope-envs bench results.json ({problem}); give a folder the "
                 "benchmark wrote")
    text = leaderboard(results)
    if args.out:
        from scope_envs.files import write_atomic

        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
