"""Persuasion for Good against its real data: ``validate`` and the ``fit`` command.

Both run the built-in players in the game, so they sit above the players
(docs/architecture.md §3); the game's own modules (``scope_envs.games.p4g.fit``,
``calibrate``, ``donations``) take everything they need as arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from pathlib import Path

import numpy as np

from scope_envs.arguments import MAX_SIMULATED_EPISODES, count
from scope_envs.agents.p4g import EmpiricalPersuader, HumanProxyPersuadee, ReferencePersuadee
from scope_envs.games.p4g import fit as fit_module
from scope_envs.games.p4g.calibrate import calibrate
from scope_envs.games.p4g.fit import DEFAULT_OUT, FILES, summary, check_data, fit
from scope_envs.games.p4g.people import outside
from scope_envs.games.p4g.personas import PART_FILES
from scope_envs.games.p4g.simulate import play, statistics
from scope_envs.games.p4g.donations import compare, real_statistics

PACKAGE_DIR = Path(fit_module.__file__).parent  # the packaged parameter files (``PART_FILES``)


# what a truncated or malformed csv file raises somewhere in the fit (an empty column, a short row, a bad number)
DATA_ERRORS = (IndexError, KeyError, ValueError, ZeroDivisionError, TypeError, csv.Error, UnicodeDecodeError,
               np.linalg.LinAlgError)


class DataFilesError(ValueError):
    """The P4G csv files cannot be used: truncated, malformed, not the P4G format (``data_errors``)."""


@contextlib.contextmanager
def data_errors(data_dir):
    """Turn an error from reading or fitting the real data into one ``ValueError`` naming the folder (the
    command line shows it as ``argument --data: ...``): truncated or malformed csv files, not a bug."""
    try:
        yield
    except FileNotFoundError:
        raise
    except DATA_ERRORS as e:
        reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise DataFilesError(f"the P4G csv files in {data_dir} cannot be used ({type(e).__name__}: {reason}); "
                         "are they complete (not truncated) and in the P4G format?") from None


def validate(data_dir: str | os.PathLike | None = None, episodes: int = 2000, seed: int = 0,
             progress: bool | None = None) -> dict:
    """The held-out human proxies against the empirical persuader, compared with the shipped real statistics or
    with those refitted from ``data_dir``. ``progress``: a bar over the episodes on stderr (None: on a terminal
    only)."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    with data_errors(data_dir):
        real = real_statistics(data_dir)
    sim = statistics(play(HumanProxyPersuadee(), EmpiricalPersuader("heldout"), "heldout", episodes, seed,
                          progress=progress))
    return compare(real, {**sim, "population": "heldout human proxies", "persuader": "empirical"})


def _data_dir(value: str) -> Path:
    """``--data``: a folder holding the three csv files."""
    try:
        return check_data(Path(value))
    except FileNotFoundError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m scope_envs.validate.p4g", description=fit_module.__doc__.splitlines()[0])
    ap.add_argument("--data", type=_data_dir, default="../shared/data/p4g",
                    help=f"folder with the P4G csv files {', '.join(FILES)} (default: %(default)s)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=Path(DEFAULT_OUT),
                       help="file to write the parameters to (default: %(default)s in the current folder)")
    where.add_argument("--overwrite-packaged", action="store_true",
                       help="with --part train or heldout: write the packaged parameters that part of the game loads "
                            f"({', '.join(f'{p}: {f}' for p, f in PART_FILES.items())}, in {PACKAGE_DIR}) instead of "
                            "--out")
    ap.add_argument("--part", choices=("everyone", "train", "heldout"), default="everyone",
                    help="fit on this part of the people split only (scope_envs.games.p4g.people; the other part's "
                         "people dropped, survey rows and all), calibrated to its own real numbers (default: "
                         "%(default)s, a fit no part of the game reads: for comparison)")
    ap.add_argument("--no-calibrate", action="store_true", help="skip simulating the willingness offsets")
    ap.add_argument("--episodes", type=count(MAX_SIMULATED_EPISODES), default=1000,
                    help="episodes per calibration measurement (default: %(default)s; at most "
                         f"{MAX_SIMULATED_EPISODES:_})")
    return ap


def output_path(ap: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """Where to write; refuses a packaged file unless --overwrite-packaged says so, for the part that reads it."""
    if args.overwrite_packaged:
        if args.part == "everyone":
            ap.error("argument --overwrite-packaged: no part of the game reads a fit on everyone; give --part train "
                     "or --part heldout (each part reads its own file), or write the fit with --out")
        return PACKAGE_DIR / PART_FILES[args.part]
    out = args.out
    if any(out.resolve() == (PACKAGE_DIR / name).resolve() for name in PART_FILES.values()):
        ap.error(f"argument --out: {out} is a packaged parameter file; pass --part and --overwrite-packaged (without "
                 "--out) to replace it")
    if out.is_dir():
        ap.error(f"argument --out: {out} is a folder; give a file path")
    if not out.parent.is_dir():
        ap.error(f"argument --out: {out.parent} " + ("is a file, not a folder" if out.parent.exists() else
                                                     "does not exist: make the folder first"))
    return out


def fit_command(argv=None) -> None:
    """``python -m scope_envs.validate.p4g``: refit the parameters from the real data, calibrate, write (the
    command lives here, with the tools: it plays the players; ``games.p4g.fit`` holds the fitting itself)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    out = output_path(ap, args)
    previous = {}
    if out.exists():  # keep keys that other code adds to the file (the shipped one: calibration, ...)
        try:
            previous = json.loads(out.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            previous = None
        if not isinstance(previous, dict):
            ap.error(f"argument --out: {out} exists and is not a JSON parameter file; remove it or choose another path")
    try:
        with data_errors(args.data):
            fitted = fit(args.data, holdout=outside(args.data, args.part))
    except ValueError as e:
        ap.error(f"argument --data: {e}")
    params = {**previous, **fitted}
    if not args.no_calibrate:
        params["calibration"] = calibrate(params, human_proxy=HumanProxyPersuadee(), reference=ReferencePersuadee(),
                                          persuader=EmpiricalPersuader(), episodes=args.episodes, progress=True)
    from scope_envs.files import describe, write_atomic

    try:
        write_atomic(out, json.dumps(params, indent=1, sort_keys=True) + "\n")
    except OSError as e:
        sys.exit(f"{ap.prog}: error: cannot write {out}: {describe(e)}")
    print(summary(params), file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    fit_command()
