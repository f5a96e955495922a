"""The benchmark's executors (scope_envs.bench.executors): Ray gives the local executor's numbers, every run
is written whole as it finishes, --resume runs only what is missing, a failing run is retried once and then
named, and a killed bench leaves no half-written run.

Most tests swap ``methods.run_one`` for a quick stand-in (the books are under test, not the training);
the Ray test and the kill test run the real thing on a tiny grid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scope_envs import files
from scope_envs.bench import executors, methods
from scope_envs.bench.executors import BenchFailure, execute, run_name
from scope_envs.bench.stats import summarize
from scope_envs.cli import main

TINY = {"steps": 64, "eval_episodes": 4, "curve_points": 1, "curve_episodes": 4}
TIMING = ("wall_s", "env_steps_per_s", "trained_with")  # what a run trained in a block may differ in


def grid(methods_=("random", "frozen"), seeds=(0,), game="p4g"):
    return [dict(game=game, method=m, seed=s, **TINY) for m in methods_ for s in seeds]


def without_timing(run: dict) -> str:
    """The run as its file writes it (NaN == NaN there: an entropy with no user is NaN), less its timings."""
    return json.dumps({k: v for k, v in run.items() if k not in TIMING}, sort_keys=True)


def fake_run_one(calls_dir: Path, fail: dict | None = None):
    """A quick stand-in for run_one: logs each call as a file (it may run in a forked worker) and fails as
    ``fail`` says: name -> "always", "once", or "die" (the worker process exits, once)."""
    fail = fail or {}

    def run_one(game, method, seed, **kwargs):
        name = f"{game}-{method}-{seed}"
        tries = len(list(calls_dir.glob(f"{name}.*")))
        (calls_dir / f"{name}.{tries}").touch()
        mode = fail.get(name)
        if mode == "always" or (mode == "once" and tries == 0):
            raise RuntimeError(f"boom in {name}")
        if mode == "die" and tries == 0:
            os._exit(3)
        return {"game": game, "method": method, "seed": seed, "wall_s": 0.01,
                "metrics": {"train_success": 0.1 * seed, "heldout_success": 0.05 * seed}}

    return run_one


def calls(calls_dir: Path) -> list[str]:
    return sorted(p.name for p in calls_dir.iterdir())


@pytest.mark.slow
def test_ray_writes_what_the_local_executor_writes(tmp_path):
    """Ray's tasks as blocks of a row's two seeds, the local executor's one seed each: the same runs."""
    pytest.importorskip("ray")
    tasks = grid(seeds=(0, 1))
    local, _ = execute(tasks, tmp_path / "local", executor="local", jobs=1, progress=False)
    ray_runs, slots = execute(tasks, tmp_path / "ray", executor="ray", jobs=2, progress=False, seed_block=2)
    assert slots == 2
    assert [without_timing(r) for r in ray_runs] == [without_timing(r) for r in local]
    for task in tasks:  # and the files hold the same runs
        a, b = (json.loads((tmp_path / side / "runs" / f"{run_name(task)}.json").read_text())
                for side in ("local", "ray"))
        assert a["task"] == b["task"] and without_timing(a["result"]) == without_timing(b["result"])
    assert json.dumps(summarize(ray_runs)) == json.dumps(summarize(local))
    assert local[2]["training"], "frozen trained: the comparison covers a training run"
    assert ray_runs[2]["trained_with"] == 2 and "trained_with" not in local[2]


