"""The networks' tanh (``scope_envs.train.activation``): its speed against ``np.tanh``, its error, its fit.

Speed: ``activation.tanh`` and ``np.tanh`` on a (128, 64) float32 block (a minibatch's hidden layer), alternating
over ``--rounds`` in one process per kernel level (``scope_envs.kernels``: ``portable``, the benchmark's, where
numpy's tanh is glibc's scalar ``tanhf``, and ``native``), microseconds per call and the ratio.

    python benchmarks/tanh_speed.py                       # -> benchmarks/results/tanh_speed.json
    python benchmarks/tanh_speed.py --check               # every float32 below 9.5 against float64 tanh (~1 min)
    python benchmarks/tanh_speed.py --fit                 # the rational fit that gave activation.P and Q

``--check`` reports the largest error in float32 ulps of the float64 tanh, whether any output leaves [-1, 1] and
whether tanh is odd; ``--check-step K`` checks every K-th float32 only. ``--fit`` refits ``x P(x^2) / Q(x^2)`` on
``[0, activation.LIMIT]`` (relative error, iterated reweighted least squares) and prints the coefficients as
float32 values, for ``activation.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scope_envs import kernels
from scope_envs.arguments import count, output_file
from scope_envs.bench.runner import machine
from scope_envs.files import write_json
from scope_envs.train import activation

OUT = Path(__file__).resolve().parent / "results" / "tanh_speed.json"
LEVELS = ("portable", "native")
CHILD = """
import json, sys, time
import numpy as np
from scope_envs import kernels
from scope_envs.train.activation import tanh
rounds, calls = int(sys.argv[1]), int(sys.argv[2])
z = (np.random.default_rng(0).standard_normal((128, 64)) * 2).astype(np.float32)
times = {"np.tanh": [], "activation.tanh": []}
for r in range(rounds):
    for name, f in (("np.tanh", np.tanh), ("activation.tanh", tanh))[:: 1 if r % 2 == 0 else -1]:
        t0 = time.perf_counter()
        for _ in range(calls):
            f(z)
        times[name].append((time.perf_counter() - t0) / calls * 1e6)
print(json.dumps({"us": {k: float(np.median(v)) for k, v in times.items()}, "kernels": kernels.describe()}))
"""


def speed(level: str, rounds: int, calls: int) -> dict:
    """Microseconds per call of each tanh in a fresh process under kernel level ``level``."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(rounds), str(calls)], env=kernels.environment(level),
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"tanh_speed: the {level} process failed:\n{done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    us = got["us"]
    return {"level": level, "kernels": got["kernels"], "us_per_call": us,
            "ratio_np_over_ours": round(us["np.tanh"] / us["activation.tanh"], 2)}


def check(step: int) -> dict:
    """``activation.tanh`` on every ``step``-th float32 from 0 to 9.5 (and their negatives) against float64 tanh."""
    top = int(np.array(9.5, np.float32).view(np.uint32))
    worst, worst_at, outside, odd = 0.0, 0.0, 0, True
    chunk = 1 << 24
    for lo in range(0, top, chunk * step):
        x = np.arange(lo, min(lo + chunk * step, top), step, dtype=np.uint32).view(np.float32)
        y = activation.tanh(x)
        ref = np.tanh(x.astype(np.float64))
        ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
        err = np.abs(y - ref) / np.where(ulp > 0, ulp, np.finfo(np.float32).smallest_subnormal)
        i = int(err.argmax())
        if err[i] > worst:
            worst, worst_at = float(err[i]), float(x[i])
        outside += int((np.abs(y) > 1).sum())
        odd = odd and bool((activation.tanh(-x) == -y).all())
    return {"max_error_ulps": round(worst, 2), "at": worst_at, "outside_unit_interval": outside, "odd": odd,
            "every_kth_float32": step}


