"""Would training S seeds as one batch of S x 64 slots be faster today? Cost per decision against the slot count.

Issue 46 asks for all seeds of a row trained as one computation. On today's engine the first question is whether a
bigger batch is cheaper per decision at all: if the per-step cost (Python's dispatch, the forward pass's call) were
most of it, S seeds' slots stepped together would share it. This times, for each game's ``frozen`` row at the
default PPOConfig, the training rollout (``PPOTrainer.play``: one wave of ``num_envs`` episodes with every
decision kept) and the evaluation (``rollout.evaluate`` on ``<game>-heldout``) at ``--slots`` slot counts, and
reports microseconds per agent decision (training) and per episode (evaluation), and the ratio to the baseline, 64 slots (today's ``num_envs``), measured
in the same process, best of ``--rounds``.

    python benchmarks/slot_scaling.py
    python benchmarks/slot_scaling.py --games p4g --slots 64 256 --rounds 1 --out /tmp/s.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

import scope_envs
from scope_envs.arguments import count, game_name, output_file
from scope_envs.bench.methods import method_setup
from scope_envs.bench.presets import GAMES
from scope_envs.files import write_json

OUT = Path(__file__).resolve().parent / "results" / "slot_scaling.json"
BASELINE = 64


def per_decision(game: str, slots: int, rounds: int) -> dict:
    # loaded here, not at the top: --help and a bad argument answer without torch
    from scope_envs.train.act_ppo import AGENT, PPOConfig, PPOTrainer
    from scope_envs.train.rollout import evaluate

    env_id, kwargs, overrides = method_setup(game, "frozen")
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=0, num_envs=slots,
                                   episodes_per_iter=slots, **overrides))
    envs = [scope_envs.make(env_id, **kwargs) for _ in range(slots)]
    trainer.play(envs, slots, seed=1)  # warm the caches
    evaluate(trainer, f"{game}-heldout", episodes=slots, seed=99, num_envs=slots)
    train = evals = float("inf")
    for r in range(rounds):
        t0 = time.perf_counter()
        episodes, _ = trainer.play(envs, slots, seed=2 + r)
        decisions = sum(len(e["traj"].get(AGENT, [])) for e in episodes)
        train = min(train, (time.perf_counter() - t0) / decisions * 1e6)
        t0 = time.perf_counter()
        evaluate(trainer, f"{game}-heldout", episodes=4 * slots, seed=100 + r, num_envs=slots)
        evals = min(evals, (time.perf_counter() - t0) / (4 * slots) * 1e6)
    return {"train_us_per_decision": train, "eval_us_per_episode": evals}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", nargs="+", type=game_name, default=list(GAMES), help="the games (default: all of them)")
    ap.add_argument("--slots", nargs="+", type=count(16_384), default=[64, 256, 1024, 4096],
                    help="slot counts (the first is compared with 64, run first as the baseline; at most 16_384)")
    ap.add_argument("--rounds", type=count(100), default=3, help="best of this many (at most 100)")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON (default {OUT})")
    args = ap.parse_args()
    slots = [BASELINE] + [s for s in args.slots if s != BASELINE]
    rows = []
    with threadpool_limits(1):
        for game in args.games:
            base = None
            for n in slots:
                r = per_decision(game, n, args.rounds)
                base = base or r
                row = {"game": game, "slots": n, **r,
                       "train_ratio": base["train_us_per_decision"] / r["train_us_per_decision"],
                       "eval_ratio": base["eval_us_per_episode"] / r["eval_us_per_episode"]}
                rows.append(row)
                print(f"{game} {n:>5} slots: training rollout {r['train_us_per_decision']:.1f} us/decision "
                      f"({row['train_ratio']:.2f}x of {BASELINE}), evaluation {r['eval_us_per_episode']:.1f} "
                      f"us/episode ({row['eval_ratio']:.2f}x)", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, {"baseline_slots": BASELINE, "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
