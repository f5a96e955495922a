"""Generalized advantage estimation (GAE, Schulman et al. 2016), written once for the act-level and LLM trainers.

The act-level PPO (``scope_envs.train.act_ppo``: one trajectory per agent and episode, in float32) and the LLM
trainer (``scope_envs.train.llm.ppo``: one trajectory per trace, its trained tokens, in float64) both call
``gae``. Trajectories end where the episode ended (the value after the last step is 0) or, for one cut short,
at ``bootstrap``: the value where it was cut.

The recursion runs over all trajectories at once: they are right-aligned in one array, so that every one ends
in the last column, and each column's step is one vector operation. Every element goes through the same
operations, in the same order and dtype, as its trajectory alone (``tests/test_advantage.py`` holds it to the
scalar loop); the padding on the left never flows into a trajectory's own columns.

    >>> [a.tolist() for a in gae([[0.0, 1.0], [2.0]], [[0.5, 0.5], [1.0]], gamma=1.0, lam=1.0)]
    [[0.5, 0.5], [1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def gae(rewards: Sequence[Sequence[float]], values: Sequence[Sequence[float]], gamma: float, lam: float,
        bootstrap: Sequence[float] | None = None, dtype=np.float32) -> list[np.ndarray]:
    """Each trajectory's advantages: ``delta_t = r_t + gamma * V_{t+1} - V_t`` and
    ``A_t = delta_t + gamma * lam * A_{t+1}``, in ``dtype``. ``rewards[i]`` and ``values[i]`` are trajectory
    ``i``'s, one entry per step; ``bootstrap[i]`` (default 0: the episode ended) is the value after its last
    step. The returns (value targets) are ``advantages + values``."""
    n = len(rewards)
    lengths = [len(r) for r in rewards]
    if [len(v) for v in values] != lengths:
        raise ValueError("rewards and values must have one entry each per step of each trajectory")
    width = max(lengths, default=0)
    r = np.zeros((n, width), dtype)
    v = np.zeros((n, width), dtype)
    for i, k in enumerate(lengths):
        if k:
            r[i, width - k:] = rewards[i]
            v[i, width - k:] = values[i]
    after = np.zeros(n, dtype) if bootstrap is None else np.asarray(bootstrap, dtype)
    adv = np.zeros_like(r)
    last = np.zeros(n, dtype)
    for t in reversed(range(width)):
        next_v = v[:, t + 1] if t + 1 < width else after
        delta = r[:, t] + gamma * next_v - v[:, t]
        last = delta + gamma * lam * last
        adv[:, t] = last
    return [adv[i, width - k:] for i, k in enumerate(lengths)]
