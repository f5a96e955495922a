"""Environment ids ``<game>-<regime>``, like gymnasium's registry, mirrored into PettingZoo's and Gymnasium's.

``scope_envs.make("p4g-vs", k=5)`` and ``pettingzoo.make("parallel", "scope/P4G-Vs-v0")``
build the same environment; ``gymnasium.make("scope/P4G-Vs-v0", k=5)`` its ``agent_0`` seat as a
``gymnasium.Env`` (``scope_envs.integrations.gymnasium_registry``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable

import gymnasium
import pettingzoo

from scope_envs.core import seal

REGIMES = ("frozen", "vs", "rotation", "cotrain", "population", "heldout")  # every game has these
# a regime only a game that declares its simulator has (``GameSpec.grounded``: a frozen user simulator fitted to the
# training part of the game's real dialogues; p4g): kept out of REGIMES, so that no other game gains an id and
# nothing that loops over REGIMES (the benchmark's grid, the tests) changes
GAME_REGIMES = ("grounded",)
REGIME_AGENTS = {
    "frozen": "agent_0",
    "vs": "agent_0",
    "rotation": "agent_0",
    "cotrain": "agent_0, user_0",
    "population": "agent_0, user_k (one of K per episode)",
    "heldout": "agent_0",
    "grounded": "agent_0",
}


@dataclass(frozen=True)
class EnvSpec:
    id: str
    game: str
    regime: str
    entry_point: Callable
    kwargs: dict = field(default_factory=dict)

    @property
    def pettingzoo_id(self) -> str:
        return f"scope/{self.game.upper()}-{self.regime.capitalize()}-v0"

    def make(self, **kwargs):
        return self.entry_point(**{**self.kwargs, **kwargs})


registry: dict[str, EnvSpec] = {}


def register(id: str, entry_point: Callable, game: str, regime: str, **kwargs) -> EnvSpec:
    """Register an id with scope_envs and with PettingZoo's parallel registry."""
    if id in registry:
        raise ValueError(f"environment id {id!r} is already registered")
    spec = EnvSpec(id, game, regime, entry_point, kwargs)
    registry[id] = spec
    pettingzoo.register("parallel", spec.pettingzoo_id, entry_point=spec.make)
    # named, not imported: the view and the vector env sit in layers above this one (tests/test_layers.py)
    entry = "scope_envs.integrations.gymnasium_registry"
    gymnasium.register(spec.pettingzoo_id, entry_point=f"{entry}:make_view", kwargs={"env_id": id},
                       vector_entry_point=f"{entry}:make_vector" if REGIME_AGENTS.get(regime) == "agent_0" else None)
    return spec


class UnknownEnvironment(KeyError):
    def __str__(self):
        return self.args[0]


def training_refusal(id: str, kwargs: dict | None = None) -> str | None:
    """Why a trainer refuses to train on ``id`` (None: it does not): a held-out id is the population every policy
    is evaluated against. The one exception is the ceiling's recipe, the held-out behaviour model on the *train* cards
    (``personas="train"``), which evaluates on the held-out ones like every row."""
    spec = registry.get(id) if isinstance(id, str) else None
    if spec is None or spec.regime != "heldout" or (kwargs or {}).get("personas") == "train":
        return None
    return (f"{id} is the held-out population every policy is evaluated against, not trained on; train on a "
            f"training regime (e.g. {spec.game}-frozen, {spec.game}-vs) and evaluate against it")


def check_trainable(id: str, kwargs: dict | None = None) -> None:
    """A ``ValueError`` with ``training_refusal``'s reason, where there is one: the trainers' check."""
    refused = training_refusal(id, kwargs)
    if refused:
        raise ValueError(refused)


def make(id: str, surface: str = "act", **kwargs):
    """Build a registered environment: ``surface`` is ``"act"`` or ``"text"``; kwargs go to the regime."""
    if not isinstance(id, str):  # (None, a number, a list: difflib's TypeError, or 'unhashable type')
        raise UnknownEnvironment(f"an environment id is a str such as 'p4g-frozen', got {type(id).__name__} "
                                 f"{id!r:.80}. Known ids: {', '.join(sorted(registry))}")
    if id not in registry:
        close = difflib.get_close_matches(id, list(registry), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownEnvironment(f"unknown environment id {id!r}.{hint} Known ids: {', '.join(sorted(registry))}")
    if registry[id].regime == "heldout":
        seal.check(id)  # (while a benchmark method trains: scope_envs.core.seal)
    return registry[id].make(surface=surface, **kwargs)
