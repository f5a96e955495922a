"""Load test of ``scope-envs study serve`` on loopback: N simulated participants at once, whole sessions.

Starts the server in a subprocess on 127.0.0.1 with a fresh study (three act-level P4G conditions, the
default 10 agent turns), then N threads each play one participant over HTTP with their own cookie:
arrival with Prolific's parameters, consent, role card, the chat to its end (stating $0.50 in the last
message), the survey, the completion code. Latency of a chat turn = POST of the message until the page
with the agent's reply has arrived (the redirect followed), what a person waits for. Afterwards the
database is checked: every session complete, every message stored once, in order, with the text sent.

Baseline, in the same run: the same turn without HTTP or a second process (``Study.say`` called in this
process on its own database), so ``http_over_inprocess`` says what the web layer costs. Everything is
bounded: ``--deadline`` seconds for the whole run, after which the server is killed.

    .venv/bin/python benchmarks/study_load.py --participants 40
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.study_fixtures import (
    free_port,
    save_policies,
    start_server,
    stop_server,
    write_study,
)

TEXTS = ("Hi, what is this about?", "Why should I give to this charity?", "How is the money used?",
         "I'm not sure I can afford it.", "Tell me more.", "What do they do exactly?", "Okay, I see.",
         "Is it a trustworthy organisation?", "Hmm, let me think.", "Anything else?", "Fine.", "Go on.")


def participant(base: str, pid: str, out: dict, deadline: float) -> None:
    import httpx

    sent, latencies = [], []
    with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as c:
        r = c.get(f"/?PROLIFIC_PID={pid}&STUDY_ID=load&SESSION_ID=s-{pid}")
        c.post("/consent", data={"agree": "yes"})
        r = c.post("/role")
        i = 0
        while r.url.path == "/chat" and time.monotonic() < deadline:
            text = f"{TEXTS[i % len(TEXTS)]} ({pid} #{i})"
            data = {"text": text}
            if 'name="amount"' in r.text:
                data["amount"] = "0.50"
                text = f"{text} [DONATE $0.50]"
            t0 = time.perf_counter()
            r = c.post("/chat", data=data)
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200:
                raise RuntimeError(f"{pid}: status {r.status_code}")
            sent.append(text)
            i += 1
        r = c.post("/survey", data={"donation": "0.5", "naturalness": "4", "satisfaction": "4", "talk_again": "4"})
        out[pid] = {"sent": sent, "latencies": latencies, "code": "id=\"code\"" in r.text}


def inprocess_turns(folder: Path, turns: int) -> list[float]:
    """The same turns without HTTP: Study.say on a study of its own (the baseline)."""
    from scope_envs.study import build
    from scope_envs.study.config import load

    study = build(load(folder))
    out = []
    for k in range(turns):
        sid, _ = study.arrive(f"inproc{k}", None, None)
        study.store.update_session(sid, stage="chat")
        study.advance(sid)
        i = 0
        while study.store.session(sid).stage == "chat":
            text = TEXTS[i % len(TEXTS)]
            if study.state(sid)["final"]:
                text += " [DONATE $0.50]"
            t0 = time.perf_counter()
            study.say(sid, text)
            out.append(time.perf_counter() - t0)
            i += 1
    return out


def check(folder: Path, results: dict) -> dict:
    from scope_envs.study.config import load
    from scope_envs.study.store import Store

    store = Store(load(folder).database_url)
    lost = duplicated = wrong = incomplete = 0
    for pid, res in results.items():
        row = store.session_by_pid(pid)
        if row is None or row.stage != "complete" or not res["code"]:
            incomplete += 1
            continue
        msgs = store.messages(row.id)
        user = [m.text for m in msgs if m.role == "user"]
        duplicated += len(user) - len(set(user))
        lost += len(set(res["sent"]) - set(user))
        wrong += user != res["sent"] or [m.seq for m in msgs] != list(range(len(msgs)))
    return {"incomplete_sessions": incomplete, "lost_messages": lost, "duplicated_messages": duplicated,
            "sessions_out_of_order": wrong}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=int, default=40)
    ap.add_argument("--deadline", type=float, default=300.0, help="seconds for the whole run")
    args = ap.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        policies = save_policies(tmp / "policies", ("base", "rl_frozen", "cotrain"))
        per = -(-args.participants // 3)
        folder = write_study(tmp / "study", policies, per_condition=per, max_turns=10)
        base_folder = write_study(tmp / "baseline", policies, per_condition=per, max_turns=10)
        baseline = inprocess_turns(base_folder, 4)
        port = free_port()
        proc = start_server(folder, port)
        results: dict = {}
        try:
            deadline = start + args.deadline
            threads = [threading.Thread(target=participant, args=(f"http://127.0.0.1:{port}", f"load{i:03d}",
                                                                  results, deadline), daemon=True)
                       for i in range(args.participants)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=max(0.0, deadline - time.monotonic()))
            wall = time.perf_counter() - t0
        finally:
            stop_server(proc)
        lat = np.array([x for r in results.values() for x in r["latencies"]]) * 1000
        report = {
            "participants": args.participants, "finished": len(results), "chat_turns": int(lat.size),
            "wall_s": round(wall, 2), "turns_per_s": round(lat.size / wall, 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 1), "p95_ms": round(float(np.percentile(lat, 95)), 1),
            "max_ms": round(float(lat.max()), 1),
            "inprocess_p50_ms": round(float(np.median(baseline)) * 1000, 2),
            "http_over_inprocess": round(float(np.percentile(lat, 50)) / (float(np.median(baseline)) * 1000), 1),
            **check(folder, results),
        }
    print(json.dumps(report, indent=1))
    if report["finished"] < args.participants or report["lost_messages"] or report["duplicated_messages"] \
            or report["incomplete_sessions"] or report["sessions_out_of_order"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
