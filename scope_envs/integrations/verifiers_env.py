"""A verifiers environment over the text surface: the agent seat is the model being trained.

verifiers 0.4 (``verifiers.v1``) runs an ``Env``: a taskset, one ``AgentConfig`` field per seat, and
``run(task, agents)`` relaying turns between the seats' interactions. ``load_environment(...)`` returns
``ScopeTextEnv``: each task is one episode of a scope id on the text surface (its seed, its opening
transcript as the prompt); the ``agent`` seat's replies are ``agent_0``'s messages; the user seat is

* the id's own user (``user=None``): the built-in simulator of a ``frozen``, ``vs``, ``rotation`` or
  ``heldout`` id, replying inside the env's step; or
* a second model (``user=vf.AgentConfig(...)``, the config's ``user_seat="model"``) in the learnable seat ``user_0`` of a ``cotrain`` id,
  untrainable by default as verifiers' own user-sim env keeps it; ``train_user=True`` leaves it
  trainable (its trace is the user's).

The env's reward of ``agent_0`` (summed over the episode) is recorded on the agent's trace as
``scope_reward`` (the user's as ``scope_user_reward``), and the game's outcome keys as metrics. Each turn
sends the seat only what is new in its transcript since its last turn.

This module is also a verifiers taskset plugin (its ``__all__`` exports one ``Taskset`` and one ``Env``):
once imported, verifiers' loaders resolve the taskset id ``scope_envs_verifiers`` to it. verifiers pins
``mcp==2.0.0`` and OpenEnv's server library needs ``fastmcp`` (``mcp<2``), so the two cannot share a
process: this env plays the scope env in-process (``scope_envs.make``), and CI tests it in a virtualenv of
its own (``.ci/verifiers.sh``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

import scope_envs
from scope_envs.core.env import AGENT

# verifiers resolves a taskset id as a top-level module exporting one Taskset (and its Env) in __all__;
# this module is that plugin under the top-level name below (registered when it is imported)
MODULE = "scope_envs_verifiers"
sys.modules.setdefault(MODULE, sys.modules[__name__])
MAX_TURNS = 1000  # a guard on the relay loop; every scope game ends well before
OPENING = "(The conversation starts; it is your turn.)"  # sent when a seat's transcript has nothing yet


class ScopeTaskData(vf.TaskData):
    env_id: str
    seed: int
    kwargs: dict[str, Any] = Field(default_factory=dict)


class ScopeTask(vf.Task[ScopeTaskData]):
    pass


class ScopeTasksetConfig(vf.TasksetConfig):
    id: str = MODULE
    env_id: str = "tau2-frozen"
    """A registered scope id, played on the text surface."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``scope_envs.make``."""
    seeds: list[int] = Field(default_factory=lambda: list(range(8)), min_length=1, max_length=100_000)
    """One task per seed: the episode ``reset(seed=...)`` deals."""


def opening(transcript: str, info: dict) -> tuple[str | None, str]:
    """A seat's system prompt (its role's instructions, where its transcript does not already show them)
    and its first user message (the transcript so far, or ``OPENING`` when it is empty)."""
    messages = info.get("messages") or []
    system = messages[0]["content"] if messages and messages[0].get("role") == "system" else None
    if system is not None and system.strip() in transcript:
        system = None
    return system, transcript.strip() or OPENING


class ScopeTextTaskset(vf.Taskset[ScopeTask, ScopeTasksetConfig]):
    def load(self) -> Iterator[ScopeTask]:
        config = self.config
        env = scope_envs.make(config.env_id, surface="text", **config.kwargs)
        try:
            for idx, seed in enumerate(config.seeds):
                obs, infos = env.reset(seed=seed)
                system, prompt = opening(str(obs[AGENT]), infos[AGENT])
                if not infos[AGENT]["active"]:  # a user seat speaks first: the agent's first turn sends its words
                    prompt = None
                yield ScopeTask(ScopeTaskData(idx=idx, name=f"{config.env_id}@{seed}", prompt=prompt,
                                              system_prompt=system, env_id=config.env_id, seed=seed,
                                              kwargs=config.kwargs), config.task)
        finally:
            env.close()


class ScopeEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"})
    """The seat being trained: ``agent_0``."""
    user: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"})
    """The model of the user seat, when ``user_seat="model"``."""
    user_seat: Literal["builtin", "model"] = "builtin"
    """``builtin``: the id's own simulator; ``model``: the ``user`` model plays a ``cotrain`` id's ``user_0``."""
    train_user: bool = False
    """Leave the user model's seat trainable (co-training); False keeps it frozen."""


