"""The CooperBench game for one episode: the batched rules on a batch of one (see the package docstring)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import MAX_EPISODE_TURNS, check_int
from scope_envs.core.game import InGameError, Persona, RowGame
from scope_envs.core.rewards import check_user_reward, curriculum_options
from scope_envs.games.cooperbench import language, styles, world
from scope_envs.games.cooperbench.batched import (  # noqa: F401  (the game's constants, defined with its rules)
    FEATURE,
    OUTCOMES,
    OWN_BONUS,
    PARTNER,
    ROLES,
    TEAM_BONUS,
    TEAMMATE,
    USER_REWARDS,
    CooperBenchBatch,
)
from scope_envs.games.cooperbench.dialogue_acts import ACTS, describe


def task_split(persona: Persona) -> str:
    """The split an episode's task is drawn from: the persona's, else (a card of no split) train's."""
    return persona.split if persona.split in world.SPLIT_KEYS else "train"


def task_index(rng: np.random.Generator, persona: Persona) -> int:
    """``reset``'s one draw: the index of the episode's task in ``world.tasks(task_split(persona))``."""
    return int(rng.integers(len(world.tasks(task_split(persona)))))


class CooperBenchGame(RowGame):
    """One CooperBench game: a batch of one of ``CooperBenchBatch`` (``scope_envs.games.cooperbench.batched``),
    the one definition of the rules, with the transcript and the task on top."""

    name = "cooperbench"
    agent_role = TEAMMATE
    user_role = PARTNER
    success_metric = "success"
    success_label = "cooperative success rate"

    def __init__(self, max_turns: int = 12, user_reward: str = "persona", target_var: float | None = None,
                 width: float | None = None):
        super().__init__()
        check_user_reward(user_reward, USER_REWARDS)
        check_int("max_turns", max_turns, 2, MAX_EPISODE_TURNS)  # a str, a float or a bool too, naming it
        self.max_turns = max_turns
        self.user_reward = user_reward
        self.target_var, self.width = curriculum_options(user_reward, target_var, width)
        self.batch = CooperBenchBatch(1, max_turns, user_reward)
        self.reset(styles.default_persona(), np.random.default_rng(0))

    def acts(self, role):
        return ACTS

    def sample_persona(self, rng, split):
        return styles.sample(rng, split)

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        self.persona = persona
        self.task = world.tasks(task_split(persona))[task_index(rng, persona)]
        self.history = []
        self.reset_row([{"needs": self.task.needs, "talk": persona.traits.get("talk", 0.5)}])

    @staticmethod
    def other(role):
        return PARTNER if role == TEAMMATE else TEAMMATE

    # the state, read from the batch's row
    @property
    def needs(self) -> dict[str, frozenset[int]]:
        return {TEAMMATE: self.task.needs[0], PARTNER: self.task.needs[1]}

    def info(self):
        return self.batch.public(0)

    def private(self, role):
        return self.batch.private(0, self.roles.index(role), self.task.id)

    def realize(self, role, act, rng):
        return language.realize(act, self.needs[role], rng)

    def understand(self, role, utterance):
        act = language.understand(utterance, bool(self.batch.asked[0, self.roles.index(role)]))
        if not self.legal(role)[act]:
            raise InGameError(f"{describe(act)} is not possible now")
        return act

    def instructions(self, role):
        return language.instructions(FEATURE[role], self.needs[role], self.max_turns)
