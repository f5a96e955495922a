"""Behaviour cloning of a game's frozen simulator into a user network: where learnable users start.

A co-trained or population user starts as "the aligned LLM playing the dealt card", the training side's
frozen simulator (``PPOConfig.user_init="frozen"``). ``behaviour_clone`` plays ``episodes`` episodes of
``<game>-cotrain`` with the frozen simulator's distribution in the user seat (random legal acts for
agent_0), records the user's observations with that full distribution, and fits the network's actor to
it by cross-entropy (Adam, minibatches of 256). Everything is drawn from ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

import scope_envs
from scope_envs.train.numpy_ac import MASKED_LOGIT

# kwargs of population/rotation (and of the checkpoint pool) that the frozen and cotrain envs do not take
POPULATION_KWARGS = ("members", "schedule", "pool_size", "snapshot_every", "pool_sample")
BC_SEED_OFFSET = 777  # the cloning's episodes and draws: seed + 777


def behaviour_clone(net, env_id: str, env_kwargs: dict, seed: int, episodes: int, steps: int,
                    encode: Callable[[str, dict], tuple[np.ndarray, np.ndarray]], user: str = "user_0") -> None:
    """Fit ``net``'s actor (an ``ActorCritic``, in place) to the frozen simulator of ``env_id``'s game on
    the training cards; ``encode(seat, obs)`` is the network's input of a seat's observation."""
    game = scope_envs.registry[env_id].game
    kwargs = {k: v for k, v in env_kwargs.items() if k not in POPULATION_KWARGS}
    sim = scope_envs.make(f"{game}-frozen", **kwargs).unwrapped.members[0]
    env = scope_envs.make(f"{game}-cotrain", **kwargs)
    role = env.unwrapped.game.user_role
    rng = np.random.default_rng(seed + BC_SEED_OFFSET)
    xs, ms, ps = [], [], []
    obs, infos = env.reset(seed=seed + BC_SEED_OFFSET)
    for ep in range(episodes):
        if ep:
            obs, infos = env.reset()
        while env.agents:
            actions = {}
            for a in env.agents:
                legal = np.flatnonzero(obs[a]["action_mask"])
                if a == "user_0" and infos[a]["active"]:
                    p = sim.distribution(env.unwrapped.view(role))
                    x, m = encode(user, obs[a])
                    target = np.zeros(len(m), np.float32)
                    target[: len(p)] = p
                    xs.append(x), ms.append(m), ps.append(target)
                    actions[a] = int(rng.choice(len(p), p=p))
                else:
                    actions[a] = int(rng.choice(legal))
            obs, _, _, _, infos = env.step(actions)
    x, m, p = (torch.as_tensor(np.stack(v)) for v in (xs, ms, ps))
    opt = torch.optim.Adam(net.actor.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(x), (256,), generator=g)
        logp = torch.log_softmax(net.actor(x[idx]).masked_fill(~m[idx], MASKED_LOGIT), -1)
        loss = -(p[idx] * logp.clamp(min=-1e4)).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
