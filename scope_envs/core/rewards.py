"""Simulator rewards that SCOPE trains co-trained users with, written in ``agent_score`` (in [0, 1]).

* ``adversarial``: ``1 - score`` (SCOPE's Persuasion-for-Good persuadee).
* ``cooperative``: ``score`` (SCOPE's tau^2 default).
* ``curriculum``: ``exp(-(var - target_var)^2 / width)``, ``var`` the population
  variance (ddof 0) of the agent's scores over a *group* of episodes played on
  one scenario; the same value for every user sample of the group. It pays the
  simulator for keeping the agent near a 50% success rate: a purely adversarial
  simulator learns to refuse everything, a cooperative one to concede
  everything (SCOPE's tau^2 ablation). A game cannot compute it from one
  episode, so the env pays 0 under ``curriculum`` and the trainer, which holds
  the group, pays ``curriculum_reward`` (``scope_envs.train.act_ppo`` does).

    >>> [round(curriculum_reward([1.0] * k + [0.0] * (8 - k)), 3) for k in range(5)]
    [0.044, 0.372, 0.823, 0.988, 1.0]

The realism rewards are ours (issue 49), for a game with real dialogues to ground in (``GameSpec.realism``):
``realism`` pays the user, per reply, a discriminator's log-odds that the reply is a real person's
(``scope_envs.train.realism``); ``realism_mixed`` pays half of that and half of the game's default user
reward. The discriminator is trained as training goes, so the env pays 0 (``realism``) or the default's half
(``realism_mixed``) and the trainer pays the rest (``REALISM_REWARDS``: each mode's weight of the realism term).
"""

from __future__ import annotations

import numpy as np

SIMULATOR_REWARDS = ("adversarial", "cooperative", "curriculum")
REALISM_REWARDS = {"realism": 1.0, "realism_mixed": 0.5}
TRAINED_USER_REWARDS = SIMULATOR_REWARDS + tuple(REALISM_REWARDS)  # what a trainer can pay its trained user
TARGET_VAR, WIDTH = 0.25, 0.02  # SCOPE's defaults: the variance of a 50% success rate


class UnknownUserReward(ValueError):
    """A user reward the game does not pay; ``accepted`` holds the ones it does, for a caller that names them
    in its own words (``train --user-reward`` takes only some of a game's rewards)."""

    def __init__(self, given, accepted):
        self.given, self.accepted = given, tuple(accepted)
        super().__init__(f"user_reward must be one of {self.accepted}, got {given!r}")


def trained_reward_refusal(env_id: str, error: UnknownUserReward) -> str:
    """A trainer's refusal of a user reward ``env_id``'s game does not pay, naming those it pays that a trainer can
    pay (``TRAINED_USER_REWARDS``; the game's own list holds more: shared, persona, ...)."""
    takes = [r for r in TRAINED_USER_REWARDS if r in error.accepted]
    return f"{env_id}'s trained user has no {error.given!r} reward; it takes {', '.join(takes)}"


def check_user_reward(user_reward, accepted) -> None:
    """Raise ``UnknownUserReward`` unless ``user_reward`` is one of ``accepted``."""
    if user_reward not in accepted:
        raise UnknownUserReward(user_reward, accepted)


def curriculum_reward(scores, target_var: float = TARGET_VAR, width: float = WIDTH) -> float:
    """The curriculum reward of one group of episodes, from the agent's scores in [0, 1]."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or len(scores) < 2:
        raise ValueError(f"the curriculum reward needs a group of at least 2 episodes, got {len(np.atleast_1d(scores))}")
    if width <= 0:
        raise ValueError(f"width must be > 0, got {width}")
    return float(np.exp(-((scores.var() - target_var) ** 2) / width))


def simulator_reward(mode: str, score: float) -> float:
    """The per-episode simulator reward of ``adversarial`` or ``cooperative``; 0 under ``curriculum``
    (the trainer pays it per group)."""
    if mode == "adversarial":
        return 1.0 - score
    if mode == "cooperative":
        return score
    if mode == "curriculum":
        return 0.0
    raise ValueError(f"simulator reward must be one of {SIMULATOR_REWARDS}, got {mode!r}")


def curriculum_options(user_reward: str, target_var, width) -> tuple[float, float]:
    """``(target_var, width)`` of the ``curriculum`` user reward, checked; the defaults under any other mode,
    where passing either is an error (it would be ignored)."""
    given = [name for name, value in (("target_var", target_var), ("width", width)) if value is not None]
    if user_reward != "curriculum":
        if given:
            raise ValueError(f"{' and '.join(given)} only apply to user_reward='curriculum', got {user_reward!r}")
        return TARGET_VAR, WIDTH
    target_var = TARGET_VAR if target_var is None else target_var
    width = WIDTH if width is None else width
    for name, value in (("target_var", target_var), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} must be a number, got {value!r}")
    if not 0.0 <= target_var <= 0.25:
        raise ValueError(f"target_var must be in [0, 0.25] (the variance of scores in [0, 1]), got {target_var!r}")
    if not 0.0 < width < float("inf"):
        raise ValueError(f"width must be a finite number > 0, got {width!r}")
    return float(target_var), float(width)
