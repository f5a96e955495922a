"""``scope-envs validate tau2``: per domain, the share of tasks whose gold-action replay earns reward 1,
and the share an oracle act policy (it knows the gold calls, plays them through the act surface alone, against
the frozen collapsed user) brings to reward 1 (``oracle_act_pass_rate``), next to random legal acts.

Every task is replayed and played once (random acts from seed 0): there is no episode count or seed to choose.

A task whose evaluation checks nothing (``checks_something``) passes whatever is played: it is listed as
``untestable`` and enters no rate, neither the replay's nor the act policies'.

On the real ``mock`` domain both rates are 7/8: its task
``update_task_with_history_and_env_assertions`` has no gold actions at all (its
``evaluation_criteria`` names only an ENV_ASSERTION, ``assert_task_status(task_2,
completed)``, and NL assertions outside its ``reward_basis``), so replaying its
(empty) gold list leaves task_2 ``pending`` and fails the assertion — in
tau^2-bench's own evaluator too, which runs env assertions on the episode's
environment and replays ``actions or []``. An agent that calls
``update_task_status(task_2, completed)`` earns 1 (tests/test_tau2_fidelity.py);
the oracle, which only knows the gold list, cannot.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

import scope_envs
from scope_envs.agents.tau2 import oracle_act
from scope_envs.core.game import Persona
from scope_envs.games.tau2.data import DOMAINS, domains_below, load_domain
from scope_envs.games.tau2.replay import replay


def validate(data_dir=None, domains=DOMAINS, progress: bool | None = None) -> dict:
    """``{domain: {"gold_pass_rate", "tasks", "ms_per_task", "failed", "source", "oracle_act_pass_rate",
    "random_act_pass_rate", "oracle_act_failed"}}`` (plain JSON); a domain missing from ``data_dir`` gets
    ``{"error": ...}``. Raises FileNotFoundError (NotADirectoryError) when ``data_dir`` is given and does not
    exist (is not a folder). ``progress``: a bar over the domains on stderr (the real data takes a minute or
    more); None shows it where stderr is a terminal."""
    from tqdm import tqdm

    if data_dir is not None:
        path = Path(os.path.expanduser(data_dir))
        if not path.exists():
            raise FileNotFoundError(f"tau2 data folder not found: {str(path)!r}")
        if not path.is_dir():
            raise NotADirectoryError(f"tau2 data folder is not a folder: {str(path)!r}")
        inner = domains_below(path)
        if inner is not None:  # the folder above the domains (../shared/data/tau2, a tau2-bench checkout)
            raise ValueError(f"{str(path)!r} holds no domain folder ({', '.join(DOMAINS)}) but {str(inner)!r} "
                             f"does: pass --data {inner}")
    out = {}
    broken = []  # a domain folder that is there but cannot be read: an error, not a report
    quiet = None if progress is None else not progress  # tqdm's None: shown on a terminal only
    for domain in tqdm(domains, desc="validate tau2", unit="domain", disable=quiet):
        try:
            data = load_domain(domain, None if data_dir is None else str(data_dir))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
            message = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            if data_dir is not None and (Path(os.path.expanduser(data_dir)) / domain).is_dir():
                broken.append(f"{domain}: {type(e).__name__}: {message}")
            out[domain] = {"error": message}  # a data folder without this domain: say so, keep the others
            continue
        testable = [t for t in data.tasks if checks_something(t)]
        untestable = [t["id"] for t in data.tasks if not checks_something(t)]
        start = time.perf_counter()
        failed = [t["id"] for t in testable if replay(domain, t["id"], data_dir=data_dir)["reward"] != 1.0]
        ms = (time.perf_counter() - start) * 1000 / max(len(testable), 1)
        out[domain] = {"gold_pass_rate": 1 - len(failed) / len(testable) if testable else None,
                       "tasks": len(testable), "ms_per_task": round(ms, 3), "failed": failed, "source": data.source}
        if untestable:  # nothing to replay and nothing to check: counted in no rate (a rate of 1.0 would be vacuous)
            out[domain]["untestable"] = untestable
        if not testable:
            continue
        acts = act_pass_rates(domain, data_dir, tasks=[t["id"] for t in testable])  # the same tasks as the replay
        out[domain].update(oracle_act_pass_rate=acts["oracle"], random_act_pass_rate=acts["random"],
                           oracle_act_failed=acts["oracle_failed"])
    if broken:
        raise ValueError(f"tau2 data in {str(data_dir)!r} cannot be read: " + "; ".join(broken))
    if not any(out[d].get("tasks") for d in out):
        why = "; ".join(dict.fromkeys(v["error"] if "error" in v else f"{d}: no task has gold actions or assertions"
                                      for d, v in out.items()))
        raise ValueError(f"no tau2 task to validate in {str(data_dir) if data_dir is not None else 'the data'} "
                         f"({why})")
    return out


def checks_something(task: dict) -> bool:
    """Whether a task's evaluation has anything to check: gold actions, environment assertions or information
    to communicate. A task without any passes every replay, so it says nothing about the world."""
    criteria = task.get("evaluation_criteria") or {}
    if not isinstance(criteria, dict):
        return False
    return any(criteria.get(key) for key in ("actions", "env_assertions", "communicate_info"))


def act_pass_rates(domain: str, data_dir=None, regime: str = "frozen", seed: int = 0, tasks=None) -> dict:
    """Every task of ``domain`` (or those whose ids ``tasks`` lists; each on its own seed either way) once with the
    oracle act policy and once with random legal acts, on the act surface against ``tau2-<regime>``'s user:
    ``{"oracle", "random", "oracle_failed"}``."""
    # the env (regime assembly) and the oracle (a player) sit above the games: imported on use

    data = load_domain(domain, None if data_dir is None else str(data_dir))
    env = scope_envs.make(f"tau2-{regime}", domain=domain, data_dir=data_dir)
    game = env.unwrapped.game
    rng = np.random.default_rng(seed)
    passed = {"oracle": [], "random": []}
    failed = []
    tasks = None if tasks is None else set(tasks)
    for i, task in enumerate(data.tasks):
        if tasks is not None and task["id"] not in tasks:
            continue
        for who in passed:
            env.reset(seed=seed * 100_003 + i)
            p = game.persona  # keep the dealt user card, pin the task
            game.reset(Persona(p.id, p.split, p.traits, {**p.attributes, "domain": domain, "task_id": task["id"]}),
                       np.random.default_rng(seed * 100_003 + i))
            env.unwrapped._run_simulator()
            obs = {"agent_0": env.unwrapped.surface.observe(game.agent_role, True, [])}
            while env.agents:
                act = oracle_act(game) if who == "oracle" else \
                    int(rng.choice(np.flatnonzero(obs["agent_0"]["action_mask"])))
                obs, *_ = env.step({"agent_0": act})
            ok = game.outcome()["reward"] >= 1.0
            passed[who].append(ok)
            if who == "oracle" and not ok:
                failed.append(task["id"])
    return {"oracle": float(np.mean(passed["oracle"])), "random": float(np.mean(passed["random"])),
            "oracle_failed": failed}
