"""SCOPE's simulator-reward ablation at the act level: co-training under each user reward.

For every game, ``cotrain`` is trained SCOPE's way (GRPO on groups of G
episodes per scenario) with the co-trained user paid ``adversarial``,
``cooperative`` or ``curriculum`` (``scope_envs.core.rewards``), then measured:
train-side success (against the co-trained user), the share of those episodes
in which the agent got nothing (p4g: the persuadee gave $0, its refusal;
tau2: the task failed; cooperbench: nothing achieved), the collapse
diagnostics over the final quarter of training, and held-out success. Each
mode is one ``scope-envs bench`` run (``OUT/<mode>/``, resumed: a run already
there for these settings and this code is kept, any other run is made); the
table goes to ``OUT/ablation.md`` and ``OUT/ablation.json``. ``OUT`` defaults
to the committed results, ``benchmarks/results/ablation``.

    python benchmarks/user_reward_ablation.py [--out benchmarks/results/ablation] [--seeds 3] [--group-size 8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scope_envs import bench
from scope_envs.arguments import count, output_path
from scope_envs.bench.executors import BenchFailure
from scope_envs.core.rewards import SIMULATOR_REWARDS
from scope_envs.files import OutputError, write_atomic

OUT = Path(__file__).resolve().parent / "results" / "ablation"

COLUMNS = [("train_success", "train"), ("train_zero_score_frac", "agent got nothing"),
           ("zero_std_group_frac", "zero-variance groups"), ("all_fail_group_frac", "all-fail groups"),
           ("all_success_group_frac", "all-success groups"), ("heldout_success", "held-out")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=output_path, default=OUT, help=f"the output folder (default {OUT})")
    ap.add_argument("--games", nargs="+", default=list(bench.GAMES), choices=bench.GAMES,
                    help="the games (default: all of them)")
    ap.add_argument("--seeds", type=count(bench.runner.MAX_SEEDS), default=3,
                    help=f"seeds per run (default 3, at most {bench.runner.MAX_SEEDS})")
    ap.add_argument("--group-size", type=count(bench.runner.MAX_GROUP_SIZE), default=8,
                    help=f"GRPO's episodes per scenario (default 8, 2 to {bench.runner.MAX_GROUP_SIZE})")
    args = ap.parse_args(argv)
    if args.group_size < 2:
        ap.error("argument --group-size: the curriculum reward needs groups of at least 2")
    rows = []
    for mode in SIMULATOR_REWARDS:
        # resumed, never skipped: a results.json left by other --games or --seeds is not this table's
        try:
            results = bench.run(games=args.games, methods=["cotrain"], seeds=args.seeds, out=args.out / mode,
                                user_reward=mode, advantage="grpo", group_size=args.group_size, resume=True)
        except (BenchFailure, OutputError) as e:  # failed runs (named), a folder that cannot hold the runs
            sys.exit(f"user_reward_ablation: {e}")
        for game in args.games:
            entry = results[game]["cotrain"]
            rows.append({"game": game, "user_reward": mode, **{k: entry[k] for k, _ in COLUMNS}})
    write_atomic(args.out / "ablation.json", json.dumps(rows, indent=1))
    lines = ["| game | user reward | " + " | ".join(label for _, label in COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for row in sorted(rows, key=lambda r: (r["game"], SIMULATOR_REWARDS.index(r["user_reward"]))):
        lines.append(f"| {row['game']} | {row['user_reward']} | "
                     + " | ".join(f"{row[k]:.3f}" for k, _ in COLUMNS) + " |")
    write_atomic(args.out / "ablation.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
