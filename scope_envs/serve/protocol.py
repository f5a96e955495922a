"""uvicorn's HTTP/1.1 protocol (h11) with a bound on how long a request's line and headers may take to arrive.

uvicorn times out an idle kept-alive connection (5 s) and the app times out a body (``--body-timeout``), but
nothing times out a request whose headers never end: a client sending ``POST /reset HTTP/1.1\\r\\nHost: x\\r\\n``
and nothing more held its connection open forever, and a few thousand such clients (slowloris) hold every file
descriptor of the server. ``with_header_timeout(seconds)`` is the protocol class (uvicorn's ``http=`` takes a
class) that closes such a connection ``seconds`` after it opened or after the first byte of its next request
(keep-alive: each request on a connection gets its own bound), and disarms once the request line and headers
are read: a slow body is the app's to answer (``408``), a slow handler is not timed here. (It is h11's protocol
whatever uvicorn's ``auto`` would pick: httptools, the faster parser, is no dependency of the package.)

``scope-envs serve`` (``--header-timeout``) and ``scope-envs study serve`` (``serve_on``) run it; under
``uvicorn`` itself (the container) name it: ``uvicorn scope_envs.serve.asgi:app --http
scope_envs.serve.protocol:HeaderTimeoutProtocol`` (its bound is ``DEFAULT_HEADER_TIMEOUT``).

The body is a middleware's: ``read_body`` reads it whole under a bound of time and size (``serve``'s ``BodyLimit``,
the study server's ``BodyTimeout``), and ``replaying`` hands what was read to the app.
"""

from __future__ import annotations

import asyncio
from typing import Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEADER_TIMEOUT = 30.0  # seconds; nginx's client_header_timeout is 60, Apache's mod_reqtimeout 20 to 40


class HeaderTimeoutProtocol(H11Protocol):
    """h11's protocol, closing a connection whose request line and headers are not all read within
    ``header_timeout`` seconds (of the connection's opening, or of the first byte of its next request)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    _header_timer: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing at all holds a descriptor too

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # bytes of a request whose head is not read yet
            self._arm()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is read (or refused, or upgraded to a WebSocket)
            self._disarm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        # armed once per request: bytes that trickle in (one every few seconds) never push the bound back
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


async def read_body(receive, timeout: Optional[float] = None, limit: Optional[int] = None):
    """A request's body read whole by an ASGI middleware: ``(body, first, problem)``, ``first`` the message that
    ended the reading early (the client's disconnect) or None, ``problem`` why it stopped: ``"timeout"`` (not all
    of it within ``timeout`` seconds: a bound on the whole body, so a trickle does not push it back) or
    ``"too large"`` (past ``limit`` bytes), else None."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    chunks, seen, more = [], 0, True
    while more:
        try:
            message = await (receive() if deadline is None else
                             asyncio.wait_for(receive(), max(deadline - loop.time(), 0)))
        except asyncio.TimeoutError:
            return b"".join(chunks), None, "timeout"
        if message["type"] != "http.request":
            return b"".join(chunks), message, None
        body = message.get("body", b"")
        seen += len(body)
        if limit is not None and seen > limit:
            return b"", None, "too large"
        chunks.append(body)
        more = message.get("more_body", False)
    return b"".join(chunks), None, None


def replaying(raw: bytes, first: Optional[dict], receive):
    """An ASGI ``receive`` that hands the app a request body a middleware already read (``raw``, in one message;
    or ``first``, the message that ended the reading, such as the client's disconnect), then the socket's own."""
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return first or {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


def with_header_timeout(seconds: float) -> type:
    """``HeaderTimeoutProtocol`` with a bound of ``seconds`` (a class: uvicorn builds one per connection)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": float(seconds)})
