"""The served app: OpenEnv's own FastAPI app for one id, plus the scope routes and the protocol's edges.

``create_app(id, ...)`` builds the app with OpenEnv's ``create_app`` (its ``/ws`` sessions, ``/reset``,
``/step``, ``/state``, ``/health``, ``/schema``, ``/metadata``; its session limit and idle timeout) over
``ScopeEnvironment`` and the typed models of ``scope_envs.serve.models``, then adds:

* ``GET /scope/spec``: the id, surface, possible agents and their roles and spaces (what the package's
  client builds its PettingZoo spaces from), the server's boot id and limits;
* the batched endpoint (``scope_envs.serve.vec``);
* a body limit (``413`` past ``max_body_bytes``; WebSocket frames past it close the socket, code 1009);
* protocol errors as ``4xx`` ``{"detail", "code"}``, never a traceback; OpenEnv's HTTP ``/reset`` and
  ``/step`` are stateless (a fresh env per request), so an HTTP ``/step`` is ``409 NO_EPISODE``: episodes
  live in ``/ws`` sessions or batched sessions.
"""

from __future__ import annotations

import functools
import uuid
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from gymnasium import spaces
from openenv.core.env_server.http_server import create_app as openenv_create_app
from openenv.core.env_server.types import ConcurrencyConfig

import scope_envs
from scope_envs.core.surfaces import Transcript
from scope_envs.serve.environment import ScopeEnvironment, ServeConfig, seat_players
from scope_envs.serve.errors import ProtocolError
from scope_envs.serve.llm import ServedLLM, UserLLMError, UserLLMOptions, check_regime
from scope_envs.serve.models import ScopeAction, ScopeObservation, ScopeState
from scope_envs.serve.vec import VecSessions, register_vec_routes

DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_MAX_BODY = 4 << 20
DEFAULT_MAX_VEC_SESSIONS = 8
DEFAULT_MAX_NUM_ENVS = 1024


def describe_space(space) -> dict:
    """A JSON description of a gymnasium space of a scope env (``build_space`` in the client inverts it)."""
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: describe_space(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "shape": list(space.shape),
                "dtype": space.dtype.name}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.Text):
        return {"type": "Transcript" if isinstance(space, Transcript) else "Text", "min_length": space.min_length, "max_length": space.max_length,
                "charset": "".join(sorted(space.character_set))}
    raise TypeError(f"no wire description for {space!r}")


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets ``413`` before the app reads it."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                return await self._too_large(send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await self._too_large(send)

    async def _too_large(self, send):
        body = (b'{"detail":"request body too large: the limit is %d bytes","code":"BODY_TOO_LARGE"}'
                % self.limit)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


def create_app(env_id: str, surface: str = "act", kwargs: Optional[dict] = None, *,
               max_sessions: int = DEFAULT_MAX_SESSIONS, idle_timeout: Optional[float] = DEFAULT_IDLE_TIMEOUT,
               max_body_bytes: int = DEFAULT_MAX_BODY, max_vec_sessions: int = DEFAULT_MAX_VEC_SESSIONS,
               max_num_envs: int = DEFAULT_MAX_NUM_ENVS, user_llm=None, user_llm_options: Optional[UserLLMOptions] = None,
               user_adapter_dir=None) -> FastAPI:
    """The app serving ``scope_envs.make(env_id, surface=surface, **kwargs)``: one env per session.

    ``user_llm``: a backend spec of ``load_backend`` (``openai:BASE_URL#MODEL``, a local model directory,
    ``vllm:DIR``) or a backend object; on the text surface it is the user of a frozen or vs id, or runs the
    named adapters of a population id's checkpoint pool (``scope_envs.serve.llm``). ``user_llm_options``:
    its generation length, temperature, and an endpoint's timeout and retries; ``user_adapter_dir``: where a
    local model's adapters are. A setting that cannot serve raises ``UserLLMError`` (a ``ValueError``)."""
    kwargs = dict(kwargs or {})
    served, role = None, None
    if user_llm is not None:
        role = check_regime(env_id, surface, kwargs)
        served = ServedLLM(user_llm, user_llm_options, user_adapter_dir)
        if role == "adapters" and not served.endpoint and served.adapter_dir is None:
            raise UserLLMError("a population pool names its LLM snapshots by adapter: a local model needs "
                               "--user-adapter-dir DIR (one PEFT directory per name)", "--user-adapter-dir")
    elif user_adapter_dir is not None or user_llm_options is not None:
        raise UserLLMError("user_adapter_dir and user_llm_options go with user_llm (--user-llm SPEC)")
    config = ServeConfig(env_id, surface, kwargs, served, role)
    probe = config.make()  # a bad id or kwargs fails here, before anything listens
    players = seat_players(probe)
    boot_id = uuid.uuid4().hex[:12]
    spec = {
        "env_id": env_id, "surface": surface, "kwargs": config.kwargs, "boot_id": boot_id,
        "scope_envs_version": scope_envs.__version__,
        "possible_agents": list(probe.possible_agents),
        "roles": {a: probe.unwrapped._agent_role(a) for a in probe.possible_agents},
        "observation_spaces": {a: describe_space(probe.observation_space(a)) for a in probe.possible_agents},
        "action_spaces": {a: describe_space(probe.action_space(a)) for a in probe.possible_agents},
        "metadata": {k: v for k, v in probe.metadata.items() if isinstance(v, (str, bool, int, list))},
        "server_players": {role: type(p).__name__ for role, p in players.items()},
        "user_llm": None if served is None else {"plays": role, **served.describe()},
        "limits": {"max_sessions": max_sessions, "idle_timeout_s": idle_timeout, "max_body_bytes": max_body_bytes,
                   "max_vec_sessions": max_vec_sessions, "max_num_envs": max_num_envs},
    }
    probe.close()

    app = openenv_create_app(
        functools.partial(ScopeEnvironment, config), ScopeAction, ScopeObservation, env_name=env_id,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout),
        state_cls=ScopeState)
    app.title = f"scope-envs: {env_id} ({surface})"

    @app.exception_handler(ProtocolError)
    async def protocol_error(request: Request, exc: ProtocolError):
        return JSONResponse(status_code=exc.status_code, content={"detail": exc.message, "code": exc.code})

    @app.get("/scope/spec", tags=["Environment Info"], summary="Agents, roles and spaces of the served id")
    async def scope_spec() -> dict:
        return spec

    vec_sessions = VecSessions(config, boot_id, max_vec_sessions, idle_timeout, max_num_envs)
    register_vec_routes(app, vec_sessions)
    reaper = {}

    async def start_reaper():
        import asyncio

        reaper["task"] = asyncio.create_task(vec_sessions.reap())

    async def stop_reaper():
        task = reaper.pop("task", None)
        if task is not None:
            task.cancel()
        vec_sessions.close_all()

    app.router.on_startup.append(start_reaper)
    app.router.on_shutdown.append(stop_reaper)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    app.state.scope_spec = spec
    app.state.vec_sessions = vec_sessions
    return app