class _Seat:
    """One seat's interaction and how much of its transcript it has been sent.

    verifiers' contract: a task with a prompt speaks first, so the agent seat (its task's prompt is the
    opening transcript) takes its first reply with a bare ``turn()``; the user seat's task has no prompt
    (the user-sim env's contract), and its first turn sends its transcript so far."""

    def __init__(self, interaction, prompted: bool = False):
        self.interaction, self.segment, self.reply = interaction, None, None
        self.prompted = prompted  # the first turn is the task's prompt: the transcript so far, sent already
        self.sent = ""

    async def turn(self, transcript: str) -> str | None:
        if self.prompted:
            self.prompted = False
            self.sent = transcript
            self.segment = await self.interaction.turn()
        else:
            new = transcript[len(self.sent):] if transcript.startswith(self.sent) else transcript
            if self.reply and self.reply.strip() in new:
                # the transcript echoes the seat's own last message ("You: ..."): its chat history has it already
                end = new.find("\n", new.index(self.reply.strip()) + len(self.reply.strip()))
                new = "" if end < 0 else new[end + 1:]
            self.sent = transcript
            self.segment = await self.interaction.turn(new.strip() or OPENING)
        self.reply = None if self.segment.terminated else self.segment.last_reply
        return self.reply


class ScopeTextEnv(vf.Env[ScopeEnvConfig]):
    async def setup(self, agents):
        if self.config.user_seat == "model" and not self.config.train_user:
            agents.user.trainable = False  # a modelled user is the world the agent is trained against

    async def run(self, task, agents):
        data = task.data
        env = scope_envs.make(data.env_id, surface="text", **data.kwargs)
        try:
            obs, infos = env.reset(seed=data.seed)
            seats = {AGENT: (agents.agent, task)}
            if self.config.user_seat == "model":
                if "user_0" not in env.agents:
                    raise ValueError(f"{data.env_id} has no learnable user seat for the user model: use a "
                                     "cotrain id, or user=None for the id's built-in simulator")
                system, _ = opening(str(obs["user_0"]), infos["user_0"])
                seats["user_0"] = (agents.user, task.with_data(prompt=None, system_prompt=system))
            elif set(env.agents) != {AGENT}:
                raise ValueError(f"{data.env_id} has live seats {env.agents}: pass user_seat='model' to have the "
                                 "user model play user_0, or use a single-agent id (frozen, vs, rotation, heldout)")
            totals = {a: 0.0 for a in seats}
            async with _open(seats) as open_seats:
                for _ in range(MAX_TURNS):
                    if not env.agents:
                        break
                    speaker = next(a for a in env.agents if infos[a]["active"])
                    reply = await open_seats[speaker].turn(str(obs[speaker]))
                    if reply is None:  # the seat's own turn limit: the episode stops unfinished
                        break
                    obs, rewards, _, _, infos = env.step({speaker: reply})
                    for a in totals:
                        totals[a] += float(rewards.get(a, 0.0))
                trace = open_seats[AGENT].interaction.trace
                trace.record_reward("scope_reward", totals[AGENT])
                trace.record_metrics({k: float(v) for k, v in env.unwrapped.game.outcome().items()})
                if "user_0" in open_seats:
                    open_seats["user_0"].interaction.trace.record_reward("scope_user_reward", totals["user_0"])
        finally:
            env.close()


class _open:
    """Open every seat's interaction for its task; close them all on the way out."""

    def __init__(self, seats):
        self.seats, self.contexts = seats, []

    async def __aenter__(self):
        opened = {}
        for name, (agent, task) in self.seats.items():
            context = agent.interaction(task)
            opened[name] = _Seat(await context.__aenter__(), task.data.prompt is not None)
            self.contexts.append(context)
        return opened

    async def __aexit__(self, *exc):
        for context in reversed(self.contexts):
            await context.__aexit__(*exc)


def load_environment(env_id: str = "tau2-frozen", seeds=None, kwargs: dict | None = None,
                     agent: vf.AgentConfig | None = None, user: vf.AgentConfig | None = None,
                     train_user: bool = False) -> ScopeTextEnv:
    """A verifiers env of ``env_id`` on the text surface, one task per seed (see the module)."""
    taskset = ScopeTasksetConfig(env_id=env_id, kwargs=dict(kwargs or {}),
                                 **({"seeds": [int(s) for s in seeds]} if seeds is not None else {}))
    if env_id not in scope_envs.registry:
        raise ValueError(f"unknown scope id {env_id!r}; `scope-envs list` prints them")
    seats = {"agent": agent} if agent is not None else {}
    if user is not None:
        seats["user"] = user
    elif agent is not None:
        # the user seat never plays with the built-in simulator, but verifiers places every declared seat
        # (a remote one needs a tunnel): it goes where the agent goes, so a local agent runs with no tunnel
        seats["user"] = vf.AgentConfig(harness={"id": "null"}, runtime=agent.runtime)
    config = ScopeEnvConfig(taskset=taskset, user_seat="model" if user is not None else "builtin",
                            train_user=train_user, **seats)
    return ScopeTextEnv(config)


__all__ = ["ScopeTextEnv", "ScopeTextTaskset", "load_environment"]
