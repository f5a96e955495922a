"""Running a task's tests: a fresh checkout of the base, the patches applied, the test command under limits.

``LocalSandbox`` (the default backend) does what CooperBench's ``runner.sh``
does in the task's image (base checkout, ``git apply`` the tests patch, then
the feature patch, run the tests) in a temporary directory that is removed
when the run ends, however it ends. The test command is the task's
``python -m pytest ...`` (``dataset.test_command``), run with this
interpreter (``sys.executable``) in a subprocess with:

* resource limits set in the child before it starts (``resource.setrlimit``):
  CPU seconds (``RLIMIT_CPU``), address space (``RLIMIT_AS``) and the size of
  any file it writes (``RLIMIT_FSIZE``; its output goes to a file, so this
  caps the output too); no core dumps;
* a wall-clock limit: past it the child's whole process group is killed
  (``SIGKILL``); the run reports ``timed_out`` and the episode goes on;
* no network: under ``unshare -n`` (a new, empty network namespace; ``-rn``
  for a non-root user) when the kernel allows it, which is checked once.
  Where it does not, a ``sitecustomize`` put first on the child's
  ``PYTHONPATH`` replaces ``socket.socket`` with one that refuses to be made.
  That fallback is a Python-level guard only (code that reaches the OS
  another way, e.g. ``ctypes`` or a subprocess that is not Python, is not
  stopped by it); ``network`` says which guard ran;
* a minimal environment (no proxies, ``HOME`` inside the temporary directory),
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (the host's pytest plugins are not the
  task's; it also makes a run ~5x faster) and ``-p no:cacheprovider``.

The local backend runs Python tasks whose dependencies this interpreter has
(the demo has none). ``DockerSandbox`` runs the task's own image, as
CooperBench does, for everything else; it is built only when asked for and
raises a clear error where Docker is not available.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scope_envs.games.cooperbench.code.dataset import DatasetError, git, parse_counts

OUTPUT_TAIL = 4000  # characters of test output kept for the agent
BLOCK_SOCKETS = '''"""scope-envs sandbox: no network (Python-level guard)."""
import socket


class _NoNetwork(socket.socket):
    def __init__(self, *args, **kwargs):
        raise OSError("network access is disabled in this sandbox")


socket.socket = _NoNetwork
socket.create_connection = lambda *a, **k: _NoNetwork()
'''


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0  # wall-clock seconds per test run
    cpu_s: int = 60  # CPU seconds
    memory_mb: int = 2048  # address space
    output_mb: int = 16  # the size of any file written, the output included


@dataclass
class TestRun:
    passed: bool  # CooperBench's rule: exit status 0 and at least one test passed
    tests_passed: int
    tests_failed: int
    exit_code: int | None
    timed_out: bool
    output: str  # the last OUTPUT_TAIL characters
    seconds: float
    network: str  # the guard that ran: "unshare", "sitecustomize" or "docker"
    error: str = ""  # a patch that did not apply, a task without a test command

    def summary(self) -> str:
        if self.error:
            return f"Error: {self.error}"
        head = "TIMED OUT (killed at its limit)" if self.timed_out else ("PASSED" if self.passed else "FAILED")
        return f"{head}: {self.tests_passed} passed, {self.tests_failed} failed\n{self.output}"


@functools.cache
def unshare_prefix() -> tuple[str, ...] | None:
    """The ``unshare`` command line that gives a child an empty network namespace here, or None."""
    exe = shutil.which("unshare")
    if exe is None:
        return None
    for flags in (("-n",), ("-rn",)):
        try:
            ok = subprocess.run([exe, *flags, "true"], capture_output=True, timeout=10, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return (exe, *flags, "--")
    return None


def _limit(limits: Limits):
    def apply():  # runs in the child between fork and exec
        cpu = max(1, int(limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        size = limits.output_mb * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_limited(argv: list[str], cwd: Path, limits: Limits, network: str = "auto") -> TestRun:
    """Run ``argv`` in ``cwd`` under ``limits`` with no network (``network``: "auto", "unshare" or
    "sitecustomize"); the output is the child's stdout and stderr together."""
    home = cwd.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "TMPDIR": str(home)}
    prefix = unshare_prefix() if network in ("auto", "unshare") else None
    if network == "unshare" and prefix is None:
        raise DatasetError("network='unshare' asked for, but unshare cannot make a network namespace here")
    guard = "unshare"
    if prefix is None:
        guard = "sitecustomize"
        site = cwd.parent / "nonet"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(BLOCK_SOCKETS)
        env["PYTHONPATH"] = str(site)
    out_path = cwd.parent / "output.txt"
    start = time.monotonic()
    timed_out = False
    with open(out_path, "wb") as out:
        # preexec_fn: the limits must be set in the child before exec, and only setrlimit runs there (no locks)
        proc = subprocess.Popen([*(prefix or ()), *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, preexec_fn=_limit(limits),  # noqa: PLW1509
                                start_new_session=True)
        try:
            code = proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            code = proc.wait()
    seconds = time.monotonic() - start
    with open(out_path, "rb") as f:
        f.seek(max(0, out_path.stat().st_size - 4 * OUTPUT_TAIL))
        text = f.read().decode("utf-8", "replace")[-OUTPUT_TAIL:]
    # killed by the CPU limit (SIGXCPU, then SIGKILL at the hard limit) counts as timed out too
    timed_out = timed_out or code in (-signal.SIGXCPU, -signal.SIGKILL)
    passed, failed = parse_counts(text)
    return TestRun(code == 0 and passed > 0 and not timed_out, passed, failed, code, timed_out, text, seconds, guard)


class LocalSandbox:
    name = "local"

    def __init__(self, limits: Limits, network: str = "auto"):
        if network not in ("auto", "unshare", "sitecustomize"):
            raise ValueError(f"network must be 'auto', 'unshare' or 'sitecustomize', got {network!r}")
        if network == "unshare" and unshare_prefix() is None:
            raise DatasetError("network='unshare' asked for, but unshare cannot make a network namespace here "
                               "(network='auto' falls back to the sitecustomize guard)")
        self.limits = limits
        self.network = network

    def run(self, base: Path, command: list[str] | None, tests_patch: str, patch: str) -> TestRun:
        """CooperBench's ``runner.sh <tests.patch> <patch>``: on a fresh base, the tests patch, then ``patch``."""
        if command is None:
            return TestRun(False, 0, 0, None, False, "", 0.0, "none", "the task's runner.sh has no "
                           "'python -m pytest' command; the local backend runs Python tasks only (backend='docker')")
        with tempfile.TemporaryDirectory(prefix="scope-cb-test-") as tmp:
            repo = Path(tmp) / "repo"
            repo.mkdir()
            # a plain export of the base (no .git): the tests cannot reach the base repository through it
            tar = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=base, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(repo)], input=tar.stdout, check=True, capture_output=True)
            for name, text in (("tests patch", tests_patch), ("patch", patch)):
                if not text:
                    continue
                applied = git("apply", "--whitespace=nowarn", "-", cwd=repo, input=text, check=False)
                if applied.returncode:
                    why = applied.stderr.strip()
                    return TestRun(False, 0, 0, None, False, why[-OUTPUT_TAIL:], 0.0, "none",
                                   f"the {name} does not apply: {why.splitlines()[0] if why else '?'}")
            argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *command]
            return run_limited(argv, repo, self.limits, self.network)


