"""A checkpoint pool's snapshots answering all their slots at once, against asking them slot by slot.

Runs the benchmark's ``population`` row (the default preset's settings, ``run_one``, as a worker of
``scope-envs bench`` runs it) for ``--game`` twice per round in one process: once as the engine runs it, each
snapshot answering every slot it plays in one call (``Simulator.distributions``, ``BatchedVecEnv._observed``),
and once with the snapshots asked slot by slot as any custom simulator is (the baseline: ``PolicySnapshot.act``
overridden by the same draw, which the engine does not batch). The two orders alternate between rounds. The
rows' metrics must be identical (the same episodes); the figure is the ratio of their wall times.

    python benchmarks/snapshot_replies.py --game p4g --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import time

from scope_envs.arguments import count, game_name


def slot_by_slot(self, view, rng):
    """``Simulator.act`` itself, under another name: a simulator that overrides ``act`` is asked slot by slot."""
    from scope_envs.core.simulator import Simulator

    return Simulator.act(self, view, rng)


def measure(game: str, rounds: int, seed: int = 0, **settings) -> dict:
    """The two ways' wall times over ``rounds`` rounds; ``settings`` override the default preset's (``run_one``'s
    keywords: the test's smaller runs)."""
    from scope_envs.bench.methods import PRESETS, preset_steps, run_one
    from scope_envs.bench.protocol import heldout_episodes_for
    from scope_envs.train.act_ppo import PolicySnapshot
    from scope_envs.vec.batched import BatchedVecEnv

    preset = PRESETS["default"]
    settings = {"steps": preset_steps(game), "eval_episodes": preset["eval_episodes"],
                "curve_points": preset["curve_points"], "curve_episodes": preset["curve_episodes"],
                "heldout_episodes": heldout_episodes_for(game, preset["eval_episodes"]), **settings}
    run_one(game, "population", seed + 1, **{**settings, "steps": min(settings["steps"], 1000)})  # imports, memos
    wall = {"batched": [], "slot_by_slot": []}
    metrics = {}
    replies = {"batched": 0, "slot_by_slot": 0}  # the snapshots' replies, counted in the last round's runs
    observed, ask = BatchedVecEnv._observed, BatchedVecEnv._ask

    def observed_counted(self, idx, legal):
        replies["batched"] += len(idx)
        return observed(self, idx, legal)

    def ask_counted(self, i, legal):
        replies["slot_by_slot"] += isinstance(self.seated(i), PolicySnapshot)
        return ask(self, i, legal)

    BatchedVecEnv._observed, BatchedVecEnv._ask = observed_counted, ask_counted
    try:
        for r in range(rounds):
            for mode in (("batched", "slot_by_slot") if r % 2 == 0 else ("slot_by_slot", "batched")):
                if mode == "slot_by_slot":
                    PolicySnapshot.act = slot_by_slot
                elif "act" in PolicySnapshot.__dict__:
                    del PolicySnapshot.act
                replies[mode] = 0
                t0 = time.perf_counter()
                metrics[mode] = run_one(game, "population", seed, **settings)["metrics"]
                wall[mode].append(time.perf_counter() - t0)
    finally:
        BatchedVecEnv._observed, BatchedVecEnv._ask = observed, ask
        if "act" in PolicySnapshot.__dict__:
            del PolicySnapshot.act
    if replies["batched"] != replies["slot_by_slot"]:
        raise AssertionError(f"{game}: the snapshots replied {replies} times")
    if metrics["batched"] != metrics["slot_by_slot"]:
        raise AssertionError(f"{game}: the population row's metrics differ between the two ways of asking")
    batched, slow = sum(wall["batched"]), sum(wall["slot_by_slot"])
    return {"game": game, "rounds": rounds, "batched_s": [round(x, 2) for x in wall["batched"]],
            "slot_by_slot_s": [round(x, 2) for x in wall["slot_by_slot"]], "speedup": round(slow / batched, 2),
            "snapshot_replies": replies["batched"], "same_metrics": True}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", type=game_name, default="p4g")
    ap.add_argument("--rounds", type=count(20), default=2, help="rounds of the two runs (their order alternates)")
    ap.add_argument("--seed", type=count(1000, low=0), default=0)
    args = ap.parse_args(argv)
    out = measure(args.game, args.rounds, args.seed)
    print(json.dumps({**out, "load": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
