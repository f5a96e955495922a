"""The simulator interface: a player of one role that acts from that role's view alone.

The env puts a ``Simulator`` in the user seat and asks it for acts (or messages);
players in ``scope_envs.agents`` implement it.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

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
    private: dict = field(default_factory=dict)  # what only this role knows (its own task)
    observation: np.ndarray | None = None  # the act surface's observation, for players that ask for it


def sample(p, rng: np.random.Generator) -> int:
    """``int(rng.choice(len(p), p=p))``: the same act from the same single ``rng.random()`` draw, without
    ``choice``'s fixed cost (a simulator answers at every user turn). ``Generator.choice`` returns the first
    index whose normalized running sum of ``p`` exceeds the draw; so does this, in floats with the same
    sequential sums and divisions. A ``p`` that is not plainly a distribution (negative, NaN or infinite
    mass, a sum off 1, not one-dimensional) goes to ``choice`` itself, which checks it and raises."""
    q = np.asarray(p, dtype=np.float64)
    if q.ndim == 1 and q.size:
        mass = q.tolist()
        cdf = list(accumulate(mass))
        total = cdf[-1]
        if abs(total - 1.0) < 1e-9 and min(mass) >= 0.0:  # a NaN or infinite mass fails the sum
            return bisect_right([c / total for c in cdf], rng.random())
    return int(rng.choice(len(p), p=p))


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
    wants_observation = False  # True: views carry the act surface's observation (a trained network's input)

    def reply(self, view: View, rng: np.random.Generator) -> str:
        """A text player's next message."""
        raise NotImplementedError

    def distribution(self, view: View) -> np.ndarray:
        """Probabilities over the role's acts; zero on illegal acts."""
        raise NotImplementedError

    def distributions(self, observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Optional, for a simulator whose ``distribution`` reads nothing of the view but its observation and
        legal acts (``wants_observation``; a trained network): the distributions of rows of observations
        (rows, features) and legal masks (rows, acts) at once, each row bit for bit what ``distribution`` gives
        for that one view, whatever the other rows. A batched vec env then answers every slot such a simulator
        plays in one call instead of building each slot's view (``scope_envs.vec``)."""
        raise NotImplementedError

    def verbalize(self, view: View, k: int, rng: np.random.Generator, tail: float | None = None) -> list:
        """The simulator's stated top-k acts with stated probabilities (verbalized sampling);
        with ``tail``, only candidates stated below that probability."""
        p = self.distribution(view)
        order = [int(a) for a in np.argsort(-p, kind="stable") if p[a] > 0 and (tail is None or p[a] < tail)]
        return [(a, float(p[a])) for a in order[:k]]

    def act(self, view: View, rng: np.random.Generator) -> int:
        return sample(self.distribution(view), rng)

    def follow_through(self, intended: float, rng: np.random.Generator) -> float:
        """What the player actually does about a stated commitment (simulators keep their word)."""
        return intended
