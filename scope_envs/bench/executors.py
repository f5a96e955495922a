"""Where the benchmark's runs execute: worker processes on this machine, or a Ray cluster.

Each (game, method, seed) run — ``scope_envs.bench.methods.run_one`` — is one task. With ``--seed-block K`` the
seeds of a built-in row go to a worker as blocks of up to K, trained as one computation (``methods.run_seeds``,
``scope_envs.train.seeds``: each seed's record the one it gets alone), and written run by run. ``execute`` hands the
grid to an executor and keeps the books the same way for both:

* ``local`` — ``--jobs`` forked worker processes on this machine (one: in this process). Needs nothing.
* ``ray`` — one Ray task per run, or per block of seeds (``num_cpus=1``). With no ``--address`` it starts a
  local Ray on this machine with ``--jobs`` CPUs (whatever ``RAY_ADDRESS`` says); with one (``auto``,
  ``ray://head:10001``, ``host:6379``) it joins that cluster, once a Ray server answers there (``reachable``),
  and keeps as many tasks in flight as the cluster has CPUs (or ``--jobs``). Ray core and Ray Client only
  (``pip install 'scope-envs[ray]'``): RLlib, and its gymnasium pin, are not needed.

Every finished run is written at once, by this (the driving) process, to ``OUT/runs/<name>.json``
(``run_name``: ``<game>-<method>-<seed>``, plus ``-<variant>`` for a sensitivity ceiling), as
``{"task": ..., "result": ...}``, through a temporary file renamed into place: a process killed at any
moment leaves either the whole file or none. ``resume=True`` reads those files back (a packed folder unpacked
first) and runs only the tasks that have none, or one written for other settings (its ``task`` differs) or by other
code (its ``fingerprint`` differs); a file that is not a valid run record (``record_problem``: not JSON, no result,
no metrics, a NaN or infinite success) is run again and named on stderr, and a folder where a run's file belongs
stops the bench before any run starts. A task that raises, or
whose worker dies, is run once more; if it fails again it is reported by name (``BenchFailure``) after every
other run has finished and been written, so a ``--resume`` afterwards runs only the failed ones.

A killed driver (kill -9 included) leaves no worker behind: local workers end with their parent
(``end_with_parent``: ``PR_SET_PDEATHSIG`` on Linux, and a watcher thread everywhere). With Ray, Ray's own
fate sharing ends its GCS, raylet and task workers with the driver that started them; its dashboard and
runtime-env agents were seen to exit on their own within about two minutes (ray-project/ray#52385).

Progress: finished / running / queued runs, failures, and an ETA from the times of the runs finished so far
(``Progress.expected``), spread over the runs that can be in flight at once.
Results do not depend on the executor: ``run_one`` seeds everything from its task, and ``execute`` returns the
runs in the grid's order whatever order they finished in.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import re
import sys
import traceback
from pathlib import Path

from scope_envs.arguments import RAY_ADDRESS_FORM
from scope_envs.bench.reference import fingerprint, fingerprint_differs
from scope_envs.files import OutputError, remove_leftovers, write_json
from scope_envs.files import write_atomic as write_text

EXECUTORS = ("local", "ray")
ATTEMPTS = 2  # a failed run is tried once more, then reported


class ExecutorUnavailable(RuntimeError):
    """The executor cannot start: no Ray installed, or no Ray cluster at the address."""


class Failed(str):
    """A failed try's traceback; ``retry`` False where another try would fail the same way (a plug-in's own
    error, ``PluginError``: the same seed raises again), True where the infrastructure failed (a lost worker)."""

    retry = True


def failed_try(error: BaseException) -> Failed:
    from scope_envs.bench.loading import PluginError

    text = Failed(traceback.format_exc())
    text.retry = not isinstance(error, PluginError)
    if not text.retry:  # its message names the method and what it did: the line a user reads
        text.summary = str(error)
    return text


class BenchFailure(RuntimeError):
    """Some runs failed (a plug-in's own error at once, any other twice); every other run finished and was
    written. ``failed``: name -> error."""

    def __init__(self, failed: dict[str, str], out: Path):
        self.failed = failed

        def line(name, error):
            if getattr(error, "retry", True):
                return f"  {name}: {error.strip().splitlines()[-1]} (failed twice: retried once, as a lost worker " \
                       "or another failure outside the method may not recur)"
            said = getattr(error, "summary", None) or error.strip().splitlines()[-1]
            return f"  {name}: {said} (the method's own error: not retried; traceback " \
                   f"in {out / 'runs' / name}.error.txt)"

        lines = "\n".join(line(name, error) for name, error in failed.items())
        super().__init__(f"{len(failed)} run(s) failed:\n{lines}\nthe other runs are in {out / 'runs'}; "
                         f"rerun with --resume to run only the failed ones")


def run_name(task: dict) -> str:
    name = f"{task['game']}-{task['method']}-{task['seed']}"
    return f"{name}-{task['assumptions']}" if task.get("assumptions") else name


def cost(task: dict) -> float:
    from scope_envs.bench.methods import COST

    return COST.get(task["method"], 0.1 if task["method"] == "untrained" else 1.0)


def write_atomic(path: Path, data: dict) -> None:
    """The whole file or none (``scope_envs.files.write_json``: beside its name, flushed, renamed into place)."""
    write_json(path, data, strict=False)  # a record: read back as written (--resume, --against)


def end_with_parent(parent: int) -> None:
    """In a worker: end when the driving process ``parent`` dies, however it dies (kill -9 included).

    On Linux the kernel sends SIGKILL at the parent's death (``prctl(PR_SET_PDEATHSIG)``); everywhere a
    daemon thread also checks once a second that the parent is still ours (a worker re-parented to init,
    or one whose parent died before the prctl call, ends at the next check)."""
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle: it ends the pool
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # the watcher below still ends the worker
    if os.getppid() != parent:
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def attempt(task: dict | list[dict]) -> tuple[bool, object]:
    """Run one task (``methods.run_one``, or the function its ``runner`` names as ``"module:function"``), or a
    block of one row's seeds (a list: ``methods.run_seeds``, their results in a list); (True, result) or (False,
    the traceback). Never raises, so a pool is never broken by a run's exception."""
    from scope_envs.bench import methods  # looked up at call time: tests swap run_one

    try:
        if isinstance(task, list):
            return True, methods.run_seeds(task)
        task = dict(task)
        runner = task.pop("runner", None)  # "module:function" of another grid (the calibration's cells)
        if runner is None:
            return True, methods.run_one(**task)
        module, _, name = runner.partition(":")
        return True, getattr(importlib.import_module(module), name)(**task)
    except Exception as e:  # noqa: BLE001  (retried unless a plug-in's own, then reported by name: BenchFailure)
        return False, failed_try(e)


