"""Each game's budget at the plateau, by the declared rule (``scope_envs.bench.budgets``), training side only.

For each game and each row the rule sizes (``uncollapsed``: the methods' budget; ``oracle``: the ceiling's),
this trains PPO up the budget ladder, ``PLATEAU_SEEDS`` seeds a rung, evaluates each run on its own training
env (the benchmark's train-side seeds, ``--eval-episodes`` episodes) and the floor (uniform play, same env and
seeds), and climbs until a rung holds ``PLATEAU_SHARE`` of what ``PLATEAU_FACTOR`` times it reaches.
Nothing held out is read. Each run is kept in ``OUT/runs/`` as it ends (``--resume`` keeps them), and all of them
are packed into ``OUT/runs.jsonl.gz`` at the end (``scope_envs.bench.records``); the answer is
``OUT/plateau_budget.json`` and ``OUT/plateau_budget.md``.

    python benchmarks/plateau_budget.py                                # every game, both rows, two workers
    python benchmarks/plateau_budget.py --games tau2 --rows uncollapsed --out /tmp/pb
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from scope_envs.arguments import count, game_name, output_path
from scope_envs.games import game_spec
from scope_envs.bench import budgets, records
from scope_envs.bench.presets import GAMES
from scope_envs.files import write_atomic, write_json

OUT = Path(__file__).resolve().parent / "results" / "plateau_budget"
EVAL_EPISODES = 500


def run(game: str, row: str, rung: int, budget: int, seed: int, eval_episodes: int) -> dict:
    """Train ``row``'s PPO for ``budget`` decisions (0: the floor, uniform play) and score it on its training env."""
    import torch
    from threadpoolctl import threadpool_limits

    from scope_envs.bench.methods import method_setup
    from scope_envs.bench.policies import TrainerPlayers
    from scope_envs.bench.protocol import eval_envs, play, side_seeds
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    torch.set_num_threads(1)
    threadpool_limits(1)
    t0 = time.perf_counter()
    env_id, kwargs, overrides = method_setup(game, row)
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=seed, total_steps=budget, **overrides))
    if budget:
        trainer.train()
    side = play(TrainerPlayers(trainer, uniform=budget == 0), env_id, eval_episodes, side_seeds(seed)["train"],
                eval_envs(eval_episodes), **kwargs)
    return {"game": game, "row": row, "rung": rung, "budget": budget, "seed": seed, "eval_episodes": eval_episodes,
            "train_success": side["success"], "agent_steps": trainer.agent_steps, "wall_s": time.perf_counter() - t0}


def kept_runs(out) -> list:
    """The runs a resumed search keeps: the packed file's and those in ``runs/`` (a search killed after packing
    holds both)."""
    kept = dict(records.read_packed(out)) if (out / records.PACKED).is_file() else {}
    kept.update(records.read_runs(out))
    return list(kept.items())


def as_record(rec: dict) -> dict:
    """A run as the benchmark's records hold one: what was asked, what came out."""
    return {"task": {k: rec[k] for k in ("game", "row", "rung", "budget", "seed", "eval_episodes")}, "result": rec}


def name(game: str, row: str, rung: int | None, seed: int) -> str:
    return f"{game}-{row}-{'floor' if rung is None else f'rung{rung}'}-s{seed}"


