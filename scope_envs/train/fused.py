"""The networks' elementwise passes, each fused into one compiled loop where numba is installed (the ``fast`` extra).

numpy runs the package's ``tanh`` (``scope_envs.train.activation``) as some twenty-five ufunc passes over its
array, and Adam's step as a dozen over the parameters: at the act networks' size (minibatches of about 128 rows
of 64 units) each pass is a few microseconds of reading and writing memory for a few nanoseconds of arithmetic.
Here each is one loop that does the same IEEE operations, in the same order and precision, on each element in
registers. numba compiles without fast-math, so nothing is reassociated, approximated or contracted into a fused
multiply-add: the results are the numpy definitions' bit for bit (``tests/test_fused.py`` holds each kernel to its
definition over random, edge and special values), so a record does not depend on whether numba is installed.
Without numba, or with ``SCOPE_ENVS_FUSED=0`` in the environment, each function here is its numpy definition.
Speed: ``benchmarks/fused_speed.py``.

    >>> import numpy as np
    >>> y = np.array([[0.5, -40.0]], np.float32)
    >>> bias_tanh(y, np.zeros(2, np.float32)).tolist()
    [[0.46211716532707214, -1.0]]
"""

from __future__ import annotations

import os

import numpy as np

from scope_envs.train.activation import LIMIT, P, Q, horner, tanh

try:
    import numba
except ImportError:  # the numpy definitions below stand in
    numba = None

_F = np.float32
_P = tuple(_F(c) for c in P)
_Q = tuple(_F(c) for c in Q)
_LIMIT, _ONE = _F(LIMIT), _F(1.0)
_enabled = numba is not None and os.environ.get("SCOPE_ENVS_FUSED", "1") != "0"


def available() -> bool:
    """Whether the compiled kernels run (numba is importable and ``enable`` left them on)."""
    return _enabled


def enable(on: bool) -> bool:
    """Run the compiled kernels (``on``, where numba is installed) or the numpy definitions; returns the setting
    before. The results are the same either way: ``benchmarks/fused_speed.py`` times one against the other."""
    global _enabled
    before, _enabled = _enabled, bool(on) and numba is not None
    return before


def _fits(*arrays: np.ndarray) -> bool:
    return _enabled and all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


# -- the numpy definitions ------------------------------------------------------------------------------------
def bias_tanh_numpy(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    y += b
    return tanh(y)


def tanh_grad_numpy(d: np.ndarray, h: np.ndarray) -> np.ndarray:
    d *= 1.0 - h * h
    return d


def adam_numpy(flat, grad, exp_avg, exp_avg_sq, scale: float, beta1: float, beta2: float, bias2: float, eps: float,
               step_size: float) -> None:
    grad *= scale
    exp_avg += (1.0 - beta1) * (grad - exp_avg)  # torch's lerp
    exp_avg_sq *= beta2
    exp_avg_sq += (1.0 - beta2) * grad * grad
    denom = np.sqrt(exp_avg_sq)
    denom /= bias2
    denom += eps
    flat -= step_size * (exp_avg / denom)


# -- the kernels ---------------------------------------------------------------------------------------------
if numba is not None:
    _horner = numba.njit(inline="always")(horner)  # activation's own steps, compiled

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def _bias_tanh(y, b):  # y: (rows, units), b: (units,); activation.tanh's steps on y + b, in y
        for i in range(y.shape[0]):
            for j in range(y.shape[1]):
                x = y[i, j] + b[j]
                x = _LIMIT if x > _LIMIT else x  # np.minimum / np.maximum for every value but NaN, which
                x = -_LIMIT if x < -_LIMIT else x  # both keep (a NaN compares false)
                s = x * x
                p = _horner(s, _P)
                p *= x
                p /= _horner(s, _Q)
                p = _ONE if p > _ONE else p
                y[i, j] = -_ONE if p < -_ONE else p

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def _tanh_grad(d, h):  # d *= 1 - h * h, flat
        for i in range(d.shape[0]):
            d[i] *= _ONE - h[i] * h[i]

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def _adam(flat, grad, exp_avg, exp_avg_sq, scale, lerp, beta2, rest, bias2, eps, step_size):
        for i in range(flat.shape[0]):
            g = grad[i] * scale
            grad[i] = g
            m = exp_avg[i]
            m += lerp * (g - m)
            exp_avg[i] = m
            v = exp_avg_sq[i] * beta2
            v += rest * g * g
            exp_avg_sq[i] = v
            d = np.sqrt(v)
            d /= bias2
            d += eps
            flat[i] -= step_size * (m / d)


def bias_tanh(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``tanh(y + b)`` (the package's tanh), computed in ``y`` where it can be (a float32, C-contiguous array whose
    last axis is ``b``'s); returns the result."""
    if not _fits(y, b) or y.size == 0:
        return bias_tanh_numpy(y, b)
    _bias_tanh(y.reshape(-1, y.shape[-1]), b)
    return y


def tanh_grad(d: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``d * (1 - h * h)``, tanh's derivative at its output ``h`` applied to the gradient ``d``, in ``d``."""
    if not _fits(d, h) or d.shape != h.shape:
        return tanh_grad_numpy(d, h)
    _tanh_grad(d.reshape(-1), h.reshape(-1))
    return d


def adam(flat: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, scale: float,
         beta1: float, beta2: float, bias2: float, eps: float, step_size: float) -> None:
    """One Adam step on the flat float32 parameters, in place (``numpy_ac.Adam``'s, torch's): the gradient scaled by
    ``scale`` (its clipping) first, ``bias2`` the square root of the second moment's bias correction, ``step_size``
    the learning rate over the first's. Each Python float enters as float32, as numpy's operators take it."""
    arrays = (flat, grad, exp_avg, exp_avg_sq)
    if not _fits(*arrays) or len({a.shape for a in arrays}) > 1:
        return adam_numpy(flat, grad, exp_avg, exp_avg_sq, scale, beta1, beta2, bias2, eps, step_size)
    _adam(*(a.reshape(-1) for a in arrays), _F(scale), _F(1.0 - beta1), _F(beta2), _F(1.0 - beta2), _F(bias2), _F(eps),
          _F(step_size))


__all__ = ["adam", "adam_numpy", "available", "enable", "bias_tanh", "bias_tanh_numpy", "tanh_grad", "tanh_grad_numpy"]
