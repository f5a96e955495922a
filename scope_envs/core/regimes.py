"""Regimes decide who plays the user role (DESIGN.md §2); every game supports every regime.

``frozen`` and ``vs`` take ``user=``: any ``Simulator`` (an LLM player, say) in
place of the game's built-in frozen simulator.
"""

from __future__ import annotations

from typing import Callable

from scope_envs.agents.base import Simulator
from scope_envs.core.env import LEARNABLE, DialogueParallelEnv
from scope_envs.core.game import Game
from scope_envs.registry import REGIMES

REGIME_OPTIONS = {
    "frozen": {"user"},
    "vs": {"user", "k", "tau", "min_survivors", "weight_mode", "tail", "temperature"},
    "rotation": {"schedule"},
    "cotrain": set(),
    "population": {"members", "schedule"},
    "heldout": set(),
}


def build(
    regime: str,
    game: Game,
    *,
    frozen: Callable[[], Simulator],
    rotation: Callable[[], list[Simulator]],
    heldout: Callable[[], Simulator],
    surface: str = "act",
    render_mode: str | None = None,
    max_errors: int = 3,
    **options,
):
    from scope_envs.wrappers import SimulatorPopulation, VerbalizedSampling

    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    unknown = set(options) - REGIME_OPTIONS[regime]
    if unknown:
        raise ValueError(
            f"regime {regime!r} takes no option(s) {sorted(unknown)}; it takes {sorted(REGIME_OPTIONS[regime]) or 'none'}"
        )

    user = options.pop("user", None)
    if user is not None and not isinstance(user, Simulator):
        raise ValueError(f"user must be a Simulator (e.g. an LLMPlayer), got {type(user).__name__}")

    def env(members, split="train"):
        return DialogueParallelEnv(game, members, surface=surface, split=split, regime=regime,
                                   render_mode=render_mode, max_errors=max_errors)

    if regime == "frozen":
        return env([user or frozen()])
    if regime == "vs":
        return VerbalizedSampling(env([user or frozen()]), **options)
    if regime == "rotation":
        return SimulatorPopulation(env([frozen()]), rotation(), schedule=options.get("schedule", "uniform"))
    if regime == "cotrain":
        return env([LEARNABLE])
    if regime == "population":
        k = options.get("members", 4)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"members must be a positive int, got {k!r}")
        return SimulatorPopulation(env([LEARNABLE]), [LEARNABLE] * k, schedule=options.get("schedule", "uniform"))
    return env([heldout()], split="heldout")
