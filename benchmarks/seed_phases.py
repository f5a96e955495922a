"""Where one seed of the default run goes: its ten rows in one process, timed by phase.

Runs every method of ``--game`` at seed ``--seed`` with the default preset's settings (``run_one``, as a worker of
``scope-envs bench`` runs them, after one small warm-up run so that imports are not counted) and sums the wall
time spent in: the evaluation protocol (``protocol.play``: the four final sides and the learning-curve points),
the training rollouts (``PPOTrainer.play``), the PPO update (``update``), building its batches (``batches``) and the
learned users' behaviour cloning. The phases are disjoint; their sum is close to the rows' total.

    python benchmarks/seed_phases.py --game p4g
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import time

from scope_envs.arguments import count, game_name

PHASES = collections.Counter()


def timed(owner, name: str, phase: str, spent: collections.Counter = PHASES):
    """Wrap ``owner.name`` so that its wall time adds up in ``spent[phase]``; returns the method it replaced (to
    put it back)."""
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[phase] += time.perf_counter() - t0

    setattr(owner, name, wrapper)
    return inner


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", type=game_name, default="p4g")
    ap.add_argument("--seed", type=count(1000, low=0), default=0)
    args = ap.parse_args(argv)

    import scope_envs.bench.protocol as protocol
    import scope_envs.train.act_ppo as act_ppo
    from scope_envs.bench.methods import METHODS, PRESETS, preset_steps, run_one
    from scope_envs.bench.protocol import heldout_episodes_for

    timed(protocol, "play", "evaluation")
    timed(act_ppo.PPOTrainer, "play", "training rollouts")
    timed(act_ppo.PPOTrainer, "update", "update")
    timed(act_ppo.PPOTrainer, "batches", "batches")
    timed(act_ppo, "behaviour_clone", "behaviour cloning")
    preset = PRESETS["default"]
    settings = dict(steps=preset_steps(args.game), eval_episodes=preset["eval_episodes"], curve_points=preset["curve_points"],
                    curve_episodes=preset["curve_episodes"],
                    heldout_episodes=heldout_episodes_for(args.game, preset["eval_episodes"]))
    run_one(args.game, "cotrain", args.seed + 1, steps=500, eval_episodes=20, curve_points=1, curve_episodes=10)
    PHASES.clear()
    rows = {}
    t0 = time.perf_counter()
    for method in METHODS:
        rows[method] = round(run_one(args.game, method, args.seed, **settings)["wall_s"], 2)
    total = time.perf_counter() - t0
    print(json.dumps({"game": args.game, "seed": args.seed, "total_s": round(total, 2), "rows_s": rows,
                      "phases_s": {k: round(v, 2) for k, v in PHASES.most_common()}}, indent=1))


if __name__ == "__main__":
    main()
