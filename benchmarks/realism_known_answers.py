"""Issue 49's known answers R1 and R2 (``scope_envs.bench.realism``), on the training side of a game with real
dialogues to ground in (p4g): a collapsed copy of the grounded simulator is diagnosed as collapsed; a
realism-paid co-trained user ends nearer the training part's real reply pairs than it started, and nearer than
``cotrain``'s user. Writes ``known_answers.json`` and ``known_answers.md`` to ``--out``.

    python benchmarks/realism_known_answers.py                        # p4g, 8 seeds at its default budget
    python benchmarks/realism_known_answers.py --seeds 2 --steps 4000 --out /tmp/realism
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm.auto import tqdm

import numpy as np

from scope_envs.arguments import count, output_dir
from scope_envs.bench.methods import method_setup
from scope_envs.bench.realism import DISTANCE_EPISODES, r1_collapsed_copy, user_distance
from scope_envs.bench.stats import bootstrap_ci
from scope_envs.files import write_atomic, write_json
from scope_envs.games import game_names, game_spec

OUT = Path(__file__).resolve().parent / "results" / "realism"


def r2_seed(game: str, seed: int, steps: int, episodes: int = DISTANCE_EPISODES) -> dict:
    """R2 for one seed: the distance of the co-trained user at the start (the behaviour clone of the frozen
    simulator) and after ``steps`` decisions of ``cotrain-realism`` and of ``cotrain``."""
    # loaded here, not at the top: --help and a bad argument answer without torch
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    out = {"seed": seed}
    for method in ("cotrain-realism", "cotrain"):
        env_id, env_kwargs, overrides = method_setup(game, method)
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=env_kwargs, seed=seed, total_steps=steps,
                                       **overrides))
        if "start" not in out:  # the same behaviour clone for both rows (same seed, same frozen simulator)
            out["start"] = user_distance(trainer, game, seed, episodes, start=True)
        history = trainer.train()
        out[method] = user_distance(trainer, game, seed, episodes)
        if method == "cotrain-realism":
            out["held_back_accuracy_end"] = float(np.mean([r["discriminator_held_back_accuracy"]
                                                           for r in history[-max(1, len(history) // 4):]]))
    return out


def r2_verdict(per_seed: list[dict]) -> dict:
    """R2 over seeds: the mean distances, the CIs of end - start and of realism - cotrain, and the verdict."""
    start = np.array([r["start"] for r in per_seed])
    real = np.array([r["cotrain-realism"] for r in per_seed])
    plain = np.array([r["cotrain"] for r in per_seed])
    moved, versus = bootstrap_ci(real - start), bootstrap_ci(real - plain)
    return {"start": float(start.mean()), "cotrain-realism": float(real.mean()), "cotrain": float(plain.mean()),
            "end_minus_start_ci": list(moved), "realism_minus_cotrain_ci": list(versus),
            "held": bool(moved[1] < 0 and versus[1] < 0), "seeds": len(per_seed)}


def markdown(result: dict) -> str:
    r1, r2 = result["R1"], result["R2"]
    verdict = {True: "**held**", False: "**not held**"}
    g, c = r1["grounded"], r1["collapsed_copy"]
    lines = [f"# Realism known answers on {result['game']}", "",
             f"`python benchmarks/realism_known_answers.py {' '.join(result['argv'])}`", "",
             f"**R1** (a collapsed copy of the grounded simulator is diagnosed collapsed): {verdict[r1['held']]}.", "",
             "| simulator | sharpening (95% CI) | persona sensitivity (95% CI) |", "|---|---|---|",
             *(f"| {name} | {x['sharpening']:.3f} [{x['sharpening_ci'][0]:.3f}, {x['sharpening_ci'][1]:.3f}] | "
               f"{x['persona_sensitivity']:.4f} [{x['persona_sensitivity_ci'][0]:.4f}, "
               f"{x['persona_sensitivity_ci'][1]:.4f}] |" for name, x in (("grounded", g), ("collapsed copy", c))),
             "", f"**R2** (a realism-paid user ends nearer the real pairs than it started, and than `cotrain`'s): "
                 f"{verdict[r2['held']]}. Distance to the training part's real reply pairs (Jensen-Shannon, bits; "
                 f"{result['episodes']} episodes against the probe agent), mean over {r2['seeds']} seeds at "
                 f"{result['steps']:,} decisions:", "",
             "| start (clone of the frozen simulator) | cotrain-realism at the end | cotrain at the end | "
             "end - start (95% CI) | realism - cotrain (95% CI) |", "|---|---|---|---|---|",
             f"| {r2['start']:.3f} | {r2['cotrain-realism']:.3f} | {r2['cotrain']:.3f} | "
             f"[{r2['end_minus_start_ci'][0]:+.3f}, {r2['end_minus_start_ci'][1]:+.3f}] | "
             f"[{r2['realism_minus_cotrain_ci'][0]:+.3f}, {r2['realism_minus_cotrain_ci'][1]:+.3f}] |", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="p4g", choices=[g for g in game_names() if game_spec(g).realism],
                    help="a game with real dialogues to ground its users in (default p4g)")
    ap.add_argument("--seeds", type=count(64), default=8, help="seeds of R2 (default 8, at most 64)")
    ap.add_argument("--steps", type=count(10_000_000), default=None,
                    help="decisions of each training run (default: the game's budget, GameSpec.budget; "
                         "at most 10_000_000)")
    ap.add_argument("--episodes", type=count(100_000), default=DISTANCE_EPISODES,
                    help=f"episodes against the probe agent per distance (default {DISTANCE_EPISODES}, "
                         "at most 100_000)")
    ap.add_argument("--jobs", type=count(64), default=2, help="worker processes (default 2, at most 64)")
    ap.add_argument("--out", type=output_dir, default=str(OUT), help="folder for the results (default: %(default)s)")
    args = ap.parse_args(argv)
    steps = args.steps or game_spec(args.game).budget
    r1 = r1_collapsed_copy(args.game)
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(r2_seed, args.game, seed, steps, args.episodes) for seed in range(args.seeds)]
        per_seed = [f.result() for f in tqdm(futures, desc="R2 seeds", unit="seed")]
    result = {"game": args.game, "argv": argv, "steps": steps, "episodes": args.episodes,
              "R1": r1, "R2": {**r2_verdict(per_seed), "per_seed": per_seed}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "known_answers.json", result, indent=1)
    write_atomic(out / "known_answers.md", markdown(result))
    print(json.dumps({k: result[k]["held"] for k in ("R1",)} | {"R2": result["R2"]["held"]}))


if __name__ == "__main__":
    main()
