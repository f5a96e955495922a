"""A population in the user seat: one member plays the user role per episode.

Members are frozen ``Simulator``\\ s (multi-model *rotation*) or ``LEARNABLE``
slots (population co-training: slot ``j`` is the live agent ``user_j``).
Schedules: ``uniform``; ``round_robin``; ``bandit`` — the member ``agent_0``
currently does worst against, by a lower confidence bound on its mean return
(UCB on the agent's regret), so the agent meets its hardest users most.

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
from pettingzoo.utils import BaseParallelWrapper

SCHEDULES = ("uniform", "round_robin", "bandit")


class SimulatorPopulation(BaseParallelWrapper):
    """Per-member episode counts and mean agent returns ride in ``infos`` as
    ``member``, ``member_episodes`` and ``member_returns`` (arrays over members)."""

    def __init__(self, env, members: list, schedule: str = "uniform", exploration: float = 1.0):
        super().__init__(env)
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        env.unwrapped.set_members(members)
        self.schedule = schedule
        self.exploration = exploration
        self.episodes = np.zeros(len(members), dtype=np.int64)
        self.returns = np.zeros(len(members), dtype=np.float64)
        self._next = 0
        self._episode_return = 0.0
        env.unwrapped.member_for_next_episode = self.member_for_next_episode

    def member_for_next_episode(self, rng: np.random.Generator) -> int:
        n = len(self.episodes)
        if self.schedule == "uniform":
            return int(rng.integers(n))
        if self.schedule == "round_robin":
            k, self._next = self._next, (self._next + 1) % n
            return k
        if (self.episodes == 0).any():
            return int(np.flatnonzero(self.episodes == 0)[0])
        mean = self.returns / self.episodes
        bonus = self.exploration * np.sqrt(np.log(self.episodes.sum()) / self.episodes)
        return int(np.argmin(mean - bonus))

    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        self._episode_return = 0.0
        return obs, self._annotate(infos)

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        self._episode_return += rew.get("agent_0", 0.0)
        if not self.env.unwrapped.agents:
            k = self.env.unwrapped.member
            self.episodes[k] += 1
            self.returns[k] += self._episode_return
        return obs, rew, term, trunc, self._annotate(infos)

    def _annotate(self, infos):
        mean = np.divide(self.returns, np.maximum(self.episodes, 1))
        for info in infos.values():
            info.update(member=self.env.unwrapped.member, member_episodes=self.episodes.copy(), member_returns=mean)
        return infos
