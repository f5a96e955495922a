"""Carry the committed references over a refactor that changed no number: their records get this code's fingerprint.

    python benchmarks/same_numbers.py run --seeds 3 --steps 5000 --out before.json   # on the old tree
    python benchmarks/same_numbers.py run --seeds 3 --steps 5000 --out after.json    # on this tree
    python benchmarks/restamp.py before.json after.json                              # --dry-run to look first

A run record carries the fingerprint of the code that made it (``scope_envs.bench.reference``): a SHA-256 of
the source of its game and of the engine, so any edit there (a comment, a moved function) makes
``--against`` refuse the reference. When the same grid played on both trees gives identical records (every
(game, method, seed) of ``same_numbers.py``, training included, timings aside), the edit changed none of the
episodes, and rebuilding the references would only spend hours to write the same numbers. This script then
replaces, in every run record under ``benchmarks/results/`` (a ``runs/`` folder or a packed file) whose fingerprint is the old tree's, the ``code``
and ``engine`` hashes with the new tree's. It refuses when any record differs, when anything else in the
fingerprint moved (the version, the protocol's constants, the data played), or when the two files were played
at other sizes. Each record is rewritten atomically; what was changed is printed per folder.

``--rebuilt GAME-ROW ...``: the rows an edit changed on purpose (a game's new frozen simulator, say), which are
rebuilt rather than carried over: their records are left out of the comparison and keep their old fingerprint
(a plug-in row on a changed env, ``p4g-frozen-sb3``, must be named too: ``same_numbers.py`` plays the built-in
rows only). The script prints how many it left, per folder, for the rebuild to replace.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from same_numbers import records_of  # (the scripts' folder is on the path, as when one is run)
from scope_envs.arguments import existing_dir
from scope_envs.bench import records
from scope_envs.files import write_json

RESULTS = Path(__file__).resolve().parent / "results"
HASHES = ("code", "engine")  # what a refactor may move; anything else in the fingerprint means a rebuild


def fingerprints(path: str) -> tuple[dict, dict]:
    """The records of a ``same_numbers.py run`` file without their fingerprints, and each game's fingerprint."""
    records = json.loads(Path(path).read_text())["records"]
    by_game: dict[str, dict] = {}
    for name, record in records.items():
        fp = record.pop("fingerprint", None)
        if fp is None:
            sys.exit(f"restamp: {path}: {name} has no fingerprint")
        if by_game.setdefault(record["game"], fp) != fp:
            sys.exit(f"restamp: {path}: {record['game']}'s records carry two fingerprints")
    return records, by_game


def check(before: str, after: str, rebuilt: frozenset = frozenset()) -> dict[str, tuple[dict, dict]]:
    """Each game's (old, new) fingerprint, once the two files prove the numbers unchanged outside the ``rebuilt``
    rows (``game-method``)."""
    old_records, old = fingerprints(before)
    new_records, new = fingerprints(after)
    for runs in (old_records, new_records):
        for name in [k for k, r in runs.items() if f"{r['game']}-{r['method']}" in rebuilt]:
            del runs[name]
    if set(old_records) != set(new_records):
        sys.exit(f"restamp: the files hold different runs ({len(old_records)} and {len(new_records)})")
    differ = sorted(k for k in old_records if old_records[k] != new_records[k])
    if differ:
        sys.exit(f"restamp: {len(differ)} of {len(old_records)} records differ ({', '.join(differ[:5])}...): "
                 "the numbers moved, so the references must be rebuilt (benchmarks/README.md)")
    pairs = {}
    for game in sorted(old):
        moved = sorted(k for k in set(old[game]) | set(new[game])
                       if k not in HASHES and old[game].get(k) != new[game].get(k))
        if moved:
            sys.exit(f"restamp: {game}'s fingerprint differs in {moved}, not only in its code: rebuild instead")
        pairs[game] = (old[game], new[game])
    return pairs


def restamp(pairs: dict[str, tuple[dict, dict]], root: Path, dry_run: bool,
            rebuilt: frozenset = frozenset()) -> tuple[dict[str, int], dict[str, int]]:
    """Rewrite every record under ``root`` carrying an old fingerprint, in the form it is kept in (``runs/`` or
    the packed file), but those of the ``rebuilt`` rows; (restamped, left for the rebuild) counts per folder."""
    counts: dict[str, int] = {}
    left: dict[str, int] = {}
    found = {p.parent for p in root.rglob("runs") if p.is_dir()} | {p.parent for p in root.rglob(records.PACKED)}
    for folder in sorted(found):
        kept = list(records.read(folder))
        old = [name for name, record in kept if record["task"].get("game") in pairs
               and record["result"].get("fingerprint") == pairs[record["task"]["game"]][0]]
        by_name = dict(kept)
        moved = [n for n in old if f"{by_name[n]['task']['game']}-{by_name[n]['task']['method']}" not in rebuilt]
        if len(moved) < len(old):
            left[str(folder.relative_to(root))] = len(old) - len(moved)
        if not moved:
            continue
        counts[str(folder.relative_to(root))] = len(moved)
        if dry_run:
            continue
        for name, record in kept:
            if name in moved:
                record["result"]["fingerprint"] = pairs[record["task"]["game"]][1]
                if (folder / "runs").is_dir():
                    write_json(folder / "runs" / f"{name}.json", record, strict=False)  # as the benchmark writes its records
        if not (folder / "runs").is_dir():
            records.write_packed(folder, kept)
    return counts, left


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="same_numbers.py run's file from the old tree")
    ap.add_argument("after", help="same_numbers.py run's file from this tree")
    ap.add_argument("--results", type=lambda text: Path(existing_dir(text)), default=RESULTS,
                    help="the folder of references (default: %(default)s)")
    ap.add_argument("--dry-run", action="store_true", help="say what would be rewritten, rewrite nothing")
    ap.add_argument("--rebuilt", nargs="+", default=[], metavar="GAME-ROW",
                    help="rows changed on purpose and rebuilt, not carried over (e.g. p4g-frozen p4g-frozen-sb3)")
    args = ap.parse_args(argv)
    for name in ("before", "after"):
        path = getattr(args, name)
        if not os.path.isfile(path):
            ap.error(f"argument {name}: no such file: {path}")
        try:
            runs = records_of(path)
        except ValueError as e:
            ap.error(f"argument {name}: {path}: {e}")
        unstamped = next((k for k, r in runs.items() if not isinstance(r.get("fingerprint"), dict)), None)
        if unstamped is not None:
            ap.error(f"argument {name}: {path}: the record {unstamped} has no fingerprint")
    rebuilt = frozenset(args.rebuilt)
    counts, left = restamp(check(args.before, args.after, rebuilt), args.results, args.dry_run, rebuilt)
    verb = "would restamp" if args.dry_run else "restamped"
    for folder, n in counts.items():
        print(f"{verb} {n} records in {folder}")
    for folder, n in left.items():
        print(f"left {n} records of the rebuilt rows in {folder}: rebuild them")
    if not counts:
        print("no record carries the old fingerprint")


if __name__ == "__main__":
    main()
