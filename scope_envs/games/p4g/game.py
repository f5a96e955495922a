"""The Persuasion-for-Good game for one episode: the batched rules on a batch of one (see the package docstring)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import MAX_EPISODE_TURNS, check_int
from scope_envs.core.game import ONE, InGameError, Persona, RowGame
from scope_envs.core.rewards import check_user_reward, curriculum_options
from scope_envs.games.p4g import dialogue_acts, language, personas
from scope_envs.games.p4g.batched import (  # noqa: F401  (the game's constants, defined with its rules)
    N_PERSUADEE_ACTS,
    N_PERSUADER_ACTS,
    PERSUADEE,
    PERSUADER,
    ROLES,
    USER_REWARDS,
    P4GBatch,
    card_row,
)

PERSUADER_INSTRUCTIONS = (
    "You are a persuader in a study on charitable giving. Your partner was paid $2 for this task. "
    "Convince them to donate some or all of it to Save the Children, a charity that helps children in "
    "developing countries. Speak naturally, one message per turn; the conversation ends after {n} of your turns."
)
PERSUADEE_INSTRUCTIONS = (
    "You are a participant in a study on charitable giving; you were paid $2 for this task and will talk with "
    "someone about the charity Save the Children. Stay true to your persona. {card} "
    "When you decide how much to give (from $0 to $2), write the tag [DONATE $N] in your message, e.g. "
    "[DONATE $0.50]. Say goodbye once you have stated an amount to end the conversation."
)


class P4GGame(RowGame):
    """One Persuasion-for-Good game: a batch of one of ``P4GBatch`` (``scope_envs.games.p4g.batched``), the one
    definition of the rules, with the transcript, the card and the follow-through's generator on top."""

    name = "p4g"
    agent_role = PERSUADER
    user_role = PERSUADEE
    success_metric = "actual"
    success_label = "mean donation ($)"

    def __init__(self, max_turns: int = 10, user_reward: str = "mixed", target_var: float | None = None,
                 width: float | None = None):
        super().__init__()
        check_user_reward(user_reward, USER_REWARDS)
        check_int("max_turns", max_turns, 1, MAX_EPISODE_TURNS)  # a str, a float or a bool too, naming it
        self.max_turns = max_turns
        self.user_reward = user_reward
        self.target_var, self.width = curriculum_options(user_reward, target_var, width)
        self.batch = P4GBatch(1, max_turns, user_reward)
        # a human proxy in the seat replies by its own functions (``human_proxy``), so the game's row tracks only
        # the training side's terms and reads nothing of the held-out part
        self.batch.track_proxy = False
        self.reset(personas.default_persona(), np.random.default_rng(0))

    def acts(self, role):
        return dialogue_acts.PERSUADER_ACTS if role == PERSUADER else dialogue_acts.PERSUADEE_ACTS

    def sample_persona(self, rng, split):
        return personas.sample(rng, split)

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        self.persona = persona
        self._rng = rng
        self.history = []
        self.reset_row(card_row(persona, proxy=False))

    # the state, read from the batch's row
    @property
    def final(self) -> bool:
        return bool(self.batch.final[0])

    @property
    def stated(self) -> float | None:
        return float(self.batch.intended(ONE)[0]) if self.batch.stated[0] >= 0 else None

    @property
    def persuader_turns(self) -> int:
        return int(self.batch.turns[0])

    @property
    def actual(self) -> float:
        return float(self.batch.actual[0])

    def ended(self):
        intended = self.stated or 0.0
        follow = getattr(self.user_player, "follow_through", None)
        self.batch.settle(ONE, np.array([float(follow(intended, self._rng)) if follow else intended]))

    def info(self):
        return {"stated": self.stated, "final": self.final, "persuader_turns": self.persuader_turns}

    def realize(self, role, act, rng):
        if role == PERSUADER:
            return language.realize_persuader(act, rng)
        return language.realize_persuadee(act, self.persona, rng)

    def understand(self, role, utterance):
        if role == PERSUADER:
            return language.understand_persuader(utterance)
        act = language.understand_persuadee(utterance)
        if not self.legal(role)[act]:
            if self.final and self.stated is None:
                raise InGameError("this is your final reply: state your gift with [DONATE $N]")
            # the only other illegal reading is a goodbye before any amount was stated
            act = dialogue_acts.PERSUADEE_INDEX["closing"] if self.final else dialogue_acts.PERSUADEE_INDEX["off_task"]
        return act

    def instructions(self, role):
        if role == PERSUADER:
            return PERSUADER_INSTRUCTIONS.format(n=self.max_turns)
        return PERSUADEE_INSTRUCTIONS.format(card=personas.card(self.persona))
