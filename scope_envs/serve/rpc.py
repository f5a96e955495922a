"""The JSON-RPC requests of ``/mcp``, checked before OpenEnv reads them, and their errors.

OpenEnv's ``/mcp`` answers a malformed request with the parser's own sentence, which quotes the input back
(``Invalid request: ... input_value=...``, ``Method not found: <method>``, ``Unknown session_id: <id>``): a
client's mistake could fill the answer with its own megabytes. ``rpc_problem`` finds such a mistake first and
names the field without repeating what was sent, as every other error of the server does.

The served env has no MCP tools (it is played by ``reset`` and ``step`` over ``/ws``): OpenEnv's ``/mcp`` answers
``tools/list`` and ``tools/call`` for such an env with -32603, an internal error, "Environment does not support
MCP" (building a fresh env for each HTTP request first). Here they are what they are to this server, methods it
does not have: -32601, said before OpenEnv builds anything.
"""

from __future__ import annotations

from typing import Optional

MCP_PATH = "/mcp"
METHODS = ("openenv/session/create", "openenv/session/close")
TOOL_METHODS = ("tools/list", "tools/call")  # MCP's tool methods: the served env has no tools
NO_TOOLS = (f"method: this server's env has no MCP tools (play it with reset and step over /ws); /mcp answers "
            f"{' and '.join(METHODS)}")
KEYS = frozenset({"jsonrpc", "method", "params", "id"})
MAX_ID_CHARS = 200  # a request id or a session id; a UUID is 36 characters

# JSON-RPC 2.0's error codes
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32600, -32601, -32602


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short_string(value) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS


def rpc_problem(value) -> Optional[tuple[int, str, str]]:
    """``(JSON-RPC code, message, protocol code)`` of what is wrong with a parsed request, ``None`` when
    nothing is; the message names the field and never quotes its value."""
    if not isinstance(value, dict):
        return INVALID_REQUEST, f"a JSON-RPC request is an object {{jsonrpc, method, params, id}}, got {_kind(value)}", "BAD_REQUEST"
    unknown = [k for k in value if k not in KEYS]
    if unknown:
        return INVALID_REQUEST, (f"{len(unknown)} unknown key(s); a request has only jsonrpc, method, params and "
                                 "id"), "BAD_REQUEST"
    rid = value.get("id")
    if not (rid is None or _short_string(rid) or (isinstance(rid, int) and not isinstance(rid, bool))):
        return INVALID_REQUEST, f"id must be a string of 1 to {MAX_ID_CHARS} characters, an integer or null", "BAD_REQUEST"
    if value.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'jsonrpc must be "2.0"', "BAD_REQUEST"
    method = value.get("method")
    if not isinstance(method, str):
        return INVALID_REQUEST, f"method must be a string, got {_kind(method)}", "BAD_REQUEST"
    if method in TOOL_METHODS:
        return METHOD_NOT_FOUND, NO_TOOLS, "BAD_REQUEST"
    if method not in METHODS:
        return METHOD_NOT_FOUND, f"method: not a method of this server (it answers {', '.join(METHODS)})", "BAD_REQUEST"
    params = value.get("params", {})
    if not isinstance(params, dict):
        return INVALID_PARAMS, f"params must be an object, got {_kind(params)}", "BAD_REQUEST"
    if "session_id" in params and not _short_string(params["session_id"]):
        return INVALID_PARAMS, f"params.session_id must be a string of 1 to {MAX_ID_CHARS} characters", "BAD_REQUEST"
    return None


def rpc_error(request_id, code: int, message: str, protocol_code: str) -> dict:
    """A JSON-RPC error response; the request's id only when it is one (a malformed id is answered null)."""
    if not (request_id is None or _short_string(request_id)
            or (isinstance(request_id, int) and not isinstance(request_id, bool))):
        request_id = None
    return {"jsonrpc": "2.0", "error": {"code": code, "message": f"{protocol_code}: {message}",
                                        "data": {"code": protocol_code}}, "id": request_id}
