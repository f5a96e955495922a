"""What the portable kernels cost: one benchmark run, trained and evaluated under each kernel level.

``scope-envs bench`` pins numpy's, OpenBLAS's, ATen's and MKL's kernels to the x86-64 baseline
(``scope_envs.kernels``, level ``portable``) so that records travel between CPUs. This times the same runs
(``methods.run_one``: a trained row with a learned user, whose behaviour clone runs in torch, and one without)
in a fresh process per level, the levels alternating over ``--rounds``, and reports the wall time of each
level and its ratio to the baseline, ``native`` (each library at this CPU's width), with
whether each level's records equal the baseline's and the share of the wall time spent in the networks' forward and
backward passes (``numpy_ac.mlp`` and ``mlp_backward``: their matrix products, which each kernel level runs at its
own width, and the passes around them).

    python benchmarks/kernel_speed.py
    python benchmarks/kernel_speed.py --runs p4g:frozen --steps 2000 --rounds 1 --out /tmp/k.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from baseline_tree import child_output  # (the scripts' folder is on the path, as when one is run)
from scope_envs import kernels
from scope_envs.arguments import count, output_file
from scope_envs.files import write_json

OUT = Path(__file__).resolve().parent / "results" / "kernel_speed.json"
BASELINE = "native"
CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[5])
from kernel_speed import use_passes
from scope_envs import kernels
from scope_envs.bench.methods import run_one
from scope_envs.train import numpy_ac
game, method, steps, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spent = [0.0]  # in the networks' passes (numpy_ac's forward and backward: the products and what goes with them)
def timed(fn):
    def passes(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t
    return passes
use_passes(timed(numpy_ac.mlp), timed(numpy_ac.mlp_backward))
t0 = time.perf_counter()
record = run_one(game, method, 0, steps, episodes, 0, 10)
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "networks_s": spent[0], "metrics": record["metrics"], "kernels": kernels.describe(),
                  "in_effect": kernels.in_effect(kernels.level())}))
"""


def use_passes(mlp, mlp_backward) -> None:
    """Make ``mlp`` and ``mlp_backward`` the networks' forward and backward passes: ``numpy_ac``'s names and those of
    the modules that took them at import (a wrapper that times or records them reaches every caller)."""
    from scope_envs.train import act_ppo, behaviour_clone, numpy_ac

    numpy_ac.mlp, numpy_ac.mlp_backward = mlp, mlp_backward
    for user in (act_ppo, behaviour_clone):
        user.mlp, user.mlp_backward = mlp, mlp_backward


def child(level: str, game: str, method: str, steps: int, episodes: int) -> dict:
    out = child_output([sys.executable, "-c", CHILD, game, method, str(steps), str(episodes),
                        str(Path(__file__).resolve().parent)], kernels.environment(level),
                       f"the {level} run of {game}:{method}")
    return json.loads(out.strip().splitlines()[-1])


def run_spec(text: str) -> tuple[str, str]:
    """An argparse type: ``GAME:METHOD``, a built-in row of the benchmark (a game's method where it has it)."""
    from scope_envs.bench.methods import EXTRA_METHODS, METHODS, available
    from scope_envs.bench.presets import GAMES

    game, _, method = text.partition(":")
    if not method:
        raise argparse.ArgumentTypeError(f"expected GAME:METHOD (e.g. p4g:cotrain), got {text!r}")
    if game not in GAMES or method not in METHODS + EXTRA_METHODS or not available(game, method):
        raise argparse.ArgumentTypeError(f"{text} is not a built-in row (games {', '.join(GAMES)}; methods "
                                         f"{', '.join(METHODS + EXTRA_METHODS)}, where the game has them)")
    return game, method


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", type=run_spec, default=[("p4g", "cotrain"), ("cooperbench", "frozen")],
                    help="GAME:METHOD runs to time (default p4g:cotrain cooperbench:frozen)")
    ap.add_argument("--steps", type=count(10_000_000), default=20_000, help="decisions per run (at most 10_000_000)")
    ap.add_argument("--eval-episodes", type=count(100_000), default=500, help="episodes per side (at most 100_000)")
    ap.add_argument("--rounds", type=count(100), default=2, help="rounds, the levels alternating (at most 100)")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON (default {OUT})")
    args = ap.parse_args()
    rows = []
    for game, method in args.runs:
        times = {level: [] for level in kernels.LEVELS}
        shares = {level: [] for level in kernels.LEVELS}
        records = {}
        for _ in range(args.rounds):
            for level in (BASELINE, *(lv for lv in kernels.LEVELS if lv != BASELINE)):
                r = child(level, game, method, args.steps, args.eval_episodes)
                times[level].append(r["wall_s"])
                shares[level].append(r["networks_s"] / r["wall_s"])
                records[level] = r
        wall = {lv: float(np.median(t)) for lv, t in times.items()}
        row = {"run": f"{game}:{method}", "wall_s": wall,
               "ratio": {lv: wall[lv] / wall[BASELINE] for lv in wall},
               "networks_share": {lv: float(np.median(s)) for lv, s in shares.items()},
               "same_record_as_native": {lv: records[lv]["metrics"] == records[BASELINE]["metrics"] for lv in wall},
               "kernels": {lv: records[lv]["kernels"] for lv in records},
               "in_effect": {lv: records[lv]["in_effect"] for lv in records}}
        rows.append(row)
        print(f"{row['run']}: " + ", ".join(f"{lv} {wall[lv]:.1f} s ({row['ratio'][lv]:.2f}x)" for lv in wall),
              flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, {"steps": args.steps, "eval_episodes": args.eval_episodes, "rounds": args.rounds,
                          "baseline": BASELINE, "rows": rows})


if __name__ == "__main__":
    main()