@pytest.mark.parametrize("jobs", [1, 2])
def test_resume_runs_only_the_missing_and_the_stale(tmp_path, monkeypatch, jobs):
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    tasks = grid(seeds=(0, 1, 2))
    first, _ = execute(tasks, tmp_path / "out", jobs=jobs, progress=False)
    assert len(calls(calls_dir)) == 6
    runs = tmp_path / "out" / "runs"
    (runs / "p4g-frozen-1.json").unlink()
    stale = json.loads((runs / "p4g-random-2.json").read_text())
    stale["task"]["steps"] = 999  # written for other settings: not this grid's run
    (runs / "p4g-random-2.json").write_text(json.dumps(stale))
    for p in calls_dir.iterdir():
        p.unlink()
    again, _ = execute(tasks, tmp_path / "out", jobs=jobs, resume=True, progress=False)
    assert calls(calls_dir) == ["p4g-frozen-1.0", "p4g-random-2.0"]
    assert again == first
    assert json.loads((runs / "p4g-random-2.json").read_text())["task"]["steps"] == TINY["steps"]
    execute(tasks, tmp_path / "out", jobs=jobs, resume=True, progress=False)  # all there: nothing runs
    assert calls(calls_dir) == ["p4g-frozen-1.0", "p4g-random-2.0"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_run_is_retried_once_then_named_and_the_others_are_kept(tmp_path, monkeypatch, jobs):
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir, {"p4g-random-0": "always",
                                                                     "p4g-frozen-1": "once"}))
    tasks = grid(seeds=(0, 1))
    with pytest.raises(BenchFailure, match="p4g-random-0: RuntimeError: boom in p4g-random-0") as caught:
        execute(tasks, tmp_path / "out", jobs=jobs, progress=False)
    assert set(caught.value.failed) == {"p4g-random-0"}
    assert calls(calls_dir) == ["p4g-frozen-0.0", "p4g-frozen-1.0", "p4g-frozen-1.1", "p4g-random-0.0",
                                "p4g-random-0.1", "p4g-random-1.0"]
    written = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    assert written == ["p4g-frozen-0.json", "p4g-frozen-1.json", "p4g-random-1.json"]


def test_a_worker_that_dies_is_replaced_and_its_run_retried(tmp_path, monkeypatch):
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir, {"p4g-frozen-0": "die"}))
    runs, _ = execute(grid(seeds=(0, 1)), tmp_path / "out", jobs=2, progress=False)
    assert [r["method"] for r in runs] == ["random", "random", "frozen", "frozen"]
    assert "p4g-frozen-0.1" in calls(calls_dir)


def test_the_workers_are_forked_before_the_bench_starts_a_thread(tmp_path, monkeypatch):
    """A fork copies a lock another thread holds as held: the progress bar's thread (tqdm's monitor) must not be
    alive when the local executor forks its workers."""
    import threading

    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    before = set(threading.enumerate())
    at_fork = []
    fork = os.fork

    def watched_fork():
        at_fork.append(set(threading.enumerate()) - before)
        return fork()

    monkeypatch.setattr(os, "fork", watched_fork)
    execute(grid(seeds=(0, 1)), tmp_path / "out", jobs=2, progress=True)
    assert len(at_fork) == 2 and at_fork == [set(), set()], at_fork


def test_a_write_cut_short_leaves_no_run_file(tmp_path, monkeypatch):
    path = tmp_path / "runs" / "p4g-random-0.json"
    path.parent.mkdir()

    def die_before_the_rename(fd):
        raise KeyboardInterrupt  # the process is stopped after writing, before the file is on disk and renamed

    monkeypatch.setattr(files.os, "fsync", die_before_the_rename)
    with pytest.raises(KeyboardInterrupt):
        executors.write_atomic(path, {"task": {}, "result": {"x": 1}})
    assert not path.exists() and not list(path.parent.glob(".*.tmp"))  # Ctrl-C, SIGTERM: its temporary file goes
    monkeypatch.undo()
    (path.parent / f".{path.name}.{os.getpid()}.tmp").write_text('{"task": {}, "res')  # as SIGKILL leaves one
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    execute(grid(methods_=("random",)), tmp_path, jobs=1, resume=True, progress=False)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # the leftover is swept, the run written
    assert json.loads(path.read_text())["result"]["method"] == "random"


KILLED = """
import sys, time
from scope_envs.bench import methods
from scope_envs.bench.executors import execute

def run_one(game, method, seed, **kwargs):  # a run with a large result: its write takes a while
    time.sleep(0.02)
    return {"game": game, "method": method, "seed": seed, "wall_s": 0.02,
            "metrics": {"train_success": 0.5, "heldout_success": 0.25},
            "training": [{"agent_steps": i, "return": i / 7} for i in range(20_000)]}

methods.run_one = run_one
execute([dict(game="p4g", method="random", seed=s) for s in range(200)], sys.argv[1], jobs=1, progress=False)
"""


