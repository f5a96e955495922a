"""Where a step of the batched tau2 engine goes: milliseconds per step in each part, in one process.

Steps ``make_vec("tau2-frozen", --num-envs)`` with random legal acts (``--warmup`` untimed steps, then ``--steps``
timed ones) and times, by wrapping them, the engine's parts: dealing new episodes (``_start``: each slot's
generator, member and persona, in exact mode one slot at a time), the users' turn (``_run_simulators``: their
legal acts, reply model and draw, and the turn played), the agent's turn (``_apply``), the observation
(``_observe``: legal masks, candidates, features) and, inside those, the batch's candidates, features, tool calls
(``_calls``) and reply model. The parts nest (the candidates are inside the observation), so they do not add up;
``step`` is the whole.

    python benchmarks/tau2_step_split.py --num-envs 256
"""

from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np
from seed_phases import timed

import scope_envs
from scope_envs.arguments import count
from scope_envs.games.tau2.batched import Tau2Batch
from scope_envs.vec.batched import BatchedVecEnv

PARTS = [(BatchedVecEnv, "step"), (BatchedVecEnv, "_start"), (BatchedVecEnv, "_run_simulators"),
         (BatchedVecEnv, "_apply"), (BatchedVecEnv, "_observe"), (Tau2Batch, "candidates"), (Tau2Batch, "features"),
         (Tau2Batch, "_calls"), (Tau2Batch, "reference_reply")]


def split(num_envs: int, steps: int, warmup: int, exact: bool = True) -> dict:
    spent = collections.Counter()
    originals = {(owner, name): timed(owner, name, f"{owner.__name__}.{name}", spent) for owner, name in PARTS}
    try:
        vec = scope_envs.make_vec("tau2-frozen", num_envs=num_envs, exact=exact)
        rng = np.random.default_rng(0)
        obs, _ = vec.reset(seed=0)
        for k in range(warmup + steps):
            if k == warmup:
                spent.clear()
            acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
            obs, *_ = vec.step(acts)
    finally:
        for (owner, name), inner in originals.items():
            setattr(owner, name, inner)
    ms = {k: round(v / steps * 1e3, 3) for k, v in spent.most_common()}
    return {"num_envs": num_envs, "exact": exact, "steps": steps, "warmup": warmup,
            "steps_per_s": round(num_envs * steps / spent["BatchedVecEnv.step"]), "ms_per_step": ms}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=count(4096), default=256, help="slots of the batched env")
    ap.add_argument("--steps", type=count(100_000), default=200, help="timed steps")
    ap.add_argument("--warmup", type=count(100_000), default=300, help="untimed steps first (the memos fill)")
    ap.add_argument("--fast", action="store_true", help="fast mode (one generator for all slots)")
    args = ap.parse_args(argv)
    out = split(args.num_envs, args.steps, args.warmup, exact=not args.fast)
    print(json.dumps({**out, "load": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
