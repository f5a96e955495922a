"""The app as an importable ASGI object, configured by environment variables (the container's entry).

OpenEnv's manifest (``openenv.yaml``) and ASGI servers (``uvicorn scope_envs.serve.asgi:app``) name an app
by module path; this module builds it from::

    SCOPE_ENV_ID=p4g-cotrain SCOPE_ENV_SURFACE=act SCOPE_ENV_KWARGS='{"max_turns": 8}' \
        uvicorn scope_envs.serve.asgi:app --host 0.0.0.0 --port 8000

``SCOPE_ENV_ID`` is required; ``SCOPE_ENV_SURFACE`` defaults to ``act``; ``SCOPE_ENV_KWARGS`` is a JSON
object of ``make`` keyword arguments. ``SCOPE_MAX_SESSIONS`` and ``SCOPE_IDLE_TIMEOUT`` set the limits.
``SCOPE_USER_LLM`` is ``--user-llm``'s backend spec (the user seat as an LLM, text surface) and
``SCOPE_USER_ADAPTER_DIR`` its ``--user-adapter-dir`` (``scope_envs.serve.llm``). uvicorn by itself never times
out a request whose headers do not end: add ``--http scope_envs.serve.protocol:HeaderTimeoutProtocol`` (30 s).
"""

from __future__ import annotations

import json
import math
import os

from scope_envs.serve.llm import UserLLMError

SURFACES = ("act", "text")


class ConfigError(RuntimeError):
    """An environment variable the app cannot be built from (the message names it and says what is wrong)."""


def _number(environ, name: str, cast, default, low: float, high: float):
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = cast(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {'an integer' if cast is int else 'a number'}, got {raw[:40]!r}") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{name} must be from {low:g} to {high:g}, got {raw[:40]!r}")
    return value


def from_environment(environ=os.environ):
    """The app the environment variables describe; a ``ConfigError`` (a ``RuntimeError``) naming the variable
    when one cannot serve."""
    import scope_envs

    env_id = environ.get("SCOPE_ENV_ID")
    if not env_id:
        raise ConfigError("set SCOPE_ENV_ID to the id to serve (`scope-envs list` prints them)")
    if env_id not in scope_envs.registry:
        raise ConfigError(f"SCOPE_ENV_ID: unknown environment id {env_id[:60]!r}; `scope-envs list` prints them")
    surface = environ.get("SCOPE_ENV_SURFACE") or "act"
    if surface not in SURFACES:
        raise ConfigError(f"SCOPE_ENV_SURFACE must be act or text, got {surface[:40]!r}")
    try:
        kwargs = json.loads(environ.get("SCOPE_ENV_KWARGS") or "{}")
    except json.JSONDecodeError as e:
        raise ConfigError(f"SCOPE_ENV_KWARGS is not JSON: {e}") from None
    if not isinstance(kwargs, dict):
        raise ConfigError("SCOPE_ENV_KWARGS must be a JSON object of make() keyword arguments")
    max_sessions = _number(environ, "SCOPE_MAX_SESSIONS", int, None, 1, 4096)
    idle_timeout = _number(environ, "SCOPE_IDLE_TIMEOUT", float, None, 1e-3, 7 * 86400.0)
    llm = {}
    if environ.get("SCOPE_USER_LLM"):
        llm = {"user_llm": environ["SCOPE_USER_LLM"], "user_adapter_dir": environ.get("SCOPE_USER_ADAPTER_DIR") or None}
    # OpenEnv's server loads Gradio (about 4 s): a variable that cannot serve is said before it loads
    from scope_envs.serve.app import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, create_app

    max_sessions = DEFAULT_MAX_SESSIONS if max_sessions is None else max_sessions
    idle_timeout = DEFAULT_IDLE_TIMEOUT if idle_timeout is None else idle_timeout
    try:
        return create_app(env_id, surface, kwargs, max_sessions=max_sessions, idle_timeout=idle_timeout, **llm)
    except UserLLMError as e:
        name = "SCOPE_USER_ADAPTER_DIR" if e.argument == "--user-adapter-dir" else "SCOPE_USER_LLM"
        raise ConfigError(f"{name}: {e}") from None
    except (ValueError, TypeError) as e:  # make() or check_kwargs refused the keyword arguments
        raise ConfigError(f"SCOPE_ENV_KWARGS: cannot serve {env_id} with {json.dumps(kwargs)[:300]}: {e}") from None


try:
    app = from_environment()
except ConfigError as e:  # one line naming the variable, not an import traceback (uvicorn exits with status 1)
    raise SystemExit(f"scope_envs.serve.asgi: {e}") from None
