"""tau2's fast mode dealing every new episode's scenario at once, against dealing them slot by slot.

Steps ``make_vec(--env, --num-envs, exact=False)`` with random legal acts (``--warmup`` untimed steps, then
``--steps`` timed ones), twice per round in one process: as the engine deals (``Tau2VecEnv.deal_many``: the tasks
and cards of all the slots that start an episode drawn in arrays by ``Tau2Game.sample_scenarios``, their reply
traits read from a table per card, a scenario built only where one is read) and with the baseline, the
slot-by-slot dealing the engine had until 2026-12-02 (``sample_persona``, an episode seed and the traits for one
slot at a time; kept below). The two orders alternate
between rounds; the figure is the ratio of the median steps per second. Both draw from the same distribution
(``tests/test_vec_tau2_fast.py``), not the same draws, so the episodes differ.

    python benchmarks/tau2_fast_dealing.py --num-envs 256 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import scope_envs
from scope_envs.arguments import count, registered_id


def slot_by_slot(self, idx, split, persona=None, drawn=None):
    """The baseline: ``Tau2VecEnv.deal_many`` as it was, each slot's scenario, seed and traits in turn."""
    from scope_envs.core.env import LEARNABLE
    from scope_envs.vec.games import slot_traits

    rng = self._rng
    for i in idx.tolist():
        env = self._u[i]
        sim = env.members[int(self.member[i])]
        sim = None if sim == LEARNABLE else sim
        card = persona if persona is not None else env.game.sample_persona(rng, split)
        env.game.user_player = sim
        self.batch.begin(i, card, int(rng.integers(2**31)))
        self.persona[i], self.persona_id[i] = card, card.id
        self.batch.traits[i] = slot_traits(sim, card)
    self.batch.reset(idx)


def steps_per_s(env_id: str, num_envs: int, steps: int, warmup: int) -> float:
    vec = scope_envs.make_vec(env_id, num_envs=num_envs, exact=False)
    rng = np.random.default_rng(0)
    obs, _ = vec.reset(seed=0)
    for k in range(warmup + steps):
        if k == warmup:
            t0 = time.perf_counter()
        acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
        obs, *_ = vec.step(acts)
    return num_envs * steps / (time.perf_counter() - t0)


def measure(env_id: str, num_envs: int, rounds: int, steps: int, warmup: int) -> dict:
    from scope_envs.vec.games import Tau2VecEnv

    at_once = Tau2VecEnv.deal_many
    runs: dict[str, list[float]] = {"at_once": [], "slot_by_slot": []}
    try:
        for r in range(rounds):
            order = [("at_once", at_once), ("slot_by_slot", slot_by_slot)]
            for name, deal in order if r % 2 == 0 else order[::-1]:
                Tau2VecEnv.deal_many = deal
                runs[name].append(steps_per_s(env_id, num_envs, steps, warmup))
    finally:
        Tau2VecEnv.deal_many = at_once
    med = {k: float(np.median(v)) for k, v in runs.items()}
    return {"env": env_id, "num_envs": num_envs, "rounds": rounds, "steps": steps, "warmup": warmup,
            "steps_per_s": {k: round(v) for k, v in med.items()},
            "speedup": round(med["at_once"] / med["slot_by_slot"], 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=registered_id, default="tau2-frozen", help="a tau2 id (default: tau2-frozen)")
    ap.add_argument("--num-envs", type=count(4096), default=256, help="slots (at most 4096)")
    ap.add_argument("--rounds", type=count(20), default=5, help="rounds, each running both ways (at most 20)")
    ap.add_argument("--steps", type=count(100_000), default=300, help="timed steps per run (at most 100,000)")
    ap.add_argument("--warmup", type=count(100_000, low=0), default=50, help="untimed steps first (at most 100,000)")
    args = ap.parse_args(argv)
    if not args.env.startswith("tau2-"):
        ap.error(f"argument --env: {args.env!r} is not a tau2 id")
    before = [round(x, 2) for x in os.getloadavg()]
    out = measure(args.env, args.num_envs, args.rounds, args.steps, args.warmup)
    print(json.dumps({**out, "load": [before, [round(x, 2) for x in os.getloadavg()]]}, indent=1))


if __name__ == "__main__":
    main()