class DockerSandbox:
    """The task's CooperBench image (``akhatua/cooperbench-<repo>:task<id>``) runs ``runner.sh`` itself, with
    ``--network none``. Asked for with ``backend="docker"``; not exercised by this package's tests (no Docker
    on the machines they run on)."""

    name = "docker"

    def __init__(self, limits: Limits, image: str):
        exe = shutil.which("docker")
        if exe is None or subprocess.run([exe, "info"], capture_output=True, check=False).returncode != 0:
            raise DatasetError("backend='docker' needs a running Docker daemon and the task's image; none is "
                               "available here (use backend='local' for Python tasks)")
        self.exe, self.limits, self.image = exe, limits, image

    def run(self, base: Path, command, tests_patch: str, patch: str) -> TestRun:
        with tempfile.TemporaryDirectory(prefix="scope-cb-docker-") as tmp:
            Path(tmp, "tests.patch").write_text(tests_patch)
            Path(tmp, "feature.patch").write_text(patch)
            name = f"scope-cb-{os.getpid()}-{Path(tmp).name}"
            argv = [self.exe, "run", "--rm", "--name", name, "--network", "none",
                    f"--memory={self.limits.memory_mb}m", "-v", f"{tmp}:/patches", self.image, "tests.patch",
                    *(["feature.patch"] if patch else [])]
            start = time.monotonic()
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.limits.wall_s, check=False)
                text, code, timed_out = (proc.stdout + proc.stderr)[-OUTPUT_TAIL:], proc.returncode, False
            except subprocess.TimeoutExpired:  # the client is gone; the container is not
                subprocess.run([self.exe, "rm", "-f", name], capture_output=True, check=False)
                text, code, timed_out = "", None, True
            passed, failed = parse_counts(text)
            return TestRun(code == 0 and passed > 0, passed, failed, code, timed_out, text,
                           time.monotonic() - start, "docker")
