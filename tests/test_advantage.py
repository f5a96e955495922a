"""GAE has one definition (scope_envs.train.advantage): bit for bit the scalar recursion of each trajectory alone."""

import doctest

import numpy as np
import pytest

from scope_envs.train import advantage
from scope_envs.train.advantage import gae


def reference(rewards, values, gamma, lam, after, dtype):
    """The textbook loop over one trajectory, one step at a time (one-element arrays, so that a Python float
    meets ``dtype`` as it does in an array under every numpy's casting rules)."""
    r, v = np.asarray(rewards, dtype), np.asarray(values, dtype)
    out, last = np.zeros(len(r), dtype), np.zeros(1, dtype)
    for t in reversed(range(len(r))):
        next_v = v[t + 1 : t + 2] if t + 1 < len(r) else np.full(1, after, dtype)
        delta = r[t : t + 1] + gamma * next_v - v[t : t + 1]
        last = delta + gamma * lam * last
        out[t] = last[0]
    return out


def test_the_module_example_runs():
    assert doctest.testmod(advantage).failed == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])  # the act trainer's, the LLM trainer's
@pytest.mark.parametrize("gamma,lam", [(1.0, 0.95), (0.99, 0.9), (0.97, 1.0)])
def test_every_trajectory_is_its_own_scalar_recursion(dtype, gamma, lam):
    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = rng.integers(0, 15, int(rng.integers(1, 60)))  # empty trajectories too
        rewards = [[float(rng.normal()) if rng.random() < 0.4 else 0.0 for _ in range(n)] for n in lengths]
        values = [[float(rng.normal()) for _ in range(n)] for n in lengths]
        bootstrap = rng.normal(size=len(lengths)) if rng.random() < 0.5 else None
        got = gae(rewards, values, gamma, lam, bootstrap, dtype=dtype)
        assert len(got) == len(lengths)
        for i, (r, v) in enumerate(zip(rewards, values)):
            want = reference(r, v, gamma, lam, 0.0 if bootstrap is None else bootstrap[i], dtype)
            assert got[i].dtype == dtype and got[i].tobytes() == want.tobytes(), i


def test_an_ended_trajectory_and_a_cut_one():
    adv = gae([[0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]], gamma=1.0, lam=1.0, bootstrap=[0.0, 5.0])
    assert [a.tolist() for a in adv] == [[-1.0, -1.0], [4.0, 4.0]]  # ended: the return is 0; cut: the value there
    with pytest.raises(ValueError, match="one entry each"):
        gae([[1.0]], [[1.0, 2.0]], gamma=1.0, lam=1.0)