@pytest.mark.parametrize("after", [2, 5])
def test_a_killed_bench_leaves_only_whole_runs_and_resumes(tmp_path, monkeypatch, after):
    """SIGKILL while runs are being written: every run file left is whole; --resume runs only the rest."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(out)], stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and len(list((out / "runs").glob("*.json"))) < after and proc.poll() is None:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, proc.stderr.read().decode()
    done = list((out / "runs").glob("*.json"))
    assert after <= len(done) < 200
    for path in done:
        data = json.loads(path.read_text())  # whole: it parses, and holds its task and its result
        assert run_name(data["task"]) == path.stem and len(data["result"]["training"]) == 20_000
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    runs, _ = execute([{"game": "p4g", "method": "random", "seed": s} for s in range(200)], out, jobs=1, resume=True,
                      progress=False)
    assert len(calls(calls_dir)) == 200 - len(done) and len(runs) == 200
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(f"p4g-random-{s}.json" for s in range(200))


SIGTERM_AROUND_RAY = """
import os, signal, sys, time
from scope_envs.bench.executors import RayExecutor

class Ours(Exception):
    pass

def ours(signum, frame):
    raise Ours()

signal.signal(signal.SIGTERM, ours)
ex = RayExecutor(1, None)
ex.start()
print("while ray runs:", signal.getsignal(signal.SIGTERM) is ours, flush=True)
ex.close()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
except Ours:
    print("after ray: ours", flush=True)
"""


@pytest.mark.slow
def test_sigterm_stays_the_benchs_own_while_ray_runs_and_after(tmp_path):
    """ray.init sets a SIGTERM handler of its own (sys.exit; its core, one that prints a stack) and ray.shutdown
    leaves SIGTERM's default: either way a SIGTERM to a --executor ray bench ended it without its one line (exit
    1 and Ray's stack mid-grid, killed silently during the report). The command's handler is set again after each."""
    pytest.importorskip("ray")
    done = subprocess.run([sys.executable, "-c", SIGTERM_AROUND_RAY], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert "while ray runs: True" in done.stdout and "after ray: ours" in done.stdout, (done.returncode,
                                                                                         done.stderr[-2000:])
    assert done.returncode == 0


@pytest.mark.parametrize("argv, argument", [
    (["--address", "auto"], "--address"),
    (["--executor", "ray", "--address", "not an address"], "--address"),
    (["--executor", "spark"], "--executor"),
])
def test_executor_arguments_are_checked(argv, argument, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", *argv])
    assert caught.value.code == 2 and argument in capsys.readouterr().err


def test_an_unreachable_cluster_is_a_one_line_error_not_a_hang(tmp_path, capsys):
    pytest.importorskip("ray")
    with pytest.raises(SystemExit, match="no Ray cluster answers at 127.0.0.1:1"):
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--executor", "ray",
              "--address", "127.0.0.1:1", "--out", str(tmp_path)])
    assert not list(tmp_path.glob("runs/*.json"))


def test_ray_failing_to_start_is_one_line_naming_the_executor(tmp_path, monkeypatch, capsys):
    """Ray's own start-up failure (a bare Exception when its node times out) is one line naming --executor and
    what to try, never a traceback; nothing is written."""
    ray = pytest.importorskip("ray")

    def timed_out(**kwargs):
        raise Exception("The current node timed out during startup. This could happen because some of the Ray "
                        "processes failed to startup.\nmore detail")

    monkeypatch.setattr(ray, "init", timed_out)
    with pytest.raises(SystemExit) as caught:
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--executor", "ray",
              "--out", str(tmp_path)])
    message = str(caught.value.code)
    assert "\n" not in message and "--executor ray" in message and "--executor local" in message, message
    assert "timed out during startup" in message and "Traceback" not in capsys.readouterr().err
    assert not list(tmp_path.glob("runs/*.json"))



@pytest.mark.parametrize("address", ["localhost:99999", "127.0.0.1:0", "ray://head:70000"])
def test_a_port_out_of_range_is_an_argument_error(address, tmp_path, capsys):
    """A port past 65535 was wrapped by the resolver (a refused connection to another port), and 0 left Ray waiting
    for minutes: argparse's exit 2 naming --address instead."""
    with pytest.raises(SystemExit) as caught:
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--executor", "ray",
              "--address", address, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and "argument --address" in err and "1 to 65535" in err, err


