"""The game interface: a pure, seeded turn-taking state machine with no gymnasium spaces.

A game owns the hidden state, the roles' private information, the turn protocol
and the outcome. Surfaces (``scope_envs.core.surfaces``) turn it into observations
and parse actions; ``DialogueParallelEnv`` turns it into a PettingZoo env.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Scenario:
    """What the user seat is dealt for one episode: what a prompted simulator is told about itself and its goal.

    For p4g and cooperbench that is a persona card (survey traits, a teammate's style); for tau2 a behaviour
    card *and* a task (``attributes["task_id"]``, ``attributes["domain"]``, ``attributes["card"]``). The old
    name ``Persona`` (an alias) fits the first only; ``id`` is the scenario's id either way (the persona's, or
    ``domain/task``), the one a group of SCOPE's episodes shares."""

    id: str
    split: str  # "train" | "heldout" | "default"
    traits: dict[str, float]
    attributes: dict[str, str] = field(default_factory=dict)


Persona = Scenario  # the name everywhere until issue 26; kept (a persona card is a scenario without a task)


@dataclass
class Turn:
    role: str
    act: int
    text: str = ""


class Game(ABC):
    """One benchmark's rules. Deterministic given the generator passed to ``reset``."""

    name: str
    agent_role: str  # the role agent_0 plays
    user_role: str  # the role the simulator / user_k plays
    max_turns: int
    user_player: Any = None  # the Simulator in the user seat this episode, None when learnable
    success_metric: str | None = None  # the outcome key the benchmark calls success (None: agent_0's return)
    success_label: str = "success"

    def __init__(self) -> None:
        self.history: list[Turn] = []
        self.persona: Persona | None = None

    @property
    def roles(self) -> tuple[str, str]:
        return (self.agent_role, self.user_role)

    @abstractmethod
    def acts(self, role: str) -> tuple[str, ...]:
        """Names of the role's dialogue acts; index 0 is the no-op."""

    @abstractmethod
    def sample_persona(self, rng: np.random.Generator, split: str) -> Persona: ...

    @abstractmethod
    def reset(self, persona: Persona, rng: np.random.Generator) -> None: ...

    @abstractmethod
    def active_role(self) -> str | None:
        """The role whose turn it is, or None once the game is over."""

    def legal(self, role: str) -> np.ndarray:
        """Boolean mask over ``acts(role)``: off turn only the no-op, on turn every act
        (games narrow it further)."""
        mask = np.zeros(len(self.acts(role)), dtype=bool)
        if role != self.active_role():
            mask[0] = True
        else:
            mask[1:] = True
        return mask

    @abstractmethod
    def apply(self, role: str, act: int, text: str = "") -> None: ...

    @abstractmethod
    def features(self, role: str) -> np.ndarray:
        """The role's view of the state as float32 features (fixed length per role)."""

    @abstractmethod
    def outcome(self) -> dict[str, float]:
        """Numeric results; meaningful once ``active_role()`` is None."""

    @abstractmethod
    def rewards(self) -> dict[str, float]:
        """Reward per role for the last transition (terminal rewards at the end)."""

    # text surface -----------------------------------------------------------
    @abstractmethod
    def realize(self, role: str, act: int, rng: np.random.Generator) -> str:
        """A natural-language rendering of ``act`` in the speaker's style."""

    @abstractmethod
    def understand(self, role: str, text: str) -> int:
        """Map a text utterance to an act; raise ``InGameError`` if it cannot be read."""

    @abstractmethod
    def instructions(self, role: str) -> str:
        """The role's private card and task instructions (a system prompt)."""

    def info(self) -> dict[str, Any]:
        """Public facts both roles know (the amount stated so far, the turn, ...)."""
        return {}

    def private(self, role: str) -> dict[str, Any]:
        """What only ``role`` knows beyond its persona card (its own task, say)."""
        return {}

    def agent_score(self) -> float:
        """Once over: ``agent_0``'s outcome normalised to [0, 1] (p4g: the gift over $2; tau2: the task reward;
        cooperbench: the teammate's reward over its maximum). The simulator rewards ``adversarial``,
        ``cooperative`` and ``curriculum`` are written in it (``scope_envs.core.rewards``)."""
        raise NotImplementedError

    def truncated(self) -> bool:
        """Once over: True when the game was cut short (a step or error limit) rather than finished."""
        return False

    def transcript(self, role: str) -> str | None:
        """The text surface's observation for ``role``; None for the surface's default rendering."""
        return None

    def text_infos(self, role: str) -> dict[str, Any] | None:
        """The text surface's infos for ``role`` (must hold ``messages``); None for the default."""
        return None


ONE = np.zeros(1, np.int64)  # a batch of one's slot


class RowGame(Game):
    """A game played as a batch of one of its batched engine: ``batch`` (a batch of one slot, built by the
    subclass) holds the state and is the one definition of the rules; the game keeps the transcript, the
    scenario and what else the batch does not hold on top. The roles are ``roles``' order in the batch (0 the
    agent's, 1 the user's). What a turn reads several times (whose turn it is, each role's legal mask and
    features) is computed once per turn, then copied out: ``reset_row`` and ``apply`` forget it."""

    batch: Any

    def reset_row(self, *args) -> None:
        """A new episode in the batch's slot (``batch.reset(ONE, *args)``); the subclass's ``reset`` calls it."""
        self._turn: dict = {}
        self.batch.reset(ONE, *args)

    def _read(self, key, compute):
        value = self._turn.get(key)
        if value is None:
            value = self._turn[key] = compute()
        return value

    @property
    def done(self) -> bool:
        return bool(self.batch.done[0])

    def active_role(self):
        active = self._read("active", lambda: int(self.batch.active()[0]))
        return None if active < 0 else self.roles[active]

    def legal(self, role):
        index = self.roles.index(role)
        return self._read(("legal", role), lambda: self.batch.legal(index, self.batch.active())[0]).copy()

    def features(self, role):
        return self._read(("features", role), lambda: self.batch.features(self.roles.index(role))[0]).copy()

    def apply(self, role, act, text: str = ""):
        if role != self.active_role():
            raise ValueError(f"it is not the {role}'s turn")
        if not self.legal(role)[act]:
            raise ValueError(f"{role}: act {self.acts(role)[act]!r} is illegal now")
        self.history.append(Turn(role, act, text))
        self._turn = {}
        if len(self.batch.apply(self.roles.index(role), ONE, np.array([act]))):
            self.ended()
            self._turn = {}

    def ended(self) -> None:
        """What the game adds once the batch's slot finished (p4g: the gift its follow-through settles)."""

    def outcome(self):
        return {key: float(value[0]) for key, value in self.batch.outcome(ONE).items()}

    def rewards(self):
        if not self.done:
            return dict.fromkeys(self.roles, 0.0)
        agent, user = self.batch.rewards(ONE)
        return {self.agent_role: float(agent[0]), self.user_role: float(user[0])}

    def agent_score(self) -> float:
        return float(self.batch.agent_score(ONE)[0]) if self.done else 0.0


class Drawn:
    """The generator a game's ``reset`` draws from, as a stand-in that gives back integers drawn before, in
    order: a batched engine that dealt an episode from integers rebuilds the slot's scalar game on it."""

    def __init__(self, *values: int):
        self._values = iter(values)

    def integers(self, high) -> int:
        return next(self._values)


class InGameError(Exception):
    """Malformed model output: an in-game error, never a crash (docs/architecture.md §4.5)."""
