"""A toy text game where reward is easy to reach, to check that LLM trainers learn.

``KeywordGame``: the ``speaker`` (``agent_0``) talks for ``max_turns`` turns; a
scripted ``listener`` answers "ok." after each. The speaker's reward at the end is
the fraction of the characters of its messages that are ``target`` (default "a"):
a tiny random model can raise it by shifting mass to tokens with that letter.
Not registered: build it with ``make_toy_env()`` (or ``--env llm-toy`` in
``scope-envs train-llm``).
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.simulator import Simulator
from scope_envs.core.env import DialogueParallelEnv
from scope_envs.core.game import Game, Persona, Turn

SPEAKER, LISTENER = "speaker", "listener"
_PERSONA = Persona("listener", "default", {})


class KeywordGame(Game):
    name = "keyword"
    agent_role = SPEAKER
    user_role = LISTENER

    def __init__(self, max_turns: int = 2, target: str = "a"):
        super().__init__()
        self.max_turns, self.target = max_turns, target
        self.reset(_PERSONA, np.random.default_rng(0))

    def acts(self, role):
        return ("noop", "say") if role == SPEAKER else ("noop", "ack")

    def sample_persona(self, rng, split):
        return _PERSONA

    def reset(self, persona, rng):
        self.persona, self.history, self.turns, self.done = persona, [], 0, False

    def active_role(self):
        if self.done:
            return None
        return LISTENER if self.history and self.history[-1].role == SPEAKER else SPEAKER

    def legal(self, role):
        mask = np.zeros(2, dtype=bool)
        mask[1 if role == self.active_role() else 0] = True
        return mask

    def apply(self, role, act, text=""):
        self.history.append(Turn(role, act, text))
        if role == SPEAKER:
            self.turns += 1
        elif self.turns >= self.max_turns:
            self.done = True

    def features(self, role):
        return np.array([self.turns / self.max_turns], np.float32)

    def score(self) -> float:
        said = "".join(t.text for t in self.history if t.role == SPEAKER)
        return said.count(self.target) / max(len(said), 1)

    def outcome(self):
        return {"score": self.score()}

    def rewards(self):
        return {SPEAKER: self.score() if self.done else 0.0, LISTENER: 0.0}

    def realize(self, role, act, rng):
        return "say something." if role == SPEAKER else "ok."

    def understand(self, role, text):
        return 1

    def instructions(self, role):
        return f"Say anything; use the letter {self.target} a lot." if role == SPEAKER else "Answer ok."


class Listener(Simulator):
    name = "listener"

    def distribution(self, view):
        return np.array([0.0, 1.0])


def make_toy_env(max_turns: int = 2, target: str = "a", **_):
    return DialogueParallelEnv(KeywordGame(max_turns, target), [Listener()], surface="text", regime="frozen")
