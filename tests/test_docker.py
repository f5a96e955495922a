"""The container: OpenEnv's manifest names an app that serves an id, checked here with uvicorn and
OpenEnv's own runtime validator; the Dockerfile is built and served where a Docker engine runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from serve_fixtures import free_port, needs_openenv, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
needs_openenv()


@pytest.mark.slow
def test_manifest_app_serves_an_id_and_passes_openenv_validation():
    import yaml
    from openenv.cli._validation import validate_running_environment

    from scope_envs.remote import RemoteParallelEnv

    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert manifest["runtime"] == "fastapi" and manifest["port"] == 8000
    port = free_port()
    env = {**os.environ, "SCOPE_ENV_ID": "cooperbench-cotrain", "SCOPE_ENV_KWARGS": '{"max_turns": 6}'}
    http = "scope_envs.serve.protocol:HeaderTimeoutProtocol"  # as the Dockerfile starts it
    assert f"--http {http}" in (ROOT / "Dockerfile").read_text()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", manifest["app"], "--http", http, "--host", "127.0.0.1",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        report = validate_running_environment(url, timeout_s=30)
        failed = [c for c in report["criteria"] if c.get("required", True) and not c["passed"]]
        assert report["passed"], failed
        remote = RemoteParallelEnv(url)
        assert remote.spec["env_id"] == "cooperbench-cotrain" and remote.spec["kwargs"] == {"max_turns": 6}
        obs, infos = remote.reset(seed=0)
        assert set(obs) == {"agent_0", "user_0"}
        remote.close()
    finally:
        stop(proc)


@pytest.mark.slow
def test_asgi_refuses_a_missing_id():
    out = subprocess.run([sys.executable, "-c", "import scope_envs.serve.asgi"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "SCOPE_ENV_ID"}, timeout=300)
    assert out.returncode != 0 and "set SCOPE_ENV_ID" in out.stderr


def _docker_engine() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


@pytest.mark.skipif(not _docker_engine(), reason="no Docker engine runs here (`docker info` fails): the image is "
                                                  "built and served only where one does")
def test_container_serves_an_id():
    from scope_envs.remote import RemoteParallelEnv

    tag = "scope-envs-test:latest"
    subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, timeout=3600)
    port = free_port()
    name = f"scope-envs-test-{port}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:8000", "-e",
                    "SCOPE_ENV_ID=p4g-cotrain", tag], check=True, timeout=120)
    try:
        url = f"http://127.0.0.1:{port}"
        import time
        import urllib.request

        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline, "the container did not become healthy"
                time.sleep(1)
        env = RemoteParallelEnv(url)
        obs, _ = env.reset(seed=0)
        assert set(obs) == {"agent_0", "user_0"}
        env.close()
    finally:
        subprocess.run(["docker", "stop", name], capture_output=True, timeout=120)
