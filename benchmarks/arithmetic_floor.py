"""The networks' matrix products as a floor under a row's time: how much faster any engine could run the row.

A benchmark row trains and evaluates its seeds as one computation (``methods.run_row``, one block of
``scope-envs bench``). This runs a row in a fresh process per kernel level (``scope_envs.kernels``) with every
matrix product of the networks' passes recorded by its operands' shapes and layouts (``numpy_ac.mlp`` and
``mlp_backward``: the rollout's and the evaluation's forward passes, the update's forward and backward passes),
then, in the same process, times each recorded product alone (its shapes, layouts and kernels, random operands,
the best of three rounds) and sums count x time. It reports, per row and level:

* ``products_s``: the row's products alone, at that level's kernels; ``gflops``: their FLOPs over that time;
* ``products_share``: ``products_s`` over the row's wall time;
* ``bound``: wall time over ``products_s``: how many times faster the row could run if nothing but its products
  took time (no env, no Python, no elementwise pass, no evaluation envs), with the same products at the same
  kernels. Multiplied by the row's measured speed-up over the one-seed-at-a-time trainer on numpy's passes
  (``fused_speed.py``'s last column, the same machine and kernels), it bounds what any engine doing this arithmetic
  could reach against that baseline.

The products are the algorithm's (PPO's epochs over its minibatches, 64-unit MLPs) and the kernels' (the
``portable`` level's OpenBLAS runs SSE without fused multiply-adds; ``native`` the CPU's widest, with them), not
the engine's: an engine can only remove what lies around them. ``--default-run`` measures every block of the
default run so (its seeds in blocks of eight, its budgets and evaluation sizes) at the portable kernels, ``--jobs``
at once, and sums them: the products' worker-seconds over the cores are the least wall time any engine doing the
same arithmetic at those kernels could take (the behaviour clone's passes, in torch, are not counted: the floor
is, if anything, low).

    python benchmarks/arithmetic_floor.py           # p4g's ceiling, each game's frozen row: 8 seeds, the default budgets
    python benchmarks/arithmetic_floor.py --runs cooperbench:frozen --seeds 2 --steps 2000 --out /tmp/a.json
    python benchmarks/arithmetic_floor.py --default-run         # every block of the default run, portable kernels
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from baseline_tree import child_output  # (the scripts' folder is on the path, as when one is run)
from kernel_speed import run_spec, use_passes
from scope_envs import kernels
from scope_envs.arguments import count, output_file
from scope_envs.bench.methods import METHODS
from scope_envs.bench.presets import GAMES, PRESETS, preset_steps
from scope_envs.files import write_json

OUT = Path(__file__).resolve().parent / "results" / "arithmetic_floor.json"
OUT_RUN = OUT.with_name("arithmetic_floor_default_run.json")
LEVELS = ("portable", "native")
SEED_BLOCK = 8  # scope-envs bench's default --seed-block
CURVE_POINTS, CURVE_EPISODES = PRESETS["default"]["curve_points"], PRESETS["default"]["curve_episodes"]
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from arithmetic_floor import measure
print(json.dumps(measure(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:]))))
"""


