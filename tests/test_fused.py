"""fused: the compiled kernels give their numpy definitions' bits, so a record does not depend on numba."""

import numpy as np
import pytest

from scope_envs.train import fused
from scope_envs.train.activation import LIMIT, tanh

pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the special values: NaN, inf - inf
needs_numba = pytest.mark.skipif(fused.numba is None, reason="numba (the `fast` extra) is not installed")


@pytest.fixture
def numpy_only():
    """A call that turns the compiled kernels off for the rest of the test; the setting is restored after."""
    before = fused.available()
    yield lambda: fused.enable(False)
    fused.enable(before)


def hard_values(rng) -> np.ndarray:
    """Normal draws at several scales, random bit patterns, and the values where the definition turns: the clamp
    at LIMIT and its neighbours, zeros of both signs, subnormals, infinities, NaN."""
    f = np.float32
    edges = [0.0, -0.0, LIMIT, -LIMIT, np.nextafter(f(LIMIT), f(0)), np.nextafter(f(LIMIT), f(20)), 1e-45, -1e-45,
             1e-38, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 0.5, 1.0]
    bits = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    draws = [rng.standard_normal(20_000) * s for s in (0.01, 1.0, 4.0, 30.0)]
    return np.concatenate([np.array(edges, f), bits, *[d.astype(f) for d in draws]])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@needs_numba
def test_bias_tanh_is_the_numpy_definition_bit_for_bit():
    rng = np.random.default_rng(0)
    z = hard_values(rng)
    z = z[: len(z) // 64 * 64].reshape(-1, 64)
    b = (rng.standard_normal(64) * 2).astype(np.float32)
    b[:4] = [0.0, -0.0, np.inf, np.nan]
    assert fused.available()
    got = fused.bias_tanh(z.copy(), b)
    want = fused.bias_tanh_numpy(z.copy(), b)
    assert same_bits(got, want)
    assert same_bits(fused.bias_tanh(z.copy(), np.full(64, -0.0, np.float32)), tanh(z))  # (-0 adds nothing)
    # the shapes a network passes: one-row products stacked (n, 1, units), and a single row
    assert same_bits(fused.bias_tanh(z[:5, None, :].copy(), b), fused.bias_tanh_numpy(z[:5, None, :].copy(), b))
    assert same_bits(fused.bias_tanh(z[0].copy(), b), fused.bias_tanh_numpy(z[0].copy(), b))


@needs_numba
def test_tanh_grad_is_the_numpy_definition_bit_for_bit():
    rng = np.random.default_rng(1)
    d = hard_values(rng)[:40_000].reshape(-1, 64)
    h = tanh(hard_values(rng)[:40_000].reshape(-1, 64))
    assert same_bits(fused.tanh_grad(d.copy(), h), fused.tanh_grad_numpy(d.copy(), h))


@needs_numba
def test_adam_is_the_numpy_definition_bit_for_bit_over_many_steps():
    rng = np.random.default_rng(2)
    n = 5_000
    states = [[rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)]
              for _ in range(2)]
    states[1] = [a.copy() for a in states[0]]
    for step in range(1, 30):
        grad = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 2)).astype(np.float32)
        grad[:3] = [0.0, -0.0, 1e-40]
        scale = 1.0 if step % 3 else float(rng.random())
        bias2 = float(np.sqrt(1.0 - 0.999**step))
        size = float(1e-3 / (1.0 - 0.9**step))
        grads = [grad.copy(), grad.copy()]
        fused.adam(*states[0][:1], grads[0], *states[0][1:], scale, 0.9, 0.999, bias2, 1e-5, size)
        fused.adam_numpy(*states[1][:1], grads[1], *states[1][1:], scale, 0.9, 0.999, bias2, 1e-5, size)
        assert all(same_bits(a, b) for a, b in zip(states[0] + grads[:1], states[1] + grads[1:]))


def test_enable_switches_to_the_numpy_definitions(numpy_only):
    assert fused.available() == (fused.numba is not None)
    numpy_only()
    assert not fused.available()
    y = np.array([[0.5, 2.0]], np.float32)
    assert same_bits(fused.bias_tanh(y.copy(), np.ones(2, np.float32)), tanh(y + 1))
    assert fused.enable(True) is False and fused.available() == (fused.numba is not None)


def test_a_float64_or_strided_array_takes_the_numpy_definition():
    y = np.array([[0.5, -1.5, 3.0]])  # float64: the kernel is float32's; numpy computes it in float64
    np.testing.assert_array_equal(fused.bias_tanh(y.copy(), np.zeros(3)), tanh(y))
    def strided():
        return (np.arange(12, dtype=np.float32).reshape(3, 4) / 10)[:, ::2]

    assert not strided().flags.c_contiguous
    assert same_bits(fused.bias_tanh(strided(), np.ones(2, np.float32)), tanh(strided() + 1))


@needs_numba
def test_a_trainer_learns_the_same_networks_with_and_without_the_kernels(numpy_only):
    """The whole update (forward, backward, Adam) and the rollouts' forward passes, compiled and not: the same
    networks bit for bit after a few iterations."""
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    def trained() -> bytes:
        trainer = PPOTrainer(PPOConfig(env_id="cooperbench-frozen", seed=3, total_steps=1_500))
        trainer.train()
        return np.concatenate([p.ravel() for ps in trainer.params.values() for p in ps]).tobytes()

    compiled = trained()
    numpy_only()
    assert trained() == compiled
