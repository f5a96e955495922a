"""``scope-envs bench``: its arguments and the grid of runs (games x methods x seeds)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from scope_envs.arguments import GROUP_SIZE, MAX_SEEDS, resolve_group_size
from scope_envs.bench.executors import (
    EXECUTORS,
    BenchFailure,
    ExecutorUnavailable,
    execute,
)
from scope_envs.bench.methods import (
    COST,
    EXTRA_METHODS,
    SEEDS_MIN,
    GAMES,
    METHODS,
    ORACLE_BUDGET,
    PRESETS,
    available,
    ceiling_steps,
    heldout_episodes_for,
    preset_steps,
    require_row,
)
from scope_envs.bench.plots import plot
from scope_envs.bench.presets import SMOKE_EVAL_EPISODES, SMOKE_STEPS, is_smoke, run_settings
from scope_envs.bench.report import write_report
from scope_envs.bench.stats import claims, summarize
from scope_envs.files import OutputError, check_output_dir, describe, output_set, write_atomic, write_json

# upper bounds of the counts (argparse checks them before anything starts; `scope-envs bench --help` says them)
MAX_EVAL_EPISODES = 1_000_000
MAX_JOBS = 1024
MAX_GROUP_SIZE = 256
SEED_BLOCK = 8  # seeds of a row per task by default (--seed-block)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    from scope_envs.arguments import MAX_DECISIONS, count, game_name, output_dir, ray_address
    from scope_envs.core.rewards import SIMULATOR_REWARDS

    ap.add_argument("--full", action="store_true",
                    help="the full preset: 100_000 decisions per run (every game), at least 3,000 evaluation episodes a side, "
                         "10 curve points, 8 seeds per game (the default preset gives each game its seeds-rule count)")
    ap.add_argument("--games", nargs="+", type=game_name, default=list(GAMES),
                    help=f"the games (default: {' '.join(GAMES)})")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS + EXTRA_METHODS, metavar="ROW",
                    help=f"the built-in rows to run, of {', '.join(METHODS + EXTRA_METHODS)} (default: all but "
                         "population_members; a game plays only the rows it has: grounded and the realism rows are "
                         "p4g's). random and oracle are the band's floor and ceiling, uncollapsed frozen's recipe "
                         "against the defect-free training-side users; population_members trains K co-trained "
                         "users, one per episode, with a diversity term. Each row: docs/benchmark.md")
    seeds = ", ".join(f"{g} {max(PRESETS['default']['seeds'], SEEDS_MIN.get(g, 0))}" for g in GAMES)
    steps = ", ".join(f"{g} {preset_steps(g):_}" for g in GAMES)
    ceilings = ", ".join(f"{g} {ceiling_steps(g, preset_steps(g)):_}" for g in GAMES)
    ap.add_argument("--seeds", type=count(MAX_SEEDS), default=None,
                    help=f"number of seeds (0..N-1; at most {MAX_SEEDS}). Default: the default preset's per game, "
                         f"{seeds} (each game's GameSpec.seeds_min, by the seeds rule; at least {PRESETS['default']['seeds']}); --full: {PRESETS['full']['seeds']} per game; a smoke run "
                         f"(--steps below {SMOKE_STEPS:_}): {PRESETS['default']['seeds']}. With --against the "
                         "reference's rows keep all their seeds, whatever this says")
    ap.add_argument("--steps", type=count(MAX_DECISIONS), default=None,
                    help=f"training budget per run, in decisions of agent_0 (at most {MAX_DECISIONS:_}). Default: the "
                         f"preset's per game, {steps}: the plateau rule's budgets, cooperbench's below its plateau "
                         f"(GameSpec.budget; preset_steps in scope_envs/bench/presets.py); --full: {PRESETS['full']['steps']:_} per "
                         f"game. The ceiling (oracle) trains the plateau rule's ceiling budget, {ceilings} (where the rule found "
                         f"no plateau, the highest rung it judged); below a game's plateau, {ORACLE_BUDGET}x --steps, "
                         "at most that (presets.ceiling_steps)")
    ap.add_argument("--eval-episodes", type=count(MAX_EVAL_EPISODES), default=None,
                    help="evaluation episodes per side (default: the preset's, with the held-out side raised per game "
                         "by the evaluation rule, EVAL_EPISODES_MIN; a smoke run, --steps below "
                         f"{SMOKE_STEPS:_} without --eval-episodes, caps both sides at {SMOKE_EVAL_EPISODES}; "
                         f"at most {MAX_EVAL_EPISODES:_})")
    ap.add_argument("--jobs", type=count(MAX_JOBS), default=None,
                    help=f"tasks in flight at once, each a run or a block of seeds (--seed-block) (default: this "
                         f"machine's CPUs; on a Ray cluster, its CPUs; at most {MAX_JOBS})")
    ap.add_argument("--executor", default="local", choices=EXECUTORS,
                    help="local: worker processes on this machine; ray: one Ray task per run or block of seeds "
                         "(--seed-block), on a local Ray or --address's cluster (scope-envs[ray])")
    ap.add_argument("--address", default=None, type=ray_address,
                    help="with --executor ray: the cluster to join (auto, ray://HOST:PORT, HOST:PORT); "
                         "default: start a local Ray on this machine")
    ap.add_argument("--seed-block", type=count(MAX_SEEDS), default=SEED_BLOCK,
                    help=f"train a built-in row's seeds as one computation, in blocks of up to this many (default "
                         f"{SEED_BLOCK}; 1: each seed its own task; at most {MAX_SEEDS}). A seed's record is the one it "
                         "gets alone; a block is one task of --jobs or of a Ray cluster")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already written to OUT/runs (same settings, same code) and run only the others; "
                         "a packed folder (OUT/runs.jsonl.gz) is unpacked into OUT/runs first")
    ap.add_argument("--user-reward", default=None, choices=SIMULATOR_REWARDS,
                    help="the learned user's reward (cotrain, population, selfplay); default: each game's own")
    ap.add_argument("--advantage", default="gae", choices=("gae", "grpo"), help="gae (default) or SCOPE's grpo")
    ap.add_argument("--group-size", type=count(MAX_GROUP_SIZE), default=None,
                    help=f"episodes per scenario (1; {GROUP_SIZE}, SCOPE's, with --advantage grpo or --user-reward "
                         f"curriculum, which need >= 2; at most {MAX_GROUP_SIZE})")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also re-evaluate every trained policy under each variant of the held-out proxies' "
                         "assumptions and judge the claims under each (sensitivity.json, sensitivity.md)")
    ap.add_argument("--world", default=None, choices=all_worlds(),
                    help="train and evaluate every run in this variant of its game's training-side world "
                         "(GameSpec.worlds; p4g's no-interactions: its persona x act interactions, which its data "
                         "supports least, set to zero), simulators and reference users alike; the held-out "
                         "proxies are as shipped. The verdicts' sensitivity to that assumption; every game of "
                         "--games must declare the world")
    ap.add_argument("--calibration", action="store_true",
                    help="run the known-answer calibration instead (scope_envs.bench.calibration): the users are "
                         "each game's reference model on held-out cards, the training simulator has one defect at a "
                         "time; --games, --seeds (default 5), --steps, --eval-episodes (default 500), --jobs, "
                         "--resume and --out apply; writes calibration.json, calibration.md and a figure per game")
    ap.add_argument("--out", type=output_dir, default="results",
                    help="the output folder (default: ./results; created; checked writable before any run starts; "
                         "'.' is the working folder)")
    ap.add_argument("--print-report", action="store_true",
                    help="also print the whole report.md (by default the output ends with a short summary per game "
                         "and the report's path)")


def all_worlds() -> list[str]:
    """Every variant world some game declares, "fitted" (as shipped) left out."""
    from scope_envs.bench.worlds import world_names

    return sorted({w for g in GAMES for w in world_names(g)} - {"fitted"})


def check_world(world: str | None, games) -> None:
    """ValueError unless every game of ``games`` declares ``world`` (None: nothing to check)."""
    from scope_envs.bench.worlds import world_names

    if world is None:
        return
    missing = [g for g in games if world not in world_names(g)]
    if missing:
        raise ValueError(f"{', '.join(missing)} declare(s) no world {world!r} (GameSpec.worlds); "
                         f"run the games that do: {', '.join(g for g in GAMES if world in world_names(g))}")


def machine() -> str:
    """Where a run's wall time and last digits come from: the CPU, its count, numpy and the BLAS kernels numpy
    runs (the networks' float32 sums round as those kernels add), and the vector width of torch's kernels (the
    behaviour cloning of learned users runs in torch; docs/benchmark.md, "Reproducibility")."""
    import platform

    import numpy as np
    import torch
    from threadpoolctl import threadpool_info

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:  # not Linux
        pass
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    # numpy's own (its wheel's numpy.libs); scipy, torch and others may load another BLAS beside it
    numpys = [i for i in libs if f"{os.sep}numpy" in i.get("filepath", "")] or libs
    blas = next((f"{i.get('internal_api', '?')} {i.get('version') or ''}, {i.get('architecture') or '?'} kernels"
                 for i in numpys), "no BLAS found")
    from scope_envs import kernels

    return (f"{cpu}, {os.cpu_count()} CPUs; numpy {np.__version__} ({blas.replace(' ,', ',')}); "
            f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels); {kernels.describe()}")


def run(games=GAMES, methods=METHODS, seeds=None, steps=None, eval_episodes=None, full=False, out="results",
        jobs=None, progress=True, user_reward=None, advantage="gae", group_size=1, sensitivity=False,
        executor="local", address=None, resume=False, plugins=(), against=None, confirmatory=None,
        world=None, seed_block=SEED_BLOCK) -> dict:
    """Run the benchmark and write its outputs; returns the results.json dict. Each run is also written to
    ``out/runs/`` as it finishes; ``executor``/``address``/``resume``: see ``scope_envs.bench.executors``;
    ``world``: a variant of each game's training-side world to train and evaluate every run in (``--world``);
    ``seed_block``: a built-in row's seeds trained as one computation, in blocks of up to that many (``--seed-block``)."""
    import scope_envs

    if advantage not in ("gae", "grpo"):
        raise ValueError(f"advantage must be 'gae' or 'grpo', got {advantage!r}")
    if group_size < 2 and (advantage == "grpo" or user_reward == "curriculum"):
        raise ValueError(f"group_size must be >= 2 with advantage='grpo' or user_reward='curriculum', got {group_size}")
    check_world(world, games)

    settings = run_settings(seeds, steps, eval_episodes, full)
    smoke = is_smoke(steps, eval_episodes)
    for key in ("seeds", "eval_episodes") + (("steps",) if steps is not None else ()):  # (the preset's: per game)
        if not isinstance(settings[key], int) or settings[key] < 1:
            raise ValueError(f"{key} must be a positive int, got {settings[key]!r}")
    for game in games:
        if f"{game}-heldout" not in scope_envs.registry:
            known = sorted({s.game for s in scope_envs.registry.values()})
            raise ValueError(f"unknown game {game!r}; known games: {known}")
    if steps is None:  # the preset's budget per game (the default preset's: each game's plateau budget)
        settings["steps"] = {g: preset_steps(g, "full" if full else "default") for g in games}
    out = check_output_dir(out)  # a file in the way, a read-only disk: said now, before any run
    check_output_dir(out / "runs")
    for method in methods if list(methods) != list(METHODS) else ():  # rows asked for by name
        require_row(method, games)
    # the preset's held-out evaluation, raised per game to the measurement-resolution rule; --eval-episodes is
    # exact (both sides)
    floor = eval_episodes is None and not smoke
    # the default preset's seeds, raised per game to the seeds rule's; --seeds is exact
    seeds_min = SEEDS_MIN if seeds is None and not full and not smoke else {}
    scope = {"user_reward": user_reward, "advantage": advantage, "group_size": group_size,
             **({"sensitivity": True} if sensitivity else {}), **({"world": world} if world else {})}
    tasks = [dict(game=g, method=m, seed=s, steps=settings["steps"][g] if steps is None else steps,
                  eval_episodes=settings["eval_episodes"],
                  heldout_episodes=heldout_episodes_for(g, settings["eval_episodes"]) if floor
                  else settings["eval_episodes"],
                  curve_points=settings["curve_points"], curve_episodes=settings["curve_episodes"], **scope)
             for g in games for m in methods if available(g, m)
             for s in range(max(settings["seeds"], seeds_min.get(g, 0)))]
    from scope_envs.bench.methods import variants

    if sensitivity:  # each variant's own ceiling: the oracle retrained under it (bench.sensitivity)
        tasks += [dict(t, assumptions=v, sensitivity=False) for t in tasks if t["method"] == "oracle"
                  for v in variants(t["game"])]
    from scope_envs.bench import entrants, reference  # --method rows; --against: the reference's runs instead of ours

    tasks, reference_runs = entrants.plan(tasks, list(plugins), against)
    reference.announce_data(games)
    tasks.sort(key=lambda t: -COST.get(t["method"], 1.0 if t["method"] != "untrained" else 0.1))
    if executor == "local":
        jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    t0 = time.perf_counter()
    runs, jobs = execute(tasks, out, executor=executor, jobs=jobs, address=address, resume=resume, progress=progress,
                         seed_block=seed_block)
    wall = time.perf_counter() - t0  # with resume: this session's part only
    variant_ceilings = [r for r in runs if r.get("assumptions")]
    runs = reference_runs + [r for r in runs if not r.get("assumptions")]
    results = summarize(runs)
    with output_set(out, belongs=run_output) as staged:  # written as one set: a kill leaves the earlier one
        write_json(staged / "results.json", results)
        stats_by_game = entrants.stats_by_game(results, confirmatory)  # the built-in rows' tests from them alone
        write_json(staged / "claims.json", claims(entrants.builtin_results(results), stats_by_game),
                   ensure_ascii=False)
        from scope_envs.bench import records, split  # split: the gap in two parts (a confirmatory definition)

        splits = split.split_all(results)
        budgets = {}  # an entrant's budget (its tasks'), beside what it reported
        for t in tasks:
            budgets.setdefault(t["game"], t["steps"])
        verdicts = entrants.verdicts(results, stats_by_game, splits, split.REFERENCE_SUCCESS,  # collapse beside them
                                     runs=runs, budgets=budgets)
        if plugins:
            write_json(staged / "entrants.json", entrants.to_json(stats_by_game))
        write_json(staged / records.CURVES, {"settings": settings, "wall_s": wall, "runs": runs})
        per_game = {key: ", ".join(f"{g} {next(t[key] for t in tasks if t['game'] == g)}" for g in games)
                    for key in ("steps", "eval_episodes", "heldout_episodes")}  # the presets scale these per game
        per_game["seeds"] = ", ".join(f"{g} {len({t['seed'] for t in tasks if t['game'] == g})}" for g in games)
        if against:  # the reference's rows keep every seed they have
            per_game["seeds"] += " (the new rows); the reference's rows: " + ", ".join(
                f"{g} {len({r['seed'] for r in reference_runs if r['game'] == g})}" for g in games)
        rows = list(dict.fromkeys(m for table in results.values() for m in table))  # the reference's rows and ours
        write_report(staged, results, runs, {**settings, **per_game, "games": list(games), "methods": rows,
                                             "jobs": jobs, "user_reward": user_reward or "each game's default",
                                             "advantage": advantage, "group_size": group_size,
                                             **({"world": world} if world else {}),
                                             **reference.settings_rows(games, against), "machine": machine()},
                     wall, stats_by_game, trained_here=runs[len(reference_runs):])
        plot(staged, runs)
        write_json(staged / "split.json", splits)
        verdict = "" if not verdicts else ("\n## The entrants' verdicts\n\n```text\n" + entrants.summary(
            verdicts, "").rsplit("the whole report", 1)[0] + "```\n")
        write_atomic(staged / "report.md",
                     (staged / "report.md").read_text() + "\n" + split.markdown(splits) + verdict)
        if sensitivity:
            from scope_envs.bench import sensitivity as sens

            rows = sens.judge(results, variant_ceilings)
            write_json(staged / "sensitivity.json", rows, ensure_ascii=False)
            table = sens.markdown(rows, without=[g for g in games if not variants(g)])
            write_atomic(staged / "sensitivity.md", table)
            write_atomic(staged / "report.md", (staged / "report.md").read_text() + "\n" + table)
    return results


def run_output(name: str) -> bool:
    """Whether a file named ``name`` is one of the outputs a run writes beside ``runs/``: an earlier run's that
    this one does not write (another game's plots, ``entrants.json`` without ``--method``) goes."""
    from scope_envs.bench.records import CURVES  # not at import: `python -m scope_envs.bench.records` runs it
    from scope_envs.games import game_names

    plots = {f"{g}_{kind}.png" for g in game_names() for kind in ("learning_curves", "entropy", "collapse")}
    return name in plots | {"results.json", "claims.json", "entrants.json", CURVES, "split.json", "report.md",
                            "performance_profiles.png", "sensitivity.json", "sensitivity.md"}


def calibrate(args: argparse.Namespace, t0: float) -> None:
    """``--calibration``: the known-answer grid (its own outputs; the benchmark's rows and options do not apply)."""
    from scope_envs.bench import calibration

    for flag, used in (("--method", getattr(args, "method", None)), ("--against", getattr(args, "against", None)),
                       ("--methods", args.methods != list(METHODS)), ("--full", args.full),
                       ("--sensitivity", args.sensitivity), ("--executor", args.executor != "local"),
                       ("--world", args.world), ("--seed-block", args.seed_block != SEED_BLOCK),
                       ("--user-reward", args.user_reward), ("--advantage", args.advantage != "gae"),
                       ("--group-size", args.group_size is not None)):
        if used:
            args.parser.error(f"argument {flag}: not with --calibration (it trains its own grid of cells)")
    if args.print_report:  # (it was taken and did nothing)
        args.parser.error("argument --print-report: not with --calibration (which always prints calibration.md)")
    try:
        calibration.run(args.games, seeds=args.seeds, steps=args.steps, eval_episodes=args.eval_episodes,
                        out=args.out, jobs=args.jobs, resume=args.resume)
    except (BenchFailure, OutputError) as e:
        sys.exit(f"scope-envs bench: {e}")
    except OSError as e:
        sys.exit(f"scope-envs bench: cannot write the outputs: {describe(e)}")
    print(f"wrote {Path(args.out).resolve()}/calibration.json, calibration.md and figures in "
          f"{time.perf_counter() - t0:.0f} s")
    print((Path(args.out) / "calibration.md").read_text())


def main(args: argparse.Namespace) -> None:
    from scope_envs.bench import entrants
    from scope_envs.bench.reference import ReferenceMismatch

    t0 = time.perf_counter()
    for option in ("games", "methods"):  # a name given twice would be two runs of one name (one file each)
        values = getattr(args, option)
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            args.parser.error(f"argument --{option}: {', '.join(twice)} given twice (each is run once; name it once)")
    if args.world is not None:
        try:
            check_world(args.world, args.games)
        except ValueError as e:
            args.parser.error(f"argument --world: {e}")
    entrants.check_arguments(args)  # --method, --against, --confirmatory (argparse errors)
    if args.sensitivity and not args.calibration:
        from scope_envs.bench.methods import variants

        if not any(variants(g) for g in args.games):  # it wrote an empty sensitivity.json and said nothing
            having = [g for g in GAMES if variants(g)]
            args.parser.error(f"argument --sensitivity: {', '.join(args.games)}: no variants of the held-out "
                              f"proxies' assumptions to re-judge under (the games that have them: {', '.join(having)})")
    for method in args.methods if args.methods != list(METHODS) else ():  # a row no game asked for has
        try:
            require_row(method, args.games)
        except ValueError as e:
            args.parser.error(f"argument --methods: {e}")
    group_size = resolve_group_size(args.group_size, args.advantage, args.user_reward)
    if group_size < 2 and (args.advantage == "grpo" or args.user_reward == "curriculum"):
        args.parser.error(f"argument --group-size: must be >= 2 with --advantage grpo or --user-reward curriculum, "
                          f"got {group_size}")
    if args.address is not None and args.executor != "ray":
        args.parser.error("argument --address: only with --executor ray")
    if args.executor == "ray" and importlib.util.find_spec("ray") is None:
        args.parser.error("argument --executor: ray needs Ray: pip install 'scope-envs[ray]'")
    if (args.address or "").startswith("ray://") and importlib.util.find_spec("grpc") is None:
        # Ray Client is Ray's client extra (grpcio), which a bare `pip install ray` lacks: said before anything runs
        args.parser.error("argument --address: ray:// (Ray Client) needs grpcio: pip install 'scope-envs[ray]' "
                          "(or 'ray[client]'), or give the head's HOST:6379 from a node of the cluster")
    if args.calibration:
        return calibrate(args, t0)
    try:
        run(games=args.games, methods=args.methods, seeds=args.seeds, steps=args.steps,
            eval_episodes=args.eval_episodes, full=args.full, out=args.out, jobs=args.jobs,
            user_reward=args.user_reward, advantage=args.advantage, group_size=group_size,
            sensitivity=args.sensitivity, executor=args.executor, address=args.address, resume=args.resume,
            plugins=getattr(args, "method", None) or (), against=getattr(args, "against", None),
            confirmatory=getattr(args, "confirmatory", None), world=args.world, seed_block=args.seed_block)
    except ReferenceMismatch as e:  # --against a reference made with other settings or other code
        args.parser.error(f"argument --against: {e}")
    except (BenchFailure, ExecutorUnavailable, OutputError) as e:  # failed runs (named), no Ray, a bad folder
        sys.exit(f"scope-envs bench: {e}")
    except OSError as e:  # a full disk, a folder made read-only during the run: one line; the runs are kept
        sys.exit(f"scope-envs bench: cannot write the outputs: {describe(e)} (the finished runs are in "
                 f"{Path(args.out) / 'runs'}; free space and rerun with --resume)")
    extra = "".join(f", {name}" for name, given in (("entrants.json", getattr(args, "method", None)),
                                                      ("sensitivity.json", args.sensitivity)) if given)
    report = Path(args.out).resolve() / "report.md"
    if args.print_report:
        print(report.read_text())
    print(f"wrote {report.parent}/results.json, claims.json, split.json, report.md{extra} and plots in "
          f"{time.perf_counter() - t0:.0f} s")
    print(summary(Path(args.out), report, bool(getattr(args, "method", None))), end="")


def summary(out: Path, report: Path, with_entrants: bool) -> str:
    """What ends ``bench``'s output: with entrants, their verdict per game (``entrants.summary``); without (or
    where every ``--method`` named a built-in row, which is no entrant), the claims' verdicts in one line each;
    then the report's path."""
    import json

    from scope_envs.bench import entrants

    verdicts = json.loads((out / "entrants.json").read_text()) if with_entrants else {}
    if verdicts:
        return entrants.summary(verdicts, str(report))
    verdict = {True: "holds", False: "does not hold", None: "not judged"}
    claims = json.loads((out / "claims.json").read_text())
    width = max((len(c["game"]) for c in claims), default=0) + 1
    lines = []
    for c in claims:
        number, _, statement = c["claim"].partition(". ")
        lines.append(f"{c['game'] + ':':<{width}} claim {number + ':':<4}{verdict[c['held']]:<14}{statement}")
    return "\n".join([*lines, f"the whole report: {report}"]) + "\n"
