"""The text protocol's pieces: the stop tokens, reading a turn (a message or one JSON tool call), writing a call.

An action is a plain message or one JSON tool call ``{"name": ..., "arguments": {...}}``
(a ```json fence around it is accepted). Text that opens with ``{`` but is not a
JSON object with a string ``name`` is a malformed call: an in-game error
(DESIGN.md §4.5), never a crash.
"""

from __future__ import annotations

import json

from scope_envs.core.game import InGameError

STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
USER_STOPS = (STOP, TRANSFER, OUT_OF_SCOPE)


def parse(text: str) -> dict | None:
    """The tool call in ``text`` as ``{"name", "arguments"}``, or None for a plain message."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:].strip()
    if not body.startswith("{"):
        return None
    try:
        call = json.loads(body)
    except json.JSONDecodeError as e:
        raise InGameError(f"malformed tool call (invalid JSON: {e.msg} at char {e.pos}); send a plain message or "
                          '{"name": "<tool>", "arguments": {...}}') from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise InGameError('malformed tool call: expected a JSON object {"name": "<tool>", "arguments": {...}}')
    extra = set(call) - {"name", "arguments"}
    if extra:
        raise InGameError(f"malformed tool call: unexpected key(s) {sorted(extra)}; only 'name' and 'arguments'")
    return {"name": call["name"], "arguments": call.get("arguments", {})}


def call_text(name: str, arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})
