"""The simulator interface: a frozen player of one role, from that role's view alone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scope_envs.core.game import Persona, Turn


@dataclass(frozen=True)
class View:
    """What a prompted player of ``role`` knows: its card, the dialogue so far, the legal acts."""

    role: str
    persona: Persona | None  # only the user role has a card
    history: tuple[Turn, ...]
    legal: np.ndarray
    public: dict  # game-specific public facts (e.g. the amount stated so far)
    instructions: str = ""  # the role's system prompt: task instructions and persona card
    errors: tuple[str, ...] = ()  # why this player's last messages could not be read (text players)


class Simulator:
    """Maps a view to a distribution over acts; can also verbalize its top-k.

    ``persona``: the card this simulator always plays (a frozen simulator's
    default persona), or None to play whatever card the episode deals.

    A text player (an LLM) sets ``plays_text = True`` and implements ``reply``
    (and ``verbalize`` returning ``(text, probability)`` pairs); the env reads
    its messages with the game's NLU, as it reads a learnable agent's.
    """

    name = "simulator"
    persona: Persona | None = None
    plays_text = False

    def reply(self, view: View, rng: np.random.Generator) -> str:
        """A text player's next message."""
        raise NotImplementedError

    def distribution(self, view: View) -> np.ndarray:
        """Probabilities over the role's acts; zero on illegal acts."""
        raise NotImplementedError

    def verbalize(self, view: View, k: int, rng: np.random.Generator) -> list[tuple[int, float]]:
        """The simulator's stated top-k acts with stated probabilities (verbalized sampling)."""
        p = self.distribution(view)
        top = np.argsort(-p, kind="stable")[:k]
        return [(int(a), float(p[a])) for a in top if p[a] > 0]

    def act(self, view: View, rng: np.random.Generator) -> int:
        p = self.distribution(view)
        return int(rng.choice(len(p), p=p))

    def follow_through(self, intended: float, rng: np.random.Generator) -> float:
        """What the player actually does about a stated commitment (simulators keep their word)."""
        return intended


def normalize(p: np.ndarray, legal: np.ndarray) -> np.ndarray:
    q = np.where(legal, np.maximum(p, 0.0), 0.0)
    s = q.sum()
    if s <= 0:
        q = legal.astype(float)
        s = q.sum()
    return q / s


def sharpen(p: np.ndarray, gamma: float) -> np.ndarray:
    """Typicality bias: ``p^gamma`` renormalized (DESIGN.md §1)."""
    q = np.power(p, gamma)
    return q / q.sum()