class Search:
    """One (game, row)'s climb up the ladder: the runs it has, the ones it waits for."""

    def __init__(self, game: str, row: str, seeds: int, base: int | None = None, max_rung: int = budgets.MAX_RUNG):
        self.game, self.row, self.seeds, self.max_rung = game, row, seeds, max_rung
        self.base = game_spec(game).ladder_base if base is None else base
        self.done: dict[tuple, dict] = {}  # (rung or None, seed) -> record
        self.waiting: set[tuple] = set()

    def scores(self) -> tuple[dict[int, float], float | None]:
        rungs = {r for r, _ in self.done if r is not None}
        full = {r: float(np.mean([self.done[(r, s)]["train_success"] for s in range(self.seeds)]))
                for r in rungs if all((r, s) in self.done for s in range(self.seeds))}
        floor = [self.done[(None, s)]["train_success"] for s in range(self.seeds) if (None, s) in self.done]
        return full, float(np.mean(floor)) if len(floor) == self.seeds else None

    def wanted(self) -> list[tuple]:
        """(rung or None, seed) runs to start now (none while some are still running)."""
        if self.waiting:
            return []
        scores, floor = self.scores()
        if floor is None:
            need = [None, *range(min(3, self.max_rung + budgets.RUNG_OFFSET + 1))]  # the floor, the first rungs
        else:
            need = budgets.next_rungs(scores, floor, self.max_rung)
        return [(r, s) for r in need for s in range(self.seeds) if (r, s) not in self.done]

    def answer(self) -> dict:
        scores, floor = self.scores()
        rung = budgets.plateau_rung(scores, floor, self.max_rung) if floor is not None else None
        return {"game": self.game, "row": self.row, "base": self.base, "floor": floor,
                "scores": {str(budgets.rung_budget(self.base, r)): v for r, v in sorted(scores.items())},
                "per_seed": {str(budgets.rung_budget(self.base, r)): [self.done[(r, s)]["train_success"]
                                                                      for s in range(self.seeds)]
                             for r in sorted(scores)},
                "plateau_rung": rung, "highest_judged": budgets.rung_budget(self.base, self.max_rung),
                "plateau_budget": None if rung is None else budgets.rung_budget(self.base, rung),
                "at_plateau": rung is not None}


def derived_budgets(answers: list[dict]) -> dict:
    """Per game: the methods' budget (the ``uncollapsed`` row's plateau budget) and the ceiling's
    (``budgets.ceiling_budget``), where both rows were searched; a row whose ladder found no plateau gives its
    highest rung judged, flagged."""
    found = {(a["game"], a["row"]): a for a in answers}
    out = {}
    for game in dict.fromkeys(a["game"] for a in answers):
        rows = [found.get((game, r)) for r in budgets.ROWS]
        if None in rows:
            continue
        top = [a["plateau_budget"] or a["highest_judged"] for a in rows]
        out[game] = {"methods": top[0], "ceiling": budgets.ceiling_budget(top[1], top[0]),
                     "at_plateau": {r: a["at_plateau"] for r, a in zip(budgets.ROWS, rows)}}
    return out


