"""The tau2 act tables (both roles, both surfaces) and the helpers that both the game and the realizer use.

A leaf module: it imports nothing from the game, so the game, the act and text
games, the realizer, the NLU, the goals and the simulators can all import it.
Index 0 of every table is the no-op, the only legal act off turn.

Agent acts (22, ``AGENT_ACTS``)
    ``greet``; ``request:<slot>`` for ``user_id``, ``email``, ``name_zip``,
    ``phone``, ``record_id`` (a reservation / order number), ``details`` (items,
    dates, addresses, payment, reason); ``lookup:0..3`` (a read call among the
    read candidates); ``confirm:0..1`` (ask explicit confirmation of a write
    candidate); ``execute:0..1`` (make that write call); ``instruct:0..1``
    (telecom: ask the user to do a phone action); ``answer`` (tell the user the
    facts it asked for; available once every lookup the task needs was made);
    ``deny`` (refuse: inform the policy rule); ``transfer`` (to a human agent);
    ``end`` (``###STOP###``). A tool call keeps the agent's turn, as upstream.

Agent acts on the text surface (23, ``AGENT_TEXT_ACTS``)
    The same, plus ``tool_call``: a JSON tool call the agent wrote itself.

User acts (14, ``USER_ACTS``)
    ``inform_all`` (identity, ids, details, request and question at once),
    ``state_request``, ``inform_identity`` (the slot asked for, or the first it
    knows), ``inform_slip`` (the same with a typo), ``inform_details``,
    ``confirm``, ``deny`` (declines what was asked; denying the confirmation of a
    decoy retracts it), ``insist`` (on a refused request), ``change_mind`` (asks
    for the decoy, or retracts it), ``ask_question``, ``phone_action`` (does the
    instructed phone action with the user tools), ``stop``, ``transfer``.
"""

from __future__ import annotations

IDENTITY_SLOTS = ("user_id", "email", "name_zip", "phone")  # the identity a user can give (see goals.py)
REQUEST_SLOTS = (*IDENTITY_SLOTS, "record_id", "details")
K_READ, K_WRITE, K_PHONE = 4, 2, 2  # candidate slots per kind: lookups, confirm/execute, phone instructions

AGENT_ACTS = ("noop", "greet", *(f"request:{s}" for s in REQUEST_SLOTS), *(f"lookup:{j}" for j in range(K_READ)),
              *(f"confirm:{j}" for j in range(K_WRITE)), *(f"execute:{j}" for j in range(K_WRITE)),
              *(f"instruct:{j}" for j in range(K_PHONE)), "answer", "deny", "transfer", "end")
AGENT_INDEX = {a: i for i, a in enumerate(AGENT_ACTS)}
# the first act of each kind that names a candidate slot or a requested slot (each kind's acts are consecutive)
LOOKUP, CONFIRM, EXECUTE, INSTRUCT = (AGENT_INDEX[f"{k}:0"] for k in ("lookup", "confirm", "execute", "instruct"))
REQUEST = AGENT_INDEX[f"request:{REQUEST_SLOTS[0]}"]

AGENT_TEXT_ACTS = (*AGENT_ACTS, "tool_call")
AGENT_TEXT_INDEX = {a: i for i, a in enumerate(AGENT_TEXT_ACTS)}

USER_ACTS = ("noop", "inform_all", "state_request", "inform_identity", "inform_slip", "inform_details", "confirm",
             "deny", "insist", "change_mind", "ask_question", "phone_action", "stop", "transfer")
USER_INDEX = {a: i for i, a in enumerate(USER_ACTS)}


def typo(value: str) -> str:
    """A plausible slip: the last digit one off (or the last letter changed)."""
    for i in range(len(value) - 1, -1, -1):
        c = value[i]
        if c.isdigit():
            return value[:i] + str((int(c) + 1) % 10) + value[i + 1:]
    return value[:-1] + ("x" if value[-1:] != "x" else "y")
