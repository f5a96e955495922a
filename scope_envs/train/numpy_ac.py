"""The act-level actor-critic's arithmetic in numpy: forward pass, backward pass and Adam.

The act PPO's networks are two 3-layer tanh MLPs of 64 units, and its minibatches have about 128 rows.
At that size PyTorch's per-op dispatch and autograd bookkeeping cost several times the arithmetic:
one PPO minibatch step took about 2.4 ms in torch and takes about 0.5 ms here. So the trainer keeps its
``ActorCritic`` modules (state dicts, saving and ``PolicySnapshot``'s copies stay torch),
binds their parameters onto one flat float32 buffer that numpy and torch share (``bind``), and does
the rollout's forward passes, the PPO update and the behaviour clone's fit in numpy. The elementwise passes (the
hidden layers' bias and tanh, tanh's derivative, Adam's step) are ``scope_envs.train.fused``'s: one compiled loop
each with numba, the same bits without it.

``tests/test_numpy_ac.py`` holds the forward and backward passes to torch autograd and ``Adam`` to
``torch.optim.Adam``; ``tests/test_act_ppo.py`` holds the trainer's whole update (every loss term) to an
update written with torch's autograd, ``Categorical`` and ``torch.optim.Adam``.

Example::

    >>> import numpy as np
    >>> from scope_envs.train.act_ppo import ActorCritic
    >>> net = ActorCritic(obs_dim=4, n_actions=3)
    >>> flat, arrays = bind(net)  # net.parameters() now live in flat
    >>> critic, actor = arrays[:6], arrays[6:]
    >>> logp = log_policy(actor, np.zeros((2, 4), np.float32), np.array([[1, 1, 0], [1, 0, 0]], bool))
    >>> np.exp(logp).round(3)[1].tolist()
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scope_envs.train.fused import adam, bias_tanh, tanh_grad

if TYPE_CHECKING:
    from torch import nn

MASKED_LOGIT = -1e9  # ActorCritic's logit of an illegal act


def bind(net: nn.Module) -> tuple[np.ndarray, list[np.ndarray]]:
    """Move ``net``'s parameters (values kept) into one flat float32 buffer that torch and numpy share.
    Returns the buffer and one numpy view per parameter, in ``net.parameters()`` order; an in-place change
    through either side is seen by the other (``load_state_dict`` copies into the buffer)."""
    import torch  # here, not at the top: the benchmark's command lines answer --help without loading torch

    params = list(net.parameters())
    flat = np.empty(sum(p.numel() for p in params), np.float32)
    arrays, offset = [], 0
    for p in params:
        view = flat[offset : offset + p.numel()].reshape(tuple(p.shape))
        view[...] = p.detach().numpy()
        p.data = torch.from_numpy(view)
        arrays.append(view)
        offset += p.numel()
    return flat, arrays


def views_like(flat: np.ndarray, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Views of ``flat`` shaped as ``arrays`` (a gradient buffer laid out as the parameters)."""
    out, offset = [], 0
    for a in arrays:
        out.append(flat[offset : offset + a.size].reshape(a.shape))
        offset += a.size
    return out


def mlp(layers: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear-tanh-linear-tanh-linear (``nn.Linear`` weights are (out, in)): both hidden activations and
    the output, as ``mlp_backward`` needs them."""
    w1, b1, w2, b2, w3, b3 = layers
    h1 = bias_tanh(x @ w1.T, b1)
    h2 = bias_tanh(h1 @ w2.T, b2)
    return h1, h2, h2 @ w3.T + b3


def mlp_backward(layers: list[np.ndarray], x: np.ndarray, h1: np.ndarray, h2: np.ndarray, d_out: np.ndarray,
                 grads: list[np.ndarray]) -> None:
    """Write the gradients of the layers' parameters into ``grads`` (same layout), given the loss's gradient
    ``d_out`` with respect to ``mlp``'s output."""
    _, _, w2, _, w3, _ = layers
    g1, gb1, g2, gb2, g3, gb3 = grads
    np.matmul(d_out.T, h2, out=g3)
    d_out.sum(0, out=gb3)
    d2 = tanh_grad(d_out @ w3, h2)
    np.matmul(d2.T, h1, out=g2)
    d2.sum(0, out=gb2)
    d1 = tanh_grad(d2 @ w2, h1)
    np.matmul(d1.T, x, out=g1)
    d1.sum(0, out=gb1)


def normalize(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Log-probabilities of the logits with illegal acts at ``MASKED_LOGIT`` (``ActorCritic.log_policy``)."""
    z = np.where(mask, logits, np.float32(MASKED_LOGIT))
    top = z.max(-1, keepdims=True)
    return z - (top + np.log(np.exp(z - top).sum(-1, keepdims=True)))


def log_policy(actor: list[np.ndarray], x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return normalize(mlp(actor, x)[2], mask)


def log_policy_rows(actor: list[np.ndarray], x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``log_policy`` with each row's forward pass the one-row pass, bit for bit, whatever the other rows: a
    matrix product over several rows may sum in another order than over one (BLAS blocks them), a stack of
    one-row products may not. A simulator's answer in a slot then does not depend on the slots it answers
    beside (``PolicySnapshot.distributions``); it costs about a microsecond a row more."""
    return normalize(mlp(actor, x[:, None, :])[2][:, 0, :], mask)


def entropy(logp: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Per row; masked acts (probability 0, finite log-probability) add nothing."""
    return -(logp * probs).sum(-1)


def max_grad_split(a: np.ndarray, b: np.ndarray, passes) -> np.ndarray:
    """The share of ``max(a, b)``'s gradient that reaches ``a`` (all where a > b, half on a tie, as torch's
    ``maximum``), times ``passes`` (whether ``a``'s own clamp lets it through)."""
    return ((a > b) + 0.5 * (a == b)) * passes


class Adam:
    """``torch.optim.Adam`` (no weight decay, no amsgrad) over one flat parameter buffer, in place."""

    def __init__(self, flat: np.ndarray, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.flat, self.lr, self.betas, self.eps = flat, lr, betas, eps
        self.exp_avg = np.zeros_like(flat)
        self.exp_avg_sq = np.zeros_like(flat)
        self.steps = 0

    def step(self, grad: np.ndarray, scale: float = 1.0) -> None:
        """One step on ``grad`` times ``scale`` (a clipping factor; ``grad`` is left scaled)."""
        beta1, beta2 = self.betas
        self.steps += 1
        bias2 = float(np.sqrt(1.0 - beta2**self.steps))
        adam(self.flat, grad, self.exp_avg, self.exp_avg_sq, scale, beta1, beta2, bias2, self.eps,
             float(self.lr / (1.0 - beta1**self.steps)))
