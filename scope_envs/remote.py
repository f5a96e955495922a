"""A served scope env as a PettingZoo ``ParallelEnv`` (and the batched endpoint as a vec env).

``scope-envs serve ID`` (``scope_envs.serve``) serves an id over OpenEnv's protocol; this module is the
client side, so that every trainer integration of the package runs unchanged against an env on another
machine, in another process or in a container::

    from scope_envs.remote import RemoteParallelEnv, RemoteVecEnv

    env = RemoteParallelEnv("http://127.0.0.1:8000")                     # both seats, as make(ID)
    env = RemoteParallelEnv("http://127.0.0.1:8000", agents=["agent_0"])  # the user seat played on the server
    vec = RemoteVecEnv("http://127.0.0.1:8000", num_envs=256)              # as make_vec(ID, 256)

``RemoteParallelEnv`` drives the agents it names (``agents=``, default every possible agent) through one
WebSocket session of OpenEnv's own client (``openenv.core.EnvClient``); the server plays any other seat
with its built-in players, as ``SingleAgentView`` plays its ``others``. Its spaces are built once from the
server's ``/scope/spec`` and returned by identity; episodes are the in-process env's for the same seed.
The package's wrappers take it as they take a local env: ``SingleAgentView(RemoteParallelEnv(url,
agents=["agent_0"]))`` is a ``gymnasium.Env`` for SB3 (the server plays the other seats).
``RemoteVecEnv`` has ``make_vec``'s API (``reset(seed, options, slots)``, ``step({agent: (N,) ints})``,
arrays out), so ``GymVectorEnv`` and ``scope_envs.integrations.sb3.SB3VecEnv`` take it as they take a local
vec env; ``add_snapshot(policy)`` pushes a user policy to a population's checkpoint pool on the server.
At text level, ``RemoteParallelEnv.add_adapter(name)`` adds the server's LLM with a LoRA adapter to that
pool instead (``scope-envs serve ... --surface text --user-llm SPEC``).

Errors: a bad action is a ``ValueError`` (as in-process); an episode that the server no longer has (the
connection dropped, the server restarted, the session idled past its timeout) is ``SessionLost``: a step
never starts a new episode in its place; ``reset()`` does, in a new session where the old one is gone.
``reset`` options: the client sends the keys the server's env reads (``/scope/spec``'s ``reset_options``)
and drops the others, as the in-process env ignores them (PettingZoo's api test passes one); the server
itself refuses a key it does not read (``BAD_REQUEST``), and ``RemoteVecEnv.reset`` forwards every key.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
import weakref
from typing import Any, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from scope_envs.core.checks import check_actions, short_repr
from scope_envs.core.surfaces import Transcript
from scope_envs.serve.codec import pack, unpack
from scope_envs.vec.base import holds_bool

__all__ = ["RemoteParallelEnv", "RemoteVecEnv", "SessionLost", "build_space", "fetch_spec"]


class SessionLost(RuntimeError):
    """The server no longer has this client's episode (or session); ``reset()`` starts a new one."""


class _Http:
    """JSON over one kept-alive HTTP connection (a batched step is one request; a new TCP connection per
    request would cost as much as the step). A dropped connection is reopened for the next request: the
    server keys its sessions by id, so a lost session is reported by the server, never replaced."""

    def __init__(self, base_url: str, timeout: float):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http://HOST:PORT or https://HOST:PORT, got {base_url!r}")
        self.base_url, self.parts, self.timeout = base_url, parts, timeout
        self.conn = None

    def __call__(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            if self.conn is None:
                cls = http.client.HTTPSConnection if self.parts.scheme == "https" else http.client.HTTPConnection
                self.conn = cls(self.parts.hostname, self.parts.port, timeout=self.timeout)
            try:
                self.conn.request(method, self.parts.path.rstrip("/") + path, body=data,
                                  headers={"content-type": "application/json"})
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.HTTPException, ConnectionError, OSError) as e:
                self.close()
                if attempt or isinstance(e, TimeoutError):
                    raise SessionLost(f"cannot reach the server at {self.base_url}: {e}") from None
        if response.status >= 400:
            _raise_http(response.status, raw)
        return json.loads(raw)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _raise_http(status: int, raw: bytes):
    try:
        body = json.loads(raw)
    except ValueError:
        body = {"detail": raw[:500].decode(errors="replace")}
    detail = body.get("detail", body)
    if status == 422:
        raise ValueError(detail if isinstance(detail, str) else json.dumps(detail)[:2000])
    if status in (404, 409, 410):
        raise SessionLost(detail)
    raise RuntimeError(f"server answered {status}: {detail}")


