"""The training part's real reply pairs: what a user paid for realism (``user_reward="realism"``) is told apart from.

A reply pair is one turn of a dialogue at the act level, as ``grounded.py`` reads it: the persuader's last act,
the phase of the turn (``grounded.PHASES``) and the persuadee's first reply (``fit.RESPONSE_ACTS``: the 18 verbal
acts and ``provide_amount``). The pairs come from the **training part** of the people split only (the dialogues
``grounded.read_training_part`` keeps), counted into a table of shape (persuader acts with the no-op, phases,
replies). Those counts are derived numbers, committed in ``grounded_params.json`` (its ``pairs`` block, written by
``python -m scope_envs.games.p4g.grounded``; ``grounded.real_pairs`` reads them), so a realism-paid user trains
anywhere, without the data.

The training part's persuadees are divided once more, by a rule fixed here before any discriminator was trained:
a persuadee is *held back* when ``SHA-256(FOLD_SALT + "\\x00" + id)`` read as an integer falls in the lowest
``HELD_BACK_SHARE`` of its range. The discriminator (``scope_envs.train.realism``) learns from the other
persuadees' pairs (``fit``) and is checked, as training goes, on the held-back ones: a discriminator that only
memorised its own real pairs scores near chance there. No held-out person is in either fold.

In a game, the user's k-th reply (0-based) answers the persuader's k-th act, in the phase of turn k (``cells``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from scope_envs.games.p4g import dialogue_acts
from scope_envs.games.p4g.fit import RESPONSE_ACTS

FOLD_SALT = "scope-envs/p4g/realism-held-back"
HELD_BACK_SHARE = 0.25
FOLDS = ("fit", "held_back")
TURN_EDGES = (1, 3, 7)  # phases of the 0-based turn index: opening (0), early (1-2), middle (3-6), late (7+)
N_REPLIES = len(RESPONSE_ACTS)  # the verbal acts, then provide_amount
SHAPE = (len(dialogue_acts.PERSUADER_ACTS), len(TURN_EDGES) + 1, N_REPLIES)  # (persuader act, phase, reply); the
# no-op row stays 0
# a game's persuadee act -> its reply index: the verbal acts in order, every amount one ``provide_amount``; no-op -1
REPLY_OF_ACT = np.array([-1, *range(len(dialogue_acts.PERSUADEE_VERBAL)),
                         *[N_REPLIES - 1] * len(dialogue_acts.AMOUNT_ACTS)])


def phase(turn: int) -> int:
    """The phase of a 0-based turn index (the index into ``grounded.PHASES``)."""
    return sum(turn >= edge for edge in TURN_EDGES)


def fold_of(person_id: str) -> str:
    """``"held_back"`` or ``"fit"``: the fold of a training-part persuadee (user id ``B3``), by the module's rule."""
    digest = hashlib.sha256(f"{FOLD_SALT}\x00{person_id}".encode("utf-8")).digest()
    return FOLDS[1] if int.from_bytes(digest[:8], "big") / 2**64 < HELD_BACK_SHARE else FOLDS[0]


def pair_tables(pairs, person: dict[str, str]) -> dict:
    """The ``pairs`` block of ``grounded_params.json``: each fold's counts of ``(persuader act, phase, reply,
    dialogue)`` pairs (``grounded._pairs``), ``person`` mapping a dialogue to its persuadee."""
    counts = {fold: np.zeros(SHAPE) for fold in FOLDS}
    people = {fold: set() for fold in FOLDS}
    for act, phase, reply, dialogue in pairs:
        fold = fold_of(person[dialogue])
        counts[fold][dialogue_acts.PERSUADER_INDEX[act], phase, RESPONSE_ACTS.index(reply)] += 1
        people[fold].add(person[dialogue])
    return {"rule": {"salt": FOLD_SALT, "held_back_share": HELD_BACK_SHARE}, "shape": list(SHAPE),
            "turn_edges": list(TURN_EDGES),
            **{fold: {"persuadees": len(people[fold]), "counts": counts[fold].astype(int).tolist()} for fold in FOLDS}}


@dataclass(frozen=True)
class RealPairs:
    """The committed tables as arrays: each fold's pair counts, and how a game's episode becomes pairs."""

    fit: np.ndarray  # counts, ``SHAPE``
    held_back: np.ndarray
    shape: tuple[int, ...] = SHAPE

    @staticmethod
    def cells(agent_acts, user_acts) -> np.ndarray:
        """The flat index into ``SHAPE`` of each of one episode's user acts, given the persuader's acts and the
        persuadee's in order; -1 where an act is no reply (the no-op, or an act after the persuader's last)."""
        agent_acts, user_acts = np.asarray(agent_acts, np.int64), np.asarray(user_acts, np.int64)
        out = np.full(len(user_acts), -1, np.int64)
        k = min(len(agent_acts), len(user_acts))
        reply = REPLY_OF_ACT[user_acts[:k]]
        phases = np.array([phase(turn) for turn in range(k)], np.int64)
        keep = np.flatnonzero(reply >= 0)
        out[keep] = np.ravel_multi_index((agent_acts[keep], phases[keep], reply[keep]), SHAPE)
        return out
