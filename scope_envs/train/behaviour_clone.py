"""Behaviour cloning of a game's frozen simulator into a user network: where learnable users start.

A co-trained or population user starts as "the aligned LLM playing the dealt card", the training side's
frozen simulator (``PPOConfig.user_init="frozen"``). ``behaviour_clone`` plays ``episodes`` episodes of
``<game>-cotrain`` with the frozen simulator's distribution in the user seat (random legal acts for
agent_0), records the user's observations with that full distribution, and fits the network's actor to
it by cross-entropy (Adam, minibatches of 256). Everything is drawn from ``seed``.

The fit runs in numpy on the network's own memory (``numpy_ac``: the forward and backward passes and the Adam every
trainer update uses), not in torch: torch's kernels are not the same on every maker's CPU under the benchmark's
pins, and a clone a few ulps apart moved every learned-user record in its last digits and set some seeds on
another course (``benchmarks/README.md``, "Reproducing the records"). ``tests/test_behaviour_clone.py`` holds its
gradient to torch autograd's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import scope_envs
from scope_envs.train.numpy_ac import Adam, bind, mlp, mlp_backward, normalize, views_like

# kwargs of population/rotation (and of the checkpoint pool) that the frozen and cotrain envs do not take
POPULATION_KWARGS = ("members", "schedule", "pool_size", "snapshot_every", "pool_sample")
USER_REWARD_KWARGS = ("user_reward", "target_var", "width")
BC_SEED_OFFSET = 777  # the cloning's episodes and draws: seed + 777
FIT_KEY = 0x6263  # the fit's minibatches: [FIT_KEY, seed]
MINIBATCH = 256
LEARNING_RATE = 3e-3


def cross_entropy_grad(actor: list[np.ndarray], x: np.ndarray, m: np.ndarray, p: np.ndarray,
                       grads: list[np.ndarray]) -> float:
    """The mean over rows of the cross-entropy ``-sum(p log pi)`` of the actor's masked policy ``pi`` to the target
    distributions ``p`` (0 on illegal acts); its gradient is written into ``grads`` (the actor's layout). The
    gradient with respect to the logits z is ``(pi sum(p) - p) / rows``, 0 on illegal acts."""
    h1, h2, logits = mlp(actor, x)
    logp = normalize(logits, m)
    rows = np.float32(len(x))
    dz = (np.exp(logp) * p.sum(-1, keepdims=True) - p) / rows
    mlp_backward(actor, x, h1, h2, dz.astype(np.float32, copy=False), grads)
    return float(-(p * np.maximum(logp, np.float32(-1e4))).sum(-1).mean())


def frozen_targets(env_id: str, env_kwargs: dict, seed: int, episodes: int,
                   encode: Callable[[str, dict], tuple[np.ndarray, np.ndarray]], user: str = "user_0"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the clone fits: ``episodes`` episodes of the game's ``cotrain`` env with the frozen simulator's draws in the
    user seat and random legal acts for agent_0, drawn from ``seed + BC_SEED_OFFSET``. Returns, for every user turn,
    the network's input and legal mask (``encode(user, obs)``) and the simulator's distribution (float32, padded with
    zeros to the mask's width)."""
    game = scope_envs.registry[env_id].game
    kwargs = {k: v for k, v in env_kwargs.items() if k not in POPULATION_KWARGS}
    # the frozen simulator is the same whatever the trained user is paid (frozen refuses a user_reward)
    sim = scope_envs.make(f"{game}-frozen", **{k: v for k, v in kwargs.items() if k not in USER_REWARD_KWARGS}
                          ).unwrapped.members[0]
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
    return np.stack(xs).astype(np.float32), np.stack(ms).astype(bool), np.stack(ps)


def behaviour_clone(net, env_id: str, env_kwargs: dict, seed: int, episodes: int, steps: int,
                    encode: Callable[[str, dict], tuple[np.ndarray, np.ndarray]], user: str = "user_0") -> None:
    """Fit ``net``'s actor (an ``ActorCritic``, in place) to the frozen simulator of ``env_id``'s game on
    the training cards (``frozen_targets``); ``encode(seat, obs)`` is the network's input of a seat's observation."""
    x, m, p = frozen_targets(env_id, env_kwargs, seed, episodes, encode, user)
    flat, arrays = bind(net)  # the critic's 6 arrays, then the actor's, in one buffer torch's modules share
    start = sum(a.size for a in arrays[:6])
    opt = Adam(flat[start:], lr=LEARNING_RATE)  # (torch.optim.Adam's defaults)
    grad = np.zeros(flat.size - start, np.float32)
    grads = views_like(grad, arrays[6:])
    draws = np.random.default_rng([FIT_KEY, seed])
    for _ in range(steps):
        idx = draws.integers(len(x), size=MINIBATCH)
        cross_entropy_grad(arrays[6:], x[idx], m[idx], p[idx], grads)
        opt.step(grad)
