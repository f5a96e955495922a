"""The benchmark's presets: its games, and per preset the seeds, budget, evaluation episodes and curves
(``scope-envs bench`` runs ``default``; ``--full`` the ``full`` one). A module of its own so that what reads a
preset (the runner, the methods, a reference's rebuild hint) imports it without importing the methods."""

from __future__ import annotations

from scope_envs.bench.protocol import EVAL_EPISODES

PRESETS = {
    # 8 seeds (issue 17; 3 until 2026-11-30), raised per game by the seeds rule (SEEDS_MIN)
    "default": {"seeds": 8, "steps": 20_000, "eval_episodes": EVAL_EPISODES, "curve_points": 4, "curve_episodes": 100,
                "steps_scale": {"tau2": 0.4}},  # tau2 learns in ~8k decisions, and its episodes are longer
    "full": {"seeds": 8, "steps": 100_000, "eval_episodes": 3000, "curve_points": 10, "curve_episodes": 300},
}
GAMES = ("p4g", "cooperbench", "tau2")


def preset_steps(game: str, preset: str = "default") -> int:
    """A preset's training budget for ``game``, in decisions of agent_0: its ``steps`` times the game's
    ``steps_scale`` (1 where it has none)."""
    p = PRESETS[preset]
    return int(p["steps"] * p.get("steps_scale", {}).get(game, 1.0))
