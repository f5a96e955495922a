"""What a tau2 user reads, as columns: the inputs of the users' reply models.

Both reply models (``behaviour.reference_policy``, the training-side reference, and ``human_proxy.proxy_policy``,
the held-out proxy) are array rules over rows: a row of ``TRAITS`` (the card's, as the user plays it) and a row
of ``STATE`` (what the user knows of the dialogue, ``Tau2Game.user_state`` read as numbers). The batched engine
passes one row per slot; a scalar user passes one row (``state_row`` of its view's state, ``trait_row`` of its
traits). ``branches`` and ``python_pow`` keep the array rules' arithmetic the same as a scalar if/elif chain's.
"""

from __future__ import annotations

import numpy as np

from scope_envs.games.tau2.dialogue_acts import USER_INDEX

# the traits a reply model reads (``verbose`` is for the words only), as columns
TRAITS = ("disclose", "patience", "insist", "comply", "mind_change", "slip")
T = {t: j for j, t in enumerate(TRAITS)}
# the dialogue-state fields the reply models read (``Tau2Game.user_state``), as columns
STATE = ("transfer_pending", "first_turn", "satisfied", "agent_msgs", "instructed", "confirm_decoy", "confirm_real",
         "decoy_mind", "decoy_forbidden", "ask_identity", "ask_record", "slipped", "stated", "details_given",
         "identity_given", "asked", "has_question", "denied", "insisted", "decoy_open", "real_pending",
         "tool_errors")
S = {k: j for j, k in enumerate(STATE)}
IDENTITY_ASKS = ("user_id", "email", "name_zip", "phone")
RECORD_ASKS = ("record_id", "details")


def state_fields(fields: dict) -> list:
    """The ``STATE`` columns of named values (numbers, or arrays with a row each), in ``STATE``'s order: the one
    place that order is written (``state_row`` for a scalar user, ``Tau2Batch.user_states`` for the slots)."""
    if fields.keys() != S.keys():
        missing, unknown = sorted(S.keys() - fields.keys()), sorted(fields.keys() - S.keys())
        raise ValueError(f"a tau2 user's state lacks {missing} and has unknown {unknown}")
    return [fields[k] for k in STATE]


def state_row(st: dict) -> list:
    """``Tau2Game.user_state()`` as the numbers of ``STATE`` (its labels as flags)."""
    target, slot, kind = st["confirm_target"], st["asked_slot"], st["decoy_kind"]
    # the columns the state carries as they are, and six flags from its three labels
    return state_fields({**{k: st[k] for k in STATE if k in st}, "confirm_decoy": target == "decoy",
                         "confirm_real": target == "real", "decoy_mind": kind == "mind_change",
                         "decoy_forbidden": kind == "forbidden", "ask_identity": slot in IDENTITY_ASKS,
                         "ask_record": slot in RECORD_ASKS})


def trait_row(traits: dict) -> list:
    """A card's ``TRAITS`` as a row."""
    return [traits[k] for k in TRAITS]


def one_row(traits: dict, st: dict) -> tuple[np.ndarray, np.ndarray]:
    """(traits, state) of one user as rows of a batch of one."""
    return np.array([trait_row(traits)], float), np.array([state_row(st)], float)


def patience_turns(t: np.ndarray) -> np.ndarray:
    """The agent messages each row's user tolerates: ``4 + 26 * patience``, rounded down."""
    return np.floor(4 + 26 * t[:, T["patience"]])


def python_pow(x: np.ndarray, e: float) -> np.ndarray:
    """``x ** e`` element by element as Python computes it (C's ``pow``; numpy may take another route, such as
    ``sqrt`` for 0.5, whose last bit can differ)."""
    return np.array([v ** e for v in x.tolist()], float)


class Weights:
    """Writes an if/elif chain's weights into ``w`` (rows, user acts), one branch at a time: ``on(mask)`` selects
    the branch's rows (false when it has none, so that nothing of it is computed), ``trait(k)`` / ``state(k)`` read
    their columns, and ``weigh(act=value, ...)`` sets their weights."""

    def __init__(self, w: np.ndarray, t: np.ndarray, st: np.ndarray):
        self.w, self.t, self.st, self.rows = w, t, st, None

    def on(self, mask: np.ndarray) -> bool:
        self.rows = mask.nonzero()[0]
        return len(self.rows) > 0

    def trait(self, k: str) -> np.ndarray:
        return self.t[self.rows, T[k]]

    def state(self, k: str) -> np.ndarray:
        return self.st[self.rows, S[k]]

    def __call__(self, **weights) -> None:
        for act, value in weights.items():
            self.w[self.rows, USER_INDEX[act]] = value


def branches(rows: int, conditions: list) -> list:
    """An if/elif chain's branches as disjoint masks: each condition where no earlier one held, then the else."""
    taken = np.zeros(rows, bool)
    out = []
    for c in conditions:
        mine = c & ~taken
        taken |= mine
        out.append(mine)
    out.append(~taken)
    return out
