"""tau2's benchmark runs on the loop engine and on the batched tau2 engine (``Tau2VecEnv``): what the engine saves
where it counts, and a check that it changes nothing.

Each method of the default grid is run on tau2 (``methods.run_one`` with the default preset's settings: 8,000
decisions, 500 evaluation episodes per side, the panel) once with ``make_vec``'s tau2 engine switched off (the
loop over scalar envs, as before issue 32) and once with it, ``--rounds`` times, each engine first in turn (the
first run of a process meets cold caches), in this process
(one BLAS/torch thread, as the benchmark's workers). It reports each run's CPU seconds (``time.process_time``:
less sensitive than the wall clock to other jobs on the machine), the per-method and overall ratios (sum of
the loop's mean CPU seconds over the batched engine's), and whether every run's metrics were identical across
the two engines (they must be: exact mode replays the scalar envs).

    python benchmarks/tau2_bench_engine.py               # every method, seed 0, 2 rounds
    python benchmarks/tau2_bench_engine.py --methods frozen oracle --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main(argv=None) -> None:
    from scope_envs.arguments import seed
    from scope_envs.bench.methods import METHODS, PRESETS, available, preset_steps, run_one

    methods = [m for m in METHODS if available("tau2", m)]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=methods, choices=methods)
    ap.add_argument("--rounds", type=int, default=2, help="pairs of runs per method (1-10; the oracle: 1)")
    ap.add_argument("--seed", type=seed, default=0, help="0 to 2**32-1")
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= 10:
        ap.error(f"argument --rounds: must be in [1, 10], got {args.rounds}")
    import scope_envs.vec as vec
    import scope_envs.vec.games as games

    engines = {"loop": tuple(e for e in games.BATCHED if e is not games.Tau2VecEnv), "batched": games.BATCHED}
    p = PRESETS["default"]
    settings = dict(steps=preset_steps("tau2"), eval_episodes=p["eval_episodes"],
                    curve_points=p["curve_points"], curve_episodes=p["curve_episodes"],
                    heldout_episodes=p["eval_episodes"])
    load_before = os.getloadavg()
    rows = []
    try:
        for method in args.methods:
            row = {"method": method, "loop": [], "batched": []}
            metrics = set()
            for k in range(1 if method == "oracle" else args.rounds):
                for name in ("loop", "batched") if k % 2 == 0 else ("batched", "loop"):  # each goes first in turn
                    vec.BATCHED = engines[name]  # what ``vectorize`` tries
                    t0 = time.process_time()
                    r = run_one("tau2", method, args.seed, **settings)
                    row[name].append(round(time.process_time() - t0, 3))
                    metrics.add(json.dumps(r["metrics"], sort_keys=True))
            row["ratio"] = round(float(np.mean(row["loop"]) / np.mean(row["batched"])), 3)
            row["identical"] = len(metrics) == 1
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        vec.BATCHED = games.BATCHED
    loop = sum(float(np.mean(r["loop"])) for r in rows)
    batched = sum(float(np.mean(r["batched"])) for r in rows)
    print(json.dumps({"methods": len(rows), "loop_cpu_s": round(loop, 2), "batched_cpu_s": round(batched, 2),
                      "ratio": round(loop / batched, 3), "identical": all(r["identical"] for r in rows),
                      "load_before": [round(x, 2) for x in load_before],
                      "load_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    main()