def _answering(reply: bytes):
    """A TCP server on 127.0.0.1 that answers each connection with ``reply`` (b"": says nothing) and closes it."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                if reply:
                    conn.sendall(reply)
                else:
                    time.sleep(1.0)

    threading.Thread(target=serve, daemon=True).start()
    return server, f"127.0.0.1:{server.getsockname()[1]}"


def test_a_port_that_is_not_ray_is_refused_in_seconds_not_waited_on():
    """--address HEAD:8265 (the dashboard, whose address Ray's job docs give) or any port that answers TCP but is
    not Ray's: Ray retried it for many minutes, printing its own log lines. Ray's GCS and Ray Client are gRPC
    servers, which answer HTTP/2's preface with SETTINGS; anything else is named at once."""
    settings = bytes([0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0, 64, 0, 0])  # a gRPC server's first frame
    for reply in (b"HTTP/1.0 400 Bad Request\r\n\r\n", b""):
        server, address = _answering(reply)
        try:
            for given in (address, f"ray://{address}"):
                started = time.perf_counter()
                with pytest.raises(executors.ExecutorUnavailable, match="answers, but not as Ray") as caught:
                    executors.reachable(given, timeout=0.5)
                assert time.perf_counter() - started < 5 and "\n" not in str(caught.value)
        finally:
            server.close()
    server, address = _answering(settings)
    try:
        executors.reachable(address, timeout=2.0)  # a Ray server: no complaint
    finally:
        server.close()


def test_ray_client_without_its_extra_is_an_argument_error(tmp_path, monkeypatch, capsys):
    """ray:// needs Ray Client (grpcio, ray[client]), which plain Ray lacks: Ray's own message came after the
    grid was planned, as exit 1; now argparse names --address before anything starts."""
    pytest.importorskip("ray")
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "grpc" else find_spec(name, *a))
    with pytest.raises(SystemExit) as caught:
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--executor", "ray",
              "--address", "ray://127.0.0.1:1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and "argument --address" in err and "ray[client]" in err, err


def test_a_local_ray_is_started_whatever_ray_address_says(monkeypatch):
    """No --address starts a Ray here (docs/scale-out.md); Ray's own default joins RAY_ADDRESS's cluster (set on
    cluster nodes and by `ray job submit`) or the last `ray start` one, where num_cpus is refused."""
    ray = pytest.importorskip("ray")
    asked = {}

    def init(**kwargs):
        asked.update(kwargs)
        raise Exception("stop here")

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(executors.ExecutorUnavailable, match="could not start Ray on this machine"):
        executors.RayExecutor(2, None).start()
    assert asked["address"] == "local" and asked["num_cpus"] == 2


def test_address_auto_checks_the_ray_address_it_reads(tmp_path, monkeypatch):
    """--address auto joins RAY_ADDRESS where it is set: one that does not answer left Ray retrying for minutes."""
    ray = pytest.importorskip("ray")

    def init(**kwargs):
        raise AssertionError("ray.init was reached")

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(SystemExit, match=r"no Ray cluster answers at 127.0.0.1:1 \(RAY_ADDRESS, which --address"):
        main(["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--executor", "ray",
              "--address", "auto", "--out", str(tmp_path)])
    assert not list(tmp_path.glob("runs/*.json"))



def test_a_refused_join_names_the_token_a_cluster_may_want(monkeypatch):
    """A new Ray's cluster checks a token; joining it by HOST:PORT without RAY_AUTH_MODE=token failed after Ray's
    retries with "Failed to connect to Ray cluster", and the hint named only `ray status`."""
    ray = pytest.importorskip("ray")

    def init(**kwargs):
        raise Exception("Failed to connect to Ray cluster at 10.0.0.1:6379")

    monkeypatch.setattr(executors, "reachable", lambda *a, **k: None)
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(executors.ExecutorUnavailable) as caught:
        executors.RayExecutor(None, "10.0.0.1:6379").start()
    message = str(caught.value)
    assert "\n" not in message and "could not join Ray at 10.0.0.1:6379" in message
    assert "RAY_AUTH_MODE=token" in message and "--executor local" in message


# ---------------------------------------------------------------------------- a row's seeds in blocks
def test_blocks_split_a_rows_seeds_and_leave_other_tasks_alone():
    rows = grid(("random", "frozen"), seeds=range(5))
    other = [dict(rows[0], seed=9, plugin="x.py:M", method="m"), dict(rows[0], seed=9, assumptions="no_slips",
             method="oracle"), dict(rows[0], seed=9, runner="mod:fn")]
    parts = executors.blocks(rows + other, 2)
    assert [[t["seed"] for t in p] for p in parts] == [[0], [1, 2], [3, 4], [0], [1, 2], [3, 4], [9], [9], [9]]
    assert [p[0]["method"] for p in parts[:6]] == ["random"] * 3 + ["frozen"] * 3
    assert [[t["seed"] for t in p] for p in executors.blocks(rows, 8)] == [list(range(5))] * 2
    assert all(len(p) == 1 for p in executors.blocks(rows, 1))
    # a task that differs in more than its seed is another row
    odd = executors.blocks([rows[0], dict(rows[1], eval_episodes=8)], 8)
    assert [len(p) for p in odd] == [1, 1]


