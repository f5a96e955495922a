"""Where a step of the batched tau2 engine goes: milliseconds per step in each part, in one process.

Steps ``make_vec("tau2-frozen", --num-envs)`` with random legal acts (``--warmup`` untimed steps, then ``--steps``
timed ones) and reads off ``cProfile`` the cumulative time of the engine's parts (nothing is patched): dealing new episodes (``_start``: members,
personas and tasks), the users' turn (``_run_simulators``: their
legal acts, reply model and draw, and the turn played), the agent's turn (``_apply``), the observation
(``_observe``: legal masks, candidates, features) and, inside those, the batch's candidates, features, tool calls
(``_calls``) and reply model. The parts nest (the candidates are inside the observation), so they do not add up;
``step`` is the whole. ``steps_per_s`` is timed without the profiler, on the same steps played again; the parts
are the profiled milliseconds (the profiler slows Python-heavy parts more than numpy-heavy ones).

    python benchmarks/tau2_step_split.py --num-envs 256
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
from pathlib import Path

import numpy as np

import scope_envs
from scope_envs.arguments import count

# (the file, relative to scope_envs/, the class and the function) of each part
PARTS = [("vec/batched.py", "BatchedVecEnv", name) for name in ("step", "_start", "_run_simulators", "_apply",
                                                                 "_observe")]
PARTS += [("games/tau2/batched.py", "Tau2Batch", name) for name in ("candidates", "features", "_calls",
                                                                     "reference_reply")]


def part_seconds(profile: cProfile.Profile) -> dict[str, float]:
    """Each part's cumulative seconds in ``profile``, named ``Class.function``."""
    root = Path(scope_envs.__file__).resolve().parent
    spent = {f"{cls}.{name}": 0.0 for _, cls, name in PARTS}
    where = {(str((root / path).resolve()), name): f"{cls}.{name}" for path, cls, name in PARTS}
    for (filename, _, function), (_, _, _, cumulative, _) in pstats.Stats(profile).stats.items():
        part = where.get((str(Path(filename).resolve()), function))
        if part is not None:
            spent[part] += cumulative
    return spent


def _play(vec, obs, rng, steps: int, profile: cProfile.Profile | None = None):
    for _ in range(steps):
        acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
        if profile is not None:
            profile.enable()
        obs, *_ = vec.step(acts)
        if profile is not None:
            profile.disable()
    return obs


def split(num_envs: int, steps: int, warmup: int) -> dict:
    vec = scope_envs.make_vec("tau2-frozen", num_envs=num_envs)
    rng = np.random.default_rng(0)
    obs, _ = vec.reset(seed=0)
    obs = _play(vec, obs, rng, warmup)
    t0 = time.perf_counter()
    obs = _play(vec, obs, rng, steps)
    wall = time.perf_counter() - t0
    profile = cProfile.Profile()
    _play(vec, obs, rng, steps, profile)
    spent = part_seconds(profile)
    ms = {k: round(v / steps * 1e3, 3) for k, v in sorted(spent.items(), key=lambda kv: -kv[1])}
    return {"num_envs": num_envs, "steps": steps, "warmup": warmup,
            "steps_per_s": round(num_envs * steps / wall), "ms_per_step": ms}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=count(4096), default=256,
                    help="slots of the batched env (default 256, at most 4096)")
    ap.add_argument("--steps", type=count(100_000), default=200, help="timed steps (default 200, at most 100_000)")
    ap.add_argument("--warmup", type=count(100_000), default=300,
                    help="untimed steps first (the memos fill; default 300, at most 100_000)")
    args = ap.parse_args(argv)
    out = split(args.num_envs, args.steps, args.warmup)
    print(json.dumps({**out, "load": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
