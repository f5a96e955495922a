"""Who may use a session of ``/ws`` and ``/mcp``: the connection that holds it, and no one else.

OpenEnv's server lets a ``/ws`` socket attach to an existing session by id (``/ws?session_id=S``), lets
``openenv/session/close`` over ``/mcp`` close any session by id, and tells a socket its own session's id
(``openenv/session/create`` answers it). Left so, whoever learns an id can play or end another client's
episode. Here a session is held by:

* the WebSocket connection that created it (a plain ``/ws`` socket, or an ``/mcp`` socket), for its whole life;
* else (a session made by HTTP ``openenv/session/create``) the ``/ws`` socket attached to it, while it stays
  attached; between attachments, by whoever has its id: the id (a random UUID, 122 bits, answered only to the
  request that created it) is the token that proves ownership.

An attach to a held session is refused ``SESSION_IN_USE`` (an attach to an id the server does not know,
``UNKNOWN_SESSION``), and so is an MCP request naming a session another connection holds. OpenEnv's idle
reaper skips attached sessions; ``ScopeEnvServer`` reaps them too, so ``--idle-timeout`` frees every session.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from typing import Optional

from openenv.core.env_server.http_server import HTTPEnvServer
from starlette.datastructures import QueryParams

from scope_envs.serve.errors import ProtocolError, SessionInUse, UnknownSession
from scope_envs.serve.protocol import read_body, replaying
from scope_envs.serve.rpc import MCP_PATH, rpc_error, rpc_problem

WS_PATH = "/ws"


class Connection:
    """One WebSocket connection; ``attached``: the id of the session it attached to (``/ws?session_id=``)."""

    __slots__ = ("attached",)

    def __init__(self, attached: Optional[str] = None):
        self.attached = attached


# the WebSocket connection the running task serves (None in an HTTP request): each ASGI call runs in its own
# task, and OpenEnv creates a socket's session inside the socket's task
CONNECTION: contextvars.ContextVar[Optional[Connection]] = contextvars.ContextVar("scope_serve_connection",
                                                                                 default=None)


class ScopeEnvServer(HTTPEnvServer):
    """OpenEnv's server, knowing which connection holds each session, and reaping idle attached sessions."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.holders: dict[str, Connection] = {}
        self._attached_reaper: Optional[asyncio.Task] = None

    async def _create_session(self):
        sid, env = await super()._create_session()
        holder = CONNECTION.get()
        if holder is not None:
            self.holders[sid] = holder
        return sid, env

    async def _destroy_session(self, session_id: str) -> None:
        self.holders.pop(session_id, None)
        await super()._destroy_session(session_id)

    def refusal(self, sid, caller: Optional[Connection]) -> Optional[ProtocolError]:
        """Why ``caller`` (a connection, ``None`` over HTTP) may not use session ``sid``; ``None`` when it may."""
        if not isinstance(sid, str) or self._sessions.get(sid) is None:
            return UnknownSession("no session with this session_id on this server (closed, timed out, or never "
                                  "created)")
        holder = self.holders.get(sid)
        if holder is not None and holder is not caller:
            return SessionInUse("this session belongs to the connection that created it: only that connection "
                                "may play or close it")
        if sid in self._session_websocket_attachments and (caller is None or caller.attached != sid):
            return SessionInUse("this session is attached to another /ws connection: only that connection may "
                                "play or close it until it disconnects")
        return None

    # -- the idle timeout for attached sessions --------------------------------------------------------------
    def _start_reaper(self) -> None:
        super()._start_reaper()
        if self._session_idle_timeout_s is not None and self._attached_reaper is None:
            self._attached_reaper = asyncio.create_task(self._reap_attached())

    def _stop_reaper(self) -> None:
        super()._stop_reaper()
        if self._attached_reaper is not None:
            self._attached_reaper.cancel()
            self._attached_reaper = None

    async def _reap_attached(self) -> None:
        """Destroy the attached sessions idle past the timeout, every quarter of it (at most every 5 s); the
        socket stays open, and its next message is answered ``SESSION_LOST``."""
        timeout = self._session_idle_timeout_s
        while True:
            await asyncio.sleep(min(max(timeout / 4, 0.25), 5.0))
            now = time.time()
            async with self._session_lock:
                stale = [sid for sid in self._session_websocket_attachments
                         if (info := self._session_info.get(sid)) is not None and now - info.last_activity_at > timeout]
            for sid in stale:
                await self._destroy_session(sid)


