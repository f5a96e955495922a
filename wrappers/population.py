"""A population in the user seat: one member plays the user role per episode.

Members are frozen ``Simulator``\\ s (multi-model *rotation*) or ``LEARNABLE``
slots (population co-training: slot ``j`` is the live agent ``user_j``).
Schedules: ``uniform``; ``round_robin``; ``index`` — SCOPE's ensemble
assignment, member = episode index modulo K, where the episode index counts
the episodes this schedule has started (so a group of consecutive episodes
mixes the members; ``episode_index`` exposes the counter); ``bandit`` — the
member ``agent_0`` currently does worst against, by a lower confidence bound on
its mean return (UCB on the agent's regret), so the agent meets its hardest
users most. The wrapper's one concern is the roster: it gives the env its
members and a ``MemberSchedule``; the env asks the schedule for each episode's
member. ``round_robin``, ``index`` and ``bandit`` carry their state across
episodes, also across ``reset(seed)``; ``reset(seed=s, options={"reset_schedule":
True})`` restarts them (the episode index back to 0), so a run can be replayed
from its seed alone. SCOPE's ensemble of K = 3 simulator families is
``scope_envs.make("<game>-rotation", families=3, schedule="index")``.

Example::

    >>> import scope_envs
    >>> from scope_envs.core.env import LEARNABLE
    >>> from scope_envs.wrappers import SimulatorPopulation
    >>> env = SimulatorPopulation(scope_envs.make("p4g-cotrain"), [LEARNABLE] * 3, schedule="round_robin")
    >>> env.possible_agents
    ['agent_0', 'user_0', 'user_1', 'user_2']
    >>> _ = env.reset(seed=0); env.agents
    ['agent_0', 'user_0']
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import check_number
from scope_envs.wrappers.infos import InfosWrapper

SCHEDULES = ("uniform", "round_robin", "index", "bandit")


class MemberSchedule:
    """Picks each episode's member and keeps per-member episode counts and mean agent returns."""

    def __init__(self, n: int, kind: str = "uniform", exploration: float = 1.0):
        if kind not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {kind!r}")
        # the bandit's confidence width: refused here, not at its first pick (a str: numpy's UFuncTypeError; NaN
        # made every pick member 0; a negative width turns the lower confidence bound into an upper one)
        check_number("exploration", exploration, 0, wanted="a finite number >= 0 (the bandit's confidence width)")
        self.kind, self.exploration, self.n = kind, exploration, n
        self.reset()

    def reset(self) -> None:
        """Forget the rotation's position, the episode index and the bandit's statistics."""
        self.episodes = np.zeros(self.n, dtype=np.int64)
        self.returns = np.zeros(self.n, dtype=np.float64)
        self._next = 0
        self.episode_index = 0  # episodes started since the schedule (re)started

    def pick(self, n: int, rng: np.random.Generator) -> int:
        index, self.episode_index = self.episode_index, self.episode_index + 1
        if self.kind == "uniform":
            return int(rng.integers(n))
        if self.kind == "index":  # SCOPE: member = sample (episode) index mod K
            return index % n
        if self.kind == "round_robin":
            k, self._next = self._next, (self._next + 1) % n
            return k
        if (self.episodes == 0).any():
            return int(np.flatnonzero(self.episodes == 0)[0])
        mean = self.returns / self.episodes
        bonus = self.exploration * np.sqrt(np.log(self.episodes.sum()) / self.episodes)
        return int(np.argmin(mean - bonus))

    def episode_end(self, member: int, agent_return: float) -> None:
        self.episodes[member] += 1
        self.returns[member] += agent_return

    def mean_returns(self) -> np.ndarray:
        return np.divide(self.returns, np.maximum(self.episodes, 1))


class SimulatorPopulation(InfosWrapper):
    """Per-member episode counts and mean agent returns ride in ``infos`` as
    ``member``, ``member_episodes`` and ``member_returns`` (arrays over members)."""

    def __init__(self, env, members: list, schedule: str = "uniform", exploration: float = 1.0):
        super().__init__(env)
        self.schedule = MemberSchedule(len(members), schedule, exploration)
        env.unwrapped.set_members(members)
        env.unwrapped.schedule = self.schedule

    @property
    def episodes(self) -> np.ndarray:
        return self.schedule.episodes

    @property
    def returns(self) -> np.ndarray:
        return self.schedule.returns

    def annotate(self, infos):
        mean = self.schedule.mean_returns()
        for info in infos.values():
            info.update(member=self.env.unwrapped.member, member_episodes=self.schedule.episodes.copy(),
                        member_returns=mean)
        return infos
