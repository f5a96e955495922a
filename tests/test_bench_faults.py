"""``scope-envs bench`` under faults: workers end when their parent is killed, an output
folder that cannot be written is said before any run, a full disk is one line and tears no file, and
``--resume`` redoes (and names) every run file that is not a valid run record.

The disk tests mount a tiny tmpfs (root in a container may; otherwise they skip with the reason)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scope_envs.bench import executors, methods
from scope_envs.bench.executors import execute
from scope_envs.cli import main

ROOT = Path(__file__).resolve().parents[1]
TINY = ["bench", "--games", "p4g", "--methods", "random", "--seeds", "1", "--steps", "8", "--eval-episodes", "4",
        "--jobs", "1"]


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "64k", read_only: bool = False):
    """A tmpfs of ``size`` mounted at ``path`` (skips the test when mounting is not allowed here)."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root in a container that allows it): {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def no_runs(*a, **k):
    raise AssertionError("a run started although the output folder cannot be written")


def one_line_error(capsys, exc) -> str:
    err = capsys.readouterr().err.strip()
    message = str(exc.value.code) if not isinstance(exc.value.code, int) else err.splitlines()[-1]
    assert "Traceback" not in err
    return message


# ---------------------------------------------------------------------------- 8. orphaned workers
def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_when_the_bench_is_killed(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "bench", "--games", "p4g", "--methods", "frozen",
                             "--seeds", "2", "--steps", "200000", "--eval-episodes", "4", "--jobs", "2",
                             "--out", str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(children(proc.pid)) < 2:
            time.sleep(0.1)
        workers = children(proc.pid)
        assert len(workers) >= 2, "the bench did not start its two workers"
        time.sleep(1.0)  # the workers are training
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.time() + 10
        while time.time() < deadline and any(map(alive, workers)):
            time.sleep(0.1)
        left = [w for w in workers if alive(w)]
    finally:
        for w in children(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(w, signal.SIGKILL)
    for w in left:
        with contextlib.suppress(OSError):
            os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent"


def _ctrl_c_as_in_a_terminal():
    """A job a non-interactive shell started in the background inherits SIGINT ignored (POSIX), and so would the
    bench under such a test run: the bench is given Ctrl-C's default disposition, as a terminal's process has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_is_one_line_that_says_how_to_resume(tmp_path, signum):
    """Ctrl-C (to the whole process group, as a terminal sends it) or SIGTERM mid-grid: exit 128 + the signal,
    one line naming where the finished runs are and --resume, no traceback from the bench or its workers."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "bench", "--games", "p4g", "--methods", "frozen",
                             "--seeds", "2", "--steps", "5000000", "--eval-episodes", "4", "--jobs", "2",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(children(proc.pid)) < 2:
            time.sleep(0.1)
        assert len(children(proc.pid)) >= 2, "the bench did not start its two workers"
        time.sleep(1.0)  # the workers are training
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signum, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    said = "interrupted" if signum == signal.SIGINT else "stopped (SIGTERM)"
    assert f"scope-envs bench: {said}; the runs that finished are kept in {out / 'runs'}" in err
    assert "--resume" in err


def test_a_worker_ends_at_once_when_its_parent_is_gone():
    """``end_with_parent`` in a process whose recorded parent is not its parent any more exits at once."""
    code = ("from scope_envs.bench.executors import end_with_parent\n"
            "end_with_parent(1)\nimport time; time.sleep(3)\nprint('still here')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "still here" not in done.stdout


# ---------------------------------------------------------------------------- 9. unwritable --out
def long_name(tmp_path):
    return str(tmp_path / ("x" * 300))


@pytest.mark.parametrize("where", ["a file", "under a file", "a name too long", "read-only"])
def test_an_unwritable_out_is_an_argument_error_before_any_run(tmp_path, monkeypatch, capsys, where):
    monkeypatch.setattr(methods, "run_one", no_runs)
    (tmp_path / "file").write_text("x")
    out = {"a file": str(tmp_path / "file"), "under a file": str(tmp_path / "file" / "out"),
           "a name too long": long_name(tmp_path), "read-only": str(tmp_path / "ro" / "out")}[where]
    with contextlib.ExitStack() as stack:
        if where == "read-only":
            stack.enter_context(tmpfs(tmp_path / "ro", read_only=True))
        with pytest.raises(SystemExit) as e:
            main([*TINY, "--out", out])
        err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --out" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()[-1]) < 300


def test_resume_on_a_packed_file_that_is_not_one_is_one_line_and_runs_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs.jsonl.gz").write_text("not gzip")
    monkeypatch.setattr(methods, "run_one", no_runs)
    with pytest.raises(SystemExit) as e:
        main([*TINY, "--resume", "--out", str(out)])
    message = one_line_error(capsys, e)
    assert "runs.jsonl.gz: not a packed file of run records" in message and "--resume cannot keep" in message, message
    assert (out / "runs.jsonl.gz").read_text() == "not gzip"  # left as it was, for the user to look at


def test_resume_into_a_read_only_runs_folder_stops_before_any_run(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    main([*TINY, "--out", str(out)])
    capsys.readouterr()
    saved = {p.name: p.read_bytes() for p in (out / "runs").iterdir()}
    (out / "runs").rename(out / "runs.saved")
    with tmpfs(out / "runs"):
        for name, data in saved.items():
            (out / "runs" / name).write_bytes(data)
        subprocess.run(["mount", "-o", "remount,ro", str(out / "runs")], check=True)
        monkeypatch.setattr(methods, "run_one", no_runs)
        with pytest.raises(SystemExit) as e:
            main([*TINY, "--seeds", "2", "--resume", "--out", str(out)])
    message = one_line_error(capsys, e)
    assert e.value.code != 0 and "read-only file system" in message and "runs" in message, message


def test_out_empty_is_an_argument_error(tmp_path, monkeypatch, capsys):
    """``--out ""`` (an unset ``$OUT``) is refused naming --out, not the working folder filled silently."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main([*TINY, "--out", ""])
    assert e.value.code == 2 and "argument --out" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------- 10. a full disk
def parses_or_absent(folder: Path) -> list[str]:
    seen = []
    for path in folder.rglob("*"):
        assert not path.name.endswith(".tmp"), f"temporary file left: {path}"
        if path.suffix == ".json":
            json.loads(path.read_text())  # whole, never torn
            seen.append(path.name)
    return seen


@pytest.mark.parametrize("free_kib", [8, 24, 40, 56])
def test_a_full_disk_is_one_line_and_tears_no_file(tmp_path, capsys, free_kib):
    with tmpfs(tmp_path / "disk", size="96k") as disk:
        filler = disk / "filler"
        with open(filler, "wb") as f:  # leave about free_kib of the 96 KiB
            with contextlib.suppress(OSError):
                f.write(b"\0" * ((96 - free_kib) * 1024))
        with pytest.raises(SystemExit) as e:
            main([*TINY, "--out", str(disk / "out")])
        message = one_line_error(capsys, e)
        assert e.value.code != 0 and "no space left on device" in message, message
        parses_or_absent(disk / "out")


def test_a_full_disk_names_the_file_and_resume_completes_once_there_is_room(tmp_path, capsys):
    """The one line names the file it could not write (a failed write names none of its own: the line said only
    "no space left on device"); with room again, --resume completes from the runs kept, leaving no temporary file."""
    with tmpfs(tmp_path / "disk", size="96k") as disk:
        filler = disk / "filler"
        with open(filler, "wb") as f:  # leave about 40 KiB: the run is written, an output after it is not
            with contextlib.suppress(OSError):
                f.write(b"\0" * (56 * 1024))
        with pytest.raises(SystemExit) as e:
            main([*TINY, "--out", str(disk / "out")])
        message = one_line_error(capsys, e)
        assert f"cannot write the outputs: {disk / 'out'}{os.sep}" in message, message
        assert message.split("cannot write the outputs: ")[1].split(": ")[1].startswith("no space left on device")
        subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)  # room again
        main([*TINY, "--resume", "--out", str(disk / "out")])
        assert "results.json" in parses_or_absent(disk / "out") and (disk / "out" / "report.md").is_file()


def test_the_next_run_removes_the_temporary_files_a_killed_bench_left_beside_its_outputs(tmp_path, capsys):
    """SIGKILL while results.json, report.md or a plot is written (or the folder's probe) leaves its temporary
    file, which nothing removed: only runs/ was swept. The next run into the folder removes those of processes that
    are gone; a live process's stays."""
    out = tmp_path / "out"
    main([*TINY, "--out", str(out)])
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that no process has now
    left = [out / f".{name}.{gone.pid}.tmp" for name in ("results.json", "write-probe", "p4g_learning_curves.png")]
    for path in left:
        path.write_text("half")
    live = out / f".report.md.{os.getppid()}.tmp"
    live.write_text("another job's, still writing")
    main([*TINY, "--resume", "--out", str(out)])
    assert not [p for p in left if p.exists()] and live.exists()


def test_a_run_stopped_while_it_writes_its_outputs_leaves_the_earlier_set_whole(tmp_path, monkeypatch):
    """The outputs are one set, read together: a run stopped after results.json and before the plots had left a new
    results.json beside the earlier run's report.md. Now they are written aside and moved in once all are."""
    from scope_envs.bench import runner

    out = tmp_path / "out"
    main([*TINY, "--out", str(out)])
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert {"results.json", "report.md", "curves.json", "p4g_learning_curves.png"} <= set(before)

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "plot", stopped)
    with pytest.raises((KeyboardInterrupt, SystemExit)):
        main([*TINY, "--eval-episodes", "6", "--out", str(out)])  # other runs: every output would differ
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # the set written aside is gone


def test_a_run_removes_the_outputs_an_earlier_run_wrote_and_it_does_not(tmp_path):
    """Another game's plots (and entrants.json, the sensitivity table) from an earlier run into the same --out were
    left beside this run's, as if they were its own; a file of the user's stays."""
    out = tmp_path / "out"
    main([*TINY, "--games", "p4g", "cooperbench", "--out", str(out)])
    assert (out / "cooperbench_learning_curves.png").is_file()
    (out / "notes.txt").write_text("mine")
    main([*TINY, "--out", str(out)])
    assert not list(out.glob("cooperbench_*")) and (out / "p4g_learning_curves.png").is_file()
    assert (out / "notes.txt").read_text() == "mine"


def test_a_packed_folder_resumed_writes_its_curves_back(tmp_path):
    """Packing drops curves.json (the records' second copy); --resume, running nothing, writes the same runs back."""
    from scope_envs.bench import records

    out = tmp_path / "out"
    main([*TINY, "--seeds", "2", "--out", str(out)])
    runs = json.loads((out / "curves.json").read_text())["runs"]
    records.pack(out)
    assert not (out / "curves.json").exists()
    main([*TINY, "--seeds", "2", "--resume", "--out", str(out)])
    assert json.loads((out / "curves.json").read_text())["runs"] == runs


def test_resume_says_what_it_keeps_and_what_it_replaces(tmp_path, capsys):
    """--resume said nothing of what it kept: with other settings (a --steps forgotten) it ran every run again and
    replaced every file, without a word."""
    out = tmp_path / "out"
    main([*TINY, "--seeds", "2", "--out", str(out)])
    capsys.readouterr()
    main([*TINY, "--seeds", "3", "--resume", "--out", str(out)])
    assert f"resume: keeping 2 of the 3 runs in {out / 'runs'}; running 1\n" in capsys.readouterr().err
    main([*TINY, "--seeds", "3", "--steps", "9", "--resume", "--out", str(out)])
    assert (f"resume: keeping 0 of the 3 runs in {out / 'runs'}; running 3, 3 of them over a file of other settings "
            "or code, which it replaces\n") in capsys.readouterr().err


# ---------------------------------------------------------------------------- 11. --resume validation
TASK = dict(game="p4g", method="random", seed=0)
GOOD = {"game": "p4g", "method": "random", "seed": 0, "wall_s": 0.1,
        "metrics": {"train_success": 0.5, "heldout_success": 0.25, "sim_entropy": math.nan}}
BAD = {
    "empty": {}, "null": None, "a list": [1], "no result": {"task": TASK},
    "result {}": {"task": TASK, "result": {}}, "result null": {"task": TASK, "result": None},
    "no metrics": {"task": TASK, "result": {k: v for k, v in GOOD.items() if k != "metrics"}},
    "metrics null": {"task": TASK, "result": {**GOOD, "metrics": None}},
    "NaN success": {"task": TASK, "result": {**GOOD, "metrics": {**GOOD["metrics"], "heldout_success": math.nan}}},
    "NaN gap": {"task": TASK, "result": {**GOOD, "metrics": {**GOOD["metrics"], "gap": math.nan}}},
    "infinite success": {"task": TASK, "result": {**GOOD, "metrics": {**GOOD["metrics"], "train_success": math.inf}}},
    "text metric": {"task": TASK, "result": {**GOOD, "metrics": {**GOOD["metrics"], "train_success": "0.5"}}},
    "another seed": {"task": TASK, "result": {**GOOD, "seed": 3}},
}


def fake(calls: list):
    def run_one(game, method, seed, **kwargs):
        calls.append((game, method, seed))
        return {**GOOD, "seed": seed}

    return run_one


@pytest.mark.parametrize("case", list(BAD))
def test_resume_redoes_a_run_file_that_is_not_a_run_record_and_says_so(tmp_path, monkeypatch, capsys, case):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "p4g-random-0.json").write_text(json.dumps(BAD[case]))
    calls: list = []
    monkeypatch.setattr(methods, "run_one", fake(calls))
    done, _ = execute([TASK], tmp_path, jobs=1, resume=True, progress=False)
    assert calls == [("p4g", "random", 0)] and done[0]["metrics"]["heldout_success"] == 0.25
    err = capsys.readouterr().err
    assert "p4g-random-0.json is not a valid run record" in err and "running it again" in err, err
    from scope_envs.bench.executors import record_problem

    assert record_problem(json.loads((runs / "p4g-random-0.json").read_text()), TASK) is None


def test_resume_keeps_a_valid_record_with_a_nan_entropy(tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").mkdir()
    executors.write_atomic(tmp_path / "runs" / "p4g-random-0.json", {"task": TASK, "result": GOOD})
    calls: list = []
    monkeypatch.setattr(methods, "run_one", fake(calls))
    done, _ = execute([TASK], tmp_path, jobs=1, resume=True, progress=False)
    assert calls == [] and math.isnan(done[0]["metrics"]["sim_entropy"]) and capsys.readouterr().err == ""


def test_a_folder_named_like_a_run_file_is_said_before_any_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "out" / "runs" / "p4g-random-0.json").mkdir(parents=True)
    monkeypatch.setattr(methods, "run_one", no_runs)
    with pytest.raises(SystemExit) as e:
        main([*TINY, "--resume", "--out", str(tmp_path / "out")])
    message = one_line_error(capsys, e)
    assert "p4g-random-0.json: not a file" in message and "remove it" in message
