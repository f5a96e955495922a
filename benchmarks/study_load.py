"""Load test of ``scope-envs study serve`` on loopback: N simulated participants at once, whole sessions.

Starts the server in a subprocess on 127.0.0.1 with a fresh study (three act-level P4G conditions, the
default 10 agent turns), then N threads each play one participant over HTTP with their own cookie:
arrival with Prolific's parameters, consent, role card, the chat to its end (stating $0.50 in the last
message), the survey, the completion code. Latency of a chat turn = POST of the message until the page
with the agent's reply has arrived (the redirect followed), what a person waits for. Afterwards the
database is checked: every session complete, every message stored once, in order, with the text sent.

Faults: with ``--kills K`` (default 1) the server is killed with SIGKILL K times mid-chat (when the chat turns
so far reach each of K evenly spaced marks) and restarted on the same port at once. A participant whose
request fails meanwhile does what a person does: reloads the chat once the server answers, and sends the
message again only if the page does not show it. Afterwards nothing may be lost: every message the server
acknowledged is in the database once, in order, and every person's message in the database is a turn of
``/admin/export.jsonl`` (and every session a row of ``/admin/export.csv``).

Baseline, in the same run: the same turn without HTTP or a second process (``Study.say`` called in this
process on its own database), so ``http_over_inprocess`` says what the web layer costs. Everything is
bounded: ``--deadline`` seconds for the whole run, after which the server is killed.

    .venv/bin/python benchmarks/study_load.py --participants 40 --kills 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import markupsafe
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scope_envs.arguments import count, positive_float  # noqa: E402
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
MAX_PARTICIPANTS = 1000
MAX_DEADLINE = 86_400  # seconds: a day
BASELINE_SESSIONS = 4  # the in-process baseline's whole sessions (its study holds at least as many places)


def deadline_seconds(text: str) -> float:
    """An argparse type: positive seconds, at most ``MAX_DEADLINE`` (a larger one is past what a clock can add)."""
    value = positive_float(text)
    if value > MAX_DEADLINE:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds up to {MAX_DEADLINE:_}, got {value}")
    return value


class Server:
    """The server process, killed (SIGKILL) and restarted by ``kill_restart``; ``up`` is set while it answers."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.up = threading.Event()
        self.proc = start_server(folder, port)
        self.up.set()
        self.kills: list[dict] = []

    def kill_restart(self, turns_done: int) -> None:
        self.up.clear()
        t0 = time.perf_counter()
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        stop_server(self.proc)
        self.proc = start_server(self.folder, self.port)
        self.kills.append({"after_turns": turns_done, "restart_s": round(time.perf_counter() - t0, 2)})
        self.up.set()

    def stop(self) -> None:
        stop_server(self.proc)


def request(c, server: Server, method: str, url: str, retries: dict, **kwargs):
    """One request; on a connection error (the server was killed) wait until it is back and return None."""
    import httpx

    try:
        return c.request(method, url, **kwargs)
    except httpx.TransportError:
        retries["n"] += 1
        server.up.wait(120)
        time.sleep(0.05)
        return None


def participant(base: str, pid: str, out: dict, deadline: float, server: Server, progress: dict) -> None:
    import httpx

    sent, latencies, retries = [], [], {"n": 0}
    with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as c:
        def until_answered(method, url, **kwargs):
            while time.monotonic() < deadline:
                r = request(c, server, method, url, retries, **kwargs)
                if r is not None:
                    return r
            raise RuntimeError(f"{pid}: no answer before the deadline")

        until_answered("GET", f"/?PROLIFIC_PID={pid}&STUDY_ID=load&SESSION_ID=s-{pid}")
        until_answered("POST", "/consent", data={"agree": "yes"})
        r = until_answered("POST", "/role")
        if r.url.path == "/role":  # the role post was lost to a kill: the page is shown again
            r = until_answered("POST", "/role")
        i = 0
        while r.url.path == "/chat" and time.monotonic() < deadline:
            if 'name="text"' not in r.text:  # a reply owed (after a restart): reload
                r = until_answered("GET", "/chat")
                continue
            text = f"{TEXTS[i % len(TEXTS)]} ({pid} #{i})"
            data = {"text": text}
            if 'name="amount"' in r.text:
                data["amount"] = "0.50"
                text = f"{text} [DONATE $0.50]"
            t0 = time.perf_counter()
            answer = request(c, server, "POST", "/chat", retries, data=data)
            if answer is None:  # killed mid-request: was the message stored? the reloaded page says
                answer = until_answered("GET", "/chat")
                shown = str(markupsafe.escape(text)) in answer.text
                if not shown and answer.url.path == "/chat":
                    r = answer
                    continue  # not stored: the person sends it again
            else:
                latencies.append(time.perf_counter() - t0)
            if answer.status_code != 200:
                raise RuntimeError(f"{pid}: status {answer.status_code}")
            r = answer
            sent.append(text)
            progress["turns"] += 1
            i += 1
        r = until_answered("POST", "/survey", data={"donation": "0.5", "naturalness": "4", "satisfaction": "4",
                                                    "talk_again": "4"})
        if r.status_code == 409 or r.url.path != "/done":  # a survey post lost to a kill after it was saved
            r = until_answered("GET", "/done")
        out[pid] = {"sent": sent, "latencies": latencies, "code": "id=\"code\"" in r.text, "retries": retries["n"]}


