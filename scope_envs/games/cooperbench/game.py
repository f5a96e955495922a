"""The CooperBench game for one episode: the batched rules on a batch of one (see the package docstring)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Game, InGameError, Persona, Turn
from scope_envs.core.rewards import curriculum_options
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

ONE = np.zeros(1, np.int64)  # the batch-of-one's slot
ROLE_INDEX = {TEAMMATE: 0, PARTNER: 1}


def task_split(persona: Persona) -> str:
    """The split an episode's task is drawn from: the persona's, else (a card of no split) train's."""
    return persona.split if persona.split in world.SPLIT_KEYS else "train"


def task_index(rng: np.random.Generator, persona: Persona) -> int:
    """``reset``'s one draw: the index of the episode's task in ``world.tasks(task_split(persona))``."""
    return int(rng.integers(len(world.tasks(task_split(persona)))))


class CooperBenchGame(Game):
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
        if user_reward not in USER_REWARDS:
            raise ValueError(f"user_reward must be one of {USER_REWARDS}, got {user_reward!r}")
        if max_turns < 2:
            raise ValueError(f"max_turns must be >= 2, got {max_turns}")
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
        self._legal: dict[str, np.ndarray] = {}  # this turn's masks (asked several times a turn; ``apply`` clears)
        self.batch.reset(ONE, [{"needs": self.task.needs, "talk": persona.traits.get("talk", 0.5)}])

    @staticmethod
    def other(role):
        return PARTNER if role == TEAMMATE else TEAMMATE

    # the state, read from the batch's row
    @property
    def needs(self) -> dict[str, frozenset[int]]:
        return {TEAMMATE: self.task.needs[0], PARTNER: self.task.needs[1]}

    @property
    def done(self) -> bool:
        return bool(self.batch.done[0])

    def active_role(self):
        active = int(self.batch.active()[0])
        return None if active < 0 else ROLES[active]

    def legal(self, role):
        mask = self._legal.get(role)
        if mask is None:
            mask = self._legal[role] = self.batch.legal(ROLE_INDEX[role], self.batch.active())[0]
        return mask.copy()

    def apply(self, role, act, text: str = ""):
        if role != self.active_role():
            raise ValueError(f"it is not the {role}'s turn")
        if not self.legal(role)[act]:
            raise ValueError(f"{role}: act {ACTS[act]!r} is illegal now")
        self.history.append(Turn(role, act, text))
        self._legal = {}
        self.batch.apply(ROLE_INDEX[role], ONE, np.array([act]))

    def features(self, role):
        return self.batch.features(ROLE_INDEX[role])[0]

    def outcome(self):
        return {key: float(value[0]) for key, value in self.batch.outcome(ONE).items()}

    def rewards(self):
        if not self.done:
            return {TEAMMATE: 0.0, PARTNER: 0.0}
        agent, user = self.batch.rewards(ONE)
        return {TEAMMATE: float(agent[0]), PARTNER: float(user[0])}

    def agent_score(self) -> float:
        """The teammate's reward over its maximum (``TEAM_BONUS + OWN_BONUS``), in [0, 1]; 0 before the end."""
        return float(self.batch.agent_score(ONE)[0]) if self.done else 0.0

    def info(self):
        return self.batch.public(0)

    def private(self, role):
        return self.batch.private(0, ROLE_INDEX[role], self.task.id)

    def realize(self, role, act, rng):
        return language.realize(act, self.needs[role], rng)

    def understand(self, role, utterance):
        act = language.understand(utterance, bool(self.batch.asked[0, ROLE_INDEX[role]]))
        if not self.legal(role)[act]:
            raise InGameError(f"{describe(act)} is not possible now")
        return act

    def instructions(self, role):
        return language.instructions(FEATURE[role], self.needs[role], self.max_turns)
