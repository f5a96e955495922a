"""Did a refactor change the benchmark's numbers? Run records of the default grid, and a comparison of two.

    python benchmarks/same_numbers.py run --seeds 1 --steps 3000 --out before.json   # on the old tree
    python benchmarks/same_numbers.py run --seeds 1 --steps 3000 --out after.json    # on the new tree
    python benchmarks/same_numbers.py compare before.json after.json

``run`` plays every (game, method, seed) of the default grid through ``scope_envs.bench.methods.run_one`` (with
``--together``, each row's seeds through ``run_seeds``, as ``scope-envs bench --seed-block`` does)
(``--steps`` decisions, the quick evaluation sizes ``scope-envs bench --seeds N --steps S`` uses: 200
episodes per side, 3 curve points of 50) and writes the run records with their timing fields removed, in one
JSON file with the digest of each record. The records are what ``results.json`` and ``claims.json`` are
computed from, so identical records give identical files. ``compare`` says how many records are identical
(``--ignore KEY ...``: leave out fields only one side writes) and how far the success metrics moved (mean and
largest absolute difference).
Runs go to ``--jobs`` worker processes (default 2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TIMING = ("wall_s", "env_steps_per_s", "trained_with")  # what the runs' timing (or a block's size) sets
SUCCESS = ("train_success", "heldout_success", "panel_success")
MAX_SEEDS, MAX_STEPS, MAX_JOBS = 20, 200_000, 64


SIZES = {"eval_episodes": 200, "curve_points": 3, "curve_episodes": 50, "heldout_episodes": 200}


def kept(record: dict) -> tuple[str, dict]:
    for key in TIMING:
        record.pop(key, None)
    return f"{record['game']}-{record['method']}-{record['seed']}", json.loads(json.dumps(record, sort_keys=True,
                                                                                          default=float))


def one(task: tuple[str, str, int, int]) -> tuple[str, dict]:
    from scope_envs.bench.methods import run_one

    game, method, seed, steps = task
    return kept(run_one(game, method, seed, steps=steps, **SIZES))


def row(task: tuple[str, str, int, int]) -> list[tuple[str, dict]]:
    """A row's seeds trained and evaluated as one computation (``methods.run_seeds``, ``--together``)."""
    from scope_envs.bench.methods import run_seeds

    game, method, seeds, steps = task
    return [kept(r) for r in run_seeds([dict(game=game, method=method, seed=s, steps=steps, **SIZES)
                                        for s in range(seeds)])]


def digest(record: dict) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]


def run(args) -> None:
    from tqdm import tqdm

    from scope_envs.bench.methods import GAMES, METHODS, available

    rows = [(g, m) for g in args.games or GAMES for m in METHODS if available(g, m)]
    records = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        if args.together:
            for done in tqdm(pool.map(row, [(g, m, args.seeds, args.steps) for g, m in rows]), total=len(rows),
                             desc="rows"):
                records.update(done)
        else:
            tasks = [(g, m, s, args.steps) for g, m in rows for s in range(args.seeds)]
            for name, record in tqdm(pool.map(one, tasks), total=len(tasks), desc="runs"):
                records[name] = record
    out = {"seeds": args.seeds, "steps": args.steps, "digests": {k: digest(r) for k, r in records.items()},
           "records": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{args.out}.tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, sort_keys=True)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {len(records)} run records", file=sys.stderr)


def records_of(path: str) -> dict:
    """The run records of a file ``run`` wrote; a ``ValueError`` saying why ``path`` is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a readable JSON file ({e})") from None
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("game"), str) and isinstance(r.get("method"), str)
            and isinstance(r.get("metrics", {}), dict)
            and all(isinstance(v, (int, float)) for k, v in r.get("metrics", {}).items() if k in SUCCESS)
            for r in records.values()):
        raise ValueError("not a file written by `same_numbers.py run` (a JSON object whose records are run records)")
    return records


def compare(args) -> None:
    a, b = ({k: {f: v for f, v in r.items() if f not in args.ignore} for k, r in records_of(p).items()}
            for p in (args.before, args.after))
    if set(a) != set(b):
        sys.exit(f"compare: the files hold different runs: only before {sorted(set(a) - set(b))}, "
                 f"only after {sorted(set(b) - set(a))}")
    same = [k for k in a if a[k] == b[k]]
    report = {"runs": len(a), "identical": len(same)}
    for key in SUCCESS:
        diffs = [abs(b[k]["metrics"][key] - a[k]["metrics"][key]) for k in a
                 if key in a[k].get("metrics", {}) and key in b[k].get("metrics", {})]
        if diffs:
            report[key] = {"mean_abs_diff": round(sum(diffs) / len(diffs), 4), "max_abs_diff": round(max(diffs), 4),
                           "changed": sum(d != 0 for d in diffs)}
    print(json.dumps(report, indent=1))


def output_file(text: str) -> Path:
    """``scope_envs.arguments.output_file``; ``run`` also runs on an old tree (on ``PYTHONPATH``) that may not have
    it: there, only a folder in the way is refused."""
    try:
        from scope_envs.arguments import output_file as check
    except ImportError:
        if os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file name") from None
        return Path(text)
    return check(text)


def bounded(limit: int):
    def parse(value: str) -> int:
        n = int(value)
        if not 1 <= n <= limit:
            raise argparse.ArgumentTypeError(f"must be in [1, {limit}], got {n}")
        return n
    return parse


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="write the run records of the default grid")
    r.add_argument("--seeds", type=bounded(MAX_SEEDS), default=1,
                   help=f"seeds 0.. of every (game, method) (default 1, at most {MAX_SEEDS})")
    r.add_argument("--steps", type=bounded(MAX_STEPS), default=3000,
                   help=f"decisions each run trains (default 3000, at most {MAX_STEPS:_})")
    r.add_argument("--games", nargs="+", choices=["p4g", "cooperbench", "tau2"], help="(default every game)")
    r.add_argument("--jobs", type=bounded(MAX_JOBS), default=2,
                   help=f"worker processes (default 2, at most {MAX_JOBS})")
    r.add_argument("--together", action="store_true",
                   help="each row's seeds as one computation (methods.run_seeds, scope-envs bench --seed-block), "
                        "not one run_one each; a tree without it runs as it can")
    r.add_argument("--out", type=output_file, required=True, help="the JSON file to write")
    c = sub.add_parser("compare", help="compare two files written by run")
    c.add_argument("before", help="run's file from the old tree")
    c.add_argument("after", help="run's file from the new tree")
    c.add_argument("--ignore", nargs="+", default=[], metavar="KEY",
                   help="record keys to leave out of the comparison (one side's new fields, say)")
    args = ap.parse_args(argv)
    for name in ("before", "after") if args.command == "compare" else ():
        path = getattr(args, name)
        if not os.path.isfile(path):
            ap.error(f"argument {name}: no such file: {path}")
        try:
            records_of(path)
        except ValueError as e:
            ap.error(f"argument {name}: {path}: {e}")
    run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    main()
