"""The tau^2-bench game as a pure state machine (see the package docstring).

The world (database, tools, evaluation) lives in ``world.py`` / ``evaluate.py``
and knows nothing of surfaces; this module adds the turn protocol, the roles'
instructions and the text rendering. An act surface (issue 7) can be added on
top of the same ``World`` without touching tools or evaluation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from scope_envs.core.game import Game, InGameError, Persona, Turn
from scope_envs.core.surfaces import MAX_OBS_CHARS
from scope_envs.games.tau2 import text as T
from scope_envs.games.tau2.data import DOMAINS, load_domain
from scope_envs.games.tau2.evaluate import evaluate
from scope_envs.games.tau2.world import World

AGENT, USER = "agent", "user"
AGENT_ACTS = ("noop", "message", "tool_call")
USER_ACTS = ("noop", "message", "tool_call", "stop", "transfer", "out_of_scope")
USER_REWARDS = ("shared", "zero")
TRUNCATIONS = ("max_steps", "too_many_errors")
POLICY_BUDGET = 8000  # characters of policy kept at the top of the agent's observation; the full text is in infos

AGENT_INSTRUCTIONS = (
    "You are a customer service agent ({domain}). Help the user according to the policy below. Each turn is either "
    "a message to the user or exactly one tool call written as JSON: {{\"name\": \"<tool>\", \"arguments\": {{...}}}}"
    " (the tools are listed in infos['tools'] in OpenAI function format). A tool result comes back to you before "
    "the user speaks again. Do not make up information or procedures not given by the user or the tools. To end "
    "the conversation yourself, include ###STOP### in a message.\n\n<policy>\n{policy}\n</policy>"
)
USER_INSTRUCTIONS = (
    "You are a customer contacting customer service ({domain}). Play the user described below; say only what "
    "your instructions give you, one message at a time, and do not invent facts. {tools}When your request is "
    "resolved, reply with ###STOP###. If you are transferred to a human agent, reply with ###TRANSFER###. If the "
    "scenario gives you no way to continue, reply with ###OUT-OF-SCOPE###.\n\n<scenario>\n{scenario}\n</scenario>"
)
USER_TOOL_NOTE = ("You can act on your phone with tool calls written as JSON {\"name\": \"<tool>\", \"arguments\": "
                  "{...}} (tools in infos['tools']); a call's result comes back to you before the agent speaks. ")


@dataclass
class Tau2Turn(Turn):
    """A turn; a tool call keeps its ``call`` and its ``result`` (the tool message the caller saw)."""

    call: dict | None = None
    result: str | None = None
    error: bool = False


def scenario_text(task: dict) -> str:
    """The user's card from a task's ``user_scenario`` (persona and instructions), as readable text."""
    sc = task.get("user_scenario") or {}
    parts = []
    if sc.get("persona"):
        parts.append(f"Persona: {sc['persona'].strip()}")
    ins = sc.get("instructions")
    if isinstance(ins, dict):
        for key, label in (("reason_for_call", "Reason for call"), ("known_info", "Known info"),
                           ("unknown_info", "Unknown info"), ("task_instructions", "Task instructions")):
            if ins.get(key):
                parts.append(f"{label}: {str(ins[key]).strip()}")
    elif ins:
        parts.append(f"Instructions: {str(ins).strip()}")
    return "\n".join(parts)


class Tau2Game(Game):
    name = "tau2"
    agent_role = AGENT
    user_role = USER

    def __init__(self, domains: Sequence[str] = ("airline", "retail", "telecom"), data_dir=None,
                 max_steps: int = 100, max_tool_errors: int = 10, judge: Callable | None = None,
                 user_reward: str = "shared"):
        super().__init__()
        if isinstance(domains, str):
            domains = (domains,)
        domains = tuple(domains)
        if not domains or any(d not in DOMAINS for d in domains):
            raise ValueError(f"tau2 domain(s) must be from {DOMAINS}, got {domains!r}")
        if user_reward not in USER_REWARDS:
            raise ValueError(f"user_reward must be one of {USER_REWARDS}, got {user_reward!r}")
        if max_steps < 2 or max_tool_errors < 1:
            raise ValueError(f"max_steps must be >= 2 and max_tool_errors >= 1, got {max_steps}, {max_tool_errors}")
        if judge is not None and not callable(judge):
            raise ValueError("judge must be a callable judge(assertions, messages) -> list[bool]")
        self.domains = domains
        self.data = {d: load_domain(d, None if data_dir is None else str(data_dir)) for d in domains}
        for d, data in self.data.items():
            if not data.tasks:
                raise ValueError(f"tau2 {d}: the task file in {data.root} holds no tasks")
        self.max_steps = self.max_turns = max_steps
        self.max_tool_errors = max_tool_errors
        self.judge = judge
        self.user_reward = user_reward
        first = self.data[domains[0]]
        self.reset(Persona(f"{domains[0]}/{first.tasks[0]['id']}", "train", {},
                           {"domain": domains[0], "task_id": first.tasks[0]["id"]}), np.random.default_rng(0))

    # ------------------------------------------------------------ scenario
    def acts(self, role):
        return AGENT_ACTS if role == AGENT else USER_ACTS

    def sample_persona(self, rng, split):
        """A task: the domain uniformly, then a task of its ``train`` (or, for ``heldout``, ``test``) split."""
        domain = self.domains[int(rng.integers(len(self.domains)))]
        ids = self.data[domain].split_ids("test" if split == "heldout" else "train")
        if not ids:
            raise ValueError(f"tau2 {domain}: no tasks in the {'test' if split == 'heldout' else 'train'} split")
        task_id = ids[int(rng.integers(len(ids)))]
        return Persona(f"{domain}/{task_id}", split, {}, {"domain": domain, "task_id": task_id})

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        domain = persona.attributes.get("domain")
        if domain not in self.data:
            raise ValueError(f"tau2: persona {persona.id!r} names domain {domain!r}, not one of {self.domains}")
        self.persona = persona
        self.domain = domain
        self.task = self.data[domain].task(persona.attributes["task_id"])
        self.world = World.for_task(self.data[domain], self.task)
        self.history: list[Tau2Turn] = []
        self.steps = 0
        self.tool_errors = 0
        self.termination: str | None = None
        self.reward_info: dict | None = None
        self._next = AGENT
        for msg in self.world.initial_messages:  # a task may start mid-conversation
            self._replay_message(msg)

    def _replay_message(self, msg: dict) -> None:
        role = {"assistant": AGENT, "user": USER}.get(msg.get("role"))
        if role is None:
            return  # tool messages: their results were recomputed by World.for_task
        calls = msg.get("tool_calls") or []
        if calls:
            done = [c for c in self.world.calls if c.name in {tc["name"] for tc in calls}]
            for tc in calls:
                res = next((c for c in done if c.name == tc["name"]), None)
                self.history.append(Tau2Turn(role, 2, T.call_text(tc["name"], tc.get("arguments") or {}),
                                             {"name": tc["name"], "arguments": tc.get("arguments") or {}},
                                             res.content if res else "", bool(res and res.error)))
                self.steps += 2
        elif msg.get("content"):
            self.history.append(Tau2Turn(role, 1, msg["content"]))
            self.steps += 1
            self._next = USER if role == AGENT else AGENT

    # ------------------------------------------------------------ protocol
    def active_role(self):
        return None if self.termination is not None else self._next

    def understand(self, role: str, text: str) -> int:
        if not text.strip():
            raise InGameError("empty message")
        if T.parse(text) is not None:
            return 2
        if role == USER:
            for act, token in zip((3, 4, 5), T.USER_STOPS):
                if token in text:
                    return act
        return 1

    def apply(self, role: str, act: int, text: str = "") -> None:
        if self.termination is not None:
            raise ValueError("tau2: the episode is over")
        if role != self._next:
            raise ValueError(f"tau2: it is the {self._next}'s turn, not the {role}'s")
        call = T.parse(text) if act == 2 else None
        if call is not None:
            requestor = "assistant" if role == AGENT else "user"
            content, error = self.world.call(call["name"], call["arguments"], requestor)
            self.history.append(Tau2Turn(role, act, text, call, content, error))
            self.steps += 2  # the call and its tool message, as upstream counts them
            self.tool_errors += error
        else:
            self.history.append(Tau2Turn(role, act, text))
            self.steps += 1
            if role == AGENT and T.STOP in text:
                return self._end("agent_stop")
            if role == USER and any(tok in text for tok in T.USER_STOPS):
                return self._end("user_stop")
            self._next = USER if role == AGENT else AGENT
        if self.tool_errors >= self.max_tool_errors:
            self._end("too_many_errors")
        elif self.steps >= self.max_steps:
            self._end("max_steps")

    def _end(self, why: str) -> None:
        self.termination = why
        agent_texts = [t.text for t in self.history if t.role == AGENT and t.call is None]
        self.reward_info = evaluate(self.world, agent_texts, why, self.judge, self.chat(AGENT))

    def truncated(self) -> bool:
        return self.termination in TRUNCATIONS

    def outcome(self):
        r = self.reward_info["reward"] if self.reward_info else 0.0
        return {"reward": r, "steps": self.steps, "tool_errors": self.tool_errors,
                "policy_violations": len(self.world.violations), "done": float(self.termination is not None)}

    def rewards(self):
        r = self.reward_info["reward"] if self.reward_info else 0.0
        return {AGENT: r, USER: r if self.user_reward == "shared" else 0.0}

    def features(self, role):
        # a small numeric summary (env.state(), future act surface); the text surface carries the content
        onehot = [float(self.domain == d) for d in DOMAINS]
        return np.array([self.steps / self.max_steps, self.tool_errors / self.max_tool_errors,
                         float(self.termination is not None), float(self._next == role), *onehot], np.float32)

    # ------------------------------------------------------------ text
    def realize(self, role, act, rng):
        # text players write their own turns; these renderings serve act-level players only
        if role == USER and act >= 3:
            return T.USER_STOPS[act - 3]
        return "Could you tell me more?" if role == AGENT else "Can you help me with my request?"

    def instructions(self, role):
        data = self.data[self.domain]
        if role == AGENT:
            return AGENT_INSTRUCTIONS.format(domain=self.domain, policy=data.policy)
        tools = USER_TOOL_NOTE if self.world.module.USER_TOOLS else ""
        return USER_INSTRUCTIONS.format(domain=self.domain, tools=tools, scenario=scenario_text(self.task))

    def info(self):
        return {"domain": self.domain, "steps": self.steps}

    def private(self, role):
        if role == USER:
            return {"domain": self.domain, "task_id": self.task["id"],
                    "user_scenario": self.task.get("user_scenario") or {}}
        return {"domain": self.domain}

    def _sees(self, turn: Tau2Turn, role: str) -> bool:
        # tool calls stay with their caller: the agent never sees the user's phone, nor the user the agent's tools
        return turn.call is None or turn.role == role

    def chat(self, role: str) -> list[dict]:
        """The role's chat-format messages (OpenAI style, tool calls and tool messages included)."""
        msgs = [{"role": "system", "content": self.instructions(role)}]
        for i, t in enumerate(self.history):
            if not self._sees(t, role):
                continue
            if t.call is not None:
                cid = f"call_{i}"
                msgs.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": cid, "type": "function", "function": {
                        "name": t.call["name"], "arguments": json.dumps(t.call["arguments"])}}]})
                msgs.append({"role": "tool", "tool_call_id": cid, "content": t.result})
            else:
                msgs.append({"role": "assistant" if t.role == role else "user", "content": t.text})
        return msgs

    def transcript(self, role: str) -> str:
        other = "User" if role == AGENT else "Agent"
        lines = []
        for t in self.history:
            if not self._sees(t, role):
                continue
            if t.call is not None:
                lines.append(f"You (tool call): {t.text}")
                lines.append(f"Tool{' error' if t.error else ''}: {t.result}")
            else:
                lines.append(f"{'You' if t.role == role else other}: {t.text}")
        body = "\n".join(lines)
        if role == AGENT:
            policy = self.data[self.domain].policy
            if len(policy) > POLICY_BUDGET:
                policy = policy[:POLICY_BUDGET] + "\n[... policy continues: full text in infos['messages'][0]]"
            head = f"[policy]\n{policy}\n[conversation]\n"
        else:
            head = f"[your scenario]\n{scenario_text(self.task)}\n[conversation]\n"
        room = MAX_OBS_CHARS - len(head) - 1024  # leaves room for the surface's [error] lines
        return head + (body if len(body) <= room else body[-room:])  # the head stays, the oldest turns go

    def text_infos(self, role: str) -> dict:
        requestor = "assistant" if role == AGENT else "user"
        info = {"messages": self.chat(role), "tools": [t.schema for t in self.world.tools(requestor).values()],
                "domain": self.domain, "task_id": self.task["id"], "termination": self.termination or ""}
        if role == AGENT:
            info["policy_violations"] = list(self.world.violations)
        if self.reward_info is not None:
            info["reward_info"] = self.reward_info
        return info