def fetch_spec(base_url: str, timeout: float = 10.0) -> dict:
    """The served id's spec: agents, roles, spaces, boot id and limits (``GET /scope/spec``)."""
    http_ = _Http(base_url.rstrip("/"), timeout)
    try:
        return http_("GET", "/scope/spec")
    finally:
        http_.close()


def build_space(desc: dict):
    """The gymnasium space a server's ``/scope/spec`` describes."""
    kind = desc["type"]
    if kind == "Dict":
        return spaces.Dict({k: build_space(v) for k, v in desc["spaces"].items()})
    if kind == "Box":
        dtype = np.dtype(desc["dtype"])
        return spaces.Box(np.asarray(desc["low"], dtype), np.asarray(desc["high"], dtype), tuple(desc["shape"]), dtype)
    if kind == "Discrete":
        return spaces.Discrete(desc["n"], start=desc.get("start", 0))
    if kind in ("Text", "Transcript"):  # a Transcript is the text surface's observation space (its own dtype)
        cls = Transcript if kind == "Transcript" else spaces.Text
        return cls(desc["max_length"], min_length=desc["min_length"], charset=desc["charset"])
    raise ValueError(f"unknown space type {kind!r} in the server's spec")


def _wire_int(value):
    """An int (numpy's too) as a JSON int; anything else as it is, for the server to refuse naming the field, as
    the in-process env refuses it (``int()`` here would play a seed of 1.5 or True as 1, and "3" as 3)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return value.item() if isinstance(value, np.generic) else value  # (a numpy float as JSON takes it)


def _openenv_client(base_url: str, timeout: float):
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient

    class ScopeEnvClient(EnvClient):
        """OpenEnv's WebSocket client with the scope models' payloads (dicts in, dicts out)."""

        def _step_payload(self, action):
            return action

        def _parse_result(self, payload):
            return StepResult(observation=payload.get("observation", {}), reward=payload.get("reward"),
                              done=payload.get("done", False))

        def _parse_state(self, payload):
            return payload

    return ScopeEnvClient(base_url=base_url, message_timeout_s=timeout).sync()


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:  # closing a connection that is already gone
        pass


def _release_client(client) -> None:
    """Close an OpenEnv sync client: ``RemoteParallelEnv.close``, and its finalizer where an env is dropped
    without ``close()``. The client's event-loop thread holds the client (so it is never collected, nor its
    thread stopped, by itself): an env left so kept its thread, its loop's descriptors and its socket (a server
    connection) for the life of the process. Where the env is collected on that loop thread itself (a reference
    cycle collected there), ``close`` would wait on its own loop: another thread closes it."""
    if getattr(client, "_loop_thread", None) is threading.current_thread():
        threading.Thread(target=_close_quietly, args=(client,), daemon=True).start()
    else:
        _close_quietly(client)


def _end_vec_session(http: "_Http", session_id: str) -> None:
    """Delete a batched session and close its connection: ``RemoteVecEnv.close``, and its finalizer where an env is
    dropped without ``close()`` (the session had held one of the server's ``--max-vec-sessions`` until its idle
    timeout)."""
    try:
        http("DELETE", f"/scope/vec/{session_id}")
    except (SessionLost, RuntimeError, ValueError):
        pass  # already gone with the server
    finally:
        http.close()


class RemoteSurface:
    """The served surface's name (``"act"`` or ``"text"``), where wrappers read ``env.unwrapped.surface``."""

    def __init__(self, name: str):
        self.name = name


