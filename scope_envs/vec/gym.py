"""Gymnasium's vector API over a vec env: ``GymVectorEnv``, the single-agent case (``agent_0`` alone acts)."""

from __future__ import annotations

import numpy as np
from gymnasium.spaces import Discrete

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
    """A ``gymnasium.vector.VectorEnv`` over a vec env whose only acting agent is ``agent_0``."""

    def __init__(self, vec):
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
        vec._final_obs = True

    def reset(self, *, seed=None, options=None):
        obs, infos = self.vec.reset(seed=seed, options=options)
        return obs[AGENT], {"member": infos["member"]}

    def step(self, actions):
        # as given: the vec env refuses what is not an int array of shape (num_envs,) (a cast to int64 here read
        # 1.7 as act 1 and True as act 1)
        obs, rew, term, trunc, infos = self.vec.step({AGENT: np.asarray(actions)})
        out = {"member": infos["member"]}
        done = infos["_final_info"]
        if done.any():
            final = infos["final_info"]
            x = final["obs"][AGENT]
            out["final_obs"] = np.full(self.num_envs, None, object)
            for i in np.flatnonzero(done):
                out["final_obs"][i] = {"observation": x[i], "action_mask": noop_mask(self.n_acts)}
            out["final_info"] = {"return": final["return"], "agent_score": final["agent_score"],
                                 **final["outcome"], "_return": done, "_agent_score": done,
                                 **{f"_{k}": done for k in final["outcome"]}}
            out["_final_obs"] = out["_final_info"] = done
        return obs[AGENT], rew[AGENT], term[AGENT], trunc[AGENT], out

    def close(self, **kwargs):
        self.vec.close()