def markdown(answers: list[dict], settings: dict, chosen: dict) -> str:
    lines = ["# Budgets at the plateau (training side only)", "",
             f"Rule (`scope_envs/bench/budgets.py`): the smallest rung B of the ladder base x {budgets.LADDER_STEP:.3f}^k "
             f"whose mean training-side success over {settings['seeds']} seeds is, above the floor, at least "
             f"{budgets.PLATEAU_SHARE} of the score at {budgets.PLATEAU_FACTOR} x B. Settings: {settings}.", "",
             "| game | row | floor | score per budget (decisions: mean train-side success) | budget at the plateau |",
             "|---|---|---|---|---|"]
    for a in answers:
        scores = ", ".join(f"{int(b):_}: {v:.3f}" for b, v in a["scores"].items())
        found = f"**{a['plateau_budget']:_}**" if a["at_plateau"] else "not found by the highest rung judged"
        lines.append(f"| {a['game']} | {a['row']} | {a['floor']:.3f} | {scores} | {found} |")
    lines += ["", "Budgets this derives (the ceiling's never below the methods': `budgets.ceiling_budget`):", ""]
    flag = {True: "", False: " (no plateau found: the highest rung judged)"}
    lines += [f"* {g}: the methods {c['methods']:_} decisions{flag[c['at_plateau']['uncollapsed']]}, the ceiling "
              f"{c['ceiling']:_}{flag[c['at_plateau']['oracle']]}" for g, c in chosen.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", nargs="+", type=game_name, default=list(GAMES), help="the games (default: all of them)")
    ap.add_argument("--rows", nargs="+", choices=budgets.ROWS, default=list(budgets.ROWS),
                    help="the rows whose plateau is found: uncollapsed sets the methods' budget, oracle the "
                         "ceiling's (default: both)")
    ap.add_argument("--seeds", type=count(64), default=budgets.PLATEAU_SEEDS,
                    help=f"seeds per rung (default: the rule's {budgets.PLATEAU_SEEDS}; at most 64)")
    ap.add_argument("--eval-episodes", type=count(100_000), default=EVAL_EPISODES,
                    help=f"training-side episodes per run (default {EVAL_EPISODES}; at most 100_000)")
    ap.add_argument("--jobs", type=count(256), default=os.cpu_count() or 1, help="worker processes (at most 256)")
    ap.add_argument("--base", type=count(10_000_000), default=None,
                    help="the ladder's first rung for every game (default: each game's GameSpec.ladder_base, its budget before the rule; a smaller "
                         "one makes a quick check of this script, not the rule's answer)")
    ap.add_argument("--max-rung", type=count(budgets.MAX_RUNG, low=0), default=budgets.MAX_RUNG,
                    help=f"the highest rung judged (default: the rule's {budgets.MAX_RUNG}; a lower one is a quick "
                         "check of this script)")
    ap.add_argument("--resume", action="store_true", help="keep the runs already in OUT/runs")
    ap.add_argument("--out", type=output_path, default=OUT,
                    help="the output folder (default: the committed benchmarks/results/plateau_budget; give "
                         "another for a trial run)")
    args = ap.parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    searches = {(g, r): Search(g, r, args.seeds, args.base, args.max_rung) for g in args.games for r in args.rows}
    if args.resume:
        for _, data in kept_runs(args.out):
            rec = data["result"]
            s = searches.get((rec["game"], rec["row"]))
            if s is not None and rec["eval_episodes"] == args.eval_episodes and rec["seed"] < args.seeds:
                s.done[(rec["rung"], rec["seed"])] = rec
    t0 = time.perf_counter()
    bar = tqdm(desc="plateau runs", unit="run")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running: dict[cf.Future, tuple] = {}

        def launch():
            new = []
            for s in searches.values():
                for rung, seed in s.wanted():
                    budget = 0 if rung is None else budgets.rung_budget(s.base, rung)
                    new.append((budget, s, rung, seed))
                    s.waiting.add((rung, seed))
            for budget, s, rung, seed in sorted(new, key=lambda n: -n[0]):  # the longest first
                f = pool.submit(run, s.game, s.row, rung, budget, seed, args.eval_episodes)
                running[f] = (s, rung, seed)
            bar.total = (bar.total or 0) + len(new)
            bar.refresh()

        launch()
        while running:
            done, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for f in done:
                s, rung, seed = running.pop(f)
                rec = f.result()
                write_json(args.out / "runs" / f"{name(s.game, s.row, rung, seed)}.json", as_record(rec),
                           strict=False)
                s.done[(rung, seed)] = rec
                s.waiting.discard((rung, seed))
                bar.update(1)
            launch()
    bar.close()
    # every run in one packed file (scope_envs.bench.records), the runs/ folder it replaces removed
    records.write_packed(args.out, [(name(s.game, s.row, r, seed), as_record(rec)) for s in searches.values()
                                    for (r, seed), rec in s.done.items()])
    shutil.rmtree(args.out / "runs", ignore_errors=True)
    answers = [s.answer() for s in searches.values()]
    chosen = derived_budgets(answers)
    settings = {"base": args.base or "each game's preset budget", "max_rung": args.max_rung, "seeds": args.seeds, "eval_episodes": args.eval_episodes, "jobs": args.jobs,
                "wall_s": round(time.perf_counter() - t0, 1), "resumed": bool(args.resume)}  # (this invocation's time)
    write_json(args.out / "plateau_budget.json", {"rule": {"share": budgets.PLATEAU_SHARE,
                                                            "factor": budgets.PLATEAU_FACTOR,
                                                            "ladder_step": budgets.LADDER_STEP,
                                                            "max_rung": budgets.MAX_RUNG},
                                                   "settings": settings, "answers": answers, "budgets": chosen})
    write_atomic(args.out / "plateau_budget.md", markdown(answers, settings, chosen))
    print(markdown(answers, settings, chosen))


if __name__ == "__main__":
    main()
