"""The batched endpoint: N episodes of the served id stepped together through ``scope_envs.make_vec``.

A remote act-level trainer would otherwise pay one HTTP round trip per episode step; here one request
steps all N slots, with ``make_vec``'s API (a leading batch axis, auto-reset in the same step) and the
arrays packed (``scope_envs.serve.codec``). Routes, all JSON over HTTP:

* ``POST /scope/vec`` ``{"num_envs": N}`` → ``{"session_id", "engine": "batched" | "loop", ...}``
* ``POST /scope/vec/{id}/reset`` ``{"seed": s | [s_0..], "options": {...} | [...], "slots": [...],
  "streams": [...]}`` → ``{obs, infos}`` (``streams``: each slot's generator, ``BatchedVecEnv.reset``)
* ``POST /scope/vec/{id}/step`` ``{"actions": {agent: packed int array (N,)}, "final_obs": false}``
  → ``{obs, rewards, terminations, truncations, infos}``
* ``POST /scope/vec/{id}/snapshot`` ``{"snapshot": {...}}``: add a user policy to every slot's checkpoint pool
* ``DELETE /scope/vec/{id}``

Sessions are isolated (each holds its own vec env), limited in number, and closed after sitting idle past
the timeout. A session id carries the server's boot id, so an id from before a restart is answered
``410 SESSION_LOST`` ("the server restarted"), an expired one ``410`` too, and an id never issued ``404``.
"""

from __future__ import annotations

import asyncio
import collections
import re
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Union

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt
from starlette.concurrency import run_in_threadpool

from scope_envs.serve.codec import pack, unpack
from scope_envs.serve.environment import ServeConfig, check_options, check_seed
from scope_envs.serve.errors import AtCapacity, BadRequest, NoEpisode, SessionLost, UnknownSession
from scope_envs.serve.snapshot import MLPSnapshot, SnapshotError
from scope_envs.wrappers import CheckpointPool
from scope_envs.vec.batched import BatchedVecEnv

MAX_EXPIRED_REMEMBERED = 4096
SESSION_ID = re.compile(r"[0-9a-f]{12}\.[0-9a-f]{32}")  # BOOT.UUID, as ``open`` makes them (the boot id: app.py)
SHOWN_ID_CHARS = 40  # of an id never issued, the 404 echoes this many characters (a URL's path may be tens of KB)


def shown_id(sid: str) -> str:
    """An unknown session id as an answer names it: whole, or its first ``SHOWN_ID_CHARS`` characters, '…' and
    its length."""
    return repr(sid) if len(sid) <= SHOWN_ID_CHARS else f"{sid[:SHOWN_ID_CHARS]!r}… ({len(sid)} characters)"


class OpenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_envs: StrictInt = Field(..., ge=1)


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: Optional[Union[StrictInt, List[StrictInt]]] = None
    options: Optional[Union[Dict[str, Any], List[Optional[Dict[str, Any]]]]] = None
    slots: Optional[List[StrictInt]] = None
    streams: Optional[List[StrictInt]] = None


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actions: Dict[str, Any]
    final_obs: StrictBool = False


class SnapshotRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    snapshot: Dict[str, Any]


class VecSession:
    def __init__(self, vec):
        self.vec = vec
        self.lock = threading.Lock()  # one request at a time per session: the vec env is not reentrant
        self.last = time.monotonic()
        self.started = False


