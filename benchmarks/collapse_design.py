"""Which collapsed simulator costs at the plateau: the calibration's known answer K2 on two designs, per game.

Issue 46 asks that training against the game's collapsed simulator cost at least ``GAP_SHARE`` (0.10) of the
band, with the CI above 0, once the learner trains to its plateau. This runs the calibration
(``scope_envs.bench.calibration``: the users are the game's training-side reference model on held-out cards; no
held-out proxy is read) at each game's plateau budget (``benchmarks/results/plateau_budget/plateau_budget.json``,
the ``uncollapsed`` row's), with the floor, the ceiling and ``frozen`` against three dials: ``none`` (no defect),
``combined`` (today's frozen simulator) and ``homogeneous`` (the same defects on a few fixed cards). The rule,
declared in ``calibration.py`` before this ran: keep ``combined`` where it opens the gap, else take
``homogeneous`` where it does; where neither does, the game has no costly collapsed simulator yet, said so.
Outputs: ``OUT/calibration.{json,md}``, a figure per game, ``OUT/collapse_design.json`` (the choice per game).

    python benchmarks/collapse_design.py
    python benchmarks/collapse_design.py --games p4g --world no-interactions      # the design's sensitivity
    python benchmarks/collapse_design.py --games p4g --seeds 2 --steps 2000 --out /tmp/cd
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from scope_envs.arguments import count, game_name, output_path
from scope_envs.bench import calibration
from scope_envs.bench.executors import BenchFailure
from scope_envs.bench.presets import GAMES
from scope_envs.bench.worlds import world_names
from scope_envs.files import OutputError, write_json

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "collapse_design"
PLATEAU = HERE / "results" / "plateau_budget" / "plateau_budget.json"
DESIGNS = ("combined", "homogeneous")  # in the declared order of preference


def plateau_budgets(path: Path) -> dict[str, int]:
    """Each game's methods' budget at its plateau (the ``uncollapsed`` row's answer); where the ladder found none,
    its highest rung judged (``plateau_budget.json`` flags it)."""
    return {game: b["methods"] for game, b in json.loads(path.read_text())["budgets"].items()}


def choose(analysis: dict) -> dict:
    """Per game: whether each design opened its gap, and the design the rule takes (None: neither)."""
    out = {}
    for game, a in analysis.items():
        opened = {d: a["dials"].get(d, {}).get("opened") for d in DESIGNS}
        share = {d: a["dials"].get(d, {}).get("gap_share") for d in DESIGNS}
        out[game] = {"opened": opened, "gap_share": share,
                     "chosen": next((d for d in DESIGNS if opened[d]), None)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", nargs="+", type=game_name, default=list(GAMES), help="the games (default: all of them)")
    ap.add_argument("--seeds", type=count(64), default=calibration.DEFAULT_SEEDS,
                    help=f"seeds per cell (default {calibration.DEFAULT_SEEDS}; at most 64)")
    ap.add_argument("--steps", type=count(100_000_000), default=None,
                    help="one budget for every game instead of the plateau budgets (a quick check of this script)")
    ap.add_argument("--eval-episodes", type=count(100_000), default=calibration.EVAL_EPISODES,
                    help=f"evaluation episodes per side (default {calibration.EVAL_EPISODES}, at most 100_000)")
    ap.add_argument("--jobs", type=count(256), default=os.cpu_count() or 1,
                    help="worker processes (default: the cores, at most 256)")
    ap.add_argument("--world", default=None,
                    help="a variant of the games' training-side world (GameSpec.worlds; p4g: no-interactions), "
                         "users and simulators alike: the design's sensitivity to that assumption (default: as "
                         "shipped; the output goes to OUT-<world>)")
    ap.add_argument("--resume", action="store_true", help="keep the runs already in OUT/runs")
    ap.add_argument("--out", type=output_path, default=OUT,
                    help="the output folder (default: the committed benchmarks/results/collapse_design; give "
                         "another for a trial run)")
    args = ap.parse_args()
    if len(set(args.games)) != len(args.games):
        ap.error(f"argument --games: each game once, got {' '.join(args.games)}")
    if args.world is not None:
        for game in args.games:
            names = world_names(game)
            if args.world not in names:
                ap.error(f"argument --world: {game} has no world {args.world!r} (its worlds: "
                         f"{', '.join(names) or 'none'})")
        if args.out == OUT:
            args.out = OUT.with_name(f"{OUT.name}-{args.world}")
    steps = args.steps if args.steps is not None else plateau_budgets(PLATEAU)
    try:
        analysis = calibration.run(args.games, seeds=args.seeds, steps=steps, eval_episodes=args.eval_episodes,
                                   out=args.out, jobs=args.jobs, resume=args.resume,
                                   only_dials=["none", *DESIGNS], methods=("frozen",), world=args.world)
    except (BenchFailure, OutputError) as e:  # failed cells (named), a folder that cannot hold the runs
        sys.exit(f"collapse_design: {e}")
    choice = choose(analysis)
    write_json(args.out / "collapse_design.json", {"steps": steps, "seeds": args.seeds, "designs": list(DESIGNS),
                                                   "world": args.world or "as shipped", "games": choice})
    print((args.out / "calibration.md").read_text())
    for game, c in choice.items():
        shares = ", ".join(f"{d} {s:+.2f}" if s is not None else f"{d} n/a" for d, s in c["gap_share"].items())
        print(f"{game}: gap share of the band {shares}; the collapsed design: {c['chosen'] or 'none costs'}")


if __name__ == "__main__":
    main()
