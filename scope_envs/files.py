"""Output files written whole or not at all, and output folders checked before any work starts.

Every file the package writes for a user (``results.json``, ``claims.json``, ``curves.json``, ``report.md``,
the plots, each ``runs/<name>.json``, the study's ``report.md`` and ``analysis.json``) goes through
``write_atomic``: the bytes are written to a temporary file beside the target (``.<name>.<pid>.tmp``),
flushed to disk, and renamed over the target. A process killed at any moment, or a disk that fills up,
leaves either the old file or the new one, never a torn one; on an error (a full disk, a read-only folder,
Ctrl-C, SIGTERM) the temporary file is removed before the error is raised, and one that SIGKILL left is removed
by ``remove_leftovers`` when the next job starts in that folder.

``check_output_dir`` answers "can I write here?" before a long job starts: it creates the folder (and its
parents) and writes and removes a probe file there, so a file in the way, a name that is too long, or a
read-only file system is one ``OutputError`` with the reason, not a traceback after an hour of work.
``describe`` turns an ``OSError`` into that one line.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


PACKED = "runs.jsonl.gz"  # a benchmark's per-run records in one file (``bench.records``)
BENCHMARK_OUTPUTS = ("results.json", "runs", PACKED)  # what marks a folder as a benchmark run's


def benchmark_run_refusal(folder: str | os.PathLike) -> str | None:
    """Why a trainer may not write into ``folder``: it holds a benchmark run's outputs, which its files would be
    mixed in with (None: it holds none)."""
    if any((Path(folder) / name).exists() for name in BENCHMARK_OUTPUTS):
        return f"{folder} holds a benchmark's run (results.json, runs/); a trained policy goes in a folder of its own"
    return None


class OutputError(OSError):
    """An output folder or file that cannot be written; the message says where and why, in one line."""


def describe(e: OSError, path: str | os.PathLike | None = None) -> str:
    """``OSError`` in one line: ``<path>: <reason>`` (a full disk, a read-only file system, a file in the way)."""
    where = path if path is not None else (e.filename or "")
    reason = e.strerror or str(e)
    if e.errno == errno.ENOSPC:
        reason = "no space left on device"
    elif e.errno == errno.EROFS:
        reason = "read-only file system"
    return f"{where}: {reason}" if where != "" else reason


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` whole: temporary file, fsync, rename. An ``OSError``
    names ``path`` (a failed write names no file of its own)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:  # a full disk, Ctrl-C, SIGTERM: no temporary file is left
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.filename is None:
            e.filename = str(path)
        raise


def remove_leftovers(folder: str | os.PathLike, suffixes: tuple[str, ...] = (".tmp",)) -> None:
    """Remove the temporary files of ``write_atomic`` and ``check_output_dir`` (``.<name>.<pid>.tmp``; or other
    ``suffixes``, folders too: train-llm's checkpoints) that a process killed mid-write (SIGKILL: nothing runs after
    it) left in ``folder``; a live process's are kept."""
    import shutil

    for left in Path(folder).glob(".*"):
        stem, suffix = os.path.splitext(left.name)
        pid = stem.rpartition(".")[2]
        if suffix not in suffixes or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # (PermissionError: another user's live process)
            if left.is_dir():
                shutil.rmtree(left, ignore_errors=True)
            else:
                left.unlink(missing_ok=True)
        except OSError:
            pass


def write_json(path: str | os.PathLike, value, strict: bool = True, **dump_kwargs) -> None:
    """``json.dumps(value, **dump_kwargs)`` written atomically (``indent=1`` unless given). ``strict``: a NaN or
    infinity is written ``null``, so that any JSON reader opens the file (Python's writes a bare ``NaN``, which
    JavaScript's ``JSON.parse``, Go's and serde's refuse); a run's records, which the package reads back as
    written, are not strict."""
    dump_kwargs.setdefault("indent", 1)
    write_atomic(path, json.dumps(finite(value) if strict else value, **dump_kwargs))


def finite(value: Any) -> Any:
    """``value`` with every NaN and infinity in its dicts, lists and tuples as None (JSON has none)."""
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def save_figure(fig, path: str | os.PathLike, **savefig_kwargs) -> None:
    """A matplotlib figure saved atomically (the format from ``path``'s suffix)."""
    import io

    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=savefig_kwargs.pop("format", path.suffix.lstrip(".") or "png"), **savefig_kwargs)
    write_atomic(path, buf.getvalue())


@contextlib.contextmanager
def output_set(folder: str | os.PathLike, belongs=lambda name: False):
    """Write a set of outputs that are read together (a run's ``results.json``, ``report.md``, plots) into a
    hidden folder beside them (``.outputs.<pid>.tmp``, yielded), then move them into ``folder`` one after the
    other once every one is written, and remove each file of ``folder`` that ``belongs(name)`` to the set and
    this one did not write. A run killed while it writes them leaves the earlier set as it was, not a new
    ``results.json`` beside an old ``report.md``; on an error nothing moves, and the hidden folder goes."""
    import shutil

    folder = Path(folder)
    stage = folder / f".outputs.{os.getpid()}.tmp"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        try:
            yield stage
        except OSError as e:  # a full disk names the file where it goes, not the hidden folder
            if e.filename and str(e.filename).startswith(str(stage)):
                e.filename = str(folder / Path(e.filename).relative_to(stage))
            raise
        written = {p.name for p in stage.iterdir()}
        for name in sorted(written):
            os.replace(stage / name, folder / name)
        for old in folder.iterdir():
            if old.is_file() and old.name not in written and belongs(old.name):
                old.unlink(missing_ok=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def check_output_dir(folder: str | os.PathLike) -> Path:
    """Create ``folder`` (an empty string is the current folder) and prove it writable with a probe file;
    returns it. Raises ``OutputError`` naming the folder and the reason."""
    folder = Path(folder or ".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe.{os.getpid()}.tmp"
        with open(probe, "wb") as f:
            f.write(b"ok")
        probe.unlink()
    except OSError as e:
        if isinstance(e, FileExistsError) or (folder.exists() and not folder.is_dir()):
            raise OutputError(f"{folder}: exists and is not a folder") from None
        if e.errno == errno.ENOTDIR:
            raise OutputError(f"{folder}: a part of this path is a file, not a folder") from None
        raise OutputError(describe(e, folder)) from None
    return folder


def _float(x: float):
    return x if math.isfinite(x) else None  # JSON has no nan/inf


def jsonable(value: Any) -> Any:
    """A plain JSON value for ``value``: numpy scalars to Python, arrays and tuples to lists, NaN and infinities
    to null (JSON has none), any other object its ``str``."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _float(float(value))
    if isinstance(value, (str, np.str_)):
        return str(value)
    if value is None:
        return None
    return str(value)  # a persona or other object: its readable form
