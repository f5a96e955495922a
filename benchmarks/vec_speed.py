"""Batched rollouts (``scope_envs.make_vec``) against PettingZoo's ``rps_v2``, our scalar env and today's trainer.

For each game (``p4g``, ``cooperbench``) it measures, in this process, in alternating rounds (the machine is
noisy; medians are reported):

* ``batched_steps_per_s``: env steps/s of ``make_vec("<game>-frozen", num_envs=N)`` (N = 256) with random
  legal acts (one per slot, drawn for all slots at once), exact mode (the same episodes as N scalar envs);
* ``fast_batched_steps_per_s``: the same in fast mode (``make_vec(..., exact=False)``: one generator for all
  slots, the same distribution of episodes; ``tests/test_vec_fast.py``), and ``fast_ratio_vs_rps``;
* ``rps_v2_steps_per_s``: PettingZoo's ``rps_v2`` parallel env with random acts (``benchmarks/env_speed.py``'s
  baseline), and ``ratio_vs_rps``;
* ``scalar_steps_per_s``: the scalar ``scope_envs.make("<game>-frozen")`` with random legal acts, and
  ``ratio_vs_scalar``;
* ``trainer_steps_per_s``: env steps/s of the act-level PPO (``PPOConfig`` defaults: batched rollouts, 64
  envs) while it trains ``--steps`` decisions, cloning excluded; ``scalar_trainer_steps_per_s``: the trainer as
  the issue found it, ``batched=False, num_envs=16`` (scalar envs stepped one at a time), and
  ``trainer_ratio``. Both share today's update, which is bit-identical to the old one and about 15% faster,
  so the ratio understates the gain over the old code a little;
* ``evaluate_steps_per_s`` / ``scalar_evaluate_steps_per_s``: what the benchmark's evaluations get
  (``evaluate`` on ``<game>-heldout``, 500 episodes, its default 64 envs, batched) against the evaluation as
  it was (16 scalar envs); ``evaluate_256_steps_per_s``: ``num_envs=256`` (2,000 episodes), batched.

    python benchmarks/vec_speed.py                      # both games, 3 rounds
    python benchmarks/vec_speed.py --games p4g --rounds 5 --num-envs 256
    python benchmarks/vec_speed.py --env-only           # the env rates and ratios only (no trainer/evaluate)

Prints one JSON object keyed by game. One torch thread.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from pettingzoo.classic import rps_v2

import scope_envs
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate


def batched_steps(env_id: str, num_envs: int, steps: int, seed: int, exact: bool = True) -> float:
    """Env steps/s of ``make_vec(env_id, num_envs, exact=exact)``: ``steps`` steps of every slot, random legal
    acts."""
    vec = scope_envs.make_vec(env_id, num_envs=num_envs, exact=exact)
    rng = np.random.default_rng(seed)
    obs, _ = vec.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        acts = {}
        for a in vec.possible_agents:
            mask = obs[a]["action_mask"]
            acts[a] = np.argmax(rng.random(mask.shape) * mask, 1)  # uniform over each row's legal acts
        obs, *_ = vec.step(acts)
    return num_envs * steps / (time.perf_counter() - start)


def scalar_steps(env, steps: int, seed: int, masked: bool) -> float:
    """Env steps/s of one PettingZoo parallel env with random (legal) acts."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        if not env.agents:
            obs, _ = env.reset()
        if masked:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        else:
            acts = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
        obs, *_ = env.step(acts)
    return steps / (time.perf_counter() - start)


def trainer_steps(env_id: str, decisions: int, seed: int, batched: bool, num_envs: int | None = None) -> float:
    """Env steps/s of PPO training ``decisions`` persuader decisions (the config's defaults), cloning excluded."""
    extra = {} if num_envs is None else {"num_envs": num_envs}
    trainer = PPOTrainer(PPOConfig(env_id=env_id, total_steps=decisions, seed=seed, batched=batched, **extra))
    start = time.perf_counter()
    trainer.train()
    return trainer.env_steps / (time.perf_counter() - start)


