"""Real-task CooperBench on the demo: seconds per sandboxed test run and per episode, with same-process baselines.

* a test run: the demo's feature-1 tests on its gold patch through the local
  sandbox (fresh checkout, patches applied, limits, no network), against the
  same pytest command run plainly on one prepared checkout (the sandbox's
  overhead is the ratio);
* an episode: a coordinating scripted pair on every demo pair in turn
  (``cooperbench-cotrain``, text), with test verdicts not cached
  (``cache_tests=False``: every run pays) and cached (the default; a repeated
  episode reuses them), against an act-level ``cooperbench-cotrain`` episode of
  scripted teammates.

Rounds alternate the measured and baseline runs so machine noise hits both
alike; medians are printed as one JSON object.

    python benchmarks/cooperbench_code_speed.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from baseline_tree import child_output
from scope_envs.agents.cooperbench import ScriptedTeammate
from scope_envs.arguments import count

import scope_envs
from scope_envs.games.cooperbench.code import dataset, partners, sandbox


def code_episode(env, seed: int) -> tuple[float, int]:
    a, b = partners.coordinating(), partners.coordinating()
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    env.reset(seed=seed)
    game = env.unwrapped.game
    runs = game.grader.runs
    while env.agents:
        acts = {}
        for agent in env.agents:
            role = env.unwrapped._role[agent]
            player = a if agent == "agent_0" else b
            acts[agent] = player.reply(env.unwrapped.view(role), rng) if game.active_role() == role else "..."
        env.step(acts)
    return time.perf_counter() - start, game.grader.runs - runs


def act_episode(env, seed: int) -> float:
    a, b = ScriptedTeammate(True), ScriptedTeammate(True)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    env.reset(seed=seed)
    while env.agents:
        env.step({ag: (a if ag == "agent_0" else b).act(env.unwrapped.view(env.unwrapped._role[ag]), rng)
                  for ag in env.agents})
    return time.perf_counter() - start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=count(1000), default=5, help="at most 1000")
    args = ap.parse_args(argv)
    pair = dataset.discover(dataset.DEMO_DIR)[0]
    feature = pair.features[0]
    command = dataset.test_command(pair.dir)
    box = sandbox.LocalSandbox(sandbox.Limits())
    uncached = scope_envs.make("cooperbench-cotrain", surface="text", tasks="demo", cache_tests=False)
    cached = scope_envs.make("cooperbench-cotrain", surface="text", tasks="demo")
    act = scope_envs.make("cooperbench-cotrain")
    n_pairs = len(uncached.unwrapped.game.pairs)
    runs, plain, ep, ep_runs, ep_cached, ep_act = [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        base, checkout = Path(tmp) / "base", Path(tmp) / "plain"
        dataset.build_base(pair.dir, base)
        dataset.build_base(pair.dir, checkout)
        for text in (feature.tests_patch, feature.gold_patch):
            dataset.git("apply", "-", cwd=checkout, input=text)
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        for i in range(n_pairs):  # the cached env's verdicts warmed up: its episodes below replay these
            code_episode(cached, i)
        for r in range(args.rounds):
            start = time.perf_counter()
            run = box.run(base, command, feature.tests_patch, feature.gold_patch)
            runs.append(time.perf_counter() - start)
            assert run.passed, run.summary()
            start = time.perf_counter()
            child_output([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *command], env,
                         "the plain pytest run of the task's tests", cwd=checkout)
            plain.append(time.perf_counter() - start)
            for i in range(n_pairs):  # each seed deals a pair; rounds cover them all
                seconds, n = code_episode(uncached, r * n_pairs + i)
                ep.append(seconds)
                ep_runs.append(n)
                ep_cached.append(code_episode(cached, i)[0])
                ep_act.append(act_episode(act, r * n_pairs + i))
    result = {
        "test_run_s": round(float(np.median(runs)), 3),
        "baseline_plain_pytest_s": round(float(np.median(plain)), 3),
        "episode_s": round(float(np.median(ep)), 3),
        "test_runs_per_episode": float(np.median(ep_runs)),
        "episode_cached_s": round(float(np.median(ep_cached)), 3),
        "baseline_act_episode_s": round(float(np.median(ep_act)), 5),
        "network_guard": run.network,
    }
    result["test_run_ratio"] = round(result["test_run_s"] / result["baseline_plain_pytest_s"], 2)
    result["episode_ratio_to_act"] = round(result["episode_s"] / result["baseline_act_episode_s"], 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
