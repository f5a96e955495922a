"""The served app: OpenEnv's own FastAPI app for one id, plus the scope routes and the protocol's edges.

``create_app(id, ...)`` builds the app with OpenEnv's server (its ``/ws`` sessions, ``/reset``, ``/step``,
``/state``, ``/health``, ``/schema``, ``/metadata``, ``/mcp``; its session limit and idle timeout) over
``ScopeEnvironment`` and the typed models of ``scope_envs.serve.models``, then adds:

* each ``/ws`` and ``/mcp`` session held by the connection that created or attached it, and the idle timeout
  for attached sessions too (``scope_envs.serve.sessions``);

* ``GET /scope/spec``: the id, surface, possible agents and their roles and spaces (what the package's
  client builds its PettingZoo spaces from), the server's boot id and limits;
* the batched endpoint (``scope_envs.serve.vec``);
* a body limit (``413`` past ``max_body_bytes``; WebSocket frames past it close the socket, code 1009);
* OpenEnv's task API answered ``404`` (every method and body), and its ``/ws`` error frames carrying the
  documented codes (``ws_error_frame``);
* protocol errors as ``4xx`` ``{"detail", "code"}``, never a traceback; OpenEnv's HTTP ``/reset`` and
  ``/step`` are stateless (a fresh env per request), so an HTTP ``/step`` is ``409 NO_EPISODE``: episodes
  live in ``/ws`` sessions or batched sessions.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
import uuid
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from gymnasium import spaces
from starlette.exceptions import HTTPException as StarletteHTTPException
from openenv.core.env_server.types import ConcurrencyConfig

import scope_envs
from scope_envs.arguments import MAX_MEMBERS, MAX_POOL_SIZE
from scope_envs.core.checks import MAX_EPISODE_TURNS
from scope_envs.core.surfaces import Transcript
from scope_envs.diagnose.specs import FAMILIES
from scope_envs.serve.environment import (MAX_SEED, RESET_OPTIONS, ScopeEnvironment, ServeConfig, check_seed,
                                         seat_players)
from scope_envs.serve.errors import BadRequest, ProtocolError
from scope_envs.serve.llm import ServedLLM, UserLLMError, UserLLMOptions, check_regime
from scope_envs.serve.models import ScopeAction, ScopeObservation, ScopeState
from scope_envs.serve.rpc import INVALID_REQUEST, MCP_PATH, rpc_error
from scope_envs.serve.protocol import read_body, replaying
from scope_envs.serve.sessions import ScopeEnvServer, SessionGuard
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


MAX_JSON_DEPTH = 64  # nesting of an incoming JSON document (no message of the protocol nests near as deep)
DEFAULT_BODY_TIMEOUT = 30.0  # seconds a request body may take to arrive (one shorter than its length never ends)
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_TASK_PATH = re.compile(r"/[^/]+/(splits|tasks|num_tasks|task|task_range)/?")
NO_TASK_API = ("this server has no task API (splits, tasks): a scope env's episodes are drawn by seed "
               "(reset with seed=...)")
# the protocol errors' codes (scope_envs.serve.errors); OpenEnv's WebSocket loop sends them as EXECUTION_ERROR
# with the code at the head of the message, and the app puts the code in the frame's data.code
PROTOCOL_CODES = frozenset({"BAD_REQUEST", "NO_EPISODE", "EPISODE_OVER", "SESSION_LOST", "UNKNOWN_SESSION",
                            "SESSION_IN_USE", "CAPACITY_REACHED"})
# Python reads an integer of at most this many digits (json.loads raises past it): such a literal is refused
# naming where it is, never passed on (OpenEnv's /ws loop would end the session on it)
MAX_INT_DIGITS = sys.get_int_max_str_digits() or None
_LONG_DIGITS = re.compile(rb"[0-9]{%d}" % (MAX_INT_DIGITS + 1)) if MAX_INT_DIGITS else None


def wire_text(value, limit: int = 200) -> str:
    """``value`` as text safe to send back: un-encodable characters escaped, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _where(path) -> str:
    return ".".join(wire_text(p, 60) for p in path) or "the message"


