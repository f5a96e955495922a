"""The CooperBench game as a pure state machine (see the package docstring)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Game, InGameError, Persona, Turn
from scope_envs.core.rewards import SIMULATOR_REWARDS, curriculum_options, simulator_reward
from scope_envs.games.cooperbench import language, styles, world
from scope_envs.games.cooperbench.dialogue_acts import ACTS, CLAIM, COMBINED, EDIT, INDEX, MESSAGES, describe, kind, region
from scope_envs.games.cooperbench.world import N_REGIONS

TEAMMATE, PARTNER = "teammate", "partner"
FEATURE = {TEAMMATE: "A", PARTNER: "B"}
# ``zero_sum`` is v0's ``adversarial`` (minus the agent's reward); ``adversarial`` is now SCOPE's 1 - score
USER_REWARDS = ("persona", "mixed", "zero_sum") + SIMULATOR_REWARDS
TEAM_BONUS, OWN_BONUS = 1.0, 0.5


def task_split(persona: Persona) -> str:
    """The split an episode's task is drawn from: the persona's, else (a card of no split) train's."""
    return persona.split if persona.split in world.SPLIT_KEYS else "train"


def task_index(rng: np.random.Generator, persona: Persona) -> int:
    """``reset``'s one draw: the index of the episode's task in ``world.tasks(task_split(persona))``."""
    return int(rng.integers(len(world.tasks(task_split(persona)))))