def fit(points: int) -> dict:
    """Refit ``x P(x^2) / Q(x^2)`` with ``activation``'s degrees on ``[0, LIMIT]``: Q(0) = 1, the relative error
    linearised around the previous Q, the weights raised where the error is large (Lawson), the best kept."""
    n_p, n_q = len(activation.P), len(activation.Q) - 1
    x = np.linspace(1e-4, activation.LIMIT, points)
    y = np.tanh(x)
    scale = activation.LIMIT**2
    t = x * x / scale  # in [0, 1]: a well-conditioned basis, rescaled to powers of x^2 at the end
    p_basis, q_basis = t[:, None] ** np.arange(n_p), t[:, None] ** np.arange(1, n_q + 1)
    q_prev, weight, best = np.ones_like(x), np.ones_like(x), None
    for _ in range(60):
        row = weight / (y * q_prev)
        a = np.concatenate([x[:, None] * p_basis, -y[:, None] * q_basis], 1) * row[:, None]
        coef = np.linalg.lstsq(a, y * row, rcond=None)[0]
        p, q = coef[:n_p], np.concatenate([[1.0], coef[n_p:]])
        q_prev = (t[:, None] ** np.arange(n_q + 1)) @ q
        err = np.abs(x * (p_basis @ p) / q_prev / y - 1)
        if best is None or err.max() < best[0]:
            best = (float(err.max()), p, q)
        weight = weight * np.sqrt(err / err.max()) + 1e-12
        weight /= weight.mean()
    err, p, q = best
    as32 = lambda c: [float(np.float32(v)) for v in c / scale ** np.arange(len(c))]  # noqa: E731
    return {"max_relative_error_float64": err, "P": as32(p), "Q": as32(q)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=count(100), default=None, help="speed rounds (default 5, at most 100)")
    ap.add_argument("--calls", type=count(1_000_000), default=None,
                    help="calls per round and function (default 2000, at most 1_000_000)")
    ap.add_argument("--check", action="store_true", help="the error over the float32 inputs, not the speed")
    ap.add_argument("--check-step", type=count(1 << 30), default=None,
                    help=f"with --check: every K-th float32 (default 1, at most {1 << 30:_})")
    ap.add_argument("--fit", action="store_true", help="refit the coefficients and print them")
    ap.add_argument("--fit-points", type=count(10_000_000, low=2), default=None,
                    help="with --fit: points on [0, activation.LIMIT] (default 400_001, 2 to 10_000_000)")
    ap.add_argument("--out", type=output_file, default=None,
                    help=f"the speed's JSON (default {OUT}); --check and --fit print theirs and write none")
    args = ap.parse_args()
    mode = "--fit" if args.fit else "--check" if args.check else None
    wanted = {"--rounds": None, "--calls": None, "--out": None, "--check-step": "--check", "--fit-points": "--fit",
              "--check": "--check"}  # the mode each option belongs to (None: the speed's)
    for name, belongs in wanted.items():
        if getattr(args, name[2:].replace("-", "_")) not in (None, False) and belongs != mode:
            ap.error(f"argument {name}: " + (f"only with {belongs}" if belongs and name != belongs
                                             else f"not with {mode}"))
    if args.fit:
        print(json.dumps(fit(args.fit_points or 400_001), indent=1))
        return
    if args.check:
        t0 = time.perf_counter()
        out = check(args.check_step or 1)
        print(json.dumps({**out, "seconds": round(time.perf_counter() - t0)}, indent=1))
        return
    args.rounds, args.calls, args.out = args.rounds or 5, args.calls or 2000, args.out or OUT
    rows = [speed(level, args.rounds, args.calls) for level in LEVELS]
    for r in rows:
        us = r["us_per_call"]
        print(f"{r['level']:>8}: np.tanh {us['np.tanh']:.1f} us, activation.tanh {us['activation.tanh']:.1f} us "
              f"(np.tanh / ours = {r['ratio_np_over_ours']})")
    write_json(args.out, {"block": [128, 64], "rounds": args.rounds, "calls": args.calls, "rows": rows,
                          "machine": machine()})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
