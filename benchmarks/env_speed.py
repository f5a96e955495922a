"""Act-surface steps per second of p4g-cotrain, as a ratio to PettingZoo's rps_v2.

Both envs are stepped in the same process with random legal actions (the
action mask for ours, the action space for rps), alternating short rounds so
machine noise hits both alike. Prints one JSON object.

    python benchmarks/env_speed.py [--steps 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from pettingzoo.classic import rps_v2

import scope_envs
from scope_envs.arguments import count, registered_id

MAX_STEPS = 100_000_000
MAX_ROUNDS = 1000


def steps_per_second(env, steps: int, pick) -> float:
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        if not env.agents:
            obs, _ = env.reset()
        obs, *_ = env.step({a: pick(env, a, obs[a], rng) for a in env.agents})
    return steps / (time.perf_counter() - start)


def masked(env, agent, obs, rng):
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def unmasked(env, agent, obs, rng):
    return int(rng.integers(env.action_space(agent).n))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=count(MAX_STEPS), default=20_000,
                    help=f"steps of each env, split over the rounds (at least --rounds; at most {MAX_STEPS:_})")
    ap.add_argument("--rounds", type=count(MAX_ROUNDS), default=5, help=f"at most {MAX_ROUNDS}")
    ap.add_argument("--env", type=registered_id, default="p4g-cotrain", help="a registered id (`scope-envs list`)")
    args = ap.parse_args(argv)
    if args.steps < args.rounds:  # each round steps steps // rounds times: none would time nothing
        ap.error(f"argument --steps: at least one step per round: --steps {args.steps} < --rounds {args.rounds}")
    ours, base = [], []
    for _ in range(args.rounds):
        ours.append(steps_per_second(scope_envs.make(args.env), args.steps // args.rounds, masked))
        base.append(steps_per_second(rps_v2.parallel_env(), args.steps // args.rounds, unmasked))
    result = {
        "env": args.env,
        "baseline": "pettingzoo.classic.rps_v2.parallel_env",
        "steps_per_s": round(float(np.median(ours)), 1),
        "baseline_steps_per_s": round(float(np.median(base)), 1),
    }
    result["ratio"] = round(result["steps_per_s"] / result["baseline_steps_per_s"], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
