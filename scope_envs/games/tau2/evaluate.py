"""tau^2-bench's evaluation: the reward is the product of the checks in a task's ``reward_basis``.

* ``DB``: the final agent and user databases equal those of a fresh world in
  which the task's gold actions were replayed (errors in gold actions are ignored,
  as upstream).
* ``ENV_ASSERTION``: each assertion function, run on the final world, returns
  its ``assert_value`` (default true).
* ``COMMUNICATE``: each required string occurs, case-insensitively, in some
  agent message with commas removed.
* ``ACTION``: each gold action matches some tool call of the episode (same name,
  equal arguments over ``compare_args``, all of the call's arguments by default).
* ``NL_ASSERTION``: judged by an optional ``judge(assertions, messages) -> list[bool]``
  (an LLM); without one it is reported as not evaluated and left out of the
  product (``nl_evaluated`` False) — upstream refuses to score such tasks at all.

An episode that did not end by a stop (``###STOP###`` from the agent, or the
user's ``###STOP###``/``###TRANSFER###``/``###OUT-OF-SCOPE###``) gets 0, as upstream.
``DEFAULT_BASIS`` is upstream's default when a task names none.
"""

from __future__ import annotations

from math import comb
from typing import Callable, Sequence

from scope_envs.games.tau2.world import MEMO_SIZE, World

DEFAULT_BASIS = ("DB", "COMMUNICATE")
STOPPED = ("agent_stop", "user_stop")


