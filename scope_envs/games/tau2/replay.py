"""The tau^2-bench world without an environment around it: ``replay``.

``replay`` applies a task's initial state and a list of tool calls (the gold ones
by default) and returns the final state as plain JSON-able data with the reward
breakdown — the hook that tests and tools use to compare against tau^2-bench::

    >>> from scope_envs.games.tau2.replay import replay
    >>> out = replay("mock", "create_task_1", data_dir="../shared/data/tau2/domains")  # doctest: +SKIP
    >>> out["reward"], sorted(out["db"])                                                # doctest: +SKIP
    (1.0, ['tasks', 'users'])

It also carries the rest of the world's public face (``World``, ``evaluate``,
``pass_hat_k``, ``load_domain``, ``resolve_data_dir``, ``DOMAINS``), which the
deprecated ``scope_envs.tau2`` alias of this module has always offered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from scope_envs.games.tau2.data import DOMAINS, load_domain, resolve_data_dir
from scope_envs.games.tau2.evaluate import evaluate, pass_hat_k
from scope_envs.games.tau2.world import World

__all__ = ["DOMAINS", "replay", "pass_hat_k", "load_domain", "resolve_data_dir", "World", "evaluate"]


def replay(domain: str, task_id: str, actions: Sequence[dict] | None = None, data_dir: str | Path | None = None,
           *, messages: Sequence[str] | None = None, judge: Callable | None = None,
           termination: str = "agent_stop") -> dict:
    """Replay tool calls on a task's initial state; return ``{"db", "user_db", "reward", "reward_info", "calls"}``.

    ``actions``: dicts ``{"name", "arguments", "requestor"?}`` (requestor ``assistant``
    by default, ``user`` for telecom phone tools); None replays the task's gold
    actions. ``messages``: the agent's text messages for the COMMUNICATE check;
    None with gold actions sends the task's ``communicate_info`` strings (what a
    perfect agent says), None with given actions sends nothing.
    """
    data = load_domain(domain, None if data_dir is None else str(data_dir))
    task = data.task(task_id)
    crit = task.get("evaluation_criteria") or {}
    if actions is None:
        actions = crit.get("actions") or []
        if messages is None:
            messages = list(crit.get("communicate_info") or [])
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or "name" not in a:
            raise ValueError(f"replay: action {i} must be a dict with 'name' and 'arguments', got {a!r}")
    world = World.for_task(data, task)
    for a in actions:
        world.call(a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
    final = world.state.dump()  # before the evaluation's assertions run on the world
    info = evaluate(world, list(messages or []), termination=termination, judge=judge)
    return {"db": final["db"], "user_db": final["user_db"], "reward": info["reward"], "reward_info": info,
            "calls": [{"requestor": c.requestor, "name": c.name, "arguments": c.arguments, "content": c.content,
                       "error": c.error} for c in world.calls]}
