"""Batched rollouts (``scope_envs.make_vec``) against PettingZoo's ``rps_v2``, our scalar env and today's trainer.

For each game (``p4g``, ``cooperbench``, ``tau2``) it measures, in this process, in alternating rounds (the machine
is noisy; medians are reported):

* ``batched_steps_per_s``: env steps/s of ``make_vec("<game>-frozen", num_envs=N)`` (N = 256) with random
  legal acts (one per slot, drawn for all slots at once);
* ``rps_v2_steps_per_s``: PettingZoo's ``rps_v2`` parallel env with random acts (``benchmarks/env_speed.py``'s
  baseline), and ``ratio_vs_rps``;
* ``scalar_steps_per_s``: the scalar ``scope_envs.make("<game>-frozen")`` with random legal acts, and
  ``ratio_vs_scalar``;
* ``trainer_steps_per_s``: env steps/s of the act-level PPO (``PPOConfig`` defaults) while it trains
  ``--steps`` decisions, cloning excluded; ``scalar_trainer_steps_per_s``: the trainer as the issue found it,
  the code at ``--baseline-rev`` (its own defaults: 16 scalar envs stepped one at a time, torch's update), and
  ``trainer_ratio`` (p4g and cooperbench: the baseline revision predates tau2's batched engine, and tau2's
  target is its env, ``ratio_vs_scalar`` >= 20);
* ``evaluate_steps_per_s`` / ``scalar_evaluate_steps_per_s``: what the benchmark's evaluations get
  (``evaluate`` on ``<game>-heldout``, 500 episodes, its default 64 envs) against the evaluation at
  ``--baseline-rev`` (its default 16 envs); ``evaluate_256_steps_per_s``: ``num_envs=256`` (2,000 episodes).

The trainer and evaluation figures come from fresh processes, one per round and tree, the baseline's and
this tree's alternating (the baseline revision is exported by ``baseline_tree.py`` into a temporary folder
put first on ``PYTHONPATH``; it needs this checkout's git history).

    python benchmarks/vec_speed.py                      # the three games, 3 rounds
    python benchmarks/vec_speed.py --games tau2 --env-only --warmup 50   # tau2's engine against its scalar env
    python benchmarks/vec_speed.py --games tau2 --env-only --warmup 50 --num-envs 4096   # ... at 4,096 slots
    python benchmarks/vec_speed.py --games p4g --rounds 5 --num-envs 256
    python benchmarks/vec_speed.py --env-only           # the env rates and ratios only (no trainer/evaluate)

Prints one JSON object keyed by game, with the load averages before and after. One thread (torch's and the
BLAS's), as the benchmark's runs have.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from pettingzoo.classic import rps_v2
from threadpoolctl import threadpool_limits

import scope_envs
from baseline_tree import REPO, ExportError, child_output, export
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate


def batched_steps(env_id: str, num_envs: int, steps: int, seed: int, warmup: int = 0) -> float:
    """Env steps/s of ``make_vec(env_id, num_envs)``: ``steps`` steps of every slot, random legal
    acts, timed after ``warmup`` untimed steps (a trainer's engine steps on and on: the first steps of a fresh one
    start every slot at once, and tau2's first episodes build their tasks' goals and worlds)."""
    vec = scope_envs.make_vec(env_id, num_envs=num_envs)
    rng = np.random.default_rng(seed)
    obs, _ = vec.reset(seed=seed)
    for k in range(warmup + steps):
        if k == warmup:
            start = time.perf_counter()
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


GAMES = ("p4g", "cooperbench", "tau2")
TRAINER_GAMES = ("p4g", "cooperbench")  # the games with trainer/evaluation rows (see the module docstring)
BASELINE_REV = "3663039"  # main when issue 17 was filed: the trainer and evaluation it measured


def trainer_steps(env_id: str, decisions: int, seed: int) -> float:
    """Env steps/s of PPO training ``decisions`` persuader decisions (the config's defaults), cloning excluded."""
    trainer = PPOTrainer(PPOConfig(env_id=env_id, total_steps=decisions, seed=seed))
    start = time.perf_counter()
    trainer.train()
    return trainer.env_steps / (time.perf_counter() - start)


def evaluate_steps(game: str, seed: int, episodes: int = 500, num_envs: int | None = None) -> float:
    """Env steps/s of one benchmark evaluation (``evaluate`` on ``<game>-heldout``, its default number of envs
    unless ``num_envs``; an untrained network)."""
    trainer = PPOTrainer(PPOConfig(env_id=f"{game}-frozen", total_steps=0, seed=seed))
    steps = 0
    play = trainer.play

    def counting(*args, **kwargs):
        nonlocal steps
        episodes_, n = play(*args, **kwargs)
        steps += n
        return episodes_, n

    trainer.play = counting
    start = time.perf_counter()
    evaluate(trainer, f"{game}-heldout", episodes=episodes, seed=seed, **({"num_envs": num_envs} if num_envs else {}))
    return steps / (time.perf_counter() - start)


def trainer_figures(game: str, decisions: int, seed: int, baseline: bool) -> dict[str, float]:
    """This process's trainer and evaluation rates, for whichever tree ``scope_envs`` was imported from."""
    out = {"trainer_steps_per_s": trainer_steps(f"{game}-frozen", decisions, seed),
           "evaluate_steps_per_s": evaluate_steps(game, seed)}
    if not baseline:
        out["evaluate_256_steps_per_s"] = evaluate_steps(game, seed, episodes=2000, num_envs=256)
    return out


def in_fresh_process(tree: Path, game: str, decisions: int, seed: int, baseline: bool) -> dict[str, float]:
    """``trainer_figures`` in a fresh Python with ``tree`` first on its path (``measure_trainer``); a child that
    fails ends this script with its error (``child_output``)."""
    cmd = [sys.executable, __file__, MEASURE, game, str(decisions), str(seed)] + (["baseline"] if baseline else [])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    which = "the baseline's" if baseline else "this tree's"
    out = child_output(cmd, env, f"{which} trainer process ({tree}, {game})")
    return json.loads(out.strip().splitlines()[-1])


MEASURE = "--measure-trainer"  # the fresh process's first argument


def measure_trainer(argv: list[str]) -> None:
    """The fresh process of ``in_fresh_process``: ``GAME DECISIONS SEED [baseline]``. It runs under either tree's
    ``scope_envs``, so it reads its arguments without this tree's argument types."""
    game, decisions, seed = argv[0], int(argv[1]), int(argv[2])
    torch.set_num_threads(1)
    threadpool_limits(1)
    print(json.dumps(trainer_figures(game, decisions, seed, baseline=argv[3:] == ["baseline"])))


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == [MEASURE]:
        return measure_trainer(argv[1:])
    from scope_envs.arguments import count  # (this tree's; not imported in a baseline revision's process)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES, help="the games (default: all of them)")
    ap.add_argument("--num-envs", type=count(16_384), default=256,
                    help="slots of the batched env (default 256, at most 16_384)")
    ap.add_argument("--vec-steps", type=count(100_000), default=200,
                    help="batched steps per round (each steps every slot; default 200, at most 100_000)")
    ap.add_argument("--warmup", type=count(100_000, low=0), default=0,
                    help="untimed batched steps before the timed ones (default 0, as the earlier rows;"
                         " at most 100_000)")
    ap.add_argument("--scalar-steps", type=count(10_000_000), default=10_000,
                    help="scalar and rps_v2 steps per round (default 10_000, at most 10_000_000)")
    ap.add_argument("--steps", type=count(10_000_000), default=None,
                    help="persuader decisions per trainer round (default 10_000, at most 10_000_000)")
    ap.add_argument("--rounds", type=count(100), default=3, help="rounds (default 3, at most 100)")
    ap.add_argument("--baseline-rev", default=None,
                    help="the git revision whose trainer and evaluation are the baseline (default: main when "
                         "issue 17 was filed)")
    ap.add_argument("--env-only", action="store_true",
                    help="measure the envs only (batched, rps_v2, scalar), not the trainer or evaluate")
    args = ap.parse_args(argv)
    for flag, given in (("--steps", args.steps is not None), ("--baseline-rev", args.baseline_rev is not None)):
        if args.env_only and given:  # (it was taken and ignored)
            ap.error(f"argument {flag}: not with --env-only, which times no trainer")
    args.steps = 10_000 if args.steps is None else args.steps
    args.baseline_rev = BASELINE_REV if args.baseline_rev is None else args.baseline_rev
    for name in ("num_envs", "vec_steps", "scalar_steps", "steps", "rounds"):
        if not 1 <= getattr(args, name) <= 10**7:
            ap.error(f"argument --{name.replace('_', '-')}: must be in [1, 10000000], got {getattr(args, name)}")
    if not 0 <= args.warmup <= 10**6:
        ap.error(f"argument --warmup: must be in [0, 1000000], got {args.warmup}")
    torch.set_num_threads(1)
    threadpool_limits(1)
    if not args.env_only:
        tmp = tempfile.TemporaryDirectory(prefix="vec_speed_baseline_")  # removed when main returns
        try:
            baseline_tree = export(args.baseline_rev, tmp.name)
        except ExportError as e:
            ap.error(f"--baseline-rev: {e}")
    out = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    for game in args.games:
        env_id = f"{game}-frozen"
        rows: dict[str, list[float]] = {}
        for r in range(args.rounds):
            measured = {
                "batched_steps_per_s": batched_steps(env_id, args.num_envs, args.vec_steps, r, warmup=args.warmup),
                "rps_v2_steps_per_s": scalar_steps(rps_v2.parallel_env(), args.scalar_steps, r, masked=False),
                "scalar_steps_per_s": scalar_steps(scope_envs.make(env_id), args.scalar_steps, r, masked=True),
            }
            if not args.env_only and game in TRAINER_GAMES:
                old = in_fresh_process(baseline_tree, game, args.steps, r, baseline=True)
                measured.update(in_fresh_process(REPO, game, args.steps, r, baseline=False))
                measured["scalar_trainer_steps_per_s"] = old["trainer_steps_per_s"]
                measured["scalar_evaluate_steps_per_s"] = old["evaluate_steps_per_s"]
            for k, v in measured.items():
                rows.setdefault(k, []).append(v)
        med = {k: float(np.median(v)) for k, v in rows.items()}
        out[game] = {
            "env": env_id, "num_envs": args.num_envs, "rounds": args.rounds, "warmup": args.warmup,
            "trainer_num_envs": PPOConfig().num_envs,
            "baseline_rev": None if args.env_only or game not in TRAINER_GAMES else args.baseline_rev,
            "batched_steps_per_s": round(med["batched_steps_per_s"]),
            "rps_v2_steps_per_s": round(med["rps_v2_steps_per_s"]),
            "ratio_vs_rps": round(med["batched_steps_per_s"] / med["rps_v2_steps_per_s"], 2),
            "scalar_steps_per_s": round(med["scalar_steps_per_s"]),
            "ratio_vs_scalar": round(med["batched_steps_per_s"] / med["scalar_steps_per_s"], 2),
        }
        if args.env_only or game not in TRAINER_GAMES:
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
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
