"""A scope env as an RLlib ``MultiAgentEnv`` (needs ``ray[rllib]``: ``pip install scope-envs[rllib]``).

RLlib's own ``ParallelPettingZooEnv`` takes its agents from the first
``reset``, so a population's users that sit that episode out get no spaces,
and its ``render`` passes an argument our envs do not take. This adapter
declares every possible agent, and renames the observation key to
``observations`` with a float mask, the layout RLlib's action-masking module
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm``) reads.
Like ``SingleAgentView`` it accepts every act of the action space (RLlib's
env check samples them unmasked): ``illegal="random"`` replaces a masked act
by a random legal one (``LegalActions``); ``"raise"`` keeps the ``ValueError``.

Example::

    >>> import scope_envs
    >>> from scope_envs.wrappers.rllib import RLlibMultiAgentEnv
    >>> env = RLlibMultiAgentEnv(scope_envs.make("p4g-population", members=3))
    >>> env.possible_agents
    ['agent_0', 'user_0', 'user_1', 'user_2']
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs["agent_0"])
    ['action_mask', 'observations']
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from scope_envs.core.checks import check_illegal, check_scalar_env
from scope_envs.wrappers.legal import LegalActions


class RLlibMultiAgentEnv(MultiAgentEnv):
    def __init__(self, env, illegal: str = "random"):
        super().__init__()
        check_scalar_env("RLlibMultiAgentEnv", env)
        if env.unwrapped.surface.name != "act":
            raise ValueError("RLlibMultiAgentEnv needs the act surface (RLlib trains on arrays)")
        check_illegal(illegal)
        self.env = LegalActions(env) if illegal == "random" else env
        self.possible_agents = list(env.possible_agents)
        self.agents = []
        self.observation_spaces = {a: self._space(env.observation_space(a)) for a in self.possible_agents}
        self.action_spaces = {a: env.action_space(a) for a in self.possible_agents}
        self.render_mode = env.unwrapped.render_mode

    @staticmethod
    def _space(space: gym.spaces.Dict) -> gym.spaces.Dict:
        n = space["action_mask"].shape
        return gym.spaces.Dict({"observations": space["observation"],
                                "action_mask": gym.spaces.Box(0.0, 1.0, n, np.float32)})

    def _obs(self, obs):
        return {a: {"observations": o["observation"], "action_mask": o["action_mask"].astype(np.float32)}
                for a, o in obs.items()}

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.agents)
        return self._obs(obs), infos

    def step(self, action_dict):
        obs, rew, term, trunc, infos = self.env.step({a: int(x) for a, x in action_dict.items()})
        self.agents = list(self.env.agents)
        over = not self.env.agents
        term["__all__"] = over and all(term.values())
        trunc["__all__"] = over and not term["__all__"]
        return self._obs(obs), rew, term, trunc, infos

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()
