"""The benchmark's presets: its games, and per preset the seeds, budget, evaluation episodes and curves
(``scope-envs bench`` runs ``default``; ``--full`` the ``full`` one). A module of its own so that what reads a
preset (the runner, the methods, a reference's rebuild hint) imports it without importing the methods."""

from __future__ import annotations

from scope_envs.bench.protocol import EVAL_EPISODES
from scope_envs.games import game_names, game_spec

GAMES = game_names()  # every registered game, in declared order (scope_envs.games)
PRESETS = {
    # 8 seeds (issue 17; 3 until 2026-11-30), raised per game by the seeds rule (SEEDS_MIN)
    "default": {"seeds": 8, "steps": 20_000, "eval_episodes": EVAL_EPISODES, "curve_points": 4, "curve_episodes": 100,
                # each game's GameSpec.steps_scale, where it is not 1 (tau2: it learns in ~8k decisions)
                "steps_scale": {g: game_spec(g).steps_scale for g in GAMES if game_spec(g).steps_scale != 1.0}},
    "full": {"seeds": 8, "steps": 100_000, "eval_episodes": 3000, "curve_points": 10, "curve_episodes": 300},
}


def preset_steps(game: str, preset: str = "default") -> int:
    """A preset's training budget for ``game``, in decisions of agent_0: its ``steps`` times the game's
    ``steps_scale`` (1 where it has none)."""
    p = PRESETS[preset]
    return int(p["steps"] * p.get("steps_scale", {}).get(game, 1.0))
