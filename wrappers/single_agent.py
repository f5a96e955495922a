"""One role of a scope env as a ``gymnasium.Env``; the other live roles are played by given policies.

This is how single-agent libraries (Stable-Baselines3, sb3-contrib, CleanRL…)
train the persuader against a frozen, verbalized or rotated user, or train the
user against a fixed persuader. ``others`` maps each other agent id to a
``Simulator`` (it plays from its role's ``view``, as inside the env) or to a
callable ``obs -> action`` (e.g. a trained model). Turns the viewed role does
not speak in are played through, and their rewards are added to its next step.
``action_masks()`` returns the current legal acts, which ``MaskablePPO`` reads.
Every act of the action space is accepted, as gymnasium expects: with
``illegal="random"`` (default) a masked act is replaced by a random legal one
(``LegalActions``, counted in ``info["illegal_actions"]``; a masked act of a
policy in ``others`` is replaced too, and counted in ``info["others_illegal_actions"]``);
``"raise"`` keeps the env's ``ValueError``, for the viewed role and ``others`` alike.

Example::

    >>> import scope_envs
    >>> from scope_envs.agents.p4g import ScriptedPersuader
    >>> from scope_envs.wrappers import SingleAgentView
    >>> env = SingleAgentView(scope_envs.make("p4g-frozen"))
    >>> obs, info = env.reset(seed=0)
    >>> obs["observation"].shape, env.action_space
    ((77,), Discrete(18))
    >>> user = SingleAgentView(scope_envs.make("p4g-cotrain"), role="user_0", others={"agent_0": ScriptedPersuader()})
    >>> obs, info = user.reset(seed=0)
    >>> bool(info["active"]), user.action_space
    (True, Discrete(28))
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from scope_envs.core.checks import check_illegal, check_scalar_env, check_seed
from scope_envs.core.simulator import Simulator
from scope_envs.wrappers.legal import LegalActions, masked

Policy = Simulator | Callable[[Any], Any]


class SingleAgentView(gym.Env):
    """``role`` of the scope env ``env`` as a ``gymnasium.Env`` (the module's docstring has an example).

    ``others``: a policy for each other seat that plays beside ``role`` (a ``Simulator`` or a callable
    ``obs -> action``): every user seat when ``role`` is ``agent_0`` (a ``cotrain`` or ``population`` env), and
    ``agent_0`` when ``role`` is a user; a seat without one is a ``ValueError`` here, naming each.
    ``illegal``: ``"random"`` (default) replaces a masked act by a random legal one, counted in
    ``info["illegal_actions"]`` (``others``' acts in ``info["others_illegal_actions"]``), for trainers that cannot
    mask; ``"raise"`` refuses it, as the env does."""

    def __init__(self, env, role: str = "agent_0", others: dict[str, Policy] | None = None,
                 illegal: str = "random"):
        check_illegal(illegal)
        check_scalar_env("SingleAgentView", env)
        if role not in env.possible_agents:
            raise ValueError(f"role {role!r} is not an agent of this env; possible agents are {env.possible_agents}")
        others = dict(others or {})
        for agent, policy in others.items():
            if agent == role or agent not in env.possible_agents:
                raise ValueError(f"others: {agent!r} is not another agent of this env ({env.possible_agents})")
            if not (isinstance(policy, Simulator) or callable(policy)):
                raise ValueError(f"others[{agent!r}] must be a Simulator or a callable obs -> action, got {policy!r}")
        # the seats that play in an episode beside role: a user plays only beside agent_0, never beside another user
        beside = [a for a in env.possible_agents if a != role and (role == "agent_0" or a == "agent_0")]
        missing = [a for a in beside if a not in others]
        if missing:
            raise ValueError(f"{', '.join(missing)} {'plays' if len(missing) == 1 else 'play'} beside {role} but "
                             f"{'has' if len(missing) == 1 else 'have'} no policy: pass others={{"
                             + ", ".join(f"{a!r}: ..." for a in missing) + "}")
        self._text = env.unwrapped.surface.name == "text"
        self.env = LegalActions(env) if illegal == "random" and not self._text else env
        self.role = role
        self.others = others
        self.observation_space = env.observation_space(role)
        self.action_space = env.action_space(role)
        self.render_mode = env.unwrapped.render_mode
        self.metadata = {"render_modes": env.metadata.get("render_modes", []), "render_fps": 1,
                         "name": env.metadata.get("name")}
        self._obs = self._infos = None
        self._count_others = illegal == "random" and not self._text
        self._others_illegal = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        check_seed("seed", seed)  # a ValueError naming seed, before gymnasium's or numpy's own error
        super().reset(seed=seed)
        obs, infos = self.env.reset(seed=seed, options=options)
        if self.role not in self.env.agents:
            # a population draws one user slot per episode; a view of a slot that sits out cannot act
            raise ValueError(f"role {self.role!r} is not live this episode (live: {self.env.agents}); "
                             "view a role that plays every episode, e.g. a user of a 'cotrain' env")
        self._obs, self._infos = obs, infos
        self._others_illegal = 0
        reward, term, trunc = self._play_others(0.0)
        if term or trunc:
            raise ValueError(f"the episode ended before {self.role!r} had a turn")
        return self._obs[self.role], self._info()

    def step(self, action):
        if self._obs is None:
            raise ValueError("step() called before reset(); call reset(seed=...) first")
        if self.role not in self.env.agents:
            raise ValueError("step() called on a finished episode; call reset() first")
        reward, term, trunc = self._step_all(action)
        if not (term or trunc):
            reward, term, trunc = self._play_others(reward)
        return self._obs[self.role], reward, term, trunc, self._info()

    def _info(self) -> dict:
        """The viewed role's info; with replacement on, the episode's count of ``others``' masked acts beside
        its own (the env counts those in the other seats' infos, which this view never returns)."""
        info = self._infos[self.role]
        return {**info, "others_illegal_actions": self._others_illegal} if self._count_others else info

    def action_masks(self) -> np.ndarray:
        return np.asarray(self._obs[self.role]["action_mask"], dtype=bool)

    def _play_others(self, reward: float):
        """Step until it is the viewed role's turn (or the episode ends)."""
        term = trunc = False
        while not (term or trunc) and not self._infos[self.role]["active"]:
            r, term, trunc = self._step_all(self._idle_action())
            reward += r
        return reward, term, trunc

    def _step_all(self, own_action):
        actions = {self.role: own_action}
        for agent in self.env.agents:
            if agent == self.role:
                continue
            if agent not in self.others:
                raise ValueError(f"{agent} is live but has no policy: pass others={{{agent!r}: ...}}")
            if self._infos[agent]["active"]:
                actions[agent] = act = self._other_action(agent)
                self._others_illegal += self._count_others and masked(act, self._obs[agent]["action_mask"])
            else:
                actions[agent] = self._idle_action()
        obs, rew, terms, truncs, infos = self.env.step(actions)
        # the last observation of a finished episode stays readable, as gymnasium expects
        self._obs = {**self._obs, **obs}
        self._infos = {**self._infos, **infos}
        return float(rew.get(self.role, 0.0)), bool(terms.get(self.role, False)), bool(truncs.get(self.role, False))

    def _other_action(self, agent):
        policy = self.others[agent]
        if not isinstance(policy, Simulator):
            return policy(self._obs[agent])
        base = self.env.unwrapped
        role = base.game.agent_role if agent == "agent_0" else base.game.user_role
        view = base.view(role)
        if policy.plays_text:  # an LLM player: its message as is, or read into an act on the act surface
            message = policy.reply(view, self.np_random)
            return message if self._text else base.game.understand(role, message)
        act = policy.act(view, self.np_random)
        return base.game.realize(role, act, self.np_random) if self._text else act

    def _idle_action(self):
        return "" if self._text else 0

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()

