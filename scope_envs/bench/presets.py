"""The benchmark's presets: its games, and per preset the seeds, budget, evaluation episodes and curves
(``scope-envs bench`` runs ``default``; ``--full`` the ``full`` one). A module of its own so that what reads a
preset (the runner, the methods, a reference's rebuild hint) imports it without importing the methods."""

from __future__ import annotations

from scope_envs.bench.budgets import ceiling_budget
from scope_envs.bench.protocol import EVAL_EPISODES
from scope_envs.games import game_names, game_spec

GAMES = game_names()  # every registered game, in declared order (scope_envs.games)
PRESETS = {
    # 8 seeds, raised per game by the seeds rule (SEEDS_MIN) so that its confirmatory MDE is at most 15% of the band
    # the default preset's budget is each game's by the plateau rule (GameSpec.budget, scope_envs.bench.budgets)
    "default": {"seeds": 8, "steps": "plateau", "eval_episodes": EVAL_EPISODES, "curve_points": 4, "curve_episodes": 100},
    "full": {"seeds": 8, "steps": 100_000, "eval_episodes": 3000, "curve_points": 10, "curve_episodes": 300},
}
ORACLE_BUDGET = 5  # the ceiling's budget over the methods' in a run below the plateau (``ceiling_steps``)
# a smoke run (--steps below SMOKE_STEPS, no --eval-episodes) keeps its evaluation small too
SMOKE_STEPS = 5000
SMOKE_EVAL_EPISODES = 200


def preset_steps(game: str, preset: str = "default") -> int:
    """A preset's training budget for ``game``, in decisions of agent_0: the default preset's is the game's
    plateau budget (``GameSpec.budget``), the full preset's its ``steps``."""
    steps = PRESETS[preset]["steps"]
    return game_spec(game).budget if steps == "plateau" else steps


def ceiling_steps(game: str, steps: int) -> int:
    """The ceiling's (``oracle``'s) budget in a run whose methods train ``steps`` decisions on ``game``. At or above
    the methods' plateau budget, the ceiling's own plateau budget, never less than the methods'
    (``budgets.ceiling_budget``); below it (a quick run, at no plateau anyway), ``ORACLE_BUDGET`` times ``steps``,
    capped at the ceiling's plateau budget."""
    spec = game_spec(game)
    if steps >= spec.budget:
        return ceiling_budget(spec.ceiling_budget, steps)
    return min(ORACLE_BUDGET * steps, spec.ceiling_budget)


def is_smoke(steps: int | None, eval_episodes: int | None) -> bool:
    """A smoke run: ``--steps`` below ``SMOKE_STEPS`` without ``--eval-episodes``."""
    return steps is not None and eval_episodes is None and steps < SMOKE_STEPS


def run_settings(seeds=None, steps=None, eval_episodes=None, full=False) -> dict:
    """The preset's seeds, steps, evaluation episodes and curves with the options given (None: the preset's; its
    steps are per game); a smoke run keeps its evaluation small too."""
    settings = dict(PRESETS["full" if full else "default"])
    for key, value in (("seeds", seeds), ("steps", steps), ("eval_episodes", eval_episodes)):
        if value is not None:
            settings[key] = value
    if is_smoke(steps, eval_episodes):
        settings.update(eval_episodes=min(settings["eval_episodes"], SMOKE_EVAL_EPISODES),
                        curve_episodes=min(settings["curve_episodes"], 50),
                        curve_points=min(settings["curve_points"], 3))
    return settings
