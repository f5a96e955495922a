"""Shared helpers of the study tests: small study folders with saved act-level policies, a server process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def save_policies(folder: Path, names=("base", "trained")) -> dict[str, str]:
    """Untrained act-level persuaders (two seeds), saved as PPOTrainer folders: fast and deterministic."""
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    out = {}
    for i, name in enumerate(names):
        path = folder / name
        PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=i, total_steps=0, num_envs=1)).save(path)
        out[name] = str(path)
    return out


def write_study(folder: Path, policies: dict[str, str], **fields) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    raw = {"title": "Test study", "game": "p4g", "per_condition": 10, "max_turns": 3, "admin_token": "admin-token-for-tests",
           "completion_code": "TESTCODE",
           "conditions": [{"name": n, "policy": {"path": p}} for n, p in policies.items()]}
    raw.update(fields)
    (folder / "study.yaml").write_text(yaml.safe_dump(raw))
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(folder: Path, port: int, timeout: float = 60.0) -> subprocess.Popen:
    """``scope-envs study serve`` in a subprocess, returned once it answers on 127.0.0.1."""
    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "study", "serve", "--config", str(folder),
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read().decode()[-2000:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1.0)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    if proc.stdout:
        proc.stdout.close()