class VecSessions:
    """The batched sessions of one server: a limit, an idle timeout, and memory of the ones that ended."""

    def __init__(self, config: ServeConfig, boot_id: str, limit: int, idle_timeout: Optional[float],
                 max_num_envs: int):
        self.config, self.boot_id, self.limit = config, boot_id, limit
        self.idle_timeout, self.max_num_envs = idle_timeout, max_num_envs
        self.sessions: dict[str, VecSession] = {}
        self.ended: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._lock = threading.Lock()

    def open(self, num_envs: int) -> tuple[str, VecSession]:
        if self.config.surface != "act":
            raise BadRequest("the batched endpoint steps the act surface; this server serves text: play text "
                             "episodes in /ws sessions (one per episode, many at once)")
        if num_envs > self.max_num_envs:
            raise BadRequest(f"num_envs must be at most {self.max_num_envs} (the server's --max-num-envs), "
                             f"got {num_envs}")
        with self._lock:
            if len(self.sessions) >= self.limit:
                raise AtCapacity(f"{len(self.sessions)} batched sessions are open, the limit is {self.limit}: "
                                 "close one (DELETE) or wait for an idle one to time out")
            sid = f"{self.boot_id}.{uuid.uuid4().hex}"
            self.sessions[sid] = None  # the slot is taken while the env is built outside the lock
        try:
            from scope_envs.vec import make_vec

            vec = make_vec(self.config.env_id, num_envs=num_envs, surface=self.config.surface, **self.config.kwargs)
        except BaseException:
            with self._lock:
                self.sessions.pop(sid, None)
            raise
        session = VecSession(vec)
        with self._lock:
            self.sessions[sid] = session
        return sid, session

    def get(self, sid: str) -> VecSession:
        with self._lock:
            session = self.sessions.get(sid)
            if session is not None:
                session.last = time.monotonic()
                return session
            if sid in self.ended:
                raise SessionLost(f"batched session {sid!r} {self.ended[sid]}; its episodes are lost")
        if SESSION_ID.fullmatch(sid) and sid.split(".", 1)[0] != self.boot_id:  # one this server's kind issues
            raise SessionLost(f"batched session {sid!r} was opened before the server restarted; its episodes "
                              "are lost: open a new session")
        raise UnknownSession(f"no batched session {shown_id(sid)} on this server")

    def close(self, sid: str, reason: str = "was closed") -> None:
        with self._lock:
            session = self.sessions.pop(sid, None)
            if session is None:
                return
            self.ended[sid] = reason
            while len(self.ended) > MAX_EXPIRED_REMEMBERED:
                self.ended.popitem(last=False)
        with session.lock:
            session.vec.close()

    def close_all(self) -> None:
        for sid in list(self.sessions):
            if self.sessions.get(sid) is not None:
                self.close(sid, "was closed when the server shut down")

    async def reap(self) -> None:
        """Close the sessions idle past the timeout, every quarter of it (at most every 5 s)."""
        if self.idle_timeout is None:
            return
        while True:
            await asyncio.sleep(min(max(self.idle_timeout / 4, 0.25), 5.0))
            now = time.monotonic()
            stale = [sid for sid, s in list(self.sessions.items())
                     if s is not None and now - s.last > self.idle_timeout and not s.lock.locked()]
            for sid in stale:
                self.close(sid, f"was closed after sitting idle past the server's {self.idle_timeout:g} s timeout")


def _reset(session: VecSession, req: ResetRequest) -> dict:
    vec = session.vec
    n = vec.num_envs
    if isinstance(req.seed, list) and len(req.seed) != n:
        raise BadRequest(f"seed must be an int or a list of {n} ints, got {len(req.seed)}")
    if isinstance(req.seed, list):
        for i, s in enumerate(req.seed):
            check_seed(s, f"seed[{i}]")
    else:
        check_seed(req.seed, "seed")
    opts = req.options if isinstance(req.options, list) else [req.options]
    if isinstance(req.options, list) and len(req.options) != n:
        raise BadRequest(f"options must be a dict or a list of {n}, got {len(req.options)}")
    for i, o in enumerate(opts):  # a key the env does not read is refused, naming it (check_options)
        check_options(o, f"options[{i}]" if isinstance(req.options, list) else "options")
    if req.slots is not None:  # (before any work: a list of a million slots costs only this check)
        if len(req.slots) > n:
            raise BadRequest(f"slots: {len(req.slots)} slots listed, this session has {n}")
        if not all(0 <= s < n for s in req.slots):
            raise BadRequest(f"slots must be indices in [0, {n})")
        if len(set(req.slots)) != len(req.slots):
            raise BadRequest("slots: a slot is listed more than once; list each slot to reset once")
    if req.streams is not None and (len(req.streams) != n or not all(0 <= s <= n for s in req.streams)):
        raise BadRequest(f"streams must be {n} labels in [0, {n}], one per slot")
    try:
        obs, infos = vec.reset(seed=req.seed, options=req.options, slots=req.slots, streams=req.streams)
    except (ValueError, TypeError) as e:
        raise BadRequest(str(e)) from None
    session.started = True
    return {"obs": pack(obs), "infos": pack(infos)}


