"""``DialogueParallelEnv``: any game, any surface, any user seat, as a PettingZoo ParallelEnv.

Turn-taking: every live agent is observed every step; the agent whose turn it is
not has only the no-op (act 0) legal, its text is ignored, and
``infos[a]["active"]`` says who speaks. When a simulator holds the user seat it
replies inside ``step``, so ``agent_0`` acts every step.

The user seat is filled per episode by one of ``members``: a ``Simulator``
(played inside the env) or ``LEARNABLE`` (a live agent ``user_j``, ``j`` counting
the learnable members). Two parts are pluggable, as objects the env is built
with or given (wrappers supply them; they never patch the env):

* ``schedule`` picks the member for each episode: ``schedule.pick(n, rng)``,
  told each finished episode by ``schedule.episode_end(member, agent_return)``
  (``FirstOrUniform`` by default). A schedule spans episodes by design (a
  round robin, a bandit's statistics), so ``reset(seed)`` alone does not
  restart it: ``reset(seed=s, options={"reset_schedule": True})`` does
  (``schedule.reset()``), and then the run replays from its seed alone;
* ``user_sampler`` plays one simulator turn: ``user_sampler(sim, view, rng)``
  returns ``(act or message, infos extras)`` (``DirectAnswer`` by default; the
  ``VerbalizedSampling`` wrapper supplies a verbalized sampler).

``reset(seed, options={"scenario_seed": s})`` deals the card (and task) from
``s`` and everything else from ``seed``: a *group* of episodes on one scenario,
as GRPO plays them, with independent dialogue randomness. The member in the
user seat is part of the scenario: it is picked from ``member_generator(s)``
(a schedule that picks by episode, not by its generator, still decides by
itself), so a group meets one simulator, and with it one card where the
members hold cards of their own (p4g's frozen simulator, a rotation).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
from pettingzoo import ParallelEnv

from scope_envs.core.checks import check_actions, check_int, check_reset_options, check_seed, short_repr
from scope_envs.core.game import Game, InGameError
from scope_envs.core.simulator import Simulator, View
from scope_envs.core.surfaces import (MAX_MESSAGE_CHARS, MAX_MESSAGE_CHARS_LIMIT, SURFACES, TextSurface,
                                      act_observation, check_message)

AGENT = "agent_0"
LEARNABLE = "learnable"
_UNSET = object()  # "work the speaker out" (None is a speaker value: nobody's turn)
MEMBER_STREAM = 0x6D656D62  # keys a scenario seed's member pick apart from its card's draws


def member_generator(scenario_seed: int | None, rng: np.random.Generator) -> np.random.Generator:
    """The generator an episode's member is picked from: the env's own, or under a scenario seed one of the
    scenario's, so that the episodes of a group meet the same member."""
    return rng if scenario_seed is None else np.random.default_rng([MEMBER_STREAM, scenario_seed])


class DirectAnswer:
    """The default user-act sampler: the simulator's own answer (an act, or a text player's message)."""

    def __call__(self, sim: Simulator, view: View, rng: np.random.Generator) -> tuple[int | str, dict]:
        return (sim.reply(view, rng) if sim.plays_text else sim.act(view, rng)), {}


class FirstOrUniform:
    """The default member schedule: the only member, or one drawn uniformly per episode."""

    def pick(self, n: int, rng: np.random.Generator) -> int:
        return 0 if n == 1 else int(rng.integers(n))

    def episode_end(self, member: int, agent_return: float) -> None:
        pass

    def reset(self) -> None:
        pass


