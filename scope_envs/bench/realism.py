"""How close a user is to the real people of a game's training part, and issue 49's known answers.

A user's **distance to the real pairs** is ``scope_envs.train.realism.distance`` between the training part's
reply pairs (``GameSpec.realism``: both folds) and the pairs of ``episodes`` episodes the user plays against
the game's fixed probe agent (``GameSpec.probe_agent``, the agent of ``scope-envs diagnose``: on p4g the
real persuaders' per-turn strategy mix). The agent is fixed so that two users are compared on the same
persuaders; the trainer's own per-iteration distance (``realism_distance`` in its log) reads the replies to
an agent that learns beside the user, and moves with it.

The known answers (declared in ``scope_envs.bench.calibration``'s docstring before the first run; training
side only: the real pairs are the training part's, and no held-out person, proxy or panel member is read):

* **R1** a user fitted to the training part and then collapsed (``collapsed_copy``: the grounded simulator on
  the game's modal card, sharpened by the frozen simulator's exponent) is diagnosed as collapsed: diagnose's
  sharpening (against the training-side reference model) has its CI above the grounded simulator's, and its
  persona sensitivity is below the grounded simulator's.
* **R2** a realism-paid user started from the collapsed simulator ends closer to the real pairs than it
  started: over seeds, ``cotrain-realism``'s user at the end of training is nearer than its behaviour clone of
  the frozen simulator at the start (the 95% bootstrap CI of end - start below 0), and nearer than ``cotrain``'s
  user (paid the game's default reward) at the end of the same budget (the CI of the difference below 0).

``r1_collapsed_copy`` runs R1; ``benchmarks/realism_known_answers.py`` runs both and writes
``benchmarks/results/realism/``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scope_envs.core.simulator import Simulator, View
from scope_envs.games import game_spec
from scope_envs.games.spec import build, load

DISTANCE_EPISODES = 600  # episodes of a user against the probe agent for one distance (floor: the grounded fit's)


class CollapsedCopy(Simulator):
    """``inner`` collapsed as a prompted LLM collapses (docs/architecture.md §1): always ``card``'s replies,
    sharpened by ``sharpening``."""

    def __init__(self, inner: Simulator, card, sharpening: float, name: str = "collapsed-copy"):
        self.inner, self.card, self.sharpening, self.name = inner, card, sharpening, name
        if hasattr(inner, "follow_through"):  # what a stated amount becomes is the inner user's, not its replies
            self.follow_through = inner.follow_through

    def distribution(self, view: View) -> np.ndarray:
        from scope_envs.agents.base import sharpen

        return sharpen(self.inner.distribution(dataclasses.replace(view, persona=self.card)), self.sharpening)


def collapsed_copy(game: str) -> Simulator:
    """The game's grounded simulator collapsed: on its modal card, sharpened by the frozen simulator's exponent."""
    from scope_envs.regimes import SHARPENING

    spec = game_spec(game)
    return CollapsedCopy(build(spec.grounded), load(spec.modal_card)(), SHARPENING,
                         name=f"grounded-collapsed-s{SHARPENING:g}")


def probe_table(game: str, user: Simulator, episodes: int = DISTANCE_EPISODES, seed: int = 0) -> np.ndarray:
    """The pair table of ``user``'s replies to the game's probe agent over ``episodes`` train-card episodes."""
    import scope_envs
    from scope_envs.diagnose.probes import ProbeAgent
    from scope_envs.train.realism import table

    pairs = build(game_spec(game).realism)
    env = scope_envs.make(f"{game}-frozen", user=user)
    agent, rng = ProbeAgent(game, env, False), np.random.default_rng(seed)
    game_ = env.unwrapped.game
    cells = []
    for e in range(episodes):
        env.reset(seed=seed + e)
        while env.agents:
            env.step({"agent_0": agent(rng)})
        history = game_.history
        cells.append(pairs.cells([t.act for t in history if t.role == game_.agent_role],
                                 [t.act for t in history if t.role == game_.user_role]))
    return table(cells, pairs.shape)


def distance_to_real(game: str, user: Simulator, episodes: int = DISTANCE_EPISODES, seed: int = 0) -> float:
    """``user``'s distance to the training part's real pairs, against the probe agent (see the module)."""
    from scope_envs.train.realism import distance

    pairs = build(game_spec(game).realism)
    return distance(pairs.fit + pairs.held_back, probe_table(game, user, episodes, seed))


def r1_collapsed_copy(game: str, **diagnose_options) -> dict:
    """R1: diagnose the grounded simulator and its collapsed copy; the figures and the verdict."""
    from scope_envs.diagnose import diagnose

    out = {}
    for name, sim in (("grounded", build(game_spec(game).grounded)), ("collapsed_copy", collapsed_copy(game))):
        d = diagnose(game, sim, **diagnose_options)
        out[name] = {"sharpening": d["sharpening"]["value"], "sharpening_ci": list(d["sharpening"]["ci"]),
                     "persona_sensitivity": d["persona_sensitivity"]["value"],
                     "persona_sensitivity_ci": list(d["persona_sensitivity"]["ci"])}
    g, c = out["grounded"], out["collapsed_copy"]
    out["held"] = bool(c["sharpening_ci"][0] > g["sharpening_ci"][1]
                       and c["persona_sensitivity_ci"][1] < g["persona_sensitivity_ci"][0])
    return out


def user_distance(trainer, game: str, seed: int, episodes: int = DISTANCE_EPISODES, start: bool = False) -> float:
    """``distance_to_real`` of a trainer's first co-trained user network: as it is now, or (``start``) as it began
    training (the behaviour clone, kept as ``trainer.init``). Training side only: the probe agent plays train
    cards."""
    from scope_envs.train.act_ppo import PolicySnapshot

    net = trainer.seat[next(a for a in trainer.envs[0].possible_agents if a != "agent_0")]
    return distance_to_real(game, PolicySnapshot((trainer.init if start else trainer.learners)[net]), episodes, seed)


def realism_metrics(trainer, game: str, seed: int) -> dict:
    """A realism row's record figures: its user's distance to the real pairs at the start of training and now."""
    return {"realism_distance_start": user_distance(trainer, game, seed, start=True),
            "realism_distance_end": user_distance(trainer, game, seed)}
