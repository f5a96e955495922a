"""The act-level networks' activation, ``tanh``, written out of IEEE arithmetic alone.

``np.tanh`` and ``torch.tanh`` are the C library's or a vector library's. At the ``portable`` kernel level
(``scope_envs.kernels``, the benchmark's) numpy calls glibc's scalar ``tanhf``: 145 us a (128, 64) block, against
55 us here (``benchmarks/tanh_speed.py``), when the hidden layers were 43% of a p4g ceiling row's time (py-spy).
And its results change with glibc's version (2.41 made it correctly rounded; a fifth of 2.36's float32 results on
normal draws are not), so records made with it depended on the machine's C library.

Here tanh is a rational function, ``x P(x^2) / Q(x^2)`` on ``[-9, 9]`` (``P`` of degree 5, ``Q`` of degree 4,
fitted by ``benchmarks/tanh_speed.py --fit``), the argument clamped there and the result to ``[-1, 1]``:
multiplications, additions and one division, each rounded once by IEEE 754, so the same bits on every CPU, C
library and kernel level, in numpy (``tanh``) and in torch (``act_ppo.Tanh``, the same ``rational``). Against
float64 tanh it is at most 5.8 float32 ulps off over every float32 input below 9.5 (``benchmarks/tanh_speed.py
--check``); its derivative is taken as ``1 - tanh^2``, as tanh's.

    >>> import numpy as np
    >>> float(tanh(np.float32(0.5))), float(tanh(np.float32(40.0)))
    (0.46211716532707214, 1.0)
"""

from __future__ import annotations

import numpy as np

LIMIT = 9.0  # |x| beyond it: tanh(x) is within one float32 ulp of 1
# P's and Q's coefficients from the constant term up, each a float32 value (Q's constant is 1)
P = (1.0, 0.13680852949619293, 0.0038695023395121098, 2.803116149152629e-05, 3.064203824010292e-08,
     -1.2245785115105878e-11)
Q = (1.0, 0.47014185786247253, 0.02725013718008995, 0.00039407022995874286, 1.289022861783451e-06)


def horner(s, c):
    """``sum(c[j] s^j)``, a new array or tensor like ``s``: a multiplication and an addition a coefficient."""
    out = s * c[-1]
    for j in range(len(c) - 2, 0, -1):
        out += c[j]
        out *= s
    out += c[0]
    return out


def rational(x):
    """``x P(x^2) / Q(x^2)`` of an ``x`` already clamped to ``[-LIMIT, LIMIT]``: operators only, so a float32
    numpy array and a float32 torch tensor give the same bits."""
    s = x * x
    p = horner(s, P)
    p *= x
    p /= horner(s, Q)
    return p


def tanh(z: np.ndarray) -> np.ndarray:
    """tanh of a float32 array, elementwise (a new array)."""
    z = np.asarray(z)
    if z.ndim == 0:  # (numpy's operators give a 0-d array back as a scalar, which in-place steps cannot fill)
        return tanh(z[None])[0]
    x = np.minimum(z, np.float32(LIMIT), out=np.empty(z.shape, np.result_type(z, np.float32)))
    np.maximum(x, np.float32(-LIMIT), out=x)
    y = rational(x)
    np.minimum(y, np.float32(1.0), out=y)
    return np.maximum(y, np.float32(-1.0), out=y)


__all__ = ["LIMIT", "P", "Q", "horner", "rational", "tanh"]
