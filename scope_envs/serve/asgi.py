"""The app as an importable ASGI object, configured by environment variables (the container's entry).

OpenEnv's manifest (``openenv.yaml``) and ASGI servers (``uvicorn scope_envs.serve.asgi:app``) name an app
by module path; this module builds it from::

    SCOPE_ENV_ID=p4g-cotrain SCOPE_ENV_SURFACE=act SCOPE_ENV_KWARGS='{"max_turns": 8}' \
        uvicorn scope_envs.serve.asgi:app --host 0.0.0.0 --port 8000

``SCOPE_ENV_ID`` is required; ``SCOPE_ENV_SURFACE`` defaults to ``act``; ``SCOPE_ENV_KWARGS`` is a JSON
object of ``make`` keyword arguments. ``SCOPE_MAX_SESSIONS`` and ``SCOPE_IDLE_TIMEOUT`` set the limits.
``SCOPE_USER_LLM`` is ``--user-llm``'s backend spec (the user seat as an LLM, text surface) and
``SCOPE_USER_ADAPTER_DIR`` its ``--user-adapter-dir`` (``scope_envs.serve.llm``).
"""

from __future__ import annotations

import json
import os

from scope_envs.serve.app import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, create_app
from scope_envs.serve.llm import UserLLMError


def from_environment(environ=os.environ):
    env_id = environ.get("SCOPE_ENV_ID")
    if not env_id:
        raise RuntimeError("set SCOPE_ENV_ID to the id to serve (`scope-envs list` prints them)")
    try:
        kwargs = json.loads(environ.get("SCOPE_ENV_KWARGS", "{}"))
    except json.JSONDecodeError as e:
        raise RuntimeError(f"SCOPE_ENV_KWARGS is not JSON: {e}") from None
    if not isinstance(kwargs, dict):
        raise RuntimeError("SCOPE_ENV_KWARGS must be a JSON object of make() keyword arguments")
    llm = {}
    if environ.get("SCOPE_USER_LLM"):
        llm = {"user_llm": environ["SCOPE_USER_LLM"], "user_adapter_dir": environ.get("SCOPE_USER_ADAPTER_DIR") or None}
    try:
        return create_app(env_id, environ.get("SCOPE_ENV_SURFACE", "act"), kwargs,
                          max_sessions=int(environ.get("SCOPE_MAX_SESSIONS", DEFAULT_MAX_SESSIONS)),
                          idle_timeout=float(environ.get("SCOPE_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT)), **llm)
    except UserLLMError as e:
        name = "SCOPE_USER_ADAPTER_DIR" if e.argument == "--user-adapter-dir" else "SCOPE_USER_LLM"
        raise RuntimeError(f"{name}: {e}") from None


app = from_environment()
