"""Step latency of ``scope-envs serve`` under many concurrent ``/ws`` clients: p50 and p99 (issue 48's "Measure").

Starts one server per row on 127.0.0.1 (a free port) and runs ``--clients`` WebSocket clients at once, each in its
own thread: a reset, then steps (a random legal act of the agent seat on the act surface, a fixed message on the
text surface; a new reset when an episode ends) until each client has timed ``--steps`` steps. The latency of a
step is the time from sending it to reading its answer. Prints one JSON object (rows: id, surface, p50_ms, p99_ms).

    python benchmarks/serve_latency.py                       # the three rows, 32 clients, 100 steps each
    python benchmarks/serve_latency.py --clients 4 --steps 5 --rows p4g-cotrain:act
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

from scope_envs.arguments import count

ROWS = ("p4g-cotrain:act", "tau2-frozen:act", "tau2-frozen:text")
MESSAGE = "Hello, how can I help you today?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(env_id: str, surface: str, clients: int):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "serve", env_id, "--surface", surface, "--port",
                             str(port), "--max-sessions", str(clients + 4)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve_latency.py: the server for {env_id} exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return url, proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"serve_latency.py: the server for {env_id} did not start within 120 s")


def client(url: str, surface: str, steps: int, seed: int, out: list, errors: list) -> None:
    from websockets.sync.client import connect

    rng = np.random.default_rng(seed)
    try:
        with connect(url.replace("http", "ws") + "/ws", open_timeout=60, max_size=None) as ws:
            def ask(message):
                ws.send(json.dumps(message))
                answer = json.loads(ws.recv(timeout=120))
                if answer["type"] == "error":
                    raise RuntimeError(answer["data"]["message"][:300])
                return answer["data"]

            data = ask({"type": "reset", "data": {"seed": seed, "drive": ["agent_0"]}})
            episode = 0
            for _ in range(steps):
                if data["done"]:
                    episode += 1
                    data = ask({"type": "reset", "data": {"seed": seed * 1000 + episode, "drive": ["agent_0"]}})
                entry = data["observation"]["agents"]["agent_0"]
                act = MESSAGE if surface == "text" else int(rng.choice(np.flatnonzero(entry["action_mask"])))
                start = time.perf_counter()
                data = ask({"type": "step", "data": {"actions": {"agent_0": act}}})
                out.append(time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001  (reported, with the row, after the threads end)
        errors.append(f"{type(e).__name__}: {e}")


def measure(env_id: str, surface: str, clients: int, steps: int) -> dict:
    url, proc = serve(env_id, surface, clients)
    try:
        times: list[float] = []
        errors: list[str] = []
        threads = [threading.Thread(target=client, args=(url, surface, steps, i, times, errors)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if errors:
        raise SystemExit(f"serve_latency.py: {env_id} ({surface}): {len(errors)} client(s) failed: {errors[0]}")
    ms = np.asarray(times) * 1000
    return {"id": env_id, "surface": surface, "clients": clients, "steps": len(ms),
            "p50_ms": round(float(np.percentile(ms, 50)), 1), "p99_ms": round(float(np.percentile(ms, 99)), 1)}


def row(text: str) -> tuple[str, str]:
    env_id, sep, surface = text.partition(":")
    if not sep or surface not in ("act", "text"):
        raise argparse.ArgumentTypeError(f"expected ID:act or ID:text, got {text[:60]!r}")
    import scope_envs

    if env_id not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {env_id[:60]!r}")
    return env_id, surface


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=count(256), default=32, help="concurrent /ws clients (1 to 256)")
    ap.add_argument("--steps", type=count(100_000), default=100,
                    help="timed steps per client (default 100, at most 100_000)")
    ap.add_argument("--rows", type=row, nargs="+", default=[row(r) for r in ROWS], metavar="ID:SURFACE",
                    help=f"a served id and its surface, act or text, each (default {' '.join(ROWS)})")
    args = ap.parse_args(argv)
    load = [round(x, 2) for x in os.getloadavg()]
    rows = [measure(env_id, surface, args.clients, args.steps) for env_id, surface in args.rows]
    print(json.dumps({"load_before": load, "rows": rows, "load_after": [round(x, 2) for x in os.getloadavg()]},
                     indent=1))


if __name__ == "__main__":
    main()
