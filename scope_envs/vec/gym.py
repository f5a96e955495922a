"""Gymnasium's vector API over a vec env: ``GymVectorEnv``, the single-agent case (``agent_0`` alone acts)."""

from __future__ import annotations

import numpy as np
from gymnasium.spaces import Discrete

from scope_envs.core.checks import check_illegal
from scope_envs.core.env import AGENT
from scope_envs.registry import REGIME_AGENTS


def gym_vector_env(vec):
    """The single-agent case (``agent_0`` alone acts) as a ``gymnasium.vector.VectorEnv`` in ``SAME_STEP``
    auto-reset mode: observations ``Dict(observation, action_mask)`` batched, ``infos["final_obs"]`` and
    ``infos["final_info"]`` for the slots that finished (see ``GymVectorEnv``)."""
    return GymVectorEnv(vec)


try:
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError:  # pragma: no cover (gymnasium < 1.1)
    VectorEnv, AutoresetMode, batch_space = object, None, None


def single_agent_regimes() -> list[str]:
    """The regimes whose ids have ``agent_0`` alone (``scope_envs.registry.REGIME_AGENTS``), in the registry's order."""
    return [regime for regime, agents in REGIME_AGENTS.items() if agents == AGENT]


def noop_mask(n: int) -> np.ndarray:
    """The action mask of a finished episode: only the no-op."""
    mask = np.zeros(n, np.int8)
    mask[0] = 1
    return mask


class GymVectorEnv(VectorEnv):
    """A ``gymnasium.vector.VectorEnv`` over a vec env whose only acting agent is ``agent_0``.

    ``illegal``: ``"random"`` (default, as ``gymnasium.make``'s view) replaces a masked act by a uniformly random
    legal one, counted per slot in ``infos["illegal_actions"]`` (the episode's count; a finished one's in
    ``final_info``); ``"raise"`` refuses it, as the vec env does. An act out of range, or not an int, is refused
    either way."""

    def __init__(self, vec, illegal: str = "random"):
        check_illegal(illegal)
        if vec.possible_agents != [AGENT]:
            raise ValueError(f"the Gymnasium view needs a single-agent id ({', '.join(single_agent_regimes())}); "
                             f"this one has agents {vec.possible_agents}")
        if not isinstance(vec.action_space(AGENT), Discrete):
            raise ValueError("the Gymnasium view steps the act surface (int acts under an action mask); on the text "
                             "surface step the vec env itself, a string per slot")
        self.vec = vec
        self.num_envs = vec.num_envs
        self.single_observation_space = vec.observation_space(AGENT)
        self.single_action_space = vec.action_space(AGENT)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
        self.n_acts = self.single_action_space.n
        self.illegal = illegal
        self._rng = np.random.default_rng()
        self._mask = None
        self._illegal = np.zeros(self.num_envs, np.int64)
        vec._final_obs = True

    def reset(self, *, seed=None, options=None):
        obs, infos = self.vec.reset(seed=seed, options=options)
        if seed is not None:  # the replacements' stream: the first slot's seed, as LegalActions takes the env's
            self._rng = np.random.default_rng(int(np.ravel(seed)[0]))
        self._mask = obs[AGENT]["action_mask"].astype(bool)
        self._illegal[:] = 0
        return obs[AGENT], {"member": infos["member"], "illegal_actions": self._illegal.copy()}

    def step(self, actions):
        # as given: the vec env refuses what is not an int array of shape (num_envs,) (a cast to int64 here read
        # 1.7 as act 1 and True as act 1)
        actions = np.asarray(actions)
        if self.illegal == "random" and self._mask is not None and actions.shape == (self.num_envs,) \
                and actions.dtype.kind in "iu":
            inside = (actions >= 0) & (actions < self.n_acts)
            masked = np.flatnonzero(inside & ~self._mask[np.arange(self.num_envs), np.where(inside, actions, 0)])
            if masked.size:
                actions = actions.copy()
                for i in masked:
                    actions[i] = self._rng.choice(np.flatnonzero(self._mask[i]))
                self._illegal[masked] += 1
        obs, rew, term, trunc, infos = self.vec.step({AGENT: actions})
        self._mask = obs[AGENT]["action_mask"].astype(bool)
        out = {"member": infos["member"], "illegal_actions": self._illegal.copy()}
        done = infos["_final_info"]
        if done.any():
            final = infos["final_info"]
            x = final["obs"][AGENT]
            out["final_obs"] = np.full(self.num_envs, None, object)
            for i in np.flatnonzero(done):
                out["final_obs"][i] = {"observation": x[i], "action_mask": noop_mask(self.n_acts)}
            out["final_info"] = {"return": final["return"], "agent_score": final["agent_score"],
                                 "illegal_actions": self._illegal.copy(), **final["outcome"], "_return": done,
                                 "_agent_score": done, "_illegal_actions": done,
                                 **{f"_{k}": done for k in final["outcome"]}}
            out["_final_obs"] = out["_final_info"] = done
            self._illegal[done] = 0  # the slot's next episode, begun this step
            out["illegal_actions"] = self._illegal.copy()
        return obs[AGENT], rew[AGENT], term[AGENT], trunc[AGENT], out

    def close(self, **kwargs):
        self.vec.close()
