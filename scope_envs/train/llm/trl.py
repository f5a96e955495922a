"""TRL adapter: our text surface as a ``GRPOTrainer(environment_factory=...)`` environment.

TRL builds one instance per rollout, calls ``reset(**row)`` (its string is appended to
the prompt's last user message), exposes every public method as a tool the model can
call, and scores the rollout with ``get_reward()``. Here the one tool is
``send_message``: the trained model (``agent_0``) speaks, the env's user (its
frozen simulator, a verbalized-sampled one, an ``LLMPlayer``, a held-out proxy) answers.

    from trl import GRPOConfig, GRPOTrainer
    from scope_envs.train.llm.trl import environment_factory
    trainer = GRPOTrainer(model=..., args=GRPOConfig(max_steps=100, ...),
                          environment_factory=environment_factory("p4g-vs", k=5))

Regimes with a learnable user (``cotrain``, ``population``) need ``others=``: a
player for every other live agent (e.g. ``{"user_0": LLMPlayer(backend)}``), since TRL
trains one policy.
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

_counter = itertools.count()


class ScopeEnvironment:
    """One episode of a scope-envs text environment, seen by ``agent_0`` through one tool."""

    def __init__(self, env_id: str = "p4g-frozen", others: dict | None = None, seed: int | None = None, **make_kwargs):
        import scope_envs
        from scope_envs.registry import check_trainable

        check_trainable(env_id, make_kwargs)
        self._env = scope_envs.make(env_id, surface="text", **make_kwargs)
        self._others = others or {}
        self._base_seed = seed if seed is not None else 0
        self._rng = np.random.default_rng(self._base_seed)
        self._reward = 0.0
        self._seen = 0
        self._done = True

    def reset(self, **kwargs) -> str:
        """Start an episode (``seed`` from the dataset row when it has one) and return the opening."""
        seed = kwargs.get("seed")
        seed = int(seed) if seed is not None else self._base_seed + next(_counter)
        self._obs, self._infos = self._env.reset(seed=seed)
        self._reward, self._seen, self._done = 0.0, 0, False
        self._play_others()
        info = self._infos["agent_0"]
        opening = info["messages"][0]["content"] if info.get("messages") else ""
        news = self._news()
        hint = "Use the send_message tool to say each of your messages to the other participant."
        return "\n\n".join(p for p in (opening, hint, news) if p)

    def send_message(self, message: str) -> str:
        """Send your next message to the other participant in the conversation.

        Args:
            message: The text of your message.

        Returns:
            The other participant's reply, and the outcome once the conversation is over.
        """
        if self._done:
            return "The conversation is over."
        self._step({"agent_0": str(message)})
        self._play_others()
        news = self._news()
        errors = [line for line in str(self._obs.get("agent_0", "")).splitlines() if line.startswith("[error]")]
        parts = [news] + errors
        if self._done:
            outcome = ", ".join(f"{k}={v:g}" for k, v in self._env.unwrapped.game.outcome().items())
            parts.append(f"The conversation is over ({outcome}).")
        return "\n".join(p for p in parts if p) or "(no reply)"

    def get_reward(self) -> float:
        """``agent_0``'s total reward in this episode."""
        return float(self._reward)

    # -- helpers (private: TRL exposes public methods as tools) -----------------------
    def _step(self, actions):
        self._obs, rewards, _, _, self._infos = self._env.step(actions)
        self._reward += float(rewards.get("agent_0", 0.0))
        self._done = not self._env.agents or "agent_0" not in self._env.agents

    def _play_others(self):
        """Let the given players speak while it is another live agent's turn."""
        while not self._done:
            speaker = next((a for a in self._env.agents if self._infos[a].get("active")), None)
            if speaker in (None, "agent_0"):
                return
            if speaker not in self._others:
                raise ValueError(f"{speaker} is a live agent here: pass others={{{speaker!r}: a player}}")
            self._step({speaker: self._others[speaker](self._obs[speaker], self._infos[speaker], self._rng)})

    def _news(self) -> str:
        """The other side's messages since agent_0 last looked."""
        game = self._env.unwrapped.game
        new = game.history[self._seen:]
        self._seen = len(game.history)
        return "\n".join(t.text for t in new if t.role != game.agent_role)


def environment_factory(env_id: str = "p4g-frozen", **kwargs) -> Callable[[], ScopeEnvironment]:
    """A zero-argument factory for ``GRPOTrainer(environment_factory=...)``."""

    def factory():
        return ScopeEnvironment(env_id, **kwargs)

    factory.__name__ = f"scope_{env_id.replace('-', '_')}"
    return factory
