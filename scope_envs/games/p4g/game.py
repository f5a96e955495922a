"""The Persuasion-for-Good game as a pure state machine (see the package docstring)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Game, InGameError, Persona, Turn
from scope_envs.core.rewards import SIMULATOR_REWARDS, curriculum_options, simulator_reward
from scope_envs.games.p4g import dialogue_acts, language, personas
from scope_envs.games.p4g.reference import expected_gift

PERSUADER, PERSUADEE = "persuader", "persuadee"
# ``zero_sum`` is v0's ``adversarial`` (minus the gift in dollars); ``adversarial`` is now SCOPE's 1 - score
USER_REWARDS = ("mixed", "persona", "zero_sum") + SIMULATOR_REWARDS
N_PERSUADER_ACTS, N_PERSUADEE_ACTS = len(dialogue_acts.PERSUADER_ACTS), len(dialogue_acts.PERSUADEE_ACTS)

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


_Z: dict = {}  # id(card) -> (card, the parameters it was standardized with, its z): see ``card_z``


def card_z(persona: Persona) -> np.ndarray:
    """The card's standardized traits as the persuadee's features read them (clipped to +-4, float32; read-only),
    computed once per card and parameters: a game is reset on a card thousands of times an evaluation, and the
    cards are immutable, mostly cached objects (``personas.persona``)."""
    p = personas.params()
    hit = _Z.get(id(persona))
    if hit is None or hit[0] is not persona or hit[1] is not p:
        if len(_Z) > 8192:
            _Z.clear()
        z = np.clip(personas.standardize(persona), -4, 4).astype(np.float32)
        z.flags.writeable = False
        hit = _Z[id(persona)] = (persona, p, z)
    return hit[2]


class P4GGame(Game):
    name = "p4g"
    agent_role = PERSUADER
    user_role = PERSUADEE
    success_metric = "actual"
    success_label = "mean donation ($)"

    def __init__(self, max_turns: int = 10, user_reward: str = "mixed", target_var: float | None = None,
                 width: float | None = None):
        super().__init__()
        if user_reward not in USER_REWARDS:
            raise ValueError(f"user_reward must be one of {USER_REWARDS}, got {user_reward!r}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.max_turns = max_turns
        self.user_reward = user_reward
        self.target_var, self.width = curriculum_options(user_reward, target_var, width)
        self.reset(personas.default_persona(), np.random.default_rng(0))

    def _reset_state(self):
        self.history = []
        self.persuader_turns = 0
        self.stated: float | None = None
        self.final = False
        self.done = False
        self.actual = 0.0
        self._counts = {
            PERSUADER: np.zeros(N_PERSUADER_ACTS, np.float32),
            PERSUADEE: np.zeros(N_PERSUADEE_ACTS, np.float32),
        }

    def acts(self, role):
        return dialogue_acts.PERSUADER_ACTS if role == PERSUADER else dialogue_acts.PERSUADEE_ACTS

    def sample_persona(self, rng, split):
        return personas.sample(rng, split)

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        self.persona = persona
        self._rng = rng
        self._z = card_z(persona)
        self._reset_state()

    def active_role(self):
        if self.done:
            return None
        return PERSUADEE if self.history and self.history[-1].role == PERSUADER else PERSUADER

    def legal(self, role):
        mask = super().legal(role)
        if role == PERSUADEE and role == self.active_role():
            if self.final:
                mask[1 : dialogue_acts.FIRST_AMOUNT] = False
            mask[dialogue_acts.PERSUADEE_INDEX["closing"]] = self.stated is not None
        return mask

    def apply(self, role, act, text: str = ""):
        if role != self.active_role():
            raise ValueError(f"it is not the {role}'s turn")
        if not self.legal(role)[act]:
            raise ValueError(f"{role}: act {self.acts(role)[act]!r} is illegal now")
        self.history.append(Turn(role, act, text))
        self._counts[role][act] += 1
        if role == PERSUADER:
            self.persuader_turns += 1
            self.final = act == dialogue_acts.PERSUADER_INDEX["close"] or self.persuader_turns >= self.max_turns
            return
        if act >= dialogue_acts.FIRST_AMOUNT:
            self.stated = dialogue_acts.AMOUNT_BINS[act - dialogue_acts.FIRST_AMOUNT]
        if self.final or act == dialogue_acts.PERSUADEE_INDEX["closing"]:
            self.done = True
            intended = self.stated or 0.0
            follow = getattr(self.user_player, "follow_through", None)
            self.actual = float(follow(intended, self._rng)) if follow else intended

    def features(self, role):
        turn = np.array([self.persuader_turns / self.max_turns], np.float32)
        stated = np.array([self.stated is not None, (self.stated or 0.0) / 2.0], np.float32)
        last = self.history[-1].act if self.history else 0
        if role == PERSUADER:
            last_user = np.zeros(N_PERSUADEE_ACTS, np.float32)
            if self.history and self.history[-1].role == PERSUADEE:
                last_user[last] = 1
            return np.concatenate([turn, last_user, self._counts[PERSUADEE] / 5, self._counts[PERSUADER] / 5, stated])
        last_persuader = np.zeros(N_PERSUADER_ACTS, np.float32)
        if self.history and self.history[-1].role == PERSUADER:
            last_persuader[last] = 1
        final = np.array([self.final], np.float32)
        return np.concatenate(
            [self._z, turn, last_persuader, self._counts[PERSUADER] / 5, self._counts[PERSUADEE] / 5, stated, final]
        )

    def outcome(self):
        return {
            "intended": self.stated or 0.0,
            "actual": self.actual,
            "stated": float(self.stated is not None),
            "persuader_turns": float(self.persuader_turns),
        }

    def rewards(self):
        if not self.done:
            return {PERSUADER: 0.0, PERSUADEE: 0.0}
        if self.user_reward in SIMULATOR_REWARDS:
            return {PERSUADER: self.actual, PERSUADEE: simulator_reward(self.user_reward, self.agent_score())}
        persona_term = -abs((self.stated or 0.0) - expected_gift(self.persona))
        user = {"zero_sum": -self.actual, "persona": persona_term, "mixed": 0.5 * persona_term - 0.5 * self.actual}
        return {PERSUADER: self.actual, PERSUADEE: user[self.user_reward]}

    def agent_score(self) -> float:
        """The actual gift over the $2 payment, in [0, 1] (SCOPE's P4G score); 0 before the end."""
        return min(max(self.actual / 2.0, 0.0), 1.0)

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
