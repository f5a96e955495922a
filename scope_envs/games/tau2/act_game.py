"""The tau2 act surface: ``Tau2ActGame``, both roles play dialogue acts.

The rules, the dialogue state, the candidates and the features are the shared
game's (``game.Tau2Game``); this class adds the act protocol. The act tables
are in ``dialogue_acts.py``. The agent's ``lookup:j`` / ``execute:j`` /
``instruct:j`` name the j-th read / write / phone candidate (masked when there
is none), so tool arguments are never free; ``confirm:j`` asks the user to
confirm the j-th write candidate; every other act is a message, rendered in
words by ``realize.py`` (the first wording, so that tau^2's COMMUNICATE check
reads the agent's answers). A user act updates the dialogue state as the
shared game defines it.

A write needs the customer's yes: ``execute:j`` is legal only once the user
confirmed write candidate j (``confirm:j`` answered with ``confirm``), as the
domain policies require explicit confirmation before any change. A customer who
declines (``deny``) or leaves (``stop``) at the confirmation blocks the write;
the agent may ask again. This rule is the act surface's world for every user
(reference, collapsed, co-trained and held-out alike); on the text surface the
agent writes its tool calls itself and nothing gates them, as upstream.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import InGameError
from scope_envs.games.tau2 import realize
from scope_envs.games.tau2.dialogue_acts import (
    AGENT_ACTS,
    CONFIRM,
    EXECUTE,
    INSTRUCT,
    K_PHONE,
    K_READ,
    K_WRITE,
    LOOKUP,
    USER_ACTS,
)
from scope_envs.games.tau2.game import AGENT, Tau2Game, candidate_slots


def narrow_agent_acts(mask: np.ndarray, reads: np.ndarray, writes: np.ndarray, confirmed: np.ndarray,
                      phones: np.ndarray) -> np.ndarray:
    """Rows of the agent's turn masks narrowed, in place, to its candidates: an act naming candidate j is legal
    while there is one (``reads``, ``writes``, ``phones``: (rows, K) flags), and no write without the customer's
    yes to that very call (``confirmed``: (rows, K_WRITE))."""
    mask[:, LOOKUP: LOOKUP + K_READ] &= reads
    mask[:, CONFIRM: CONFIRM + K_WRITE] &= writes
    mask[:, EXECUTE: EXECUTE + K_WRITE] &= writes & confirmed
    mask[:, INSTRUCT: INSTRUCT + K_PHONE] &= phones
    return mask


class Tau2ActGame(Tau2Game):
    def acts(self, role):
        return AGENT_ACTS if role == AGENT else USER_ACTS

    def _legal_key(self, role) -> tuple:
        key = super()._legal_key(role)
        if role != AGENT or role != self.active_role():
            return key
        c = self.candidates()
        confirmed = self.confirmed
        return (*key, len(c["read"]), len(c["write"]), len(c["phone"]),
                *(w.key() in confirmed for w in c["write"]))

    def _legal_mask(self, role):
        mask = super()._legal_mask(role)
        if role != AGENT or role != self.active_role():
            return mask
        c = self.candidates()
        reads, writes, phones = candidate_slots(c)
        return narrow_agent_acts(mask[None], reads, writes, self.confirmed_slots(c["write"]), phones)[0]

    def understand(self, role, text):
        raise InGameError("the tau2 act game reads acts, not text")

    def _turn(self, role: str, act: int, text: str) -> None:
        (self._agent if role == AGENT else self._user)(act, text)

    def _agent(self, act: int, text: str) -> None:
        name = AGENT_ACTS[act]
        kind, _, j = name.partition(":")
        c = self.candidates()
        self.asked_slot = self.confirm_target = None
        if kind == "lookup":
            self._call(AGENT, act, c["read"][int(j)])
            return
        if kind == "execute":
            call = c["write"][int(j)]
            self.decoy_executed |= self.goal.decoy is not None and call.key() == self.goal.decoy.key()
            self._call(AGENT, act, call)
            return
        self._agent_message(kind, j, c["write"][int(j)] if kind == "confirm" else
                            c["phone"][int(j)] if kind == "instruct" else None)
        if kind == "answer":
            if self.goal.questions and all(l.key() in self.done for l in self.goal.lookups):
                self.answered = True
        elif kind == "transfer":
            self._call(AGENT, act, self.goal.transfer_call)
            self.transfer_pending = True
        self._agent_said(act, text or self.agent_text(act), kind == "end")

    # ------------------------------------------------------------ text
    def agent_text(self, act: int, rng: np.random.Generator | None = None) -> str:
        return realize.agent(self, act, rng)

    def realize(self, role, act, rng):
        return self.agent_text(act, rng) if role == AGENT else self.user_text(act, rng)
