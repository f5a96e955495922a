"""One task's live world: the database state, tool calls and their bookkeeping.

This is the surface-free layer every consumer shares: the game (both surfaces),
``replay.replay`` and the evaluation's gold replay. ``World.for_task`` builds
the task's initial state the way tau^2-bench's ``Environment.set_state`` does:
initialization data, then initialization actions, then the tool calls in the
task's message history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from scope_envs.games.tau2 import airline, mock, retail, telecom
from scope_envs.games.tau2.data import DomainData
from scope_envs.games.tau2.state import State, merge
from scope_envs.games.tau2.tools import GENERIC, READ, ToolError, bind, to_content

MODULES: dict[str, ModuleType] = {"airline": airline, "retail": retail, "telecom": telecom, "mock": mock}
# dict-shaped databases get copy-on-write tables; telecom's lists are small and copied whole
COW = {"airline": True, "retail": True, "mock": True, "telecom": False}
READS = (READ, GENERIC)  # the tool kinds that never write the database (``World.call`` memoizes them)
MEMO_SIZE = 50_000  # answers kept per task (random play reaches few states; the cap only bounds memory)


def _base(data: DomainData) -> tuple[dict, dict | None]:
    """The shared base database and the normalized user database, computed once per loaded domain."""
    cached = getattr(data, "_base", None)
    if cached is None:
        user_db = telecom.normalize_user_db(data.user_db) if data.name == "telecom" else None
        cached = (data.db, user_db)
        data._base = cached
    return cached


@dataclass
class Call:
    requestor: str  # "assistant" | "user"
    name: str
    arguments: Any
    content: str
    error: bool


@dataclass
class World:
    data: DomainData
    task: dict
    state: State
    calls: list[Call] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    identified: set = field(default_factory=set)  # user / customer ids the agent looked up (authentication)
    initial_messages: list[dict] = field(default_factory=list)  # the task's message history, as chat messages
    # the keys of the calls since the task's initial world that may have changed the database (every call but
    # the reads and generic tools): with the task, it names the state a read sees (``call``'s memo). None: not
    # tracked (a world not built by ``for_task`` for the domain's own task, or a call whose key is unknown)
    trail: tuple | None = None

    @property
    def module(self) -> ModuleType:
        return MODULES[self.data.name]

    @classmethod
    def fresh(cls, data: DomainData, task: dict) -> "World":
        db, user_db = _base(data)
        return cls(data, task, State.fresh(db, user_db, COW[data.name]))

    @classmethod
    def for_task(cls, data: DomainData, task: dict) -> "World":
        w = cls.fresh(data, task)
        init = task.get("initial_state") or {}
        idata = init.get("initialization_data") or {}
        if idata.get("agent_data"):
            w.state.update_db(idata["agent_data"])
        if idata.get("user_data"):
            merge(w.state.user_db, idata["user_data"])
        for action in init.get("initialization_actions") or []:
            w.function(action["env_type"], action["func_name"], action.get("arguments") or {})
        for msg in init.get("message_history") or []:
            w.initial_messages.append(msg)
            for tc in msg.get("tool_calls") or []:
                w.call(tc["name"], tc.get("arguments") or {}, tc.get("requestor", msg.get("role", "assistant")))
        w.sync()
        if data.task_index.get(task.get("id")) is task:  # the domain's own task: its initial world is one state
            w.trail = ()
        return w

    @classmethod
    def for_episode(cls, data: DomainData, task: dict) -> World:
        """``for_task(data, task)``, for an episode: a copy of the task's initial world, which is built once per
        task of a loaded domain (a task's set-up, telecom's initialization actions above all, runs once rather
        than at every reset). A task without set-up, or not the domain's own (a modified copy), is built afresh."""
        if not task.get("initial_state") or data.task_index.get(task.get("id")) is not task:
            return cls.for_task(data, task)
        cache = data.memo("initial_worlds")
        initial = cache.get(task["id"])
        if initial is None:
            initial = cache[task["id"]] = cls.for_task(data, task)
        return initial.copy()

    def copy(self) -> World:
        """An independent world equal to this one (its state copied, its records' lists copied)."""
        return World(self.data, self.task, self.state.copy(), list(self.calls), list(self.violations),
                     set(self.identified), list(self.initial_messages), self.trail)

    # ------------------------------------------------------------------ calls
    def tools(self, requestor: str = "assistant") -> dict:
        return self.module.TOOLS if requestor == "assistant" else self.module.USER_TOOLS

    def policy_flag(self, name: str, arguments: Any, identified) -> float:
        """1.0 when the call would break the domain's checkable policy in this state with the users ``identified``
        (or the check fails), else 0.0: the agent's feature of a write it may make."""
        try:
            return float(bool(self.module.violations(self.state, name, arguments, {"__none__"} | set(identified))))
        except Exception:
            return 1.0

    def call(self, name: str, arguments: Any, requestor: str = "assistant", key: str | None = None) -> tuple[str, bool]:
        """One tool call by ``requestor``: ``(content, error)``, recorded in ``calls``; never raises.

        ``key``: the call's ``goals.Call.key``, where the caller has it. A read or generic tool (which never
        writes the database) answers the same in the same state, and the state of a task's world is named by
        the calls that may have written it since the task's initial world (``trail``): such a call with its key
        is answered from a memo per task (its content, error, violations and identified users, as the call
        gave them the first time), without running the tool, binding its arguments or writing its JSON."""
        tools = self.tools(requestor)
        tool = tools.get(name)
        trail = self.trail
        if trail is not None and tool is not None:
            if tool.kind in READS:
                if key is not None:
                    return self._memo_call(tools, name, arguments, requestor, (trail, key))
            else:  # the state may change: the calls after this one see another state
                if key is None:
                    try:
                        key = json.dumps([name, arguments, requestor], sort_keys=True)
                    except (TypeError, ValueError):
                        key = None
                self.trail = None if key is None else (*trail, key)
        return self._call(tools, name, arguments, requestor)[:2]

    def _memo_call(self, tools, name, arguments, requestor, memo_key) -> tuple[str, bool]:
        memo = self.data.memo("read_calls", self.task["id"])
        hit = memo.get(memo_key)
        if hit is None:
            content, error, flagged, ids = self._call(tools, name, arguments, requestor)
            # what the call identifies is kept, not what ``identified`` gained (it may have known the user);
            # a call the policy flags (none of a read, whose check reads ``identified`` too) is not kept
            if not flagged and len(memo) < MEMO_SIZE:
                memo[memo_key] = (content, error, ids)
            return content, error
        content, error, ids = hit
        self.identified.update(ids)
        self.calls.append(Call(requestor, name, arguments, content, error))
        return content, error

    def _call(self, tools: dict, name: str, arguments: Any, requestor: str) -> tuple[str, bool, list, list]:
        """The call run on ``tools`` (``requestor``'s): ``(content, error, the violations it added, the ids it
        identified)``."""
        flagged, ids = [], []
        try:
            if name not in tools:
                who = "the agent" if requestor == "assistant" else "the user"
                raise ToolError(f"Tool '{name}' not found for {who}; available: {', '.join(tools)}")
            kwargs = bind(tools[name], arguments)
            if requestor == "assistant":
                flagged = self.module.violations(self.state, name, kwargs, self.identified)
                self.violations.extend(flagged)
            result = tools[name].fn(self.state, **kwargs)
            self.sync()
            content, error = to_content(result), False
            if requestor == "assistant":
                who = self.module.identifies(name, kwargs, result)
                ids = [who] if isinstance(who, str) else list(who or [])
                self.identified.update(ids)
        except ToolError as e:
            content, error = f"Error: {e}", True
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
            # data the tool did not expect (upstream would raise the same way): still a tool error
            content, error = f"Error: {type(e).__name__}: {e}", True
        self.calls.append(Call(requestor, name, arguments, content, error))
        return content, error, flagged, ids

    def function(self, env_type: str, func_name: str, arguments: dict) -> Any:
        """An environment function (task set-up or assertion) on the agent or user side; raises on failure."""
        self.trail = None  # a function may write the state: reads after it are not memoized
        table = self.module.FUNCTIONS if env_type == "assistant" else getattr(self.module, "USER_FUNCTIONS", {})
        if func_name not in table:
            raise ValueError(f"tau2 {self.data.name}: no {env_type} function {func_name!r}")
        result = table[func_name](self.state, **arguments)
        self.sync()
        return result

    def sync(self) -> None:
        sync = getattr(self.module, "sync", None)
        if sync is not None:
            sync(self.state)