def gold_world(world: World) -> World:
    """A fresh world for the same task with the gold actions replayed."""
    gold = World.for_task(world.data, world.task)
    for a in (world.task.get("evaluation_criteria") or {}).get("actions") or []:
        gold.call(a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
    return gold


def _gold_state(world: World):
    """The state of ``gold_world(world)``, kept per task of a loaded domain: the gold replay is the same for every
    episode of a task (a fresh world, the same calls) and the comparison only reads it. A task that is not the
    domain's own (a modified copy) is replayed every time."""
    task = world.task
    if world.data.task_index.get(task.get("id")) is not task:
        return gold_world(world).state
    cache = world.data.memo("gold_states")
    state = cache.get(task["id"])
    if state is None:
        state = cache[task["id"]] = gold_world(world).state
    return state


def _state_checks(world: World, basis: list, crit: dict) -> tuple[bool | None, list[tuple[str, bool]]]:
    """The checks of the final database: whether it equals the gold one (None: DB not scored) and each env
    assertion's ``(func_name, met)``. They read the state only, which ``world.trail`` names with the task (the
    world's tool-call memo): kept per task and trail, so that the episodes that end in one state (most make no
    write) run the comparison and the assertion functions once."""
    trail = world.trail
    memo = None
    if trail is not None:
        memo = world.data.memo("state_checks", world.task["id"])
        hit = memo.get((trail, "DB" in basis))
        if hit is not None:
            return hit
    db_ok = None  # the gold replay only runs when DB is scored (None: not compared)
    if "DB" in basis:
        gold = _gold_state(world)
        db_ok = world.state.same_db(gold) and world.state.same_user_db(gold)
    checks = []
    for a in crit.get("env_assertions") or []:
        try:
            res = world.function(a["env_type"], a["func_name"], a.get("arguments") or {})
            met = isinstance(res, bool) and res == a.get("assert_value", True)
        except Exception:  # an assertion on a missing record fails, it does not crash the evaluation
            met = False
        checks.append((a["func_name"], met))
    if memo is not None and len(memo) < MEMO_SIZE:
        memo[(trail, "DB" in basis)] = (db_ok, checks)
    return db_ok, checks


def action_matches(gold: dict, call) -> bool:
    """ACTION's test of one gold action against one tool call of the episode."""
    if gold["name"] != call.name:
        return False
    args = call.arguments if isinstance(call.arguments, dict) else {}
    keys = gold.get("compare_args")
    keys = args.keys() if keys is None else keys
    if len(keys) == 0:
        return True
    return ({k: v for k, v in args.items() if k in keys}
            == {k: v for k, v in (gold.get("arguments") or {}).items() if k in keys})


def communicated(info: str, message: str) -> bool:
    """COMMUNICATE's test of one required string against one agent message: it occurs in it, case-insensitively,
    commas removed."""
    return info.lower() in message.lower().replace(",", "")


def evaluate(world: World, agent_messages: Sequence[str], termination: str = "agent_stop",
             judge: Callable | None = None, transcript: list[dict] | None = None) -> dict:
    """The reward of a finished episode and its breakdown (plain JSON-able data).

    ``agent_messages``: the agent's text messages (for COMMUNICATE); the world's
    ``calls`` are the episode's tool calls (for ACTION); ``transcript`` (chat
    messages) goes to the judge.
    """
    task = world.task
    crit = task.get("evaluation_criteria")
    out = {"reward": 0.0, "reward_basis": [], "breakdown": {}, "db_match": None, "env_assertions": [],
           "communicate": [], "actions": [], "nl_assertions": None, "nl_evaluated": False,
           "termination": termination, "note": ""}
    if termination not in STOPPED:
        out["note"] = f"episode ended by {termination}: reward 0"
        return out
    if crit is None:
        out.update(reward=1.0, note="no evaluation criteria")
        return out
    basis = list(crit.get("reward_basis") or DEFAULT_BASIS)
    out["reward_basis"] = basis
    reward, bd = 1.0, out["breakdown"]

    if "DB" in basis or "ENV_ASSERTION" in basis:
        if crit.get("actions") is None and crit.get("env_assertions") is None:
            db_ok, env_ok = True, 1.0
        else:
            db_ok, checks = _state_checks(world, basis, crit)
            env_ok = 1.0
            for name, met in checks:
                out["env_assertions"].append({"func_name": name, "met": met})
                env_ok *= float(met)
        out["db_match"] = db_ok
        if "DB" in basis:
            bd["DB"] = float(db_ok)
            reward *= bd["DB"]
        if "ENV_ASSERTION" in basis:
            bd["ENV_ASSERTION"] = env_ok
            reward *= env_ok

    if "ACTION" in basis:
        checks = [{"name": g["name"], "action_id": g.get("action_id"),
                   "met": any(action_matches(g, c) for c in world.calls)}
                  for g in crit.get("actions") or []]
        out["actions"] = checks
        bd["ACTION"] = float(all(c["met"] for c in checks))
        reward *= bd["ACTION"]

    if "COMMUNICATE" in basis:
        checks = [{"info": info, "met": any(communicated(info, m) for m in agent_messages if m)}
                  for info in crit.get("communicate_info") or []]
        out["communicate"] = checks
        bd["COMMUNICATE"] = float(all(c["met"] for c in checks))
        reward *= bd["COMMUNICATE"]

    if "NL_ASSERTION" in basis:
        assertions = crit.get("nl_assertions") or []
        if judge is None:
            out["note"] = "NL_ASSERTION not evaluated (no judge): left out of the reward"
        else:
            verdicts = [bool(v) for v in judge(assertions, transcript or [])]
            if len(verdicts) != len(assertions):
                raise ValueError(f"judge returned {len(verdicts)} verdicts for {len(assertions)} NL assertions")
            out["nl_assertions"] = [{"assertion": a, "met": v} for a, v in zip(assertions, verdicts)]
            out["nl_evaluated"] = True
            bd["NL_ASSERTION"] = float(all(verdicts))
            reward *= bd["NL_ASSERTION"]
    out["reward"] = reward
    return out


def pass_hat_k(successes: Sequence[Sequence[bool]], k: int) -> float:
    """pass^k (tau-bench): the mean over tasks of the chance that k trials drawn from its n all succeed.

    ``successes[i]`` holds task i's trial outcomes (reward 1 or not); every task needs at least k trials.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    vals = []
    for i, trials in enumerate(successes):
        n, c = len(trials), sum(bool(t) for t in trials)
        if n < k:
            raise ValueError(f"task {i} has {n} trials, fewer than k={k}")
        vals.append(comb(c, k) / comb(n, k))
    if not vals:
        raise ValueError("pass_hat_k needs at least one task")
    return sum(vals) / len(vals)