def _step(session: VecSession, req: StepRequest) -> dict:
    vec = session.vec
    if not session.started:
        raise NoEpisode("this batched session has no episodes yet: call reset first")
    n = vec.num_envs
    actions = {}
    for agent, value in req.actions.items():
        if agent not in vec.possible_agents:
            raise BadRequest(f"unknown agent {agent!r}; possible agents are {vec.possible_agents}")
        try:
            a = np.asarray(unpack(value))
        except ValueError as e:
            raise BadRequest(f"actions[{agent!r}]: {e}") from None
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise BadRequest(f"actions[{agent!r}] must be {n} ints, got shape {a.shape} of {a.dtype}")
        actions[agent] = a.astype(np.int64)
    vec._final_obs = req.final_obs
    try:
        obs, rewards, terms, truncs, infos = vec.step(actions)
    except (ValueError, TypeError, KeyError) as e:
        raise BadRequest(str(e).strip("'\"")) from None
    return {"obs": pack(obs), "rewards": pack(rewards), "terminations": pack(terms),
            "truncations": pack(truncs), "infos": pack(infos)}


def _snapshot(session: VecSession, req: SnapshotRequest) -> dict:
    vec = session.vec
    pools = [e for e in vec.envs if isinstance(e, CheckpointPool)]
    if len(pools) != len(vec.envs):
        raise BadRequest("snapshot: this id has no checkpoint pool (serve a population id with pool_size=K)")
    user = vec.possible_agents[-1]
    try:
        policy = MLPSnapshot.from_wire(req.snapshot, vec.observation_space(user)["observation"].shape[0],
                                       vec.action_space(user).n)
        for pool in pools:
            pool.add_snapshot(policy)
    except (SnapshotError, ValueError) as e:
        raise BadRequest(str(e)) from None
    return {"pool_entries": len(pools[0].entries)}


def register_vec_routes(app: FastAPI, sessions: VecSessions) -> None:
    async def call(sid: str, fn, req):
        session = sessions.get(sid)

        def locked():
            with session.lock:
                if sessions.sessions.get(sid) is not session:
                    sessions.get(sid)  # closed meanwhile: raises the reason
                return fn(session, req)

        result = await run_in_threadpool(locked)
        session.last = time.monotonic()
        return result

    @app.post("/scope/vec", tags=["Batched"], summary="Open a batched session of N episodes")
    async def open_vec(req: OpenRequest) -> dict:
        sid, session = await run_in_threadpool(sessions.open, req.num_envs)
        vec = session.vec
        return {"session_id": sid, "num_envs": vec.num_envs, "possible_agents": vec.possible_agents,
                "engine": "batched" if isinstance(vec, BatchedVecEnv) else "loop"}

    @app.post("/scope/vec/{sid}/reset", tags=["Batched"])
    async def reset_vec(sid: str, req: ResetRequest) -> dict:
        return await call(sid, _reset, req)

    @app.post("/scope/vec/{sid}/step", tags=["Batched"])
    async def step_vec(sid: str, req: StepRequest) -> dict:
        return await call(sid, _step, req)

    @app.post("/scope/vec/{sid}/snapshot", tags=["Batched"])
    async def snapshot_vec(sid: str, req: SnapshotRequest) -> dict:
        return await call(sid, _snapshot, req)

    @app.delete("/scope/vec/{sid}", tags=["Batched"])
    async def close_vec(sid: str) -> dict:
        sessions.get(sid)
        await run_in_threadpool(sessions.close, sid)
        return {"closed": sid}
