"""Protocol errors: a client's mistake or a lost session, each a 4xx with a message and a code.

Raised inside the served env or the batched endpoint; the app answers HTTP requests with the status and
``{"detail": message, "code": code}``, and OpenEnv's WebSocket loop sends ``str(error)`` in its error
frame (with ``EXECUTION_ERROR`` as its code, which the app's middleware replaces with ``code``: see
``scope_envs.serve.app.ws_error_frame``), so a client of either transport reads the same sentence and code.
"""

from __future__ import annotations


class ProtocolError(Exception):
    status_code = 400
    code = "BAD_REQUEST"

    def __init__(self, message: str):
        super().__init__(f"{self.code}: {message}")
        self.message = message


class BadRequest(ProtocolError):
    """The request names something that does not exist or has the wrong type or value."""

    status_code, code = 422, "BAD_REQUEST"


class NoEpisode(ProtocolError):
    """A step in a session that has no episode: never reset, or a fresh session after a reconnect."""

    status_code, code = 409, "NO_EPISODE"


class EpisodeOver(ProtocolError):
    """A step after the episode ended."""

    status_code, code = 409, "EPISODE_OVER"


class SessionLost(ProtocolError):
    """The session existed and is gone (the server restarted, or it sat idle past the timeout)."""

    status_code, code = 410, "SESSION_LOST"


class UnknownSession(ProtocolError):
    status_code, code = 404, "UNKNOWN_SESSION"


class SessionInUse(ProtocolError):
    """A session held by another connection: the one that created it, or the /ws socket attached to it."""

    status_code, code = 409, "SESSION_IN_USE"


class AtCapacity(ProtocolError):
    status_code, code = 429, "CAPACITY_REACHED"
