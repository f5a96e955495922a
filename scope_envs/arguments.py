"""argparse types for the command line: each checks one kind of value and says what it wanted.

argparse adds the argument's name and exits 2, so a mistyped value never reaches
a traceback or starts anything slow.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import scope_envs


def _number(cast, low: float, strict: bool, wanted: str):
    """An argparse type: a finite ``cast`` number above ``low`` (or at least it, unless ``strict``)."""

    def check(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if not (value > low if strict else value >= low) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {value}")
        return value

    check.__name__ = wanted.replace(" ", "_")
    return check


positive_int = _number(int, 0, True, "a positive integer")
nonnegative_int = _number(int, 0, False, "an integer >= 0")
positive_float = _number(float, 0.0, True, "a positive finite number")
nonnegative_float = _number(float, 0.0, False, "a finite number >= 0")


def _is_dir(text: str) -> bool:
    """``Path(text).is_dir()``, False for a name the system cannot even look up (too long, a NUL byte)."""
    try:
        return Path(text).is_dir()
    except (OSError, ValueError):
        return False


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def existing_dir(text: str) -> str:
    if not _is_dir(text):
        raise argparse.ArgumentTypeError(f"no such directory: {_shown(text)}")
    return text


def json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg} at character {e.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"max_turns\": 4}}', got {text!r}")
    return value


def game_name(text: str) -> str:
    known = sorted({spec.game for spec in scope_envs.registry.values()})
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown game {text!r}; known games: {', '.join(known)}")
    return text


def env_id(text: str) -> str:
    if text != "llm-toy" and text not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {text!r}; `scope-envs list` prints them "
                                         "(or 'llm-toy')")
    return text


def model_source(text: str) -> str:
    """A saved model's directory, or ``tiny`` (a random tiny model built here): nothing is ever downloaded."""
    if text != "tiny" and not _is_dir(text):
        raise argparse.ArgumentTypeError(f"no model directory {_shown(text)} (scope-envs never downloads models; "
                                         "pass a directory written by save_pretrained, or 'tiny')")
    return text


def ray_address(text: str) -> str:
    """A Ray cluster to join: ``auto``, ``ray://HOST:PORT`` (Ray Client) or ``HOST:PORT`` (a head node's GCS)."""
    import re

    if text == "auto" or re.fullmatch(r"(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}", text):
        return text
    raise argparse.ArgumentTypeError(f"expected auto, ray://HOST:PORT or HOST:PORT, got {text!r}")


def count(high: int, low: int = 1):
    """An argparse type: an integer from ``low`` to ``high``. Every count on the command line has such a
    maximum, so that a mistyped 30-digit value is an error at once, never a run that goes on until killed."""
    wanted = f"an integer from {low} to {high:,}".replace(",", "_")

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text[:40]!r}") from None
        if not low <= value <= high:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:12]}... ({len(str(value))} digits)"
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {shown}")
        return value

    check.__name__ = wanted.replace(" ", "_")
    check.maximum = high
    return check


SEED_MAX = 2**32 - 1  # numpy's legacy seeds and most libraries' accept this range
seed = count(SEED_MAX, low=0)


def output_dir(text: str) -> str:
    """An output folder that can be created and written: not a file, not under a file, no name longer than the
    file system allows, not on a read-only file system. Nothing is created here (``scope_envs.files
    .check_output_dir`` creates it when the work starts); an empty string is the current folder."""
    import os

    if "\0" in text:
        raise argparse.ArgumentTypeError("a folder name cannot hold a NUL character")
    path = Path(text or ".")
    try:
        limit = os.pathconf(".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(os.fsencode(text)) >= 4096:
        raise argparse.ArgumentTypeError(f"the path {_shown(text)} is longer than the system allows")
    long = next((part for part in path.parts if len(os.fsencode(part)) > limit), None)
    if long is not None:
        raise argparse.ArgumentTypeError(f"the name {long[:24]!r}... is {len(os.fsencode(long))} bytes long; "
                                         f"the file system allows {limit}")
    existing = path
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "is a file" if existing == path else f"is under {str(existing)!r}, a file"
        raise argparse.ArgumentTypeError(f"{_shown(text)} {where}, not a folder")
    if not existing.exists():
        raise argparse.ArgumentTypeError(f"cannot create {_shown(text)}")
    if not os.access(existing, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        why = "on a read-only file system" if read_only else "not writable"
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {str(existing)!r} is {why}")
    return text or "."