class RemoteParallelEnv(ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose episodes run on a ``scope-envs serve`` server (see the module)."""

    def __init__(self, base_url: str, agents: Optional[list[str]] = None, timeout: float = 60.0):
        if isinstance(agents, str):  # not its characters' names
            raise ValueError(f"agents is a list of agent names, got the string {agents!r}: agents=[{agents!r}]")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.spec = fetch_spec(self.base_url)
        possible = self.spec["possible_agents"]
        if agents is not None:
            unknown = [a for a in agents if a not in possible]
            if not agents or unknown:
                raise ValueError(f"agents must name some of the served agents {possible}; unknown: {unknown}")
        self.possible_agents = [a for a in possible if agents is None or a in agents]
        self.roles = {a: self.spec["roles"][a] for a in self.possible_agents}
        self._obs_spaces = {a: build_space(self.spec["observation_spaces"][a]) for a in self.possible_agents}
        self._act_spaces = {a: build_space(self.spec["action_spaces"][a]) for a in self.possible_agents}
        self.text = self.spec["surface"] == "text"
        self.surface = RemoteSurface(self.spec["surface"])  # what SingleAgentView and LegalActions read
        self.metadata = {"render_modes": [], "is_parallelizable": True,
                         "name": f"remote_{self.spec['metadata'].get('name', self.spec['env_id'])}"}
        self.render_mode = None
        self.agents: list[str] = []
        self.episode_id: Optional[str] = None
        self._lost: Optional[str] = None  # why the last episode is gone, until the next reset
        self._client = None
        self._release = None  # closes _client once: at close(), or when this env is collected without it
        self._adapter: Optional[str] = None  # add_adapter's name, sent with the next reset

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        data: dict[str, Any] = {"drive": list(self.possible_agents)}
        if seed is not None:
            data["seed"] = _wire_int(seed)
        if options:
            known = self.spec.get("reset_options")  # as the in-process env, keys it does not read are ignored
            data["options"] = options if known is None or not isinstance(options, dict) else \
                {k: v for k, v in options.items() if k in known}
        if self._adapter is not None:  # sent once: a refused name is this reset's ValueError, then dropped
            data["adapter"], self._adapter = self._adapter, None
        self.agents, self._lost = [], None
        try:
            result = self._call(lambda c: c.reset(**data))
        except SessionLost:  # the session is gone (idle past the server's timeout, or the connection dropped):
            self.close()     # a reset asks for a new episode, so it opens a new session for it, once
            self.agents, self._lost = [], None
            result = self._call(lambda c: c.reset(**data))
        return self._read(result, first=True)

    def add_adapter(self, name: str) -> None:
        """Add the server LLM generating with LoRA adapter ``name`` to a population's checkpoint pool on
        the server (text level; a server with ``--user-llm``), as the next ``reset`` starts: the pool takes
        snapshots between episodes. A name the server cannot run is that reset's ``ValueError``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"an adapter name is a non-empty string, got {name!r:.80}")
        self._adapter = name

    def step(self, actions: dict):
        if self._lost is not None:
            raise SessionLost(self._lost)
        if self.episode_id is None:
            raise ValueError("step() called before reset(); call reset(seed=...) first")
        if not self.agents:
            raise ValueError("step() called on a finished episode; call reset() first")
        check_actions(actions)  # as the in-process env
        wire = {}
        for agent, act in actions.items():
            if isinstance(act, (str, np.str_)):
                wire[agent] = str(act)
            elif isinstance(act, (int, np.integer)) and not isinstance(act, (bool, np.bool_)):
                wire[agent] = int(act)
            else:  # as in-process: a wrong type is the programmer's ValueError, named
                raise ValueError(f"{agent}: an action must be an int act or a string message, got {act!r:.80}")
        result = self._call(lambda c: c.step({"actions": wire, "episode_id": self.episode_id}))
        return self._read(result, first=False)

    def state(self) -> dict:
        """The server session's state (``ScopeState``: episode id, steps, live and driven agents, member)."""
        return self._call(lambda c: c.state())

    def close(self):
        release, self._release, self._client = self._release, None, None
        if release is not None:
            release()

    # -- the wire ---------------------------------------------------------------------------------------
    def _call(self, fn):
        from websockets.exceptions import ConnectionClosed

        if self._client is None:
            self._client = _openenv_client(self.base_url, self.timeout)
            self._release = weakref.finalize(self, _release_client, self._client)
            self._release.atexit = False  # (at exit the loop thread, a daemon, ends with the process)
        try:
            return fn(self._client)
        except RuntimeError as e:
            message = str(e)
            if "Server error:" not in message:
                raise
            text = message.split("Server error:", 1)[1].rsplit("(code:", 1)[0].strip()
            if text.startswith(("BAD_REQUEST:", "Invalid message")):
                raise ValueError(text.removeprefix("BAD_REQUEST:").strip()) from None
            if text.startswith(("NO_EPISODE:", "SESSION_LOST:", "EPISODE_OVER:")):
                if text.startswith("SESSION_LOST:"):
                    self.close()  # the server closed this session: the next reset opens a new one
                self.agents, self._lost = [], text
                raise SessionLost(text) from None
            raise RuntimeError(f"the server could not run the request: {text}") from None
        except (ConnectionClosed, ConnectionError, OSError, TimeoutError) as e:
            self.close()  # the server-side session is gone with its socket: the next reset opens a new one
            self._lost = (f"the connection to {self.base_url} was lost ({type(e).__name__}: {e}); "
                          f"episode {self.episode_id} is gone: call reset()")
            self.agents = []
            raise SessionLost(self._lost) from None

    def _read(self, result, first: bool):
        payload = result.observation
        self.episode_id = payload.get("episode_id")
        entries = payload["agents"]
        obs, infos = {}, {}
        rewards, terms, truncs = {}, {}, {}
        for agent, e in entries.items():
            if self.text:
                obs[agent] = np.str_(e["observation"])  # as the in-process env (the AEC api test reads its dtype)
            else:
                obs[agent] = {"action_mask": np.asarray(e["action_mask"], np.int8),
                              "observation": np.asarray(e["observation"], np.float32)}
            infos[agent] = e["info"]
            rewards[agent], terms[agent], truncs[agent] = e["reward"], e["terminated"], e["truncated"]
        self.agents = list(payload["live"])
        if first:
            return obs, infos
        return obs, rewards, terms, truncs, infos


class RemoteVecEnv:
    """``make_vec``'s API over a server's batched endpoint: N episodes per request (see the module). The slots'
    scalar envs (a local vec env's ``envs``) stay on the server, so ``SB3VecEnv.get_attr`` reads only the
    adapter's own per-slot values (``action_masks``, ``member``) from it."""

    def __init__(self, base_url: str, num_envs: int = 16, timeout: float = 120.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.spec = fetch_spec(self.base_url)
        self._http = _Http(self.base_url, timeout)
        opened = self._http("POST", "/scope/vec", {"num_envs": num_envs})
        self.session_id = opened["session_id"]
        self.num_envs = opened["num_envs"]
        self.engine = opened["engine"]  # "batched", or "loop": the scalar envs one at a time
        self.possible_agents = list(opened["possible_agents"])
        self._obs_spaces = {a: build_space(self.spec["observation_spaces"][a]) for a in self.possible_agents}
        self._act_spaces = {a: build_space(self.spec["action_spaces"][a]) for a in self.possible_agents}
        self._final_obs = False  # GymVectorEnv sets it: keep finished episodes' last observations
        self._closed = False
        self._started = False  # as make_vec, a step before any reset is the caller's ValueError
        self._end = weakref.finalize(self, _end_vec_session, self._http, self.session_id)
        self._end.atexit = False  # at exit the server's idle timeout frees it: no request while Python shuts down

    @property
    def unwrapped(self):
        return self

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    def reset(self, seed=None, options=None, slots=None, streams=None):
        if seed is not None:
            seed = _wire_int(seed) if np.isscalar(seed) else [_wire_int(s) for s in seed]
        body = {"seed": seed, "options": options, "slots": None if slots is None else [int(s) for s in slots]}
        if streams is not None:  # the slots' generators, sent only when given
            body["streams"] = [int(s) for s in streams]
        out = unpack(self._post("reset", body))
        self._started = True
        return out["obs"], out["infos"]

    def step(self, actions: dict):
        if not self._started and not self._closed:
            raise ValueError("step() called before reset(); call reset(seed=...) first")
        check_actions(actions, "an action per slot")  # as make_vec
        # int arrays travel as int64; any other (float, bool) as it is, for the server to refuse as make_vec
        # does (cast here, an act of 1.7 would be played as 1)
        wire = {}
        for a, v in actions.items():
            held_bool = holds_bool(v)
            try:
                v = np.asarray(v)
            except ValueError:  # a ragged list: numpy's own error names no agent
                raise ValueError(f"{a}: actions must be an int array of shape ({self.num_envs},), got "
                                 f"{type(v).__name__} {short_repr(v)}") from None
            if held_bool:  # numpy reads True as act 1: sent as bools, for the server to refuse as make_vec does
                v = v.astype(bool)
            wire[a] = pack(v.astype(np.int64, copy=False) if v.dtype.kind in "iu" else v)
        out = unpack(self._post("step", {"actions": wire, "final_obs": bool(self._final_obs)}))
        return out["obs"], out["rewards"], out["terminations"], out["truncations"], out["infos"]

    def add_snapshot(self, policy) -> int:
        """Push a user policy to every slot's checkpoint pool: a wire dict (``scope_envs.serve.snapshot``) or
        a torch ``Sequential`` of ``Linear`` layers. Returns the pool's size."""
        if not isinstance(policy, dict):
            from scope_envs.serve.snapshot import mlp_wire

            policy = mlp_wire(policy)
        return self._post("snapshot", {"snapshot": policy})["pool_entries"]

    def close(self):
        if not self._closed:
            self._closed = True
            self._end()

    def _post(self, route: str, body: dict) -> dict:
        if self._closed:
            raise SessionLost("this batched session was closed")
        return self._http("POST", f"/scope/vec/{self.session_id}/{route}", body)