class CooperBenchGame(Game):
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
        self.reset(styles.default_persona(), np.random.default_rng(0))

    def acts(self, role):
        return ACTS

    def sample_persona(self, rng, split):
        return styles.sample(rng, split)

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        self.persona = persona
        self.task = world.tasks(task_split(persona))[task_index(rng, persona)]
        self.history = []
        self.needs = {TEAMMATE: self.task.needs[0], PARTNER: self.task.needs[1]}
        self.turns = {TEAMMATE: 0, PARTNER: 0}
        self.submitted = {TEAMMATE: False, PARTNER: False}
        self.edits: dict[str, dict[int, tuple[str, ...]]] = {TEAMMATE: {}, PARTNER: {}}
        self.claims = {TEAMMATE: set(), PARTNER: set()}
        self.known = {TEAMMATE: frozenset(), PARTNER: frozenset()}  # what each knows of the other's needs
        self.announced = {TEAMMATE: False, PARTNER: False}
        self.reported = {TEAMMATE: False, PARTNER: False}
        self.asked = {TEAMMATE: False, PARTNER: False}  # a question from the other awaits this role
        self.messages = 0
        self.result: dict[str, float] | None = None
        self._next = TEAMMATE

    @staticmethod
    def other(role):
        return PARTNER if role == TEAMMATE else TEAMMATE

    def active_role(self):
        return None if self.result is not None else self._next

    def legal(self, role):
        if role != self.active_role():
            return super().legal(role)
        mask = np.zeros(len(ACTS), dtype=bool)
        own, known = self.needs[role], self.known[role]
        for r in own:
            mask[EDIT + r] = True
            mask[COMBINED + r] = r in known
            mask[CLAIM + r] = r not in self.claims[role]
        mask[INDEX["announce_plan"]] = not self.announced[role]
        mask[INDEX["report_done"]] = bool(self.edits[role]) and not self.reported[role]
        mask[INDEX["ask"]] = not known and not self.asked[self.other(role)]
        mask[INDEX["answer"]] = mask[INDEX["decline"]] = self.asked[role]
        mask[INDEX["wait"]] = mask[INDEX["submit"]] = True
        return mask

    def apply(self, role, act, text: str = ""):
        if role != self.active_role():
            raise ValueError(f"it is not the {role}'s turn")
        if not self.legal(role)[act]:
            raise ValueError(f"{role}: act {ACTS[act]!r} is illegal now")
        self.history.append(Turn(role, act, text))
        other, k = self.other(role), kind(act)
        if k == "edit":
            self.edits[role][region(act)] = (FEATURE[role],)
        elif k == "edit_combined":  # which features the region carries; ``written`` gives the text's order
            self.edits[role][region(act)] = ("A", "B")
        elif k == "claim":
            self.claims[role].add(region(act))
        elif k in ("announce_plan", "answer"):
            self.known[other] = self.needs[role]
            self.announced[role] |= k == "announce_plan"
        elif k == "report_done":
            self.reported[role] = True
        elif k == "ask":
            self.asked[other] = True
        elif k == "submit":
            self.submitted[role] = True
        if k in ("answer", "decline"):
            self.asked[role] = False
        self.messages += k == "claim" or k in MESSAGES
        self.turns[role] += 1
        if self.turns[role] >= self.max_turns:
            self.submitted[role] = True
        if all(self.submitted.values()):
            self._finish()
        else:
            self._next = other if not self.submitted[other] else role

    def written(self, role) -> dict[int, tuple[str, ...]]:
        """``role``'s edits as its branch's text has them: a combined edit with the writer's own feature's
        line first (``world.edited_region``), so the two teammates' combined edits of one region differ."""
        order = (FEATURE[role], FEATURE[self.other(role)])
        return {r: order if len(f) == 2 else f for r, f in self.edits[role].items()}

    def _finish(self):
        merged, conflicts = world.merge(self.written(TEAMMATE), self.written(PARTNER))
        done = {r: world.feature_done(merged, conflicts, self.needs[r], FEATURE[r]) for r in (TEAMMATE, PARTNER)}
        self.result = {
            "success": float(all(done.values()) and not conflicts),
            "teammate_feature": float(done[TEAMMATE]),
            "partner_feature": float(done[PARTNER]),
            "conflicts": float(len(conflicts)),
            "merge_conflict": float(bool(conflicts)),
            "message_share": self.messages / max(1, len(self.history)),
        }

    def features(self, role):
        other = self.other(role)
        multi = np.zeros((6, N_REGIONS), np.float32)
        for i, regions in enumerate(
            (self.needs[role], self.known[role], self.claims[other], self.claims[role],
             [r for r, f in self.edits[role].items() if len(f) == 1],
             [r for r, f in self.edits[role].items() if len(f) == 2])
        ):
            multi[i, list(regions)] = 1
        last = np.zeros(len(MESSAGES) + 1, np.float32)
        said = [t.act for t in self.history if t.role == other and kind(t.act) in MESSAGES]
        last[MESSAGES.index(kind(said[-1])) + 1 if said else 0] = 1
        flags = np.array(
            [self.turns[role] / self.max_turns, self.asked[role], self.reported[other], self.submitted[other]],
            np.float32,
        )
        return np.concatenate([multi.ravel(), last, flags])

    def outcome(self):
        base = {"success": 0.0, "teammate_feature": 0.0, "partner_feature": 0.0, "conflicts": 0.0, "merge_conflict": 0.0,
                "message_share": 0.0}
        return self.result or base

    def rewards(self):
        if self.result is None:
            return {TEAMMATE: 0.0, PARTNER: 0.0}
        agent = self._agent_reward()
        if self.user_reward in SIMULATOR_REWARDS:
            return {TEAMMATE: agent, PARTNER: simulator_reward(self.user_reward, self.agent_score())}
        team = TEAM_BONUS * self.result["success"]
        talk = abs(self.result["message_share"] - self.persona.traits.get("talk", 0.5))
        persona = team + OWN_BONUS * self.result["partner_feature"] - talk
        user = {"zero_sum": -agent, "persona": persona, "mixed": 0.5 * persona - 0.5 * agent}
        return {TEAMMATE: agent, PARTNER: user[self.user_reward]}

    def _agent_reward(self) -> float:
        """``agent_0``'s reward once over: team success + its own feature's bonus."""
        return TEAM_BONUS * self.result["success"] + OWN_BONUS * self.result["teammate_feature"]

    def agent_score(self) -> float:
        """The teammate's reward over its maximum (``TEAM_BONUS + OWN_BONUS``), in [0, 1]; 0 before the end."""
        if self.result is None:
            return 0.0
        return self._agent_reward() / (TEAM_BONUS + OWN_BONUS)

    def info(self):
        return {"turns": dict(self.turns), "submitted": dict(self.submitted)}

    def private(self, role):
        other = self.other(role)
        return {
            "task": self.task.id,
            "needs": self.needs[role],
            "known": self.known[role],
            "partner_claims": frozenset(self.claims[other]),
            "own_claims": frozenset(self.claims[role]),
            "edits": dict(self.edits[role]),
            "asked": self.asked[role],
            "announced": self.announced[role],
            "reported": self.reported[role],
            "partner_done": self.reported[other] or self.submitted[other],
            "turn": self.turns[role],
        }

    def realize(self, role, act, rng):
        return language.realize(act, self.needs[role], rng)

    def understand(self, role, utterance):
        act = language.understand(utterance, self.asked[role])
        if not self.legal(role)[act]:
            raise InGameError(f"{describe(act)} is not possible now")
        return act

    def instructions(self, role):
        return language.instructions(FEATURE[role], self.needs[role], self.max_turns)