# ----------------------------------------------------------------------------- executors
class LocalExecutor:
    """``jobs`` forked worker processes (or this process, for one)."""

    def __init__(self, jobs: int):
        self.slots = jobs
        self._pool = None
        self._pending: list = []

    def start(self):
        if self.slots > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor
            from concurrent.futures.process import BrokenProcessPool

            self._pool = ProcessPoolExecutor(self.slots, mp_context=mp.get_context("fork"),
                                             initializer=end_with_parent, initargs=(os.getpid(),))
            # the workers are forked now, before the progress bar starts tqdm's monitor thread: a fork copies a
            # lock another thread holds as held (Python 3.12 warns of it); the pool forks them on its first task
            try:
                self._pool.submit(int).result()
            except BrokenProcessPool:  # a worker died at once: the next submit counts a failed try, as on any break
                pass

    def submit(self, task: dict):
        if self._pool is None:  # in this process: it runs at the next wait
            handle = object()
            self._pending.append((handle, task))
            return handle
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._pool.submit(attempt, task)
        except BrokenProcessPool as e:  # a worker died since the last wait: this try fails with the pool, which
            failed = Future()  # the next wait replaces
            failed.set_exception(e)
            return failed

    def wait(self, handles: list) -> list[tuple[object, tuple[bool, object]]]:
        if self._pool is None:
            handle, task = self._pending.pop(0)
            return [(handle, attempt(task))]
        from concurrent.futures import FIRST_COMPLETED
        from concurrent.futures import wait as wait_futures
        from concurrent.futures.process import BrokenProcessPool

        finished, _ = wait_futures(handles, return_when=FIRST_COMPLETED)
        out = []
        broken = False
        for future in finished:
            try:
                out.append((future, future.result()))
            except BrokenProcessPool:  # a worker died (killed, out of memory): its runs count as failed tries
                out.append((future, (False, "the worker process running it died")))
                broken = True
        if broken:
            # every run in flight in the broken pool is lost: count them as failed tries, start a new pool
            out += [(h, (False, "the worker pool broke while it ran")) for h in handles if h not in finished]
            self._pool.shutdown(wait=False, cancel_futures=True)
            self.start()
        return out

    def close(self):
        """End the pool now. Its workers are ended too: a run still in flight (after Ctrl-C or SIGTERM) would
        otherwise hold the exit until it finished, as the interpreter joins a pool's workers at exit."""
        if self._pool is not None:
            end = getattr(self._pool, "kill_workers", None)  # Python 3.14's; before it, each process
            if end is not None:
                end()
            else:  # (read before shutdown, which forgets them)
                workers = list((getattr(self._pool, "_processes", None) or {}).values())
                self._pool.shutdown(wait=False, cancel_futures=True)
                for process in workers:  # SIGKILL: a worker holds nothing to clean up (the driver writes the runs)
                    process.kill()
                for process in workers:
                    process.join(timeout=10)


