"""One session of a served id: a scope env behind OpenEnv's ``Environment`` interface.

OpenEnv's server makes one ``ScopeEnvironment`` per WebSocket session (its ``/ws`` route) and calls
``reset`` and ``step`` on it from that session's own thread. ``reset`` takes, besides ``seed`` and
``episode_id``:

* ``options``: the env's ``reset`` options (``scenario_seed``, ``reset_schedule``; any other key is a
  ``BadRequest`` naming it, ``check_options``);
* ``drive``: the agents the client plays (default: every possible agent, both seats). Any other live
  agent is played on the server, as ``SingleAgentView`` plays its ``others``: the user seat by the
  game's built-in frozen simulator, the agent seat by the game's scripted agent. Their turns are played
  through inside the step, and the driven agents' rewards of those turns are added to the step's;
* ``snapshot``: a population regime with a checkpoint pool (``pool_size=``) adds this user policy
  (``scope_envs.serve.snapshot``) to its pool before the episode, as a trainer's ``add_snapshot``;
* ``adapter``: its text-level counterpart, on a server with an LLM (``--user-llm``): the pool takes a
  frozen snapshot that is the server's LLM generating with the LoRA adapter of that name
  (``scope_envs.serve.llm``).

When the user seat is the server's LLM and its backend failed during the step (``SeatedLLM``), each
driven agent's info carries the backend's last sentence as ``user_llm_error``.

A step's ``ScopeAction.actions`` holds the driven live agents' acts; one for the agent whose turn it is
is required, the others may be left out (their no-op is implied).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

import scope_envs
from scope_envs.core.checks import RESET_OPTIONS, unknown_options
from scope_envs.core.simulator import Simulator
from scope_envs.games import build, game_names, game_spec, load
from scope_envs.serve.codec import jsonable
from scope_envs.serve.errors import BadRequest, EpisodeOver, NoEpisode, SessionLost
from scope_envs.serve.llm import SeatedLLM, ServedLLM, UserLLMError
from scope_envs.serve.models import AgentStep, ScopeAction, ScopeObservation, ScopeState
from scope_envs.serve.snapshot import MLPSnapshot, SnapshotError
from scope_envs.wrappers import CheckpointPool

MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class ServeConfig:
    """What a server serves: one id, its surface and the keyword arguments ``make`` gets; ``user_llm``, the
    server's LLM (``scope_envs.serve.llm``): each session's user of a frozen or vs id, or the backend of a
    population pool's named adapters."""

    env_id: str
    surface: str = "act"
    kwargs: dict = field(default_factory=dict)
    user_llm: Optional[ServedLLM] = field(default=None, compare=False)
    user_llm_role: Optional[str] = None  # "user" or "adapters" (llm.check_regime)

    def make(self):
        kwargs = dict(self.kwargs)
        if self.user_llm is not None and self.user_llm_role == "user":
            kwargs["user"] = self.user_llm.player()  # one player per session, over the shared backend
        return scope_envs.make(self.env_id, surface=self.surface, **kwargs)


def seat_players(env) -> dict[str, Simulator]:
    """The server's players for each role: the game's scripted agent and its built-in frozen simulator."""
    game = env.unwrapped.game
    spec = game_spec(game.name) if game.name in game_names() else None
    if spec is None or spec.served_agent is None or \
            (spec.served_game_module is not None and type(game).__module__ != spec.served_game_module):
        return {}
    agent, user = build(spec.served_agent, game=game), load(spec.collapsed)()
    return {game.agent_role: agent, game.user_role: user}


def check_seed(value, name: str) -> Optional[int]:
    """A seed as every transport takes it: ``None``, or an int from 0 to 2**63-1 (not a bool, a string or a float,
    which OpenEnv's own HTTP model would coerce); anything else is a ``BadRequest`` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise BadRequest(f"{name} must be an int from 0 to 2**63-1, got {value!r:.60}")
    return value


def check_options(options, name: str = "options") -> Optional[dict]:
    """A reset's ``options``: a dict of the keys the env reads (``RESET_OPTIONS``), each of its type; a key the
    env does not read is a ``BadRequest`` naming it (the in-process env would ignore it silently: a typo such
    as ``scenario_sed`` would play another episode than the one asked for)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise BadRequest(f"{name} must be a dict (keys the env reads: {sorted(RESET_OPTIONS)}), "
                         f"got {options!r:.200}")
    unknown = unknown_options(options)
    if unknown:
        shown = ", ".join(repr(str(k)[:60]) for k in unknown[:5])
        raise BadRequest(f"{name}: unknown key(s) {shown}; the env reads {sorted(RESET_OPTIONS)}")
    if "scenario_seed" in options:
        check_seed(options["scenario_seed"], f"{name}.scenario_seed")
    if not isinstance(options.get("reset_schedule", False), bool):
        raise BadRequest(f"{name}.reset_schedule must be a bool")
    return options


class ScopeEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True  # every session builds its own env: nothing is shared

    def __init__(self, config: ServeConfig):
        super().__init__()
        self.config = config
        self.env = config.make()
        self.base = self.env.unwrapped
        self.text = self.base.surface.name == "text"
        self.players = seat_players(self.env)
        self.driven = list(self.env.possible_agents)
        self._rng = np.random.default_rng()
        self._episode_id: Optional[str] = None
        self._steps = 0
        self._obs: dict = {}
        self._infos: dict = {}
        self._closed = False

    # -- OpenEnv's interface ----------------------------------------------------------------------------
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, options: Optional[dict] = None,
              drive: Optional[list] = None, snapshot: Optional[dict] = None, adapter: Optional[str] = None,
              **unknown: Any) -> ScopeObservation:
        self._check_open()
        if unknown:
            raise BadRequest("reset takes seed, episode_id, options, drive, snapshot and adapter; unknown: "
                             f"{sorted(unknown)}")
        seed = check_seed(seed, "seed")
        if episode_id is not None and (not isinstance(episode_id, str) or not 0 < len(episode_id) <= 255):
            raise BadRequest("episode_id must be a string of 1 to 255 characters")
        options = self._options(options)
        driven = self._drive(drive)
        if snapshot is not None and adapter is not None:
            raise BadRequest("reset takes a snapshot (act level) or an adapter (text level), not both")
        if snapshot is not None:
            self._add_snapshot(snapshot)
        if adapter is not None:
            self._add_adapter(adapter)
        self._clear_faults()
        if seed is not None:  # the server's own players draw from their own stream of the same seed
            self._rng = np.random.default_rng([seed, 1])
        obs, infos = self.env.reset(seed=seed, options=options)
        self.driven = driven
        self._obs, self._infos = dict(obs), dict(infos)
        self._episode_id = episode_id or uuid.uuid4().hex
        self._steps = 0
        start = [a for a in self.driven if a in self.env.agents]
        rewards = {a: 0.0 for a in start}
        terms, truncs = self._play_through(rewards, {}, {})
        return self._observation(start, rewards, terms, truncs)

    def step(self, action: ScopeAction, timeout_s: Optional[float] = None, **kwargs: Any) -> ScopeObservation:
        self._check_open()
        if self._episode_id is None:
            raise NoEpisode("this session has no episode: call reset first (a session opened after a reconnect "
                            "or a server restart starts empty; the earlier episode is lost)")
        if action.episode_id is not None and action.episode_id != self._episode_id:
            raise BadRequest(f"episode_id {action.episode_id!r:.80} is not this session's episode (it plays "
                             f"{self._episode_id!r}): a step names the episode its session's last reset started")
        if not self.env.agents:
            raise EpisodeOver("the episode is over: call reset")
        start = [a for a in self.driven if a in self.env.agents]
        for agent, act in action.actions.items():
            if agent not in start:
                who = "played by the server" if agent in self.env.agents else "not live"
                raise BadRequest(f"{agent!r} is {who}; this step takes the driven live agents {start}")
            if self.text != isinstance(act, str):
                kind = "a string (text surface)" if self.text else "an int act (act surface)"
                raise BadRequest(f"{agent}: the action must be {kind}, got {type(act).__name__}")
        actions = dict(action.actions)
        self._clear_faults()
        rewards = {a: 0.0 for a in start}
        terms, truncs = self._step_all(actions, rewards, {}, {})
        self._steps += 1
        if self.env.agents:
            terms, truncs = self._play_through(rewards, terms, truncs)
        return self._observation(start, rewards, terms, truncs)

    @property
    def state(self) -> ScopeState:
        pool = self.env if isinstance(self.env, CheckpointPool) else None
        return ScopeState(episode_id=self._episode_id, step_count=self._steps, env_id=self.config.env_id,
                          surface=self.base.surface.name, live=[a for a in self.driven if a in self.env.agents],
                          driven=list(self.driven), member=int(self.base.member),
                          pool_entries=len(pool.entries) if pool is not None else None)

    def get_metadata(self) -> EnvironmentMetadata:
        spec = scope_envs.registry[self.config.env_id]
        return EnvironmentMetadata(name=self.config.env_id, version=scope_envs.__version__,
                                   description=f"scope-envs {spec.game} game, {spec.regime} regime, "
                                               f"{self.base.surface.name} surface; agents {self.env.possible_agents}")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.env.close()

    # -- the parts -------------------------------------------------------------------------------------
    def _check_open(self):
        if self._closed:
            raise SessionLost("this session was closed (idle past the server's timeout, or shut down); "
                              "its episode is lost: open a new session")

    def _options(self, options):
        return check_options(options)

    def _drive(self, drive):
        possible = list(self.env.possible_agents)
        if drive is None:
            return possible
        if not isinstance(drive, list) or not drive or not all(isinstance(a, str) for a in drive):
            raise BadRequest(f"drive must be a non-empty list of agent ids among {possible}, got {drive!r:.200}")
        unknown = [a for a in drive if a not in possible]
        if unknown:
            raise BadRequest(f"drive: unknown agent(s) {unknown}; possible agents are {possible}")
        if set(drive) != set(possible) and not self.players:
            raise BadRequest(f"the server has no built-in players for this game's seats: drive all of {possible}")
        return [a for a in possible if a in drive]

    def _add_snapshot(self, spec):
        if not isinstance(self.env, CheckpointPool):
            raise BadRequest("snapshot: this id has no checkpoint pool (serve a population id with pool_size=K)")
        if self.text:
            raise BadRequest("snapshot: pushed policies play the act surface; this server serves text")
        user = self.env.possible_agents[-1]
        space = self.env.observation_space(user)
        try:
            policy = MLPSnapshot.from_wire(spec, space["observation"].shape[0], self.env.action_space(user).n)
        except SnapshotError as e:
            raise BadRequest(str(e)) from None
        if self.base.agents:  # a reset abandons the live episode; the pool takes snapshots between episodes
            self.base.agents = []
        self.env.add_snapshot(policy)

    def _add_adapter(self, name):
        if not isinstance(self.env, CheckpointPool):
            raise BadRequest("adapter: this id has no checkpoint pool (serve a population id with pool_size=K)")
        if not self.text:
            raise BadRequest("adapter: adapters play the text surface; an act-level server takes a snapshot")
        if self.config.user_llm is None:
            raise BadRequest("adapter: this server has no LLM to run adapters on (serve with --user-llm SPEC)")
        try:
            player = self.config.user_llm.adapter_player(name)
        except UserLLMError as e:
            raise BadRequest(str(e)) from None
        if self.base.agents:  # as _add_snapshot: the pool takes snapshots between episodes
            self.base.agents = []
        self.env.add_snapshot(player)

    def _seated_llms(self):
        return [m for m in self.base.members if isinstance(m, SeatedLLM)]

    def _clear_faults(self):
        for m in self._seated_llms():
            m.faults.clear()

    def _step_all(self, actions, rewards, terms, truncs):
        """One env step: the driven agents' acts, the server's players' for the others; rewards add up."""
        for agent in self.env.agents:
            if agent not in self.driven:
                actions[agent] = self._server_act(agent) if self._infos[agent]["active"] else self._idle()
        try:
            obs, rew, term, trunc, infos = self.env.step(actions)
        except ValueError as e:  # the env's own check of a programmer's action: a masked act, a wrong type
            raise BadRequest(str(e)) from None
        self._obs.update(obs)
        self._infos.update(infos)
        for a in rewards:
            rewards[a] += float(rew.get(a, 0.0))
            terms[a] = terms.get(a, False) or bool(term.get(a, False))
            truncs[a] = truncs.get(a, False) or bool(trunc.get(a, False))
        return terms, truncs

    def _play_through(self, rewards, terms, truncs):
        """Step the server's players until a driven agent is to move, or the episode ends."""
        while self.env.agents and not any(self._infos[a]["active"] for a in self.driven if a in self.env.agents):
            terms, truncs = self._step_all({}, rewards, terms, truncs)
        return terms, truncs

    def _server_act(self, agent):
        role = self.base._agent_role(agent)
        player = self.players[role]
        view = self.base.view(role, observation=player.wants_observation)
        if player.plays_text:
            message = player.reply(view, self._rng)
            return message if self.text else self.base.game.understand(role, message)
        act = player.act(view, self._rng)
        return self.base.game.realize(role, act, self._rng) if self.text else int(act)

    def _idle(self):
        return "" if self.text else 0

    def _observation(self, start, rewards, terms, truncs) -> ScopeObservation:
        faults = [f for m in self._seated_llms() for f in m.faults]
        agents = {}
        for a in start:
            o = self._obs[a]
            if self.text:
                observation, mask = str(o), None
            else:
                observation = np.asarray(o["observation"], np.float32).tolist()
                mask = np.asarray(o["action_mask"]).astype(int).tolist()
            info = jsonable(self._infos[a])
            if faults:
                info["user_llm_error"] = faults[-1]
            agents[a] = AgentStep(role=self.base._agent_role(a), active=bool(self._infos[a]["active"]),
                                  observation=observation, action_mask=mask, reward=rewards.get(a, 0.0),
                                  terminated=terms.get(a, False), truncated=truncs.get(a, False), info=info)
        live = [a for a in self.driven if a in self.env.agents]
        first = start[0] if start else None
        return ScopeObservation(agents=agents, live=live, episode_id=self._episode_id, done=not self.env.agents,
                                reward=rewards.get(first, 0.0) if first else 0.0)