def inprocess_turns(folder: Path, turns: int) -> list[float]:
    """The same turns without HTTP: Study.say on a study of its own (the baseline)."""
    from scope_envs.study import build
    from scope_envs.study.config import load

    study = build(load(folder))
    out = []
    for k in range(turns):
        sid, _ = study.arrive(f"inproc{k}", None, None)
        study.consent(sid, True)
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


def check(folder: Path, results: dict, export: list[dict], csv_rows: int) -> dict:
    from scope_envs.study.config import load
    from scope_envs.study.store import Store

    store = Store(load(folder).database_url)
    exported = {r["prolific_pid"]: [t["text"] for t in r["turns"] if t["role"] == "persuadee"]
                + [x["text"] for x in r["rejected"] + r.get("unread", [])] for r in export}
    missing_from_export = sum(  # a person's committed message that no export line holds
        len(set(m.text for m in store.messages(row.id) if m.role == "user") - set(exported.get(row.prolific_pid, [])))
        for row in store.all_sessions())
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
            "sessions_out_of_order": wrong, "db_messages_missing_from_export": missing_from_export,
            "sessions_missing_from_csv": len(store.all_sessions()) - csv_rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--participants", type=count(MAX_PARTICIPANTS), default=40,
                    help=f"simulated participants at once (at most {MAX_PARTICIPANTS})")
    ap.add_argument("--kills", type=int, default=1, choices=range(0, 11), metavar="0..10",
                    help="SIGKILLs of the server mid-chat, each followed by a restart")
    ap.add_argument("--deadline", type=deadline_seconds, default=300.0,
                    help=f"seconds for the whole run (at most {MAX_DEADLINE})")
    args = ap.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        policies = save_policies(tmp / "policies", ("base", "rl_frozen", "cotrain"))
        per = -(-args.participants // 3)
        # every participant arrives from 127.0.0.1: the per-client arrival limit is raised for the load
        folder = write_study(tmp / "study", policies, per_condition=per, max_turns=10, arrival_limit=10_000)
        base_folder = write_study(tmp / "baseline", policies, per_condition=max(per, -(-BASELINE_SESSIONS // 3)),
                                  max_turns=10)
        baseline = inprocess_turns(base_folder, BASELINE_SESSIONS)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = Server(folder, port)
        results: dict = {}
        progress = {"turns": 0}
        expected_turns = args.participants * 10
        marks = [expected_turns * (k + 1) // (args.kills + 1) for k in range(args.kills)]
        try:
            deadline = start + args.deadline
            threads = [threading.Thread(target=participant, args=(base, f"load{i:03d}", results, deadline, server,
                                                                  progress), daemon=True)
                       for i in range(args.participants)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            while marks and time.monotonic() < deadline and any(t.is_alive() for t in threads):
                if progress["turns"] >= marks[0]:
                    marks.pop(0)
                    server.kill_restart(progress["turns"])
                time.sleep(0.01)
            for t in threads:
                t.join(timeout=max(0.0, deadline - time.monotonic()))
            wall = time.perf_counter() - t0
            import httpx

            token = {"X-Admin-Token": "admin-token-for-tests"}
            export = [json.loads(line) for line in
                      httpx.get(f"{base}/admin/export.jsonl", headers=token, timeout=60).text.splitlines()]
            csv_rows = len(httpx.get(f"{base}/admin/export.csv", headers=token, timeout=60).text.splitlines()) - 1
        finally:
            server.stop()
        lat = np.array([x for r in results.values() for x in r["latencies"]]) * 1000
        report = {
            "participants": args.participants, "finished": len(results),
            "chat_turns": sum(len(r["sent"]) for r in results.values()),  # acknowledged messages, kills included
            "timed_turns": int(lat.size),  # those whose POST was answered at once (no kill in between)
            "wall_s": round(wall, 2), "turns_per_s": round(sum(len(r["sent"]) for r in results.values()) / wall, 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 1), "p95_ms": round(float(np.percentile(lat, 95)), 1),
            "max_ms": round(float(lat.max()), 1),
            "inprocess_p50_ms": round(float(np.median(baseline)) * 1000, 2),
            "http_over_inprocess": round(float(np.percentile(lat, 50)) / (float(np.median(baseline)) * 1000), 1),
            "kills": server.kills, "requests_retried": sum(r["retries"] for r in results.values()),
            **check(folder, results, export, csv_rows),
        }
    print(json.dumps(report, indent=1))
    if report["finished"] < args.participants or report["lost_messages"] or report["duplicated_messages"] \
            or report["incomplete_sessions"] or report["sessions_out_of_order"] \
            or report["db_messages_missing_from_export"] or report["sessions_missing_from_csv"] \
            or len(report["kills"]) < args.kills:
        sys.exit(1)


if __name__ == "__main__":
    main()
