"""A benchmark row's wall time on this tree against a past revision's: what an engine change saved, and that it
changed no number.

Each round runs every ``--runs`` row (``methods.run_row``: ``--seeds`` seeds trained and evaluated as one
computation, the default run's budget for that row unless ``--steps``) in a fresh process per tree, the baseline
revision's (``--baseline-rev``, exported by ``baseline_tree.py`` and put first on ``PYTHONPATH``) and this
tree's alternating, at the portable kernels the benchmark's records are made at, one thread each, with the default
preset's learning curves (``oracle`` trains the ceiling's budget for ``--steps``, as in ``scope-envs bench``). It
reports, per row, each tree's median wall time, ``speedup`` (baseline over this tree) and ``same_records``: whether
both trees wrote the same records (timing fields and the code's fingerprint aside, as ``same_numbers.py compare
--ignore fingerprint`` compares them), which a pure speed change must.

    python benchmarks/row_speed.py --rounds 1          # p4g's and tau2's ceilings, cooperbench's cotrain: ~25 min
    python benchmarks/row_speed.py --runs p4g:frozen --seeds 2 --steps 3000 --rounds 1 --out /tmp/r.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from baseline_tree import REPO, ExportError, child_output, export
from kernel_speed import run_spec
from scope_envs import kernels
from scope_envs.arguments import count, output_file
from scope_envs.bench.presets import ceiling_steps, preset_steps
from scope_envs.files import write_json

OUT = Path(__file__).resolve().parent / "results" / "row_speed.json"
LEVEL = "portable"
CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from same_numbers import kept
from scope_envs.bench.methods import run_row
from scope_envs.bench.presets import PRESETS
game, method, seeds, steps, episodes = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
curves = PRESETS["default"]["curve_points"], PRESETS["default"]["curve_episodes"]
t = time.perf_counter()
records = run_row(game, method, list(range(seeds)), steps, episodes, *curves, heldout_episodes=episodes)
wall = time.perf_counter() - t
numbers = [{k: v for k, v in kept(r)[1].items() if k != "fingerprint"} for r in records]  # (the code's digest)
digest = hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()
from scope_envs.bench.runner import machine
print(json.dumps({"wall_s": wall, "records": digest, "machine": machine()}))
"""


def row_steps(game: str, method: str, steps: int | None) -> tuple[int, int]:
    """The row's budget (``steps``, else the default run's methods' budget on ``game``) and the decisions it trains
    a seed: the ceiling's own budget for ``oracle`` (``presets.ceiling_steps``), the budget for any other row."""
    budget = preset_steps(game, "default") if steps is None else steps
    return budget, ceiling_steps(game, budget) if method == "oracle" else budget


def revision(text: str) -> str:
    """An argparse type: a revision of this checkout (``git rev-parse``), kept as given."""
    found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode:
        raise argparse.ArgumentTypeError(f"{text!r} is not a revision of {REPO} (its git history is needed)")
    return text


def child(tree: str | None, game: str, method: str, seeds: int, steps: int, episodes: int) -> dict:
    """One run of the row in a fresh process: the baseline's tree first on its path (``tree``), else this one."""
    env = kernels.environment(LEVEL)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, env.get("PYTHONPATH")) if p)
    out = child_output([sys.executable, "-c", CHILD, str(Path(__file__).resolve().parent), game, method,
                        *map(str, (seeds, steps, episodes))], env, f"the {'baseline' if tree else 'tree'}'s "
                       f"{game}:{method}", cwd=tempfile.gettempdir() if tree else REPO)
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="+", type=run_spec,
                    default=[("p4g", "oracle"), ("tau2", "oracle"), ("cooperbench", "cotrain")],
                    help="GAME:METHOD rows (default p4g:oracle tau2:oracle cooperbench:cotrain)")
    ap.add_argument("--seeds", type=count(64), default=8, help="seeds trained together (at most 64; default 8)")
    ap.add_argument("--steps", type=count(10_000_000), default=None,
                    help="the methods' budget, decisions per seed (at most 10_000_000; default: the default run's; "
                         "oracle trains its ceiling budget for it, presets.ceiling_steps)")
    ap.add_argument("--episodes", type=count(100_000), default=500, help="evaluation episodes a side (at most "
                                                                          "100_000; default 500)")
    ap.add_argument("--rounds", type=count(20), default=2, help="rounds, the trees alternating (at most 20)")
    ap.add_argument("--baseline-rev", type=revision, default="HEAD",
                    help="the git revision to compare with (default HEAD)")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON (default {OUT})")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as base:
        try:
            export(args.baseline_rev, base)
        except ExportError as e:
            ap.error(f"argument --baseline-rev: {e}")
        jobs = [(g, m, t) for g, m in args.runs for _ in range(args.rounds) for t in (base, None)]
        results: dict[tuple[str, str], dict] = {}
        for game, method, tree in tqdm(jobs, desc="runs"):
            r = child(tree, game, method, args.seeds, row_steps(game, method, args.steps)[0], args.episodes)
            side = results.setdefault((game, method), {"baseline": [], "tree": []})
            side["baseline" if tree else "tree"].append(r)
    for (game, method), side in results.items():
        wall = {k: float(np.median([r["wall_s"] for r in v])) for k, v in side.items()}
        digests = {r["records"] for v in side.values() for r in v}
        budget, decisions = row_steps(game, method, args.steps)
        rows.append({"run": f"{game}:{method}", "seeds": args.seeds, "steps": budget, "decisions_per_seed": decisions,
                     "baseline_s": wall["baseline"], "tree_s": wall["tree"],
                     "speedup": wall["baseline"] / wall["tree"], "same_records": len(digests) == 1})
        print(f"{game}:{method}: {wall['baseline']:.1f} s -> {wall['tree']:.1f} s ({rows[-1]['speedup']:.2f}x), "
              f"records {'the same' if len(digests) == 1 else 'DIFFER'}")
    write_json(args.out, {"baseline_rev": args.baseline_rev, "machine": results[args.runs[0]]["tree"][0]["machine"],
                          "date": time.strftime("%Y-%m-%d"),
                          "kernels": LEVEL,
                          "episodes": args.episodes, "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