def test_a_rows_seeds_in_one_block_write_the_runs_they_write_alone(tmp_path):
    """Real runs: blocks of a row's seeds (trained and evaluated as one computation) give each seed the record it
    gets as its own task, written run by run, and say how many trained together."""
    tasks = grid(("frozen", "cotrain"), seeds=(0, 1, 2))
    alone, _ = execute(tasks, tmp_path / "alone", jobs=1, progress=False)
    together, _ = execute(tasks, tmp_path / "together", jobs=2, progress=False, seed_block=3)
    assert [without_timing(r) for r in together] == [without_timing(r) for r in alone]
    assert {r["trained_with"] for r in together} == {3} and all("trained_with" not in r for r in alone)
    assert sorted(p.name for p in (tmp_path / "together" / "runs").iterdir()) == \
        sorted(f"{run_name(t)}.json" for t in tasks)


def test_a_failed_block_is_tried_again_seed_by_seed(tmp_path, monkeypatch):
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    blocks_tried = []

    def run_seeds(tasks):
        blocks_tried.append([t["seed"] for t in tasks])
        raise RuntimeError("the block's worker failed")

    monkeypatch.setattr(methods, "run_seeds", run_seeds)
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir, {"p4g-frozen-1": "always"}))
    with pytest.raises(BenchFailure) as e:
        execute(grid(("frozen",), seeds=(0, 1, 2)), tmp_path / "out", jobs=1, progress=False, seed_block=3)
    assert blocks_tried == [[0, 1, 2]]  # once as a block, then each seed on its own (one more try each)
    assert calls(calls_dir) == ["p4g-frozen-0.0", "p4g-frozen-1.0", "p4g-frozen-2.0"]
    assert list(e.value.failed) == ["p4g-frozen-1"]
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == ["p4g-frozen-0.json", "p4g-frozen-2.json"]


def test_resume_blocks_only_the_seeds_still_to_run(tmp_path, monkeypatch):
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    tasks = grid(("frozen",), seeds=range(4))
    execute(tasks[1:3], tmp_path / "out", jobs=1, progress=False)
    blocks_run = []

    def run_seeds(block):
        blocks_run.append([t["seed"] for t in block])
        return [methods.run_one(**t) for t in block]

    monkeypatch.setattr(methods, "run_seeds", run_seeds)
    runs, _ = execute(tasks, tmp_path / "out", jobs=1, progress=False, resume=True, seed_block=4)
    assert blocks_run == [[0, 3]] and [r["seed"] for r in runs] == [0, 1, 2, 3]


def test_the_eta_scales_finished_runs_by_their_cost_before_a_row_has_finished():
    """Early in a grid only the slow rows (the ceilings, first in the queue) have finished: a row with none
    finished is expected to take their seconds per unit of cost times its own cost, not their seconds."""
    bar = executors.Progress(total=4, already=0, slots=1, enabled=False)
    bar.update(1, [], [], 0, "p4g-oracle-0", 50.0, {"game": "p4g", "method": "oracle"})
    assert bar.expected({"game": "p4g", "method": "oracle"}) == 50.0
    assert bar.expected({"game": "p4g", "method": "frozen"}) == pytest.approx(50.0 / executors.cost(
        {"method": "oracle"}))
    assert bar.expected({"game": "p4g", "method": "random"}) < bar.expected({"game": "p4g", "method": "frozen"})
    bar.update(2, [], [], 0, "tau2-frozen-0", 30.0, {"game": "tau2", "method": "frozen"})
    assert bar.expected({"game": "tau2", "method": "vs"}) == pytest.approx(30.0 * executors.cost({"method": "vs"}))
    assert bar.expected({"game": "cooperbench", "method": "frozen"}) == pytest.approx((10.0 + 30.0) / 2)
    bar.close()


