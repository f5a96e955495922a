"""Evaluation cost of a benchmark run: the seconds a ``random`` run of p4g and of cooperbench spends in the
protocol's evaluation (``scope_envs.bench.protocol.play_seeds``: the train, held-out and reference sides, the panel and
the learning curves), at the default preset's sizes (500 train-side episodes, 4 curve points of 100, the held-out
side at ``EVAL_EPISODES_MIN``: p4g 4,672, cooperbench 500). A ``random`` run trains nothing, so its wall time is
its evaluation.

    .venv/bin/python benchmarks/eval_speed.py                       # this tree, 5 rounds
    .venv/bin/python benchmarks/eval_speed.py --baseline /tmp/base  # paired against the code in /tmp/base

Each round is one fresh process that plays one warm-up run (seed 0) and then the timed run (seed 1) of each game.
Prints one JSON line: per game the rounds' evaluation seconds (wall, and the process's CPU seconds, steadier on
a loaded machine) and run wall seconds, their medians, the
record's digest (a SHA-256 over the run record without its timing fields and its fingerprint, the code's
hashes: two codes that evaluate alike give the same digest) and the load averages before and after. With ``--baseline DIR`` (e.g. ``python
benchmarks/baseline_tree.py REV /tmp/base``; DIR goes first on ``PYTHONPATH``) the rounds alternate between
the two codes and each game also gets the medians of the pairs' ratios (baseline seconds over current).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from baseline_tree import child_output

GAMES = ("p4g", "cooperbench")
# left out of a record's digest: its timings, and its fingerprint (hashes of the code itself, which any edit moves)
UNDIGESTED = ("wall_s", "env_steps_per_s", "fingerprint")
MAX_ROUNDS = 100


def one_round(games) -> dict:
    """One process's figures: per game, the timed run's evaluation and wall seconds and its record's digest."""
    from scope_envs.bench import protocol
    from scope_envs.bench.methods import run_one

    spent = [0.0, 0.0]  # wall seconds, process CPU seconds
    # every side, panel family and curve point goes through protocol.play_seeds (a baseline tree older than it:
    # through protocol.play)
    name = "play_seeds" if hasattr(protocol, "play_seeds") else "play"
    play = getattr(protocol, name)

    def timed(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return play(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0
            spent[1] += time.process_time() - c0

    setattr(protocol, name, timed)
    out = {}
    for game in games:
        kw = dict(steps=20_000, eval_episodes=500, curve_points=4, curve_episodes=100,
                  heldout_episodes=protocol.heldout_episodes_for(game, 500))
        run_one(game, "random", 0, **kw)  # warm-up: imports, the games' tables and caches
        spent[:] = [0.0, 0.0]
        t0 = time.perf_counter()
        record = run_one(game, "random", 1, **kw)
        wall = time.perf_counter() - t0
        for key in UNDIGESTED:
            record.pop(key, None)
        digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=float).encode()).hexdigest()[:16]
        out[game] = {"eval_s": spent[0], "eval_cpu_s": spent[1], "wall_s": wall, "digest": digest}
    return out


def main() -> None:
    if sys.argv[1:2] == ["--one"]:  # a child process, under either tree: one round, JSON out
        print(json.dumps(one_round(sys.argv[sys.argv.index("--games") + 1:])))
        return
    from scope_envs.arguments import count, existing_dir  # (this tree's; not imported under --baseline's)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=count(MAX_ROUNDS), default=5, help=f"paired rounds (at most {MAX_ROUNDS})")
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES, help="the games (default: all of them)")
    ap.add_argument("--baseline", metavar="DIR", type=existing_dir, help="paired rounds against the code in DIR (on PYTHONPATH)")
    args = ap.parse_args()
    if args.baseline and not (Path(args.baseline) / "scope_envs" / "__init__.py").is_file():
        ap.error(f"argument --baseline: {args.baseline} holds no scope_envs package (baseline_tree.py REV DIR "
                 "writes one)")
    codes = ("baseline", "current") if args.baseline else ("current",)
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {c: [] for c in codes}
    for _ in range(args.rounds):
        for code in codes:
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            if code == "baseline":
                env["PYTHONPATH"] = args.baseline
            cmd = [sys.executable, __file__, "--one", "--games", *args.games]
            out = child_output(cmd, env, f"the {code} code's round")
            runs[code].append(json.loads(out.strip().splitlines()[-1]))
            zero = [game for game in args.games if min(runs[code][-1][game][k] for k in ("eval_s", "eval_cpu_s")) <= 0]
            if zero:  # nothing went through the timed function: a figure of 0 s (and a ratio over it) would be wrong
                sys.exit(f"eval_speed: the {code} code's round measured no evaluation time for {', '.join(zero)} "
                         "(its evaluation no longer goes through protocol.play_seeds or protocol.play)")
    result: dict = {"rounds": args.rounds}
    for game in args.games:
        g = result[game] = {}
        for code in codes:
            rs = [r[game] for r in runs[code]]
            g[code] = {key: [round(r[key], 3) for r in rs] for key in ("eval_s", "eval_cpu_s", "wall_s")}
            g[code].update({f"median_{key}": round(float(np.median([r[key] for r in rs])), 3)
                            for key in ("eval_s", "eval_cpu_s", "wall_s")})
            g[code]["digests"] = sorted({r["digest"] for r in rs})
        if args.baseline:
            pairs = list(zip(runs["baseline"], runs["current"]))
            for key in ("eval_s", "eval_cpu_s"):
                g[f"median_ratio_{key}"] = round(float(np.median([b[game][key] / c[game][key] for b, c in pairs])), 3)
            g["same_digest"] = g["baseline"]["digests"] == g["current"]["digests"]
    result["loadavg_before"] = [round(x, 2) for x in load_before]
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
