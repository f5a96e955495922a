"""``InfosWrapper``: the base of the wrappers whose visible part is what they add to ``infos``.

Subclasses override one hook, ``annotate(infos) -> infos``, called on the infos of
every ``reset`` and ``step`` (Gymnasium's wrappers override one method the same
way); what else they do, they do by giving the env a part it is built to take.
"""

from __future__ import annotations

from pettingzoo.utils import BaseParallelWrapper


class InfosWrapper(BaseParallelWrapper):
    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return obs, self.annotate(infos)

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        return obs, rew, term, trunc, self.annotate(infos)

    def annotate(self, infos: dict) -> dict:
        return infos
