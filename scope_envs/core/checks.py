"""Checks of keyword arguments: each refuses a value of the wrong type or out of range with a ``ValueError``
that names the argument, where the argument is first received (``make``'s kwargs, ``reset``'s seeds), so that a
mistake never surfaces later as a numpy or comparison error that names nothing.

Each returns the value it was given, unchanged (an accepted value is used exactly as before: the checks only
refuse). ``check_int`` takes Python and numpy integers, never a bool; ``check_number`` any finite real number
(int or float, Python or numpy), never a bool; ``check_seed`` ``None`` or an integer >= 0.

    >>> check_int("max_turns", 5, low=1)
    5
    >>> check_int("max_turns", 2.5, low=1)
    Traceback (most recent call last):
    ...
    ValueError: max_turns must be a positive int, got 2.5
"""

from __future__ import annotations

import math
import numbers
import reprlib
import sys
from collections.abc import Mapping

import numpy as np


def short_repr(value) -> str:
    """A bounded repr for error messages: huge strings, lists and integers (over 4,300 digits
    ``repr`` itself raises) shown in part."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"<an int of {value.bit_length()} bits>"
    return reprlib.repr(value)


def check_actions(actions, each: str = "action") -> None:
    """``step``'s argument is a mapping ``{agent: action}`` (``each``: what one agent's action is), else a
    ``ValueError`` saying so: the scalar env, the vec engines and the remote clients' one sentence."""
    if not isinstance(actions, Mapping):
        raise ValueError(f"actions must be a dict {{agent: {each}}}, got {type(actions).__name__} "
                         f"{short_repr(actions)}")


ILLEGAL = ("random", "raise")  # what the views do with a masked act: replace it by a random legal one, or refuse it


def check_illegal(illegal) -> None:
    """``illegal=`` of the views that can replace a masked act (``ILLEGAL``), else a ``ValueError``."""
    if illegal not in ILLEGAL:
        raise ValueError(f"illegal must be 'random' or 'raise', got {illegal!r}")


def _range(kind: str, low, high, low_open: bool = False, high_open: bool = False) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f"{kind} {'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{kind} {'<' if high_open else '<='} {high}"
    return kind


# the longest episode a game takes (max_turns, tau2's max_steps): the server's bound too; past it an episode that
# no side ends would run for hours (10**9 turns) and the engines' per-turn arrays would not fit
MAX_EPISODE_TURNS = 10_000

# the keys of reset()'s options the env reads. Another is ignored, as Gymnasium's and PettingZoo's envs ignore theirs
# (PettingZoo's own API test resets with {"options": 1}), but not silently: a typo (scenario_sed) plays another
# episode than the one asked for. The server, whose clients can be told, refuses it.
RESET_OPTIONS = ("scenario_seed", "reset_schedule")


def unknown_options(options) -> list:
    """The keys of the mapping ``options`` that the env does not read."""
    return [k for k in options if k not in RESET_OPTIONS]


def warn_unknown_options(name: str, options) -> None:
    """A ``UserWarning`` naming each key of the mapping ``options`` that the env does not read."""
    unknown = unknown_options(options)
    if unknown:
        import warnings

        shown = ", ".join(short_repr(k) for k in unknown[:5])
        level, frame = 2, sys._getframe(1)  # the warning points at the caller's line, outside the package
        while frame is not None and frame.f_globals.get("__name__", "").startswith("scope_envs."):
            level, frame = level + 1, frame.f_back
        warnings.warn(f"{name}: the env reads only {', '.join(RESET_OPTIONS)}; ignoring {shown}", UserWarning,
                      stacklevel=level)


def check_reset_options(name: str, options) -> dict:
    """One episode's ``reset`` options: None or a dict, its ``scenario_seed`` None or an int >= 0 and its
    ``reset_schedule`` a bool (a string such as ``"no"`` would be read as true); returns the keys the env reads."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"{name} must be a dict (such as {{'scenario_seed': 3}}) or None, got "
                         f"{type(options).__name__} {short_repr(options)}")
    warn_unknown_options(name, options)
    check_seed(f"{name}['scenario_seed']", options.get("scenario_seed"))
    if not isinstance(options.get("reset_schedule", False), (bool, np.bool_)):
        raise ValueError(f"{name}['reset_schedule'] must be a bool, got {short_repr(options['reset_schedule'])}")
    return {k: v for k, v in options.items() if k in RESET_OPTIONS}


def check_int(name: str, value, low: int | None = None, high: int | None = None, *, wanted: str | None = None):
    """``value``, an integer (Python or numpy; not a bool) from ``low`` to ``high`` (either None: unbounded);
    anything else is a ``ValueError`` naming ``name`` and saying what was ``wanted``."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (low is not None and value < low) or (high is not None and value > high)):
        if wanted is None:
            wanted = "a positive int" if low == 1 and high is None else _range("an int", low, high)
        raise ValueError(f"{name} must be {wanted}, got {short_repr(value)}")
    return value


def check_number(name: str, value, low: float | None = None, high: float | None = None, *,
                 low_open: bool = False, high_open: bool = False, wanted: str | None = None):
    """``value``, a finite real number (int or float, Python or numpy; not a bool) within ``low``..``high``
    (each bound closed unless ``low_open`` / ``high_open``; None: unbounded); anything else is a
    ``ValueError`` naming ``name`` and saying what was ``wanted``."""
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real)
          and (isinstance(value, numbers.Integral) or math.isfinite(value))
          and (low is None or (value > low if low_open else value >= low))
          and (high is None or (value < high if high_open else value <= high)))
    if not ok:
        if wanted is None:
            wanted = _range("a finite number", low, high, low_open, high_open)
        raise ValueError(f"{name} must be {wanted}, got {short_repr(value)}")
    return value


def check_seed(name: str, value):
    """``value``: None, or a seed, an integer >= 0 (Python or numpy; not a bool); anything else is a
    ``ValueError`` naming ``name``."""
    if value is None:
        return None
    return check_int(name, value, 0, wanted="None or an int >= 0")


def check_scalar_env(wrapper: str, env):
    """``env`` for a wrapper of one episode at a time: an env of ``make(id)``, a wrapper of one or a remote one
    (all have ``unwrapped.surface``); an id or a ``make_vec`` env is a ``TypeError`` saying what to pass."""
    if isinstance(env, str):
        raise TypeError(f"{wrapper} wraps an env, not an id: {wrapper}(scope_envs.make({short_repr(env)}))")
    if getattr(env, "num_envs", None) is not None or not hasattr(getattr(env, "unwrapped", None), "surface"):
        raise TypeError(f"{wrapper} wraps one env of scope_envs.make(id), got a {type(env).__name__}"
                        + ("; a make_vec env batches episodes itself" if hasattr(env, "num_envs") else ""))
    return env