def _may_be_mcp(raw) -> bool:
    """Whether a ``/ws`` frame may be an ``mcp`` message (the rest, nearly every frame, go on unparsed): it
    names ``"mcp"``, or escapes a character (``"\\u006dcp"`` is ``"mcp"`` too)."""
    if isinstance(raw, str):
        return '"mcp"' in raw or "\\u" in raw
    return b'"mcp"' in raw or b"\\u" in raw


class SessionGuard:
    """ASGI middleware: a ``/ws?session_id=`` attach, and every JSON-RPC request on ``/mcp`` (HTTP and socket)
    or in a ``/ws`` ``mcp`` message, checked before OpenEnv sees it: a session held by another connection
    ``SESSION_IN_USE``, an unknown one ``UNKNOWN_SESSION``, a malformed request a JSON-RPC error naming the field
    without echoing the input (``scope_envs.serve.rpc``)."""

    def __init__(self, app, server: ScopeEnvServer):
        self.app, self.server = app, server

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and path == MCP_PATH and scope.get("method") == "POST":
            return await self._http_rpc(scope, receive, send)
        if scope["type"] != "websocket" or path not in (WS_PATH, MCP_PATH):
            return await self.app(scope, receive, send)
        connection = Connection()
        if path == WS_PATH:
            sid = QueryParams(scope.get("query_string", b"").decode("latin-1")).get("session_id")
            if sid:
                refused = self.server.refusal(sid, connection)
                if refused is not None:
                    return await self._refuse_socket(receive, send, refused)
                connection.attached = sid
        CONNECTION.set(connection)
        await self.app(scope, self._frames(path, connection, receive, send), send)

    async def _http_rpc(self, scope, receive, send):
        raw, first, _ = await read_body(receive)  # (BodyLimit, outside, has bounded it)
        answer = self._rpc_answer(raw, None)
        if answer is not None:
            body = json.dumps(answer).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
            return await send({"type": "http.response.body", "body": body})
        await self.app(scope, replaying(raw, first, receive), send)

    def _rpc_answer(self, raw, caller: Optional[Connection], wrapped: bool = False) -> Optional[dict]:
        """The JSON-RPC error answering ``raw`` (a request, or a ``/ws`` ``mcp`` message when ``wrapped``),
        ``None`` when OpenEnv may answer it (it also answers what is not JSON)."""
        try:
            value = json.loads(raw)
        except (ValueError, TypeError, RecursionError):
            return None
        if wrapped:
            if not isinstance(value, dict) or value.get("type") != "mcp":
                return None
            value = value.get("data")
        problem = rpc_problem(value)
        if problem is None:
            params = value.get("params") or {}
            if "session_id" in params:
                refused = self.server.refusal(params["session_id"], caller)
                if refused is not None:
                    problem = (-32602, f"params.session_id: {refused.message}", refused.code)
        if problem is None:
            return None
        request_id = value.get("id") if isinstance(value, dict) else None
        answer = rpc_error(request_id, *problem)
        return {"type": "mcp", "data": answer} if wrapped else answer

    def _frames(self, path, connection, receive, send):
        async def checked():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes")
                if raw is None or (path == WS_PATH and not _may_be_mcp(raw)):
                    return message
                answer = self._rpc_answer(raw, connection, wrapped=path == WS_PATH)
                if answer is None:
                    return message
                await send({"type": "websocket.send", "text": json.dumps(answer)})

        return checked

    @staticmethod
    async def _refuse_socket(receive, send, refused: ProtocolError):
        """Accept the handshake, send the refusal as the protocol's error frame, and close (code 1008: policy)."""
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        frame = {"type": "error", "data": {"message": str(refused), "code": refused.code}}
        await send({"type": "websocket.send", "text": json.dumps(frame)})
        await send({"type": "websocket.close", "code": 1008})
