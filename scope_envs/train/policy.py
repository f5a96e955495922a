"""The policy protocol: what plays a seat of the act surface, in a trainer's rollouts or in an evaluation.

A **policy** is any object with one method::

    act(obs, mask, greedy=False) -> Decisions

``obs`` is a batch of one seat's observations, an (n, dim) float32 array (the act surface's
``observation``), ``mask`` the matching (n, n_acts) bool array of legal acts (``action_mask``). It returns
``Decisions``: ``actions``, an (n,) int array of legal acts, and, for a learner, the ``logp`` of those acts,
the critic's ``values`` and the policy's ``entropy`` per row (None where a policy has no such thing: a
scripted or random player). ``greedy=True`` asks for the most probable act where the policy has one.
Randomness is the policy's own: it draws from a generator it holds, so a rollout is reproducible whatever
the global generators hold.

The rollout collector (``scope_envs.train.rollout.collect``) takes one policy per seat
(``{"agent_0": policy, "user_0": ...}``; a seat left out is played inside the env, by its simulator) and
asks each policy once per step for the rows of all the slots where its seat moves. A policy object that
plays *several* seats (self-play's one network) is asked once for the rows of all of them, in slot order;
since the seats' observations differ, such a policy also has ``encode(seat, obs, mask) -> (obs, mask)``,
which maps one seat's rows into its own input layout.

Policies here and elsewhere in the package:

* ``UniformPolicy``: uniform over the legal acts (the benchmark's floor, ``random``).
* ``scope_envs.train.act_ppo.NetworkPolicy``: a trainer's ``ActorCritic`` (its numpy forward pass), for
  ``PPOTrainer.policies`` (the training rollouts) and ``PPOTrainer.policies_with(rng)`` (an evaluation's);
  ``scope_envs.train.act_ppo.load_policy(path, seat)`` gives a saved trainer's seat as one.

    >>> import numpy as np
    >>> policy = UniformPolicy(seed=0)
    >>> mask = np.array([[True, False, True], [False, True, False]])
    >>> d = policy.act(np.zeros((2, 4), np.float32), mask)
    >>> bool(mask[0, d.actions[0]]), int(d.actions[1]), d.entropy.round(3).tolist()
    (True, 1, [0.693, 0.0])
    >>> isinstance(policy, Policy)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

UNIFORM_KEY = 0x756E69  # the uniform player's generator: [UNIFORM_KEY, seed]


@dataclass(frozen=True)
class Decisions:
    """One call's decisions, one row per observation."""

    actions: np.ndarray  # (n,) int64, legal under the mask
    logp: np.ndarray | None = None  # (n,) log-probability of each act under the policy
    values: np.ndarray | None = None  # (n,) the critic's value of each observation
    entropy: np.ndarray | None = None  # (n,) the policy's entropy (nats) at each observation


@runtime_checkable
class Policy(Protocol):
    """Maps a batch of one seat's observations and legal masks to acts (see the module)."""

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions: ...


class UniformPolicy:
    """Uniform over the legal acts, from its own generator (``seed``, or a given ``rng``); ``greedy`` is
    ignored. One uniform per row, in row order: the k-th legal act of a row with n legal acts, k = floor(u n)."""

    def __init__(self, seed: int | None = None, rng: np.random.Generator | None = None):
        self.rng = rng if rng is not None else np.random.default_rng([UNIFORM_KEY, seed or 0])

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        mask = np.asarray(mask, bool)
        if mask.ndim != 2:
            raise ValueError(f"act takes a batch: mask an (n, n_acts) array, got shape {mask.shape} (one "
                             "observation: obs[None], mask[None])")
        n = mask.sum(1)
        if (n == 0).any():
            raise ValueError("every row of the mask needs at least one legal act")
        k = np.floor(self.rng.random(len(mask)) * n).astype(np.int64)
        actions = (np.cumsum(mask, 1) <= k[:, None]).sum(1)
        return Decisions(actions, -np.log(n), np.zeros(len(mask)), np.log(n))


def masked_logp(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows of log-probabilities from rows of ``logits`` with the acts ``mask`` rules out removed (-inf there) and
    the rest renormalized: what ``sample_masked`` draws from."""
    logits = np.where(mask, logits, -np.inf)
    return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)


def sample_masked(logp: np.ndarray, rng: np.random.Generator, greedy: bool) -> Decisions:
    """Acts from rows of masked log-probabilities (-inf on illegal acts), by inverse CDF with one uniform per row
    from ``rng`` (``greedy``: the most probable); for the adapters of outside policies (SB3, BenchMARL)."""
    probs = np.exp(logp)
    if greedy:
        a = probs.argmax(-1)
    else:
        cdf = probs.cumsum(-1)
        a = np.minimum((cdf <= rng.random(len(probs))[:, None] * cdf[:, -1:]).sum(-1), probs.shape[1] - 1)
    with np.errstate(invalid="ignore"):
        ent = -np.where(probs > 0, probs * logp, 0.0).sum(-1)
    return Decisions(a.astype(np.int64), logp[np.arange(len(a)), a], None, ent)