class DialogueParallelEnv(ParallelEnv):
    """A ``game`` as a PettingZoo ``ParallelEnv``, its user seat filled per episode by one of ``members`` (the
    module's docstring: turn-taking, schedules, scenario seeds). Build one with ``scope_envs.make(id)``."""

    metadata = {"name": "scope_dialogue_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        game: Game,
        members: list[Simulator | str],
        *,
        surface: str = "act",
        split: str = "train",
        regime: str = "",
        render_mode: str | None = None,
        max_errors: int = 3,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        user_sampler: Callable[[Simulator, View, np.random.Generator], tuple[int | str, dict]] | None = None,
        schedule: Any = None,
    ):
        if surface not in SURFACES:
            raise ValueError(f"surface must be one of {sorted(SURFACES)}, got {surface!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if split not in ("train", "heldout"):
            raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
        check_int("max_errors", max_errors, 0)  # in-game errors before the episode truncates
        # on every surface: a text user's messages are cut to it
        check_int("max_message_chars", max_message_chars, 1, MAX_MESSAGE_CHARS_LIMIT)
        self.game = game
        self.surface = TextSurface(game, max_message_chars) if surface == "text" else SURFACES[surface](game)
        self.max_message_chars = max_message_chars
        self.split = split
        self.regime = regime
        self.render_mode = render_mode
        self.max_errors = max_errors
        self.user_sampler = DirectAnswer() if user_sampler is None else user_sampler
        self.schedule = FirstOrUniform() if schedule is None else schedule
        self.metadata = {**self.metadata, "name": f"scope_{game.name}_{regime or 'custom'}_v0"}
        self.set_members(members)
        self.agents: list[str] = []
        self._started = False
        self.member = 0
        self._errors: dict[str, list[str]] = {}
        self._error_count: dict[str, int] = {}

    def __getattr__(self, name):
        # ``_rng`` of an env not yet seeded: an unseeded generator, made on first use (one from the OS's
        # entropy costs ~20 us, and an evaluation builds hundreds of envs whose generators reset replaces)
        if name == "_rng":
            self._rng = rng = np.random.default_rng()
            return rng
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- configuration -----------------------------------------------------
    def set_members(self, members: list[Simulator | str]) -> None:
        """Fill the user seat's roster (used by ``SimulatorPopulation``)."""
        if not members:
            raise ValueError("members must name at least one simulator or LEARNABLE slot")
        for m in members:
            if m != LEARNABLE and not isinstance(m, Simulator):
                raise ValueError(f"each member must be a Simulator or {LEARNABLE!r}, got {m!r}")
        self.members = list(members)
        self.member_agent: list[str | None] = []
        j = 0
        for m in self.members:
            if m == LEARNABLE:
                self.member_agent.append(f"user_{j}")
                j += 1
            else:
                self.member_agent.append(None)
        self.possible_agents = [AGENT] + [a for a in self.member_agent if a]
        self._role = {AGENT: self.game.agent_role}
        self._role.update({a: self.game.user_role for a in self.member_agent if a})

    # (the surface keeps each role's spaces; a cache on these methods would be one for the whole process, holding
    # every env it answered and emptied by each env's construction)
    def observation_space(self, agent):
        return self.surface.observation_space(self._agent_role(agent))

    def action_space(self, agent):
        return self.surface.action_space(self._agent_role(agent))

    def _agent_role(self, agent):
        if agent not in self._role:
            raise ValueError(f"unknown agent {short_repr(agent)}; possible agents are {self.possible_agents}")
        return self._role[agent]

    # -- PettingZoo API --------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        # the arguments checked before anything changes: a bad seed is a ValueError naming it, not numpy's
        check_seed("seed", seed)
        options = check_reset_options("options", options)
        scenario = options.get("scenario_seed")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        if options.get("reset_schedule"):
            self.schedule.reset()
        self._started = True
        self.member = self.schedule.pick(len(self.members), member_generator(scenario, self._rng))
        self._agent_return = 0.0
        sim = self.simulator
        persona = sim.persona if sim is not None and sim.persona is not None else None
        if persona is None:  # a scenario seed deals the same card (and task) to every episode given it
            rng = self._rng if scenario is None else np.random.default_rng(scenario)
            persona = self.game.sample_persona(rng, self.split)
        self.game.user_player = sim
        self.game.reset(persona, self._rng)
        user_agent = self.member_agent[self.member]
        self.agents = [AGENT] + ([user_agent] if user_agent else [])
        self._errors = {a: [] for a in self.agents}
        self._error_count = {a: 0 for a in self.agents}
        self._sim_info: dict = {}
        self.simulator_errors = 0
        self._sim_errors: list[str] = []
        self._run_simulator()
        return self._observe(), self._infos()

    @property
    def simulator(self) -> Simulator | None:
        m = self.members[self.member]
        return None if m == LEARNABLE else m

    def step(self, actions: dict[str, Any]):
        return self._step(actions, True)

    def _step(self, actions: dict[str, Any], full_infos: bool):
        """``step``; without ``full_infos`` the infos hold only each live agent's ``active`` flag (the loop vec
        engine reads nothing else of them, and building the full ones is a good part of a cheap game's step)."""
        if not self._started:
            raise ValueError("step() called before reset(); call reset(seed=...) first")
        if not self.agents:
            raise ValueError("step() called on a finished episode; call reset() first")
        check_actions(actions)
        for agent in actions:
            if agent not in self.agents:
                raise ValueError(f"unknown agent {short_repr(agent)}: live agents are {self.agents}")
        speaker = self._speaker()
        parsed = {}
        for agent in self.agents:
            if agent not in actions:
                if agent == speaker:
                    raise ValueError(f"{agent}: it is this agent's turn but no action was given")
                continue
            try:
                parsed[agent] = self.surface.parse(agent, self._role[agent], actions[agent], agent == speaker)
            except InGameError as e:
                parsed[agent] = e
        self._errors = {a: [] for a in self.agents}
        truncated = False
        result = parsed.get(speaker)
        if isinstance(result, InGameError):
            self._error_count[speaker] += 1
            self._errors[speaker].append(f"{result} ({self._error_count[speaker]}/{self.max_errors})")
            truncated = self._error_count[speaker] >= self.max_errors
        elif speaker is not None:
            act, text = result
            self.game.apply(self._role[speaker], act, text or self._realize(self._role[speaker], act))
            self._sim_info = {}
            truncated = not self._run_simulator()

        over = self.game.active_role() is None
        # a game cut short by its own limits (steps, tool errors) truncates rather than terminates
        truncated = truncated or (over and self.game.truncated())
        done = over and not truncated
        role_rewards = self.game.rewards() if over else {}
        speaker = self._speaker()  # the next speaker: fixed until the next turn, read by the observations and infos
        obs = self._observe(speaker)
        rewards = {a: float(role_rewards.get(self._role[a], 0.0)) for a in self.agents}
        terms = {a: done for a in self.agents}
        truncs = {a: truncated and not done for a in self.agents}
        infos = self._infos(speaker) if full_infos else {a: {"active": a == speaker} for a in self.agents}
        self._agent_return += rewards[AGENT]
        if done or truncated:
            self.agents = []
            self.schedule.episode_end(self.member, self._agent_return)
        return obs, rewards, terms, truncs, infos

    def _run_simulator(self) -> bool:
        """Let the simulator in the user seat speak; False if its errors used up ``max_errors``."""
        sim = self.simulator
        role = self.game.user_role
        while sim is not None and self.game.active_role() == role:
            view = self.view(role, errors=tuple(self._sim_errors), observation=sim.wants_observation)
            choice, extra = self.user_sampler(sim, view, self._rng)
            self._sim_info = extra
            if isinstance(choice, str):  # a text player's message, read like a learnable agent's
                try:
                    text = check_message(choice, self.max_message_chars)
                    act = self.game.understand(role, text)
                except InGameError as e:
                    self.simulator_errors += 1
                    self._sim_errors.append(str(e))
                    if self.simulator_errors >= self.max_errors:
                        return False
                    continue
            else:
                act, text = int(choice), self._realize(role, choice)
            self.game.apply(role, act, text)
            self._sim_errors = []
        return True

    def _realize(self, role, act):
        return self.game.realize(role, act, self._rng) if self.surface.name == "text" else ""

    def view(self, role: str, errors: tuple[str, ...] = (), observation: bool = False) -> View:
        """What a player of ``role`` knows now; with ``observation``, also the act surface's observation."""
        return View(
            role=role,
            persona=self.game.persona if role == self.game.user_role else None,
            history=tuple(self.game.history),
            legal=self.game.legal(role),
            public=self.game.info(),
            instructions=self.game.instructions(role),
            errors=errors,
            private=self.game.private(role),
            observation=act_observation(self.game, role) if observation else None,
        )

    def _speaker(self):
        role = self.game.active_role()
        for a in self.agents:
            if self._role[a] == role:
                return a
        return None

    def _observe(self, speaker=_UNSET):
        if speaker is _UNSET:
            speaker = self._speaker()
        return {a: self.surface.observe(self._role[a], a == speaker, self._errors.get(a, [])) for a in self.agents}

    def _infos(self, speaker=_UNSET):
        if speaker is _UNSET:
            speaker = self._speaker()
        shared = {k: float(v) for k, v in self.game.outcome().items()}
        turn = len(self.game.history)
        infos = {}
        for a in self.agents:
            info = {"active": a == speaker, "turn": turn, "errors": self._error_count[a],
                    "simulator_errors": self.simulator_errors, **shared}
            info.update(self.surface.infos(self._role[a]))
            if self._sim_info:
                info.update(self._sim_info)
            infos[a] = info
        return infos

    def render(self):
        if self.render_mode is None:
            return None
        lines = [f"[{self.game.name}] persona {self.game.persona.id if self.game.persona else '-'}"]
        for i, t in enumerate(self.game.history):
            # act-surface turns have no text; render one with its own generator, leaving the env's untouched
            text = t.text or self.game.realize(t.role, t.act, np.random.default_rng(i))
            lines.append(f"{t.role:>10}: [{self.game.acts(t.role)[t.act]}] {text}")
        if self.game.active_role() is None and self.game.history:
            lines.append("outcome: " + ", ".join(f"{k}={v:g}" for k, v in self.game.outcome().items()))
        return "\n".join(lines)

    def state(self) -> np.ndarray:
        return np.concatenate([self.game.features(r) for r in self.game.roles]).astype(np.float32)

    @functools.cached_property
    def state_space(self):
        """The space of ``state()``, PettingZoo's global observation: every role's features concatenated, unclipped
        (so unbounded): a ``gymnasium.spaces.Box``. ``parallel_to_aec`` copies it; PettingZoo's ``state_test``
        reads it."""
        from gymnasium import spaces

        return spaces.Box(-np.inf, np.inf, self.state().shape, np.float32)

    def close(self):
        close = getattr(self.game, "close", None)  # a game that holds resources (worktrees, subprocesses)
        if close is not None:
            close()
