"""``scope-envs validate tau2``: per domain, the share of tasks whose gold-action replay earns reward 1."""

from __future__ import annotations

import time

from scope_envs.games.tau2.data import DOMAINS, load_domain


def validate(data_dir=None, domains=DOMAINS) -> dict:
    """``{domain: {"gold_pass_rate", "tasks", "ms_per_task", "failed", "source"}}`` (plain JSON)."""
    from scope_envs.tau2 import replay

    out = {}
    for domain in domains:
        try:
            data = load_domain(domain, None if data_dir is None else str(data_dir))
        except ValueError as e:  # a data folder without this domain: say so, keep the others
            out[domain] = {"error": str(e)}
            continue
        start = time.perf_counter()
        failed = [t["id"] for t in data.tasks if replay(domain, t["id"], data_dir=data_dir)["reward"] != 1.0]
        ms = (time.perf_counter() - start) * 1000 / max(len(data.tasks), 1)
        out[domain] = {"gold_pass_rate": 1 - len(failed) / max(len(data.tasks), 1), "tasks": len(data.tasks),
                       "ms_per_task": round(ms, 3), "failed": failed, "source": data.source}
    return out
