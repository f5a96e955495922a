"""The compiled kernels (``scope_envs.train.fused``, numba) against their numpy definitions, in one process.

Three measurements, each in alternating rounds (the machine is noisy), one thread:

* ``kernels``: microseconds a call of ``bias_tanh``, ``tanh_grad`` and ``adam`` at the act networks' sizes (a
  128-row minibatch and a 64-slot rollout step of 64 units; an ActorCritic's parameters), compiled and numpy;
* ``rows``: a row's S seeds (the default preset's budget, evaluation and learning curves, ``methods.run_seeds``
  and ``methods.run_one``) three ways: one seed after another on the numpy definitions (the trainer before the
  seed axis and the kernels), together on the numpy definitions, together compiled; every record (but its timing)
  asserted the same all three ways;
* ``--check``: every float32 value (all 2^32 bit patterns) through ``bias_tanh`` with a bias of -0.0, compiled
  against ``activation.tanh`` (numpy): the number of values whose bits differ (0 expected).

    python benchmarks/fused_speed.py --seeds 8 --rounds 2
    python benchmarks/fused_speed.py --check

It runs at the kernels its environment gives numpy's BLAS (native, unless ``OPENBLAS_CORETYPE`` and the other pins of
``scope_envs.kernels`` are set, as ``scope-envs bench`` sets them); the output's ``libraries`` names them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from scope_envs.arguments import count, output_file
from scope_envs.bench.methods import run_one, run_seeds
from scope_envs.bench.presets import GAMES, preset_steps
from scope_envs.files import write_json
from scope_envs.kernels import describe as kernels_in_use
from scope_envs.train import fused
from scope_envs.train.activation import tanh
from scope_envs.train.seeds import MAX_SEEDS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trainer_speed import TIMING, row_tasks  # noqa: E402  (the row as `scope-envs bench` hands it out)

OUT = Path(__file__).resolve().parent / "results" / "fused_speed.json"


def per_call(fn, make_args, calls: int) -> float:
    """Mean microseconds of ``fn(*args)`` over ``calls`` fresh arguments (the kernels work in place)."""
    args = [make_args() for _ in range(calls)]
    t0 = time.perf_counter()
    for a in args:
        fn(*a)
    return (time.perf_counter() - t0) / calls * 1e6


def kernel_speed(rounds: int, calls: int = 2000) -> list[dict]:
    rng = np.random.default_rng(0)
    n_params = 2 * (128 * 64 + 64 + 64 * 64 + 64 + 64 * 14 + 14)  # an ActorCritic of 128 inputs and 14 acts, roughly
    cases = []
    for rows in (128, 64):
        y = (rng.standard_normal((rows, 64)) * 3).astype(np.float32)
        b = rng.standard_normal(64).astype(np.float32)
        cases.append((f"bias_tanh ({rows}, 64)", fused.bias_tanh, lambda y=y, b=b: (y.copy(), b)))
        h = tanh(y)
        cases.append((f"tanh_grad ({rows}, 64)", fused.tanh_grad, lambda y=y, h=h: (y.copy(), h)))
    g = rng.standard_normal(n_params).astype(np.float32)
    cases.append((f"adam ({n_params:,} parameters)", fused.adam,
                  lambda: (g.copy(), g.copy(), g.copy() * 0.1, g.copy() ** 2, 0.5, 0.9, 0.999, 0.03, 1e-5, 1e-3)))
    out = []
    for name, fn, make in cases:
        times = {True: [], False: []}
        fn(*make())  # compiled (or loaded) before the clock
        for r in range(rounds):
            for on in (True, False) if r % 2 == 0 else (False, True):
                fused.enable(on)
                times[on].append(per_call(fn, make, calls))
        fused.enable(True)
        numpy_us, compiled_us = float(np.median(times[False])), float(np.median(times[True]))
        out.append({"kernel": name, "numpy_us": round(numpy_us, 2), "compiled_us": round(compiled_us, 2),
                    "ratio": round(numpy_us / compiled_us, 2)})
        print(json.dumps(out[-1]), flush=True)
    return out


def row_speed(game: str, seeds: int, steps: int, rounds: int) -> dict:
    tasks = row_tasks(game, "frozen", seeds, steps)
    ways = {"alone_numpy": (False, lambda: [run_one(**t) for t in tasks]),
            "together_numpy": (False, lambda: run_seeds(tasks)),
            "together_compiled": (True, lambda: run_seeds(tasks))}
    times: dict[str, list[float]] = {w: [] for w in ways}
    for r in range(rounds):
        made = {}
        for way in list(ways) if r % 2 == 0 else list(ways)[::-1]:
            on, run = ways[way]
            fused.enable(on)
            t0 = time.perf_counter()
            records = run()
            times[way].append(time.perf_counter() - t0)
            made[way] = [json.dumps({k: v for k, v in rec.items() if k not in TIMING}, sort_keys=True)
                         for rec in records]
        if len({json.dumps(m) for m in made.values()}) != 1:
            raise AssertionError(f"{game}: a record differs between the ways it was run")
    fused.enable(True)
    s = {w: float(np.median(t)) for w, t in times.items()}
    decisions = seeds * steps
    return {"game": game, "method": "frozen", "seeds": seeds, "steps": steps, "rounds": rounds,
            **{f"{w}_s": round(v, 3) for w, v in s.items()},
            **{f"{w}_decisions_per_core_s": round(decisions / v) for w, v in s.items()},
            "kernels_ratio": round(s["together_numpy"] / s["together_compiled"], 3),
            "seeds_ratio": round(s["alone_numpy"] / s["together_numpy"], 3),
            "ratio": round(s["alone_numpy"] / s["together_compiled"], 3)}


def check_every_float32(chunk: int = 1 << 24) -> dict:
    """``bias_tanh`` (compiled, bias -0.0: adds nothing) against ``activation.tanh`` on all 2^32 bit patterns."""
    minus_zero = np.full(1, -0.0, np.float32)
    differ, t0 = 0, time.perf_counter()
    with np.errstate(invalid="ignore"):
        for start in range(0, 1 << 32, chunk):
            z = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            want = tanh(z)
            got = fused.bias_tanh(z.reshape(-1, 1).copy(), minus_zero).ravel()
            same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
            differ += int((~same).sum())
    return {"values": 1 << 32, "differ": differ, "seconds": round(time.perf_counter() - t0, 1),
            "note": "NaN inputs count as the same where both give a NaN (its payload is not compared)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=count(MAX_SEEDS), default=8, help=f"a row's seeds (at most {MAX_SEEDS})")
    ap.add_argument("--games", nargs="+", choices=list(GAMES), default=list(GAMES),
                    help="the games (default: all of them)")
    ap.add_argument("--steps", type=count(100_000_000), default=None,
                    help="decisions per seed (default: the default preset's budget of each game; at most 100_000_000)")
    ap.add_argument("--rounds", type=count(1000), default=2, help="at most 1000")
    ap.add_argument("--check", action="store_true", help="only the check over every float32 value")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON (default {OUT})")
    args = ap.parse_args()
    if args.check:  # the check covers every float32 value, whatever the speed's options say
        for name in ("seeds", "games", "steps", "rounds"):
            if getattr(args, name) != ap.get_default(name):
                ap.error(f"argument --{name}: not with --check (it times no row)")
    if not fused.available():
        ap.exit(2, "fused_speed.py: the compiled kernels are off (numba missing, or SCOPE_ENVS_FUSED=0); "
                   "install the `fast` extra\n")
    torch.set_num_threads(1)
    threadpool_limits(1)
    if args.check:
        result = check_every_float32()
        print(json.dumps(result))
        write_json(args.out.with_name(args.out.stem + "_check.json"), result)
        return
    kernels = kernel_speed(args.rounds)
    rows = []
    for game in args.games:
        rows.append(row_speed(game, args.seeds, preset_steps(game) if args.steps is None else args.steps,
                              args.rounds))
        print(json.dumps(rows[-1]), flush=True)
    write_json(args.out, {"kernels": kernels, "rows": rows, "threads": 1, "numba": fused.numba.__version__,
                          "libraries": kernels_in_use()})  # the BLAS's and numpy's kernel level (the environment's)


if __name__ == "__main__":
    main()
