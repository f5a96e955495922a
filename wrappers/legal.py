"""For trainers that cannot mask actions: a masked act becomes a random legal one.

The environments raise ``ValueError`` on a masked act (docs/architecture.md §4.5), which
is right for programmers but stops a trainer without action masking (SB3's
plain ``PPO``, RLlib's default modules) at its first illegal sample. This
wrapper replaces such an act with one drawn uniformly from the agent's legal
acts and counts the replacements in ``infos[agent]["illegal_actions"]``.
Prefer a masking trainer (``MaskablePPO``, a masked RLModule) when you can:
replaced acts are still credited to the policy that chose the illegal one.

Example::

    >>> import scope_envs
    >>> from scope_envs.wrappers import LegalActions
    >>> env = LegalActions(scope_envs.make("p4g-frozen"))
    >>> obs, infos = env.reset(seed=0)
    >>> obs, rew, term, trunc, infos = env.step({"agent_0": 0})  # the no-op is illegal for the speaker
    >>> infos["agent_0"]["illegal_actions"]
    1
"""

from __future__ import annotations

import numpy as np
from pettingzoo.utils import BaseParallelWrapper

from scope_envs.core.checks import check_scalar_env, check_seed


class LegalActions(BaseParallelWrapper):
    """``env`` (the act surface) with each masked act replaced by a uniformly random legal one, counted in
    ``infos[agent]["illegal_actions"]`` (the module's docstring has an example)."""

    def __init__(self, env):
        super().__init__(check_scalar_env("LegalActions", env))
        if env.unwrapped.surface.name != "act":
            raise ValueError("LegalActions applies to the act surface (text actions have no mask)")
        self._rng = np.random.default_rng()
        self._masks: dict = {}
        self._count: dict = {}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(check_seed("seed", seed))
        obs, infos = self.env.reset(seed=seed, options=options)
        self._count = {a: 0 for a in self.env.agents}
        return obs, self._remember(obs, infos)

    def step(self, actions):
        fixed = {}
        for agent, act in actions.items():
            mask = self._masks.get(agent)
            if mask is not None and masked(act, mask):
                act = int(self._rng.choice(np.flatnonzero(mask)))
                self._count[agent] += 1
            fixed[agent] = act
        obs, rew, term, trunc, infos = self.env.step(fixed)
        return obs, rew, term, trunc, self._remember(obs, infos)

    def _remember(self, obs, infos):
        self._masks = {a: o["action_mask"].astype(bool) for a, o in obs.items()}
        for a, info in infos.items():
            info["illegal_actions"] = self._count.get(a, 0)
        return infos


def masked(act, mask) -> bool:
    """Whether ``act`` is an in-range int act that ``mask`` rules out: what ``LegalActions`` replaces. Only
    in-space acts: anything else is a programmer's error, which the env reports."""
    a = np.asarray(act)
    return bool(a.shape == () and a.dtype.kind in "iu" and 0 <= a < len(mask) and not mask[a])
