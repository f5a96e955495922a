"""The CooperBench act table (both roles share it) and the helpers that read an act.

Layout of ``ACTS`` (44): index 0 the no-op; then one ``edit:<region>`` per
region (from ``EDIT``), one ``edit_combined:<region>`` per region (from
``COMBINED``), one ``claim:<region>`` per region (from ``CLAIM``); then the
messages (from ``FIRST_MESSAGE``), ``wait`` and ``submit``. A leaf module: it
imports only the code world, so the game, the styles and the language layer
can all import it.
"""

from __future__ import annotations

from scope_envs.games.cooperbench.world import N_REGIONS, REGIONS

MESSAGES = ("announce_plan", "report_done", "ask", "answer", "decline")
ACTS = (
    "noop",
    *(f"edit:{r}" for r in REGIONS),
    *(f"edit_combined:{r}" for r in REGIONS),
    *(f"claim:{r}" for r in REGIONS),
    *MESSAGES,
    "wait",
    "submit",
)
INDEX = {a: i for i, a in enumerate(ACTS)}
EDIT, COMBINED, CLAIM = 1, 1 + N_REGIONS, 1 + 2 * N_REGIONS
FIRST_MESSAGE = 1 + 3 * N_REGIONS


def kind(act: int) -> str:
    """The act's family: edit, edit_combined, claim, a message, wait, submit or noop."""
    return ACTS[act].split(":")[0]


def region(act: int) -> int:
    """The region an edit, combined edit or claim is about."""
    return (act - 1) % N_REGIONS


def describe(act: int) -> str:
    """The act's name, quoted, for messages to a player."""
    return repr(ACTS[act])