def test_resume_on_a_packed_folder_keeps_its_records(tmp_path, monkeypatch):
    """A committed reference is packed (``records.pack``): resuming it unpacks and runs only what is missing."""
    from scope_envs.bench import records

    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    out = tmp_path / "out"
    first, _ = execute(grid(seeds=(0, 1)), out, jobs=1, progress=False)
    assert records.pack(out) == 4 and not (out / "runs").exists()
    for p in calls_dir.iterdir():
        p.unlink()
    again, _ = execute(grid(seeds=(0, 1, 2)), out, jobs=1, resume=True, progress=False)
    assert calls(calls_dir) == ["p4g-frozen-2.0", "p4g-random-2.0"]
    assert again[:2] == first[:2] and again[3:5] == first[2:]
    assert not (out / records.PACKED).exists() and len(dict(records.read(out))) == 6


def test_results_from_scratch_and_from_packed_records_are_the_same_bytes(tmp_path, monkeypatch):
    """A packed file holds each record with its keys sorted; results.json must not depend on whether its runs were
    trained in this process or read back (the stand-in's metrics come in unsorted order)."""
    from scope_envs.bench import records

    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    monkeypatch.setattr(methods, "run_one", fake_run_one(calls_dir))
    out = tmp_path / "out"
    fresh, _ = execute(grid(seeds=(0, 1)), out, jobs=1, progress=False)
    records.pack(out)
    read_back, _ = execute(grid(seeds=(0, 1)), out, jobs=1, resume=True, progress=False)
    assert len(calls(calls_dir)) == 4, "nothing ran again"
    assert list(read_back[1]["metrics"]) != list(fresh[1]["metrics"]), "the two orders differ: the test bites"
    assert json.dumps(summarize(read_back), indent=1) == json.dumps(summarize(fresh), indent=1)


def test_resume_redoes_a_record_made_by_other_code(tmp_path, capsys):
    """A record whose fingerprint is not this code's (a game's rule or budget changed since) is run again and
    named; the one this code made is kept. The real runs: their records carry the fingerprint."""
    tasks = grid(methods_=("random",), seeds=(0, 1))
    first, _ = execute(tasks, tmp_path / "out", jobs=1, progress=False)
    stale = tmp_path / "out" / "runs" / "p4g-random-1.json"
    data = json.loads(stale.read_text())
    data["result"]["fingerprint"]["code"] = "an older game"
    stale.write_text(json.dumps(data))
    again, _ = execute(tasks, tmp_path / "out", jobs=1, resume=True, progress=False)
    err = capsys.readouterr().err
    assert "p4g-random-1.json was made by other code (its fingerprint differs in code)" in err
    assert "p4g-random-0.json" not in err
    assert json.loads(stale.read_text())["result"]["fingerprint"] == first[1]["fingerprint"]
    assert [without_timing(r) for r in again] == [without_timing(r) for r in first]


def test_resume_redoes_a_plug_ins_runs_once_its_file_changed(tmp_path, capsys):
    """A plug-in's code is not the engine's fingerprint: its records carry its file's digest, and a resume after
    the file changed runs it again (and says so); an unchanged file keeps them."""
    mine = tmp_path / "mine.py"
    source = ("from scope_envs.train.policy import UniformPolicy\n\n"
              "def first_legal(ctx):\n"
              "    ctx.progress(0, UniformPolicy(seed=ctx.seed))\n"
              "    ctx.progress(ctx.budget, UniformPolicy(seed=ctx.seed))\n"
              "    return lambda obs, mask: mask.argmax(1){}\n")
    mine.write_text(source.format(""))
    tasks = [dict(t, method="first_legal", plugin=f"{mine}:first_legal") for t in grid(methods_=("x",), seeds=(0,))]
    first, _ = execute(tasks, tmp_path / "out", jobs=1, progress=False)
    assert len(first[0]["plugin_code"]) == 64
    again, _ = execute(tasks, tmp_path / "out", jobs=1, resume=True, progress=False)
    assert capsys.readouterr().err == "" and again[0]["wall_s"] == first[0]["wall_s"]  # kept, not rerun
    mine.write_text(source.format(" * 0"))  # now always act 0
    changed, _ = execute(tasks, tmp_path / "out", jobs=1, resume=True, progress=False)
    assert "p4g-first_legal-0.json was made by other code of method 'first_legal' (its file changed since)" in \
        capsys.readouterr().err
    assert changed[0]["plugin_code"] != first[0]["plugin_code"]  # run again, and its record says by what
