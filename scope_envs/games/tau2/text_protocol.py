"""The text protocol's pieces: the stop tokens, reading a turn (a message or one JSON tool call), writing a call.

An action is a plain message or one JSON tool call ``{"name": ..., "arguments": {...}}``
(a ```json fence around it is accepted). Text that opens with ``{`` but cannot be
read as a JSON object with a string ``name`` is a malformed call: an in-game error
(docs/architecture.md §4.5), never a crash. Unreadable are: invalid JSON; JSON nested deeper
than ``MAX_DEPTH`` (32) arrays and objects, refused by a linear scan before the
JSON parser runs (real tool calls reach 4: the call, its arguments, a list of
records, a record; 32 leaves room for any schema while keeping the parser and
every later walk over the arguments far from Python's recursion limit); and an
integer literal longer than ``MAX_INT_DIGITS`` (4,300, Python's own default
limit for converting digits to an int, which is quadratic beyond it), checked
before the conversion.

Numbers are read as Python's ``json`` (and tau^2-bench) reads them: ``1e999``
is ``inf``, and the non-JSON constants ``NaN``, ``Infinity`` and ``-Infinity``
are accepted as floats. Such a call is well-formed; whether a number is
acceptable is the tool's business: an argument that must be a number refuses
a non-finite or out-of-range one with an ``Error: ...`` tool message
(``tools.bind``), as upstream's argument validation does.
"""

from __future__ import annotations

import json
import re

from scope_envs.core.game import InGameError

STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
USER_STOPS = (STOP, TRANSFER, OUT_OF_SCOPE)
MAX_DEPTH = 32
MAX_INT_DIGITS = 4300
# a JSON string (to its closing quote, or to the end when it has none) or a bracket; linear, no backtracking
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"?|[\[\]{}]')
_HINT = 'send a plain message or {"name": "<tool>", "arguments": {...}}'


class _Unreadable(ValueError):
    pass


def depth(body: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count), in one
    pass; wherever the JSON parser would be, it is exactly as deep as this count there."""
    deepest = level = 0
    for m in _STRUCTURE.finditer(body):
        c = body[m.start()]
        if c == "[" or c == "{":
            level += 1
            if level > deepest:
                deepest = level
        elif c == "]" or c == "}":
            level -= 1
    return deepest


def _int(digits: str) -> int:
    n = len(digits) - digits.startswith("-")
    if n > MAX_INT_DIGITS:
        raise _Unreadable(f"an integer of {n} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def parse(text: str) -> dict | None:
    """The tool call in ``text`` as ``{"name", "arguments"}``, or None for a plain message."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:].strip()
    if not body.startswith("{"):
        return None
    if depth(body) > MAX_DEPTH:
        raise InGameError(f"malformed tool call: nested too deeply (more than {MAX_DEPTH} levels of arrays and "
                          f"objects); {_HINT}")
    try:
        call = json.loads(body, parse_int=_int)
    except json.JSONDecodeError as e:
        raise InGameError(f"malformed tool call (invalid JSON: {e.msg} at char {e.pos}); {_HINT}") from None
    except (ValueError, RecursionError) as e:  # a number too long to read; recursion: cannot happen (MAX_DEPTH)
        why = str(e) if isinstance(e, _Unreadable) else "nested too deeply" if isinstance(e, RecursionError) else \
            "a number too long to read"
        raise InGameError(f"malformed tool call ({why}); {_HINT}") from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise InGameError('malformed tool call: expected a JSON object {"name": "<tool>", "arguments": {...}}')
    extra = set(call) - {"name", "arguments"}
    if extra:
        raise InGameError(f"malformed tool call: unexpected key(s) {sorted(extra)}; only 'name' and 'arguments'")
    return {"name": call["name"], "arguments": call.get("arguments", {})}


def call_text(name: str, arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})
