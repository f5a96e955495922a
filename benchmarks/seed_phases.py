"""Where one seed of the default run goes: its ten rows in one process, by phase, read off a profiler.

Runs every method of ``--game`` at seed ``--seed`` with the default preset's settings (``run_one``, as a worker of
``scope-envs bench`` runs them, after one small warm-up run so that imports are not counted) under ``cProfile``
and reads the cumulative time of: the evaluation protocol (``protocol.play_seeds``: the four final sides and the
learning-curve points), the training rollouts (``train.seeds.rollouts``), the PPO update (``update``), building its
batches (``batches``) and the learned users' behaviour cloning. The phases are disjoint; their sum is close to the
rows' total. The profiler patches nothing, and slows Python-heavy code more than numpy-heavy code: read the
phases as shares of the profiled total (``shares``), not as the unprofiled seconds.

    python benchmarks/seed_phases.py --game p4g
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from pathlib import Path

from scope_envs.arguments import count, game_name

# phase -> (the file its function is defined in, relative to scope_envs/, the function's name)
PHASES = {"evaluation": ("bench/protocol.py", "play_seeds"), "training rollouts": ("train/seeds.py", "rollouts"),
          "update": ("train/act_ppo.py", "update"), "batches": ("train/act_ppo.py", "batches"),
          "behaviour cloning": ("train/behaviour_clone.py", "behaviour_clone")}


def phase_seconds(profile: cProfile.Profile) -> dict[str, float]:
    """Each phase's cumulative seconds in ``profile`` (0 for a phase that never ran)."""
    import scope_envs

    root = Path(scope_envs.__file__).resolve().parent
    files = {phase: str((root / path).resolve()) for phase, (path, _) in PHASES.items()}
    spent = dict.fromkeys(PHASES, 0.0)
    try:
        stats = pstats.Stats(profile).stats
    except TypeError:  # a profile that never ran holds no statistics
        return spent
    for (filename, _, function), (_, _, _, cumulative, _) in stats.items():
        for phase, (_, name) in PHASES.items():
            if function == name and str(Path(filename).resolve()) == files[phase]:
                spent[phase] += cumulative
    return spent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", type=game_name, default="p4g", help="the game (default p4g)")
    ap.add_argument("--seed", type=count(1000, low=0), default=0, help="the run seed (default 0, 0 to 1000)")
    args = ap.parse_args(argv)

    from scope_envs.bench.methods import METHODS, PRESETS, available, preset_steps, run_one
    from scope_envs.bench.protocol import heldout_episodes_for

    preset = PRESETS["default"]
    settings = dict(steps=preset_steps(args.game), eval_episodes=preset["eval_episodes"],
                    curve_points=preset["curve_points"], curve_episodes=preset["curve_episodes"],
                    heldout_episodes=heldout_episodes_for(args.game, preset["eval_episodes"]))
    run_one(args.game, "cotrain", args.seed + 1, steps=500, eval_episodes=20, curve_points=1, curve_episodes=10)
    rows = {}
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    for method in [m for m in METHODS if available(args.game, m)]:
        profile.enable()
        try:
            rows[method] = round(run_one(args.game, method, args.seed, **settings)["wall_s"], 2)
        finally:
            profile.disable()
    total = time.perf_counter() - t0
    spent = phase_seconds(profile)
    print(json.dumps({"game": args.game, "seed": args.seed, "total_s": round(total, 2), "rows_s": rows,
                      "phases_s": {k: round(v, 2) for k, v in sorted(spent.items(), key=lambda kv: -kv[1])},
                      "shares": {k: round(v / total, 3) for k, v in spent.items()}, "profiled": True}, indent=1))


if __name__ == "__main__":
    main()
