"""How long the ceiling must train: the ``oracle`` row's training-side learning curve.

The oracle (PPO against the held-out behaviour model on *train* personas/tasks) is the benchmark's ceiling,
so it must be trained to its plateau, not to the methods' budget. This script reads only the training side
(the return on train scenarios, logged by the trainer) — never a held-out number — and writes
``benchmarks/results/oracle_budget/oracle_<game>.json``: the return averaged over each tenth of the run.

    python benchmarks/oracle_budget.py p4g 100000
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from scope_envs.arguments import count, output_path
from scope_envs.bench.methods import method_setup
from scope_envs.files import write_atomic

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("game", choices=["p4g", "cooperbench", "tau2"], help="the game whose ceiling trains")
    ap.add_argument("steps", type=count(100_000_000), help="agent decisions to train for (at most 100_000_000)")
    ap.add_argument("--out", type=output_path, default=Path(__file__).parent / "results" / "oracle_budget",
                    help="the folder of oracle_GAME.json (default: the committed benchmarks/results/oracle_budget; "
                         "give another for a trial run)")
    args = ap.parse_args()
    # loaded here, not at the top: --help and a bad argument answer without torch
    import torch

    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    torch.set_num_threads(1)
    env_id, kwargs, overrides = method_setup(args.game, "oracle")
    t0 = time.time()
    history = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=0, total_steps=args.steps,
                                   **overrides)).train()
    rows = [(r["agent_steps"], r["return"]) for r in history]
    w = max(1, len(rows) // 10)
    curve = [{"agent_steps": rows[min(len(rows) - 1, i + w - 1)][0],
              "train_return": float(np.mean([r for _, r in rows[i:i + w]]))} for i in range(0, len(rows), w)]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"game": args.game, "steps": args.steps, "wall_s": time.time() - t0, "curve": curve}
    write_atomic(args.out / f"oracle_{args.game}.json", json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