def json_problem(value, path=(), depth=0) -> Optional[str]:
    """Why a parsed JSON value cannot go on (a string with a lone surrogate, nesting past ``MAX_JSON_DEPTH``),
    naming where; ``None`` when it is fine."""
    if depth > MAX_JSON_DEPTH:
        return f"{_where(path)}: nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, _LongInt):
        return (f"{_where(path)}: an integer of {value.digits} digits (at most {MAX_INT_DIGITS} are read; the "
                "protocol's integers fit in 64 bits)")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{_where(path)}: not valid Unicode text (a lone surrogate such as \\ud800)"
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if isinstance(key, str):
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                return f"{_where(path)}: a key that is not valid Unicode text (a lone surrogate)"
        problem = json_problem(item, (*path, key), depth + 1)
        if problem:
            return problem
    return None


def parse_problem(raw) -> Optional[str]:
    """``json_problem`` of a raw JSON document; ``None`` also when it is not JSON (the app answers that)."""
    if (isinstance(raw, (bytes, bytearray)) and not _MAYBE_SURROGATE.search(raw)
            and raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH and not (_LONG_DIGITS and _LONG_DIGITS.search(raw))):
        return None  # the fast path: no escaped surrogate, too few brackets to nest too deep, no overlong integer
    value, problem = _parsed(raw)
    return problem if problem or value is _NOT_JSON else json_problem(value)


_NOT_JSON = object()