def evaluate_steps(game: str, seed: int, batched: bool, episodes: int = 500, num_envs: int = 64) -> float:
    """Env steps/s of one benchmark evaluation (``evaluate`` on ``<game>-heldout`` with ``num_envs`` envs, as
    the benchmark calls it with 64; an untrained network)."""
    trainer = PPOTrainer(PPOConfig(env_id=f"{game}-frozen", total_steps=0, seed=seed, batched=batched))
    steps = 0
    play = trainer.play

    def counting(*args, **kwargs):
        nonlocal steps
        episodes_, n = play(*args, **kwargs)
        steps += n
        return episodes_, n

    trainer.play = counting
    start = time.perf_counter()
    evaluate(trainer, f"{game}-heldout", episodes=episodes, seed=seed, num_envs=num_envs)
    return steps / (time.perf_counter() - start)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", nargs="+", default=["p4g", "cooperbench"], choices=["p4g", "cooperbench"])
    ap.add_argument("--num-envs", type=int, default=256, help="slots of the batched env")
    ap.add_argument("--vec-steps", type=int, default=200, help="batched steps per round (each steps every slot)")
    ap.add_argument("--scalar-steps", type=int, default=10_000, help="scalar and rps_v2 steps per round")
    ap.add_argument("--steps", type=int, default=10_000, help="persuader decisions per trainer round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trainer-num-envs", type=int, default=None,
                    help="the batched trainer's num_envs (default: PPOConfig's); the scalar baseline keeps the default")
    ap.add_argument("--env-only", action="store_true",
                    help="measure the envs only (batched, fast, rps_v2, scalar), not the trainer or evaluate")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = {}
    for game in args.games:
        env_id = f"{game}-frozen"
        rows: dict[str, list[float]] = {}
        for r in range(args.rounds):
            measured = {
                "batched_steps_per_s": batched_steps(env_id, args.num_envs, args.vec_steps, r),
                "fast_batched_steps_per_s": batched_steps(env_id, args.num_envs, args.vec_steps, r, exact=False),
                "rps_v2_steps_per_s": scalar_steps(rps_v2.parallel_env(), args.scalar_steps, r, masked=False),
                "scalar_steps_per_s": scalar_steps(scope_envs.make(env_id), args.scalar_steps, r, masked=True),
            }
            if not args.env_only:
                measured.update({
                    "trainer_steps_per_s": trainer_steps(env_id, args.steps, r, batched=True,
                                                         num_envs=args.trainer_num_envs),
                    "scalar_trainer_steps_per_s": trainer_steps(env_id, args.steps, r, batched=False, num_envs=16),
                    "evaluate_steps_per_s": evaluate_steps(game, r, batched=True),
                    "scalar_evaluate_steps_per_s": evaluate_steps(game, r, batched=False, num_envs=16),
                    "evaluate_256_steps_per_s": evaluate_steps(game, r, batched=True, episodes=2000, num_envs=256),
                })
            for k, v in measured.items():
                rows.setdefault(k, []).append(v)
        med = {k: float(np.median(v)) for k, v in rows.items()}
        out[game] = {
            "env": env_id, "num_envs": args.num_envs, "rounds": args.rounds,
            "trainer_num_envs": args.trainer_num_envs or PPOConfig().num_envs,
            "batched_steps_per_s": round(med["batched_steps_per_s"]),
            "rps_v2_steps_per_s": round(med["rps_v2_steps_per_s"]),
            "ratio_vs_rps": round(med["batched_steps_per_s"] / med["rps_v2_steps_per_s"], 2),
            "fast_batched_steps_per_s": round(med["fast_batched_steps_per_s"]),
            "fast_ratio_vs_rps": round(med["fast_batched_steps_per_s"] / med["rps_v2_steps_per_s"], 2),
            "scalar_steps_per_s": round(med["scalar_steps_per_s"]),
            "ratio_vs_scalar": round(med["batched_steps_per_s"] / med["scalar_steps_per_s"], 2),
        }
        if args.env_only:
            continue
        out[game].update({
            "trainer_steps_per_s": round(med["trainer_steps_per_s"]),
            "scalar_trainer_steps_per_s": round(med["scalar_trainer_steps_per_s"]),
            "trainer_ratio": round(med["trainer_steps_per_s"] / med["scalar_trainer_steps_per_s"], 2),
            "evaluate_steps_per_s": round(med["evaluate_steps_per_s"]),
            "scalar_evaluate_steps_per_s": round(med["scalar_evaluate_steps_per_s"]),
            "evaluate_ratio": round(med["evaluate_steps_per_s"] / med["scalar_evaluate_steps_per_s"], 2),
            "evaluate_256_steps_per_s": round(med["evaluate_256_steps_per_s"]),
        })
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
