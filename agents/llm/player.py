"""``LLMPlayer``: an LLM that plays any role of any game on the text surface.

In the user seat (``make("p4g-frozen", surface="text", user=LLMPlayer(backend))``)
the env calls ``reply(view, rng)``; under verbalized sampling (``p4g-vs``) it calls
``verbalize(view, k, rng, tail)``, which asks for k candidates with probabilities
and returns ``[]`` when the answer cannot be read (the env then takes a direct reply
and counts ``vs_fallback`` in infos). In the agent seat, call ``player(obs, info)``
with the env's ``infos[agent]`` (its chat messages and, for tool games, tool schemas).

The system prompt is the role's guidelines (ours, below, or ``role_prompt=``)
followed by the game's instructions for the role (task and persona card).
"""

from __future__ import annotations

import json

import numpy as np

from scope_envs.core.simulator import Simulator, View
from scope_envs.agents.llm.verbalized import parse_verbalized, vs_prompt

USER_GUIDELINES = (
    "You are simulating a person who is talking with an assistant or another participant. Play that person, not an "
    "assistant: write as they would, in the first person, one message per turn, short and natural. Keep to the "
    "persona and the task you are given below; what they do not tell you, you do not know, so do not invent facts. "
    "Share details only when they come up or are asked for, in your own words rather than quoting your instructions. "
    "Never mention that you are an AI or a simulation. When the task says how to end or how to state a decision, "
    "do exactly that."
)
AGENT_GUIDELINES = (
    "You are the agent in a conversation. Follow your instructions below, write one message per turn, and stay "
    "on task. If tools are listed, call one by answering with the JSON tool call alone."
)


class LLMPlayer(Simulator):
    """An LLM player of any role, through any backend (``scope_envs.agents.llm.backends``).

    ``role_prompt``: the guidelines put before the game's instructions (default: ours for the
    user role, or for the agent role when the view has no persona card). ``seed``: when
    given, generation is seeded from the env's generator, so episodes replay.
    """

    plays_text = True

    def __init__(self, backend, role_prompt: str | None = None, *, name: str = "llm", max_new_tokens: int = 256,
                 vs_max_new_tokens: int | None = None, temperature: float = 1.0, persona=None):
        self.backend = backend
        self.role_prompt = role_prompt
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.vs_max_new_tokens = vs_max_new_tokens or 4 * max_new_tokens
        self.temperature = temperature
        self.persona = persona

    # -- prompts -----------------------------------------------------------------
    def system_prompt(self, instructions: str, is_user: bool, tools=None) -> str:
        guide = self.role_prompt if self.role_prompt is not None else (USER_GUIDELINES if is_user else AGENT_GUIDELINES)
        parts = [p for p in (guide, instructions) if p]
        if tools:
            parts.append(tools_text(tools))
        return "\n\n".join(parts)

    def messages(self, view: View) -> list[dict]:
        """The chat this player sees: system prompt, the dialogue (its own turns as assistant), its errors."""
        msgs = [{"role": "system", "content": self.system_prompt(view.instructions, view.persona is not None,
                                                                 view.private.get("tools"))}]
        for turn in view.history:
            msgs.append({"role": "assistant" if turn.role == view.role else "user", "content": turn.text})
        if view.errors:
            note = "Your last message could not be used: " + "; ".join(view.errors) + ". Write it again."
            msgs.append({"role": "user", "content": note})
        return _merge_consecutive(msgs)

    # -- the Simulator interface ------------------------------------------------------
    def reply(self, view: View, rng: np.random.Generator) -> str:
        return self._generate(self.messages(view), rng, self.max_new_tokens)

    def verbalize(self, view: View, k: int, rng: np.random.Generator, tail: float | None = None):
        msgs = self.messages(view)
        msgs.append({"role": "user", "content": vs_prompt(k, tail)})
        text = self._generate(_merge_consecutive(msgs), rng, self.vs_max_new_tokens)
        return parse_verbalized(text)[:k]

    def distribution(self, view: View) -> np.ndarray:
        raise NotImplementedError("an LLMPlayer plays the text surface; it has no distribution over acts")

    def act(self, view: View, rng: np.random.Generator) -> int:
        raise ValueError("an LLMPlayer plays the text surface: make the env with surface='text'")

    # -- the agent seat ------------------------------------------------------------
    def __call__(self, observation=None, info: dict | None = None, rng: np.random.Generator | None = None) -> str:
        """A message for a live agent, from its ``infos[agent]`` (``messages``, and ``tools`` in tool games)."""
        if not info or "messages" not in info:
            raise ValueError("pass the agent's infos entry from a text-surface env (it carries 'messages')")
        msgs = [dict(m) for m in info["messages"]]
        if msgs and msgs[0]["role"] == "system":
            msgs[0]["content"] = self.system_prompt(msgs[0]["content"], is_user=False, tools=info.get("tools"))
        return self._generate(_merge_consecutive(msgs), rng or np.random.default_rng(), self.max_new_tokens)

    def _generate(self, msgs, rng, max_new_tokens) -> str:
        seed = int(rng.integers(2**31 - 1))
        return self.backend.chat([msgs], max_new_tokens=max_new_tokens, temperature=self.temperature, seed=seed)[0].text


def tools_text(tools) -> str:
    """How tool schemas are written into a system prompt (for chat templates without a tools section)."""
    return "Tools:\n" + json.dumps(tools, indent=1)


def _merge_consecutive(msgs: list[dict]) -> list[dict]:
    """Join consecutive messages of one role (some chat templates require alternation)."""
    out: list[dict] = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"] and m["role"] != "system":
            out[-1] = {"role": m["role"], "content": out[-1]["content"] + "\n\n" + m["content"]}
        else:
            out.append(dict(m))
    return out
