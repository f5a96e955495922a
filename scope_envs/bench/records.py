"""A benchmark folder's run records, as a run writes them or packed into one file for committing.

A run writes one file per (game, method, seed), ``OUT/runs/<name>.json``, so that a killed run resumes where it
stopped (``--resume``). A reference that is kept (``benchmarks/results/default`` and the others that
``--against`` names) holds the same records packed: ``OUT/runs.jsonl.gz``, one ``{"name", "task", "result"}``
object per line, sorted by name, gzip with no timestamp, so that packing the same records twice gives the same
bytes and a repository stores a few megabytes instead of hundreds of files. Everything that reads records
(``--against``, ``score``, the restamp script) reads both through ``read``; ``pack`` turns the first into the
second, and a resumed run (``--resume``) on a packed folder first ``unpack``s it, so that it adds to its records.
Packing also removes the folder's ``curves.json``, the same records again uncompressed (a reference's is about
9 MB); a resumed run writes it back from the records:

    python -m scope_envs.bench.records benchmarks/results/default     # runs/ -> runs.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from scope_envs.files import PACKED, write_atomic, write_json

CURVES = "curves.json"  # the run's records with its settings, as a run writes them: what packing replaces


class RecordError(ValueError):
    """A file that should hold run records does not: which file, and why."""


def has_records(folder: Path) -> bool:
    """Whether ``folder`` holds run records in either form."""
    return (folder / "runs").is_dir() or (folder / PACKED).is_file()


def read(folder: Path) -> Iterator[tuple[str, dict]]:
    """``(name, {task, result})`` for every record of ``folder``, by name: its ``runs/`` folder where it has one,
    else its packed file."""
    yield from read_runs(folder) if (folder / "runs").is_dir() else read_packed(folder)


def read_runs(folder: Path) -> Iterator[tuple[str, dict]]:
    """``(name, {task, result})`` for every file of ``folder/runs``, by name."""
    for file in sorted((folder / "runs").glob("*.json")):
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as e:
            raise RecordError(f"{file}: not a run record ({type(e).__name__}: {e})") from None
        yield file.stem, _checked(data, file)


def read_packed(folder: Path) -> Iterator[tuple[str, dict]]:
    """``(name, {task, result})`` for every line of ``folder/runs.jsonl.gz``, by name."""
    path = folder / PACKED
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: not a packed file of run records ({type(e).__name__}: {e})") from None
    for i, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except ValueError as e:
            raise RecordError(f"{path}: line {i} is not a run record ({e})") from None
        name = data.pop("name", None) if isinstance(data, dict) else None
        if not isinstance(name, str):
            raise RecordError(f"{path}: line {i} has no name")
        yield name, _checked(data, f"{path}: line {i}")


def _checked(data, where) -> dict:
    if not isinstance(data, dict) or not {"task", "result"} <= set(data):
        raise RecordError(f"{where}: not a {{task, result}} run record")
    return data


def packed_bytes(records: list[tuple[str, dict]]) -> bytes:
    """The packed file of ``records`` (name, record): one compact JSON line each, by name, gzip with mtime 0."""
    text = "".join(json.dumps({"name": name, **record}, sort_keys=True, separators=(",", ":")) + "\n"
                   for name, record in sorted(records, key=lambda r: r[0]))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def write_packed(folder: Path, records: list[tuple[str, dict]]) -> None:
    write_atomic(folder / PACKED, packed_bytes(records))


def pack(folder: Path) -> int:
    """Pack ``folder/runs`` into ``folder/runs.jsonl.gz`` and remove ``runs/`` and ``curves.json`` (the same
    records); the number of records. The packed file is written (atomically) and read back before anything is
    removed."""
    records = list(read(folder)) if (folder / "runs").is_dir() else None
    if records is None:
        raise RecordError(f"{folder} has no runs/ folder to pack")
    write_packed(folder, records)
    shutil.move(str(folder / "runs"), str(folder / ".runs.packed"))  # out of read's way, to compare with
    try:
        again = list(read(folder))
        if [(n, r) for n, r in sorted(records, key=lambda r: r[0])] != again:
            raise RecordError(f"{folder / PACKED}: reads back differently from runs/")
    except Exception:
        shutil.move(str(folder / ".runs.packed"), str(folder / "runs"))
        (folder / PACKED).unlink(missing_ok=True)
        raise
    shutil.rmtree(folder / ".runs.packed")
    (folder / CURVES).unlink(missing_ok=True)
    return len(records)


def unpack(folder: Path) -> int:
    """Write ``folder``'s packed records into ``folder/runs`` (each whose file is not there yet, atomically) and
    remove the packed file; the number written. A resumed run then finds them where it writes its own."""
    if not (folder / PACKED).is_file():
        return 0
    (folder / "runs").mkdir(exist_ok=True)
    written = 0
    for name, record in read_packed(folder):
        path = folder / "runs" / f"{name}.json"
        if not path.exists():
            write_json(path, record, strict=False)
            written += 1
    (folder / PACKED).unlink()
    return written


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="benchmark output folders holding runs/")
    args = ap.parse_args(argv)
    for folder in args.folders:
        if not (folder / "runs").is_dir():
            ap.error(f"argument folders: {folder} has no runs/ folder")
    for folder in args.folders:
        try:
            n = pack(folder)
        except (RecordError, OSError) as e:
            sys.exit(f"pack: {e}")
        print(f"packed {n} records into {folder / PACKED}")


if __name__ == "__main__":
    main()
