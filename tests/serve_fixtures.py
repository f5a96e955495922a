"""A real ``scope-envs serve`` process on 127.0.0.1 for the serving tests (tests/test_serve.py, test_remote.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

START_TIMEOUT = 120.0  # importing OpenEnv (gradio with it) takes seconds on a loaded 2-core machine


def needs_openenv():
    pytest.importorskip("openenv", reason="the server needs the serve extra: pip install 'scope-envs[serve]'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "healthy":
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} was not healthy within {timeout} s")


def start(env_id: str, *args: str, port: int | None = None) -> tuple[str, subprocess.Popen]:
    port = free_port() if port is None else port
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "serve", env_id, "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
    except BaseException:
        stop(proc)
        raise
    return url, proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def post(url, body, method="POST", raw=None) -> tuple[int, object]:
    """``(status, parsed JSON answer)`` of a request with the JSON ``body`` (or the bytes ``raw``)."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@contextlib.contextmanager
def serving(env_id: str, *args: str, port: int | None = None):
    url, proc = start(env_id, *args, port=port)
    try:
        yield url
    finally:
        stop(proc)
