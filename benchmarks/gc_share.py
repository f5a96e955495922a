"""Python's cyclic garbage collector's share of a batched engine's steady state.

Steps ``make_vec(--env, --num-envs)`` with random legal acts: ``--warmup`` untimed steps (the tasks compiled, the
memos filled), then ``--steps`` timed ones, and times the collections they made (``gc.callbacks``), by
generation. The figure is the share of the timed steps' wall time spent inside collections. (Turning the collector
off for comparison confounds it: the garbage left meanwhile is paid for by the next collection.)

    python benchmarks/gc_share.py --env tau2-frozen --num-envs 1024
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import time

import numpy as np

import scope_envs
from scope_envs.arguments import count, registered_id


def measure(env_id: str, num_envs: int, steps: int, warmup: int) -> dict:
    vec = scope_envs.make_vec(env_id, num_envs=num_envs)
    rng = np.random.default_rng(0)
    obs = vec.reset(seed=0)[0]
    spent, made, started = collections.Counter(), collections.Counter(), {}

    def watch(phase, info):
        if phase == "start":
            started["t"] = time.perf_counter()
        elif "t" in started:
            spent[info["generation"]] += time.perf_counter() - started.pop("t")
            made[info["generation"]] += 1

    for k in range(warmup + steps):
        if k == warmup:
            gc.callbacks.append(watch)
            t0 = time.perf_counter()
        acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
        obs = vec.step(acts)[0]
    wall = time.perf_counter() - t0 if steps else 0.0
    if steps:
        gc.callbacks.remove(watch)
    return {"env": env_id, "num_envs": num_envs, "steps": steps, "warmup": warmup,
            "steps_per_s": round(num_envs * steps / wall), "gc_share": round(sum(spent.values()) / wall, 3),
            "collections": {str(g): {"count": made[g], "s": round(spent[g], 3)} for g in sorted(made)},
            "tracked_objects": len(gc.get_objects())}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=registered_id, default="tau2-frozen", help="a registered id (default: tau2-frozen)")
    ap.add_argument("--num-envs", type=count(4096), default=256, help="slots (at most 4096)")
    ap.add_argument("--steps", type=count(100_000), default=500, help="timed steps (at most 100,000)")
    ap.add_argument("--warmup", type=count(100_000, low=0), default=200, help="untimed steps first (at most 100,000)")
    args = ap.parse_args(argv)
    before = [round(x, 2) for x in os.getloadavg()]
    out = measure(args.env, args.num_envs, args.steps, args.warmup)
    print(json.dumps({**out, "load": [before, [round(x, 2) for x in os.getloadavg()]]}, indent=1))


if __name__ == "__main__":
    main()