class RayExecutor:
    """One Ray task per run or block of seeds, on a local Ray (``address=None``) or a cluster."""

    def __init__(self, jobs: int | None, address: str | None):
        self.jobs, self.address = jobs, address
        self.slots = jobs or 1
        self._sigterm = None  # the SIGTERM handler before Ray's (sigterm_handler)

    def start(self):
        try:
            import ray
        except ImportError as e:
            raise ExecutorUnavailable("the ray executor needs Ray: pip install 'scope-envs[ray]'") from e
        self.ray = ray
        from scope_envs import kernels

        # the workers load numpy and torch with the driver's kernel pins (scope_envs.kernels)
        pins = {k: os.environ[k] for k in kernels.PINS if k in os.environ}
        kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False,
                  **({"runtime_env": {"env_vars": pins}} if pins else {})}
        if self.address not in (None, "auto"):
            reachable(self.address)
        elif self.address == "auto" and re.fullmatch(RAY_ADDRESS_FORM, os.environ.get("RAY_ADDRESS", "")):
            reachable(os.environ["RAY_ADDRESS"], given="RAY_ADDRESS, which --address auto reads")
        self._sigterm = sigterm_handler()
        try:
            if self.address is None:
                # "local": a new Ray here, as no --address says; with address=None Ray would join RAY_ADDRESS's
                # cluster or the last `ray start` one instead, and refuse num_cpus there
                ray.init(address="local", num_cpus=self.jobs or os.cpu_count() or 1, **kwargs)
            else:
                ray.init(address=self.address, **kwargs)
            sigterm_handler(self._sigterm)
        except Exception as e:  # noqa: BLE001  (Ray raises a bare Exception when its node times out at start-up)
            try:
                ray.shutdown()  # whatever part of a local Ray did start
            except Exception:  # noqa: BLE001
                pass
            sigterm_handler(self._sigterm)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            where, hint = (("start Ray on this machine", "rerun with --executor local, or start Ray yourself "
                            "(`ray start --head`) and pass --address auto") if self.address is None else
                           (f"join Ray at {self.address}", "check the cluster (`ray status` on its head; one with "
                            "token authentication, a new Ray's default, also needs RAY_AUTH_MODE=token and its token "
                            "in RAY_AUTH_TOKEN or ~/.ray/auth_token), or rerun with --executor local"))
            raise ExecutorUnavailable(f"--executor ray: could not {where} ({first}); {hint}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = max(1, min(self.jobs or cpus, cpus))
        self._remote = ray.remote(num_cpus=1, max_retries=0)(attempt)

    def submit(self, task: dict):
        return self._remote.remote(task)

    def wait(self, handles: list):
        ready, _ = self.ray.wait(handles, num_returns=1)
        out = []
        for ref in ready:
            try:
                out.append((ref, self.ray.get(ref)))
            except Exception as e:  # noqa: BLE001  (the worker died, a Ray error: a failed try)
                out.append((ref, (False, f"{type(e).__name__}: {e}")))
        return out

    def close(self):
        self.ray.shutdown()  # stops our own local Ray; from a cluster it only disconnects this driver
        sigterm_handler(self._sigterm)  # (shutdown leaves SIGTERM's default: the end, without a word)


def sigterm_handler(handler=None):
    """The SIGTERM handler now (no ``handler``), or ``handler`` set again. ``ray.init`` sets one of its own
    (``sys.exit``), Ray's core one that prints a stack, ``ray.shutdown`` the default: the command's own
    (``scope_envs.cli``: one line, exit 143) is set again after each. None where signals are not this thread's."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    if handler is None:
        return signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, handler)
    return handler


def reachable(address: str, timeout: float = 5.0, given: str = "--address") -> None:
    """A Ray server answers at ``[ray://]HOST:PORT`` within ``timeout``, or ``ExecutorUnavailable``: Ray itself
    retries an unreachable head, and a port that is not Ray's (the dashboard's 8265, the client port without
    ray://), for many minutes before it gives up. Both Ray's GCS (HOST:PORT) and Ray Client (ray://) are gRPC
    servers, which answer HTTP/2's connection preface with a SETTINGS frame; with ``RAY_USE_TLS`` they speak TLS
    first, so there only the connection is checked."""
    import socket

    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except (OSError, ValueError, OverflowError) as e:
        raise ExecutorUnavailable(f"no Ray cluster answers at {address} ({given}): {e}") from e
    head = b""
    with conn:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return
        try:
            conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # preface, SETTINGS
            while len(head) < 9:
                chunk = conn.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
        except OSError:  # a timeout, a reset: no gRPC server there
            pass
    if len(head) < 9 or head[3] != 4:  # the first frame a gRPC server sends is its SETTINGS (type 4)
        wanted = "the Ray Client port (`ray start --head` opens 10001)" if client else \
            "a head node's GCS port (`ray start --head` prints it, 6379 by default; ray://HOST:10001 for Ray Client)"
        raise ExecutorUnavailable(f"{address} ({given}) answers, but not as Ray; give {wanted}")


def make_executor(executor: str, jobs: int | None, address: str | None):
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError("address= is for the ray executor")
    if executor == "local":
        return LocalExecutor(max(1, jobs or os.cpu_count() or 1))
    return RayExecutor(jobs, address)


# ----------------------------------------------------------------------------- the books
class Progress:
    """finished / running / queued / failed, and an ETA, on a tqdm line.

    A run's expected time is the mean of the finished runs of its game and method; before any has finished, the
    finished runs' seconds per unit of their rough cost (``cost``: an oracle run is five units), of its game where
    it has some, times its own cost. The ETA spreads the queued runs (and half of each running one) over the runs in
    flight at once."""

    def __init__(self, total: int, already: int, slots: int, enabled: bool):
        from tqdm import tqdm

        self.slots = slots
        self.walls: dict[tuple[str, str], list[float]] = {}  # (game, method) -> wall seconds, runs finished here
        self.bar = tqdm(total=total, initial=already, desc="bench", unit="run", disable=not enabled,
                        bar_format="{desc}: {n_fmt}/{total_fmt} runs |{bar:20}| {elapsed}{postfix}")

    def expected(self, task: dict) -> float:
        same = self.walls.get((task["game"], task["method"]))
        if same:
            return sum(same) / len(same)
        def per_unit(game=None):  # the finished runs' seconds per unit of cost, of one game or of all
            return [w / cost({"method": m}) for (g, m), ws in self.walls.items() if game in (None, g) for w in ws]

        units = per_unit(task["game"]) or per_unit()
        return sum(units) / len(units) * cost(task)

    def update(self, finished: int, running: list[dict], queued: list[dict], failed: int, last: str | None = None,
               wall: float | None = None, task: dict | None = None):
        if wall is not None:
            self.walls.setdefault((task["game"], task["method"]), []).append(wall)
        if self.walls:
            left = sum(map(self.expected, queued)) + 0.5 * sum(map(self.expected, running))
            eta = f"ETA {_clock(left / self.slots)}"
        else:
            eta = "ETA ?"
        tail = f", last {last}" if last else ""
        self.bar.set_postfix_str(f"{len(running)} running, {len(queued)} queued, {failed} failed, {eta}{tail}",
                                 refresh=False)
        self.bar.n = finished
        self.bar.refresh()

    def close(self):
        self.bar.close()


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


# metrics that may be NaN in a real run: an entropy with nobody to measure, a grouped diagnostic without groups
MAY_BE_NAN = ("policy_entropy", "sim_entropy", "zero_std_group_frac", "all_fail_group_frac", "all_success_group_frac")
REQUIRED_METRICS = ("train_success", "heldout_success")


def _finite(value, nan_ok: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) or (nan_ok and math.isnan(value))


def record_problem(data, task: dict) -> str | None:
    """Why ``data`` (a run file's content) is not a run record of ``task``, or None when it is one.

    A run record is ``{"task": <the task>, "result": {...}}``; the result names the task's game, method and
    seed, and its ``metrics`` hold a finite ``train_success`` and ``heldout_success``; every other metric is a
    finite number (NaN only where a real run can give one, ``MAY_BE_NAN``), null, or a list / mapping of them."""
    if not isinstance(data, dict) or "task" not in data or "result" not in data:
        return "not a {task, result} record"
    if data["task"] != task:
        return "written for other settings"
    result = data["result"]
    if not isinstance(result, dict):
        return f"its result is {type(result).__name__}, not a mapping"
    for key in ("game", "method", "seed"):
        if result.get(key) != task[key]:
            return f"its result's {key} is {result.get(key)!r}, not {task[key]!r}"
    metrics = result.get("metrics")
    if not isinstance(metrics, dict):
        return "its result has no metrics"
    for key in REQUIRED_METRICS:
        if key not in metrics:
            return f"metrics.{key} is missing"
    for key, value in metrics.items():
        nan_ok = key in MAY_BE_NAN
        if value is None and key not in REQUIRED_METRICS:
            continue
        values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        if not all(v is None or _finite(v, nan_ok) for v in values) or (key in REQUIRED_METRICS and not
                                                                          _finite(value, False)):
            return f"metrics.{key} is {value!r}, not a finite number"
    return None


def plugin_code(spec: str) -> str | None:
    """The source digest of the plug-in ``spec`` as its file is now (``plugins.source_digest``)."""
    from scope_envs.bench.methods import builtin
    from scope_envs.bench.plugins import load, source_digest

    return source_digest(load(spec, builtin()))


def finished_runs(out: Path, tasks: list[dict], report=None) -> dict[str, dict]:
    """The runs already in ``OUT/runs`` for these very tasks (same settings), by name. A file that is not a
    valid run record of its task (``record_problem``) is left out, so the run is done again, and ``report``
    (a callable taking one line; default: stderr) is told which file and why; one written for other settings
    is redone silently, as the settings say it must be. A record made by other code (its ``fingerprint``, where
    it has one, is not this code's: a game's rule or budget changed; a plug-in's file changed since) is redone and
    named; after a refactor that changed no number, ``benchmarks/restamp.py`` gives the records this code's
    fingerprint first."""
    report = report or (lambda line: print(line, file=sys.stderr))
    this_code = functools.cache(fingerprint)  # each game's, once
    method_now = functools.cache(plugin_code)  # each plug-in's file, read once
    found = {}
    for task in tasks:
        path = out / "runs" / f"{run_name(task)}.json"
        if not path.exists():
            continue
        if not path.is_file():
            raise OutputError(f"{path}: not a file (the run's file belongs here); remove it")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            report(f"resume: {path} is not a run record ({type(e).__name__}: {e}); running it again")
            continue
        problem = record_problem(data, task)
        made_by = data["result"].get("fingerprint") if problem is None else None
        moved = fingerprint_differs(made_by, this_code(task["game"])) if made_by is not None else []
        method_code = data["result"].get("plugin_code") if problem is None and task.get("plugin") else None
        if moved:
            report(f"resume: {path} was made by other code (its fingerprint differs in {', '.join(moved)}); "
                   "running it again")
        elif method_code is not None and method_code != method_now(task["plugin"]):
            report(f"resume: {path} was made by other code of method {task['method']!r} (its file changed since); "
                   "running it again")
        elif problem is None:
            found[run_name(task)] = data["result"]
        elif problem != "written for other settings":
            report(f"resume: {path} is not a valid run record ({problem}); running it again")
    return found


def blocks(tasks: list[dict], seed_block: int) -> list[list[dict]]:
    """The submissions of ``tasks``: the seeds of one built-in row (``methods.together``; tasks equal but for
    their seed) in near-equal blocks of at most ``seed_block``, each at its row's first task; any other task alone."""
    from scope_envs.bench.methods import together

    rows: dict[str, list[dict]] = {}
    order: list[str] = []
    for i, task in enumerate(tasks):
        key = json.dumps({k: v for k, v in task.items() if k != "seed"}, sort_keys=True) if together(task) else str(i)
        if key not in rows:
            rows[key] = []
            order.append(key)
        rows[key].append(task)
    out = []
    for key in order:
        row = rows[key]
        parts = -(-len(row) // max(1, seed_block))
        out += [row[j * len(row) // parts : (j + 1) * len(row) // parts] for j in range(parts)]
    return out


def execute(tasks: list[dict], out, *, executor: str = "local", jobs: int | None = None, address: str | None = None,
            resume: bool = False, progress: bool = True, seed_block: int = 1) -> tuple[list[dict], int]:
    """Run ``tasks`` (dicts of ``run_one`` arguments), writing each to ``out/runs/``; returns the results in
    the order of ``tasks`` and the number of runs that could be in flight at once. Raises ``BenchFailure``
    naming the runs that failed twice, after every other run is written. ``seed_block`` > 1: a built-in row's
    seeds still to run go as blocks of up to that many (``blocks``), each trained as one computation
    (``methods.run_seeds``) and written run by run; a block that fails is tried again seed by seed."""
    out = Path(out)
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    tasks = [json.loads(json.dumps(t)) for t in tasks]  # as the files hold them (tuples become lists)
    names = [run_name(t) for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError("two tasks share a run name: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
    if resume:  # a packed reference resumes as a folder of runs
        from scope_envs.bench import records  # (here: see reference.py's imports)

        try:
            records.unpack(out)
        except records.RecordError as e:
            raise OutputError(f"{e}; --resume cannot keep its runs: remove it or choose another --out") from None
    results = finished_runs(out, tasks) if resume else {}
    if resume and progress:  # what is kept and what is run: a file of other settings is replaced without a word above
        replaced = sum(n not in results and (runs_dir / f"{n}.json").is_file() for n in names)
        print(f"resume: keeping {len(results)} of the {len(tasks)} runs in {runs_dir}; running "
              f"{len(tasks) - len(results)}" + (f", {replaced} of them over a file of other settings or code, which "
                                                "it replaces" if replaced else ""), file=sys.stderr)
    for name in names:  # a folder (or other non-file) where a run's file goes: say so before any run starts
        path = runs_dir / f"{name}.json"
        if path.exists() and not path.is_file():
            raise OutputError(f"{path}: not a file (the run's file belongs here); remove it")
    for stale in runs_dir.glob(".*.tmp"):  # a temporary file left by a killed process: never a result
        stale.unlink(missing_ok=True)
    remove_leftovers(out)  # and beside results.json, report.md, the plots: a killed process's (SIGKILL)
    queued = blocks([t for t in tasks if run_name(t) not in results], seed_block)  # each a list of tasks
    ex = make_executor(executor, jobs, address)
    ex.start()
    bar = Progress(len(tasks), len(results), ex.slots, progress)
    tries = {run_name(t): 0 for part in queued for t in part}
    failed: dict[str, str] = {}
    in_flight: dict = {}  # handle -> its tasks

    def flat(parts):
        return [t for part in parts for t in part]

    try:
        while queued or in_flight:
            while queued and len(in_flight) < ex.slots:
                part = queued.pop(0)
                for task in part:
                    tries[run_name(task)] += 1
                in_flight[ex.submit(part if len(part) > 1 else part[0])] = part
            bar.update(len(results), flat(in_flight.values()), flat(queued), len(failed))
            for handle, (ok, value) in ex.wait(list(in_flight)):
                part = in_flight.pop(handle)
                if ok:
                    for task, result in zip(part, value if len(part) > 1 else [value]):
                        name = run_name(task)
                        write_atomic(runs_dir / f"{name}.json", {"task": task, "result": result})
                        (runs_dir / f"{name}.error.txt").unlink(missing_ok=True)  # an earlier try's, now fixed
                        results[name] = result
                        bar.update(len(results), flat(in_flight.values()), flat(queued), len(failed), name,
                                   result.get("wall_s", 0.0), task)
                elif len(part) > 1:  # the block's seeds again, one by one (its tries count for each)
                    queued[:0] = [[task] for task in part]
                elif tries[run_name(part[0])] < ATTEMPTS and getattr(value, "retry", True):
                    queued.insert(0, part)
                else:
                    name = run_name(part[0])
                    failed[name] = value
                    if not getattr(value, "retry", True):  # the method's traceback, kept for its author
                        write_text(runs_dir / f"{name}.error.txt", str(value))
                    bar.update(len(results), flat(in_flight.values()), flat(queued), len(failed))
    finally:
        bar.close()
        ex.close()
    if failed:
        raise BenchFailure(failed, out)
    return [results[n] for n in names], ex.slots