class _LongInt:
    """An integer literal past ``MAX_INT_DIGITS`` where ``_parsed`` found it (its digits counted, not read)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits


def _int_or_long(text: str):
    digits = len(text) - text.startswith("-")
    return _LongInt(digits) if MAX_INT_DIGITS and digits > MAX_INT_DIGITS else int(text)


def _parsed(raw) -> tuple:
    """``(value, problem)`` of a raw JSON document: ``_NOT_JSON`` where it is not JSON (the app answers that), a
    problem where it nests too deep for the parser or holds an integer too long to read (naming where)."""
    try:
        return json.loads(raw), None
    except RecursionError:
        return _NOT_JSON, f"the message: nested deeper than {MAX_JSON_DEPTH} levels"
    except json.JSONDecodeError:
        return _NOT_JSON, None
    except ValueError:  # (an integer past Python's limit on digits, else bytes that are not UTF-8)
        try:
            value = json.loads(raw, parse_int=_int_or_long)
        except (ValueError, TypeError, RecursionError):
            return _NOT_JSON, None
        return _NOT_JSON, json_problem(value)
    except TypeError:
        return _NOT_JSON, None


JSON_BODY = "the request body must be JSON sent with Content-Type: application/json"
BODY_METHODS = ("POST", "PUT", "PATCH")


def content_type_problem(scope) -> Optional[str]:
    """Why a request's body is not read as JSON: its Content-Type is not ``application/json`` (nor
    ``application/*+json``), so FastAPI would validate the raw bytes ("Input should be a valid dictionary");
    ``None`` when it is JSON."""
    value = next((v for k, v in scope.get("headers", []) if k == b"content-type"), None)
    kind = (value or b"").split(b";")[0].strip().lower()
    if kind == b"application/json" or (kind.startswith(b"application/") and kind.endswith(b"+json")):
        return None
    got = "no Content-Type" if value is None else f"Content-Type {wire_text(value.decode('latin-1'), 60)!r}"
    return f"{JSON_BODY}, got {got}"


def utf8_problem(raw: bytes) -> Optional[str]:
    """Why a JSON body is not text: bytes that are not UTF-8 (FastAPI answered them 400, "error parsing the body")."""
    if raw.isascii():
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"the request body is not valid UTF-8 (byte {e.start}): JSON is sent as UTF-8 text"
    return None


def reset_seed_problem(raw) -> Optional[str]:
    """Why an HTTP ``/reset`` body's ``seed`` is refused; ``None`` when it is fine or absent. OpenEnv reads that
    body through its own model, which takes ``"1"``, ``1.0`` and ``true`` for the seed 1; ``/ws`` and the batched
    reset refuse them, so this refuses them too, before the model sees the body."""
    value, _ = _parsed(raw)
    try:
        check_seed(value.get("seed") if isinstance(value, dict) else None, "seed")
    except BadRequest as e:
        return e.message
    return None


def safe_errors(errors) -> list:
    """pydantic's errors without the echoed input (it may be huge, or not encodable), strings made safe. FastAPI's
    error for a body that is not JSON ends its ``loc`` with the parser's character offset, not a field, and says
    only "JSON decode error": its message says where and why (``invalid JSON at character 8 ...: Expecting
    value``)."""
    out = []
    for e in errors if isinstance(errors, list) else []:
        if isinstance(e, dict):
            loc = [p if isinstance(p, int) else wire_text(p, 60) for p in e.get("loc", ())]
            msg = wire_text(e.get("msg", ""), 300)
            if e.get("type") == "json_invalid" and loc and isinstance(loc[-1], int):
                why = (e.get("ctx") or {}).get("error")
                msg = f"invalid JSON at character {loc[-1]} (counting from 0)" + (f": {wire_text(why, 100)}" if why else "")
            out.append({"loc": loc, "msg": msg, "type": wire_text(e.get("type", ""), 60)})
    return out


def _error_sentence(errors: list) -> str:
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    if first.get("type") == "json_invalid":  # (its loc is a character offset, named in the message)
        return f"the request body: {first['msg']}"
    loc = [str(p) for p in first["loc"] if p not in ("body",)]
    return f"{'.'.join(loc) or 'the request'}: {first['msg']}"


def ws_error_frame(text: str) -> str:
    """An error frame of OpenEnv's WebSocket loop as the protocol documents it: a protocol error's own code in
    ``data.code`` (OpenEnv says ``EXECUTION_ERROR`` and puts it at the head of the message); a validation error
    ``BAD_REQUEST`` naming the first field, its ``errors`` without the echoed input (as over HTTP)."""
    try:
        frame = json.loads(text)
        data = frame["data"]
        code = data.get("code")
    except (ValueError, TypeError, KeyError, AttributeError):
        return text
    if code == "EXECUTION_ERROR":
        head = str(data.get("message", "")).split(":", 1)[0]
        if head not in PROTOCOL_CODES:
            return text
        data["code"] = head
    elif code == "VALIDATION_ERROR":
        errors = safe_errors(data.get("errors"))
        frame["data"] = {"message": f"BAD_REQUEST: {_error_sentence(errors)}", "code": "BAD_REQUEST",
                         "errors": errors}
    else:
        return text
    return json.dumps(frame)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets ``413`` (a declared length at once, a chunked
    body once it passes the limit); one that does not arrive within ``timeout`` seconds ``408``; a body sent
    without a JSON Content-Type (but to ``/mcp``), bytes that are not UTF-8, a JSON body with a string that is
    not valid Unicode, or nested too deep, ``422 BAD_REQUEST`` saying which (naming where), as does an
    HTTP ``/reset`` whose seed is not an int (``reset_seed_problem``); OpenEnv's task API (``/{env}/splits``,
    ``/tasks``, ``/num_tasks``, ``/task``, ``/task_range``), any method and body, ``404``. On ``/ws``, a frame
    that is not a JSON object, holds such a string or nests too deep gets a ``BAD_REQUEST`` error frame and the
    session goes on (OpenEnv's loop would close it), and OpenEnv's error frames are rewritten to the documented
    codes (``ws_error_frame``)."""

    def __init__(self, app, limit: int, timeout: float = DEFAULT_BODY_TIMEOUT):
        self.app, self.limit, self.timeout = app, limit, timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            rpc = scope.get("path") == MCP_PATH
            return await self.app(scope, self._frames(receive, send, rpc), self._errors(send))
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if _TASK_PATH.fullmatch(scope.get("path", "")):
            return await self._answer(send, 404, "NOT_FOUND", NO_TASK_API)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                return await self._answer(send, 413, "BODY_TOO_LARGE",
                                          f"request body too large: the limit is {self.limit} bytes")
        raw, first, stopped = await read_body(receive, self.timeout, self.limit)  # first: the client left
        if stopped == "timeout":
            return await self._answer(send, 408, "REQUEST_TIMEOUT",
                                      f"the request body did not arrive within {self.timeout:g} s "
                                      "(shorter than its Content-Length?)")
        if stopped == "too large":
            return await self._answer(send, 413, "BODY_TOO_LARGE",
                                      f"request body too large: the limit is {self.limit} bytes")
        if raw:
            problem = None
            # /mcp is OpenEnv's JSON-RPC endpoint: it reads any Content-Type and answers a parse error itself
            if scope.get("method") in BODY_METHODS and scope.get("path") != MCP_PATH:
                problem = content_type_problem(scope)
            problem = problem or utf8_problem(raw) or parse_problem(raw)
            if not problem and scope.get("method") == "POST" and scope.get("path") == "/reset":
                problem = reset_seed_problem(raw)
            if problem:
                return await self._answer(send, 422, "BAD_REQUEST", problem)
        await self.app(scope, replaying(raw, first, receive), send)

    def _frames(self, receive, send, rpc: bool = False):
        """The socket's frames, a bad one answered here (on ``/mcp``, whose frames are JSON-RPC requests, as a
        JSON-RPC error; their form is ``scope_envs.serve.rpc``'s to check)."""
        async def checked():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes")
                problem = _frame_problem(raw, shape=not rpc)
                if problem is None:
                    return message
                if rpc:
                    frame = json.dumps(rpc_error(None, INVALID_REQUEST, problem, "BAD_REQUEST"))
                else:
                    frame = json.dumps({"type": "error", "data": {"message": f"BAD_REQUEST: {problem}",
                                                                  "code": "BAD_REQUEST"}})
                await send({"type": "websocket.send", "text": frame})

        return checked

    @staticmethod
    def _errors(send):
        async def rewritten(message):
            if message["type"] == "websocket.send":
                text = message.get("text")
                if text is not None and text.startswith('{"type":"error"'):
                    message = {**message, "text": ws_error_frame(text)}
            await send(message)

        return rewritten

    async def _answer(self, send, status: int, code: str, detail: str):
        body = json.dumps({"detail": detail, "code": code}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


def _json_kind(value) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _frame_problem(raw, shape: bool = True) -> Optional[str]:
    """Why a WebSocket frame cannot go on; ``shape``: a ``/ws`` frame, which must be ``{"type", "data": {...}}``."""
    if raw is None:
        return None
    value, problem = _parsed(raw)
    if problem or value is _NOT_JSON:  # (not JSON: OpenEnv answers INVALID_JSON)
        return problem
    if not shape:
        return json_problem(value)
    if not isinstance(value, dict):
        return f'a message is a JSON object {{"type": ..., "data": {{...}}}}, got {_json_kind(value)}'
    if "data" in value and value["data"] is not None and not isinstance(value["data"], dict):
        return f"data must be a JSON object, got {_json_kind(value['data'])}"
    return json_problem(value)


# the counts a session's env is built from, with make's own bounds (max_turns, families, members) and train-llm's
# --pool-size (1,024; SCOPE's pool is 5), refused as a 422 before the session builds anything
KWARG_INT_BOUNDS = {"max_turns": (1, MAX_EPISODE_TURNS), "families": (1, FAMILIES), "members": (1, MAX_MEMBERS),
                    "pool_size": (1, MAX_POOL_SIZE)}
# the rest: |value| <= MAX_KWARG_INT, a seed 0 to 2**63-1
MAX_KWARG_INT = 1_000_000


def _finite(value, name):
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(v, f"{name}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite(v, f"{name}[{i}]")


def check_kwargs(env_id: str, surface: str, kwargs: dict, probe=None) -> None:
    """``make``'s keyword arguments, checked against the types of the id's defaults: a non-finite number,
    a float or bool where the default is an int, an int out of range is a ``ValueError`` naming the key
    (``make`` would take some of them and fail later, mid-episode or allocating gigabytes)."""
    for key, value in kwargs.items():
        _finite(value, key)
    if not kwargs:
        return
    default = scope_envs.make(env_id, surface=surface)
    try:
        _check_types(kwargs, default.unwrapped, None if probe is None else probe.unwrapped)
    finally:
        default.close()


def _check_types(kwargs: dict, base, served) -> None:
    """``check_kwargs``'s types and ranges: each key against the attribute of that name on the default env
    ``base`` or its game (else on the served env ``served`` or its game)."""
    for key, value in kwargs.items():
        known = next((vars(o)[key] for o in (base, getattr(base, "game", None), served, getattr(served, "game", None))
                      if o is not None and key in vars(o)), None)
        if isinstance(known, bool):
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false, got {value!r:.60}")
        elif (isinstance(known, int) or key in KWARG_INT_BOUNDS
              or (type(value) is int and not isinstance(known, float))):
            # (so is a count the env keeps no int of: pool_size, families, members (kept as a list): KWARG_INT_BOUNDS)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{key} must be an integer, got {value!r:.60}")
            low, high = KWARG_INT_BOUNDS.get(key, (0, MAX_SEED) if "seed" in key else (-MAX_KWARG_INT, MAX_KWARG_INT))
            if not low <= value <= high:
                raise ValueError(f"{key} must be an integer from {low} to {high}, got {value}")
        elif isinstance(known, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{key} must be a number, got {value!r:.60}")


def create_app(env_id: str, surface: str = "act", kwargs: Optional[dict] = None, *,
               max_sessions: int = DEFAULT_MAX_SESSIONS, idle_timeout: Optional[float] = DEFAULT_IDLE_TIMEOUT,
               max_body_bytes: int = DEFAULT_MAX_BODY, max_vec_sessions: int = DEFAULT_MAX_VEC_SESSIONS,
               max_num_envs: int = DEFAULT_MAX_NUM_ENVS, user_llm=None, user_llm_options: Optional[UserLLMOptions] = None,
               user_adapter_dir=None, body_timeout: float = DEFAULT_BODY_TIMEOUT) -> FastAPI:
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
    check_kwargs(env_id, surface, kwargs)  # first: make(members=10**9) would build for minutes before the check
    probe = config.make()  # a bad id or kwargs fails here, before anything listens
    try:
        check_kwargs(env_id, surface, kwargs, probe)
    except ValueError:
        probe.close()
        raise
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
        "reset_options": sorted(RESET_OPTIONS),
        "user_llm": None if served is None else {"plays": role, **served.describe()},
        "limits": {"max_sessions": max_sessions, "idle_timeout_s": idle_timeout, "max_body_bytes": max_body_bytes,
                   "max_vec_sessions": max_vec_sessions, "max_num_envs": max_num_envs},
    }
    probe.close()

    app = FastAPI(title=f"scope-envs: {env_id} ({surface})")
    server = ScopeEnvServer(
        functools.partial(ScopeEnvironment, config), ScopeAction, ScopeObservation, env_name=env_id,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout),
        state_cls=ScopeState)
    server.register_routes(app, mode=os.environ.get("OPENENV_MODE", "simulation"))  # (as OpenEnv's create_app)

    @app.exception_handler(ProtocolError)
    async def protocol_error(request: Request, exc: ProtocolError):
        return JSONResponse(status_code=exc.status_code, content={"detail": exc.message, "code": exc.code})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        errors = safe_errors(exc.errors())
        return JSONResponse(status_code=422, content={"detail": _error_sentence(errors), "code": "BAD_REQUEST",
                                                      "errors": errors})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if isinstance(exc.detail, list):
            errors = safe_errors(exc.detail)
            content = {"detail": _error_sentence(errors), "code": "BAD_REQUEST", "errors": errors}
        else:
            content = {"detail": wire_text(exc.detail, 500), "code": "NOT_FOUND" if exc.status_code == 404 else "HTTP_ERROR"}
        return JSONResponse(status_code=exc.status_code, content=content, headers=getattr(exc, "headers", None))

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
    app.add_middleware(SessionGuard, server=server)  # (inside the body limit: it reads bodies already checked)
    app.add_middleware(BodyLimit, limit=max_body_bytes, timeout=body_timeout)
    app.state.scope_spec = spec
    app.state.vec_sessions = vec_sessions
    return app
