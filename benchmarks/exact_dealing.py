"""Exact mode dealing from integers, against dealing slot by slot: the same episodes, in one process.

Steps ``make_vec(--env, --num-envs)`` in exact mode with random legal acts (``--warmup`` untimed steps, then
``--steps`` timed ones), twice per round: as the engine deals (``BatchedVecEnv._start_drawn``: each slot's own
generator draws its member, its scenario's indices and the game's own draws, and the slots are dealt from those
integers at once by ``deal_many``) and with the baseline, each slot dealt as its scalar env deals it
(``_start_scalar``, the engine's only exact dealing until 2026-12-03, chosen here by ``draws_by_index``). Both
play the very same episodes (``tests/test_vec.py``), so the figure is the dealing alone: the ratio of the median
steps per second, and the microseconds of ``_start`` per episode dealt. The orders alternate between rounds.

    python benchmarks/exact_dealing.py --env tau2-frozen --num-envs 4096 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import scope_envs
from scope_envs.arguments import count, registered_id
from scope_envs.vec.batched import BatchedVecEnv


def run(env_id: str, num_envs: int, steps: int, warmup: int) -> tuple[float, float]:
    """(steps per second, microseconds in ``_start`` per episode dealt) over the timed steps."""
    spent = {"s": 0.0, "episodes": 0}
    start = BatchedVecEnv._start

    def timed(self, slots, options):
        t0 = time.perf_counter()
        start(self, slots, options)
        spent["s"] += time.perf_counter() - t0
        spent["episodes"] += len(slots)

    vec = scope_envs.make_vec(env_id, num_envs=num_envs)
    rng = np.random.default_rng(0)
    obs, _ = vec.reset(seed=0)
    BatchedVecEnv._start = timed
    try:
        for k in range(warmup + steps):
            if k == warmup:
                spent["s"], spent["episodes"] = 0.0, 0
                t0 = time.perf_counter()
            acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
            obs, *_ = vec.step(acts)
        wall = time.perf_counter() - t0
    finally:
        BatchedVecEnv._start = start
    return num_envs * steps / wall, spent["s"] / max(1, spent["episodes"]) * 1e6


def measure(env_id: str, num_envs: int, rounds: int, steps: int, warmup: int) -> dict:
    env = scope_envs.make_vec(env_id, num_envs=1)
    if not isinstance(env, BatchedVecEnv):
        raise ValueError(f"{env_id} runs on the loop engine: no batched dealing to measure")
    cls = type(env)
    drawn = cls.draws_by_index
    runs: dict[str, list[tuple[float, float]]] = {"drawn": [], "slot_by_slot": []}
    try:
        for r in range(rounds):
            order = [("drawn", drawn), ("slot_by_slot", lambda self: False)]
            for name, how in order if r % 2 == 0 else order[::-1]:
                cls.draws_by_index = how
                runs[name].append(run(env_id, num_envs, steps, warmup))
    finally:
        cls.draws_by_index = drawn
    rate = {k: float(np.median([x for x, _ in v])) for k, v in runs.items()}
    dealing = {k: round(float(np.median([u for _, u in v])), 2) for k, v in runs.items()}
    return {"env": env_id, "num_envs": num_envs, "rounds": rounds, "steps": steps, "warmup": warmup,
            "steps_per_s": {k: round(v) for k, v in rate.items()}, "us_per_episode_dealt": dealing,
            "speedup": round(rate["drawn"] / rate["slot_by_slot"], 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=registered_id, default="tau2-frozen", help="a registered id (default: tau2-frozen)")
    ap.add_argument("--num-envs", type=count(4096), default=256, help="slots (at most 4096)")
    ap.add_argument("--rounds", type=count(20), default=3, help="rounds, each running both ways (at most 20)")
    ap.add_argument("--steps", type=count(100_000), default=300, help="timed steps per run (at most 100,000)")
    ap.add_argument("--warmup", type=count(100_000, low=0), default=50, help="untimed steps first (at most 100,000)")
    args = ap.parse_args(argv)
    before = [round(x, 2) for x in os.getloadavg()]
    try:
        out = measure(args.env, args.num_envs, args.rounds, args.steps, args.warmup)
    except ValueError as e:
        ap.error(f"argument --env: {e}")
    print(json.dumps({**out, "load": [before, [round(x, 2) for x in os.getloadavg()]]}, indent=1))


if __name__ == "__main__":
    main()
