"""Trainer throughput: env steps per second while the act-level PPO trains, as a ratio to raw
env stepping with random legal actions (the baseline), both measured in this process in
alternating rounds (the machine is noisy).

    python benchmarks/trainer_speed.py                 # p4g-frozen and p4g-cotrain, 3 rounds
    python benchmarks/trainer_speed.py --env p4g-population --steps 10000

The trainer's figure includes everything a training iteration does: batched policy forward
passes, env stepping, GAE and the PPO updates. One thread (torch's and the BLAS's).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import scope_envs
from scope_envs.arguments import count, registered_id
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer


def random_steps(env_id: str, n: int, seed: int) -> float:
    """Env steps/s of one env with uniformly random legal actions for every live agent."""
    env = scope_envs.make(env_id)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(n):
        if not env.agents:
            obs, _ = env.reset()
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
    return n / (time.perf_counter() - t0)


def trainer_steps(env_id: str, n: int, seed: int) -> float:
    """Env steps/s of PPO training (``n`` persuader decisions), cloning excluded."""
    trainer = PPOTrainer(PPOConfig(env_id=env_id, total_steps=n, seed=seed, bc_episodes=50, bc_steps=10,
                                   **({"env_kwargs": {"members": 4}} if "population" in env_id else {})))
    t0 = time.perf_counter()
    trainer.train()
    return trainer.env_steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", nargs="+", type=registered_id, default=["p4g-frozen", "p4g-cotrain"])
    ap.add_argument("--steps", type=count(100_000_000), default=10_000,
                    help="persuader decisions per trainer round (at most 100_000_000)")
    ap.add_argument("--rounds", type=count(1000), default=3, help="at most 1000")
    args = ap.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(1)
    for env_id in args.env:
        base, train = [], []
        for r in range(args.rounds):
            base.append(random_steps(env_id, args.steps, r))
            train.append(trainer_steps(env_id, args.steps, r))
        b, t = float(np.median(base)), float(np.median(train))
        print(json.dumps({"env": env_id, "steps": args.steps, "rounds": args.rounds,
                          "trainer_steps_per_s": round(t), "baseline_random_steps_per_s": round(b),
                          "ratio": round(t / b, 3)}))


if __name__ == "__main__":
    main()