class Products:
    """The networks' matrix products, counted by operands' shapes and layouts while installed (``with``): each call
    of ``numpy_ac.mlp`` (three products) and ``mlp_backward`` (five), wherever the trainer, the evaluation or the
    behaviour clone's numpy passes call them."""

    def __init__(self):
        self.calls: Counter = Counter()  # (a's shape, a is a transposed view, b's shape, b is one) -> calls

    def note(self, a_shape, a_t: bool, b_shape, b_t: bool) -> None:
        self.calls[(tuple(a_shape), a_t, tuple(b_shape), b_t)] += 1

    def __enter__(self) -> Products:
        from scope_envs.train import numpy_ac

        mlp, mlp_backward = numpy_ac.mlp, numpy_ac.mlp_backward
        self._restore = (mlp, mlp_backward)

        def recorded_mlp(layers, x):
            w1, _, w2, _, w3, _ = layers
            rows = x.shape[:-1]
            self.note(x.shape, False, w1.T.shape, True)
            self.note(rows + (w2.shape[1],), False, w2.T.shape, True)
            self.note(rows + (w3.shape[1],), False, w3.T.shape, True)
            return mlp(layers, x)

        def recorded_backward(layers, x, h1, h2, d_out, grads):
            _, _, w2, _, w3, _ = layers
            self.note(d_out.T.shape, True, h2.shape, False)
            self.note(d_out.shape, False, w3.shape, False)
            self.note(h2.T.shape, True, h1.shape, False)
            self.note(h2.shape, False, w2.shape, False)
            self.note(h1.T.shape, True, x.shape, False)
            return mlp_backward(layers, x, h1, h2, d_out, grads)

        use_passes(recorded_mlp, recorded_backward)
        return self

    def __exit__(self, *exc) -> None:
        use_passes(*self._restore)

    def flops(self) -> float:
        """A multiply and an add per term of every product recorded."""
        return sum(calls * 2.0 * np.prod(a) * b[-1] for (a, _, b, _), calls in self.calls.items())

    def seconds(self, rounds: int = 3) -> float:
        """What the recorded products take alone: each shape and layout timed on random operands (the best of
        ``rounds``), times its calls."""
        rng = np.random.default_rng(0)

        def operand(shape, transposed):
            if not transposed:
                return rng.standard_normal(shape, dtype=np.float32)
            return rng.standard_normal(shape[:-2] + (shape[-1], shape[-2]), dtype=np.float32).swapaxes(-1, -2)

        total = 0.0
        for (a_shape, a_t, b_shape, b_t), calls in self.calls.items():
            a, b = operand(a_shape, a_t), operand(b_shape, b_t)
            reps = max(3, min(200, int(2e7 // max(1, 2 * a.size * b.shape[-1]))))
            best = float("inf")
            for _ in range(rounds):
                t = time.perf_counter()
                for _ in range(reps):
                    a @ b
                best = min(best, (time.perf_counter() - t) / reps)
            total += calls * best
        return total


def measure(game: str, method: str, seeds: int, steps: int, episodes: int, heldout: int = 0, first: int = 0) -> dict:
    """One row's block (``methods.run_row``: seeds ``first`` to ``first + seeds - 1`` at ``steps``, ``episodes`` a
    side, ``heldout`` on the held-out sides, 0: ``episodes``) with its products recorded, then the products timed
    alone, in this process and at its kernels."""
    from scope_envs.bench.methods import run_row

    with Products() as products:
        t0 = time.perf_counter()
        run_row(game, method, list(range(first, first + seeds)), steps, episodes, CURVE_POINTS, CURVE_EPISODES,
                heldout_episodes=heldout or episodes)
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "products_s": products.seconds(), "flops": products.flops(),
            "calls": sum(products.calls.values()), "shapes": len(products.calls), "kernels": kernels.describe(),
            "in_effect": kernels.in_effect(kernels.level())}


def child(level: str, game: str, method: str, seeds: int, steps: int, episodes: int, heldout: int = 0,
          first: int = 0) -> dict:
    out = child_output([sys.executable, "-c", CHILD, str(Path(__file__).resolve().parent), game, method,
                        *map(str, (seeds, steps, episodes, heldout, first))], kernels.environment(level),
                       f"the {level} run of {game}:{method}")
    return json.loads(out.strip().splitlines()[-1])


def default_run(jobs: int) -> dict:
    """Every row of the default run in blocks of ``SEED_BLOCK`` seeds (``scope-envs bench``'s grid: its seeds,
    budgets and evaluation sizes), at the portable kernels, ``jobs`` at once: each block's wall time and products,
    and their sums."""
    from tqdm import tqdm

    from scope_envs.bench.methods import SEEDS_MIN, available
    from scope_envs.bench.protocol import heldout_episodes_for

    episodes = PRESETS["default"]["eval_episodes"]
    blocks = []
    for game in GAMES:
        seeds = max(PRESETS["default"]["seeds"], SEEDS_MIN[game])
        blocks += [(game, method, min(SEED_BLOCK, seeds - first), preset_steps(game), episodes,
                    heldout_episodes_for(game, episodes), first)
                   for method in METHODS if available(game, method) for first in range(0, seeds, SEED_BLOCK)]
    blocks.sort(key=lambda b: b[1] != "oracle")  # the longest first, as the benchmark orders its tasks
    with ThreadPoolExecutor(jobs) as pool:
        done = list(tqdm(pool.map(lambda b: child("portable", *b), blocks), total=len(blocks), desc="blocks"))
    rows = [{"run": f"{b[0]}:{b[1]}", "seeds": b[2], "first_seed": b[6], "steps": b[3], **r}
            for b, r in zip(blocks, done)]
    worker_s, products_s = sum(r["wall_s"] for r in rows), sum(r["products_s"] for r in rows)
    return {"level": "portable", "jobs": jobs, "rows": rows, "worker_s": worker_s, "products_worker_s": products_s,
            "products_share": products_s / worker_s, "bound": worker_s / products_s,
            "floor_wall_s": products_s / jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", type=run_spec, default=None,
                    help="GAME:METHOD rows (default p4g:oracle and each game's frozen)")
    ap.add_argument("--seeds", type=count(64), default=None,
                    help="with --runs: seeds of the row, trained together (default 8, at most 64)")
    ap.add_argument("--steps", type=count(10_000_000), default=None,
                    help="with --runs: the methods' decisions per seed (at most 10_000_000; default: the default "
                         "preset's per game; the ceiling trains presets.ceiling_steps of it)")
    ap.add_argument("--eval-episodes", type=count(100_000), default=None,
                    help="with --runs: episodes per side, the held-out ones included (default 500, at most 100_000)")
    ap.add_argument("--default-run", action="store_true",
                    help="instead of --runs: every row of the default run (its seeds in blocks of 8, budgets and "
                         "evaluation sizes) at the portable kernels, and the sums; refuses --runs, --seeds, --steps "
                         "and --eval-episodes")
    ap.add_argument("--jobs", type=count(64), default=None,
                    help="only with --default-run: blocks at once (default 2, at most 64)")
    ap.add_argument("--out", type=output_file, default=None,
                    help=f"JSON (default {OUT.name}, with --default-run {OUT_RUN.name}, in benchmarks/results)")
    args = ap.parse_args()
    ignored = ("--runs", "--seeds", "--steps", "--eval-episodes") if args.default_run else ("--jobs",)
    for name in ignored:  # an option the chosen mode has no use for is refused, never ignored
        if getattr(args, name[2:].replace("-", "_")) is not None:
            ap.error(f"argument {name}: " + ("not with --default-run (it plays the default run's rows, seeds, "
                                             "budgets and sizes)" if args.default_run else "only with --default-run"))
    args.runs = args.runs or [("p4g", "oracle"), *((g, "frozen") for g in GAMES)]
    args.seeds, args.eval_episodes, args.jobs = args.seeds or 8, args.eval_episodes or 500, args.jobs or 2
    (args.out or OUT).parent.mkdir(parents=True, exist_ok=True)
    if args.default_run:
        out = default_run(args.jobs)
        print(f"default run at the portable kernels: {out['worker_s']:.0f} worker-s, products "
              f"{out['products_worker_s']:.0f} ({out['products_share']:.0%}), bound {out['bound']:.1f}x; on "
              f"{args.jobs} cores no engine takes under {out['floor_wall_s'] / 60:.1f} min")
        write_json(args.out or OUT_RUN, out)
        return
    for game, method in args.runs:
        if method == "random":
            ap.error(f"argument --runs: {game}:random plays uniformly, no network: nothing to bound")
    rows = []
    for game, method in args.runs:
        steps = args.steps or preset_steps(game)
        for level in LEVELS:
            r = child(level, game, method, args.seeds, steps, args.eval_episodes)
            row = {"run": f"{game}:{method}", "steps": steps, "level": level, **r,
                   "gflops": r["flops"] / r["products_s"] / 1e9, "products_share": r["products_s"] / r["wall_s"],
                   "bound": r["wall_s"] / r["products_s"]}
            rows.append(row)
            print(f"{row['run']} {level}: wall {row['wall_s']:.1f} s, products {row['products_s']:.1f} s "
                  f"({row['products_share']:.0%}, {row['gflops']:.1f} GFLOP/s), bound {row['bound']:.1f}x", flush=True)
    write_json(args.out or OUT, {"seeds": args.seeds, "eval_episodes": args.eval_episodes, "rows": rows})


if __name__ == "__main__":
    main()
