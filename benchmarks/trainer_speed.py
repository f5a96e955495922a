"""Trainer throughput, two ways, each a ratio to a baseline measured in this process in alternating rounds
(the machine is noisy). One thread (torch's and the BLAS's).

Env steps per second while the act-level PPO trains, against raw env stepping with random legal actions:

    python benchmarks/trainer_speed.py                 # p4g-frozen and p4g-cotrain, 3 rounds
    python benchmarks/trainer_speed.py --env p4g-population --steps 10000

The trainer's figure includes everything a training iteration does: batched policy forward
passes, env stepping, GAE and the PPO updates.

A row, all its seeds (``--seeds S``), each game's ``--methods`` rows at the default preset's budget (or
``--steps``): agent decisions per core-second of S trainers trained together (``scope_envs.train.seeds.train_seeds``:
one vec env of S x 64 slots) against the same S trainers trained one after another (``PPOTrainer.train``), the
trainers' construction (a learned user's behaviour clone) not timed; with ``--whole``, of the row's whole runs
(training, learning curves and the default preset's evaluation) by ``methods.run_seeds`` against ``methods.run_one``
seed after seed. Every seed's networks (and records, but for their timing) are checked equal both ways.

    python benchmarks/trainer_speed.py --seeds 8 --whole
    python benchmarks/trainer_speed.py --seeds 4 --games p4g --methods frozen cotrain --steps 2000 --out /tmp/t.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import scope_envs
from scope_envs.arguments import count, held_out_refusal, output_file, registered_id
from scope_envs.bench.methods import METHODS, UNTRAINED, method_setup, require_row, run_one, run_seeds
from scope_envs.bench.presets import GAMES, PRESETS, preset_steps
from scope_envs.bench.protocol import heldout_episodes_for
from scope_envs.files import write_json
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
from scope_envs.train.seeds import MAX_SEEDS, train_seeds

OUT = Path(__file__).resolve().parent / "results" / "trainer_speed_row.json"
TIMING = ("wall_s", "env_steps_per_s", "trained_with")  # what a record run together may differ in


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


def row_trainers(game: str, method: str, seeds: int, steps: int) -> list[PPOTrainer]:
    env_id, kwargs, overrides = method_setup(game, method)
    return [PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=s, total_steps=steps, **overrides))
            for s in range(seeds)]


def row_tasks(game: str, method: str, seeds: int, steps: int) -> list[dict]:
    """The row's runs as ``scope-envs bench`` would hand them out at the default preset (its evaluation episodes
    and learning curves), at ``steps`` decisions."""
    preset = PRESETS["default"]
    return [dict(game=game, method=method, seed=s, steps=steps, eval_episodes=preset["eval_episodes"],
                 heldout_episodes=heldout_episodes_for(game, preset["eval_episodes"]),
                 curve_points=preset["curve_points"], curve_episodes=preset["curve_episodes"]) for s in range(seeds)]


def compare(alone, together, rounds: int) -> tuple[float, float]:
    """Median seconds of ``alone()`` and ``together()`` over ``rounds`` alternating rounds. Each returns what it
    made and the seconds it took; the two must make the same."""
    times = {"alone": [], "together": []}
    for r in range(rounds):
        made = {}
        for way in ("alone", "together") if r % 2 == 0 else ("together", "alone"):
            made[way], seconds = (alone if way == "alone" else together)()
            times[way].append(seconds)
        if made["alone"] != made["together"]:
            raise AssertionError("a seed run together differs from the seed run alone")
    return float(np.median(times["alone"])), float(np.median(times["together"]))


def clocked(fn) -> tuple[object, float]:
    t0 = time.perf_counter()
    made = fn()
    return made, time.perf_counter() - t0


def row_speed(game: str, method: str, seeds: int, steps: int, rounds: int, whole: bool) -> dict:
    """A row's training (and with ``whole``, its runs: training, curves and evaluation) one seed after another
    and together: median seconds of ``rounds`` alternating rounds."""
    decisions = 0

    def training(train):
        """The trainers built (a learned user's behaviour clone is not timed), then trained by ``train``."""
        nonlocal decisions
        trainers = row_trainers(game, method, seeds, steps)
        _, seconds = clocked(lambda: train(trainers))
        decisions = sum(t.agent_steps for t in trainers)
        return [np.concatenate([p.ravel() for p in t.params["agent_0"]]).tobytes() for t in trainers], seconds

    a, b = compare(lambda: training(lambda ts: [t.train() for t in ts]), lambda: training(train_seeds), rounds)
    out = {"game": game, "method": method, "seeds": seeds, "steps": steps, "rounds": rounds,
           "decisions": decisions,
           "training_alone_s": round(a, 3), "training_together_s": round(b, 3),
           "training_alone_decisions_per_core_s": round(decisions / a),
           "training_together_decisions_per_core_s": round(decisions / b), "training_ratio": round(a / b, 3)}
    if whole:
        tasks = row_tasks(game, method, seeds, steps)

        def same(records):
            return [json.dumps({k: v for k, v in r.items() if k not in TIMING}, sort_keys=True) for r in records]

        a, b = compare(lambda: clocked(lambda: same([run_one(**t) for t in tasks])),
                       lambda: clocked(lambda: same(run_seeds(tasks))), rounds)
        out.update({"row_alone_s": round(a, 3), "row_together_s": round(b, 3),
                    "row_alone_decisions_per_core_s": round(decisions / a),
                    "row_together_decisions_per_core_s": round(decisions / b), "row_ratio": round(a / b, 3)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", nargs="+", type=registered_id, default=None,
                    help="without --seeds: the envs to time (default p4g-frozen p4g-cotrain)")
    ap.add_argument("--steps", type=count(100_000_000), default=None,
                    help="persuader decisions per trainer (default 10,000; with --seeds the default preset's "
                         "budget of each game; at most 100_000_000)")
    ap.add_argument("--rounds", type=count(1000), default=3, help="at most 1000")
    ap.add_argument("--seeds", type=count(MAX_SEEDS), default=None,
                    help=f"measure a whole row of this many seeds, together against one after another "
                         f"(at most {MAX_SEEDS})")
    ap.add_argument("--games", nargs="+", choices=list(GAMES), default=None,
                    help="only with --seeds (default every game)")
    ap.add_argument("--methods", nargs="+", default=None, choices=[m for m in METHODS if m not in UNTRAINED],
                    help="only with --seeds: each a row of every game of --games (default frozen)")
    ap.add_argument("--whole", action="store_true",
                    help="only with --seeds: also time the row's whole runs (training, learning curves and the "
                         "default preset's evaluation: methods.run_one seed after seed against methods.run_seeds)")
    ap.add_argument("--out", type=output_file, default=None, help=f"only with --seeds: the JSON (default {OUT})")
    args = ap.parse_args()
    for env in args.env or ():
        if held_out_refusal(env):
            ap.error(f"argument --env: {held_out_refusal(env)}")
    if args.seeds is None:  # options the env mode has no use for are refused, never ignored
        for name, value in (("--games", args.games), ("--methods", args.methods), ("--whole", args.whole or None),
                            ("--out", args.out)):
            if value is not None:
                ap.error(f"argument {name}: only with --seeds (without it the script times --env's trainers)")
    else:
        if args.env is not None:
            ap.error("argument --env: not with --seeds (a row's envs are its method's; choose them by --games and "
                     "--methods)")
        args.games = args.games or list(GAMES)
        args.methods = args.methods or ["frozen"]
        for game in args.games:
            for method in args.methods:
                try:
                    require_row(method, [game])
                except ValueError as e:
                    ap.error(f"argument --methods: {e}")
    torch.set_num_threads(1)
    threadpool_limits(1)
    if args.seeds is not None:
        results = []
        for game in args.games:
            for method in args.methods:
                steps = preset_steps(game) if args.steps is None else args.steps
                results.append(row_speed(game, method, args.seeds, steps, args.rounds, args.whole))
                print(json.dumps(results[-1]), flush=True)
        write_json(args.out or OUT, {"rows": results, "threads": 1})
        return
    steps = 10_000 if args.steps is None else args.steps
    for env_id in args.env or ["p4g-frozen", "p4g-cotrain"]:
        base, train = [], []
        for r in range(args.rounds):
            base.append(random_steps(env_id, steps, r))
            train.append(trainer_steps(env_id, steps, r))
        b, t = float(np.median(base)), float(np.median(train))
        print(json.dumps({"env": env_id, "steps": steps, "rounds": args.rounds,
                          "trainer_steps_per_s": round(t), "baseline_random_steps_per_s": round(b),
                          "ratio": round(t / b, 3)}))


if __name__ == "__main__":
    main()
