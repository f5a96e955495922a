"""``InfosWrapper``: the base of the wrappers whose visible part is what they add to ``infos``.

Subclasses override one hook, ``annotate(infos) -> infos``, called on the infos of
every ``reset`` and ``step`` (Gymnasium's wrappers override one method the same
way); what else they do, they do by giving the env a part it is built to take.
"""

from __future__ import annotations

from pettingzoo.utils import BaseParallelWrapper

from scope_envs.core.checks import check_scalar_env
from scope_envs.core.env import DialogueParallelEnv


class InfosWrapper(BaseParallelWrapper):
    def __init__(self, env):
        # the part it gives goes to the env built in this process (``env.unwrapped``): an id, a make_vec env or a
        # remote env is refused here, not ignored (a make_vec or remote env kept its own user seat) or met later
        # as an AttributeError
        check_scalar_env(type(self).__name__, env)
        if not isinstance(env.unwrapped, DialogueParallelEnv):
            raise TypeError(f"{type(self).__name__} gives its part to an env of scope_envs.make(id) in this process, "
                            f"got a {type(env.unwrapped).__name__}")
        super().__init__(env)

    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return obs, self.annotate(infos)

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        return obs, rew, term, trunc, self.annotate(infos)

    def annotate(self, infos: dict) -> dict:
        return infos
