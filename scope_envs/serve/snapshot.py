"""A user policy pushed by a client: an MLP's weights on the wire, playing the user seat on the server.

A population regime with a checkpoint pool (``scope_envs.make("p4g-population", pool_size=5)``) keeps its
pool on the server; a remote trainer adds a frozen copy of its live user with
``reset(snapshot=...)``. The snapshot is a masked-softmax MLP over the act surface's observation::

    {"layers": [{"weight": [[...], ...], "bias": [...]}, ...], "activation": "tanh"}

``weight`` is (out, in) as ``torch.nn.Linear`` stores it; the activation runs between layers, not after
the last, whose outputs are the logits of the role's acts. ``mlp_wire(module)`` writes one from a torch
``Sequential`` of ``Linear`` layers with one ``Tanh`` or ``ReLU`` between every two (the package's actor,
``ActorCritic.actor``; an SB3 policy's ``Sequential(mlp_extractor.policy_net, action_net)``), and refuses
anything the wire cannot say (another activation, a trailing ``Softmax``, two ``Linear`` layers in a row).
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.simulator import Simulator, View
from scope_envs.train.activation import tanh

ACTIVATIONS = {"tanh": tanh, "relu": lambda x: np.maximum(x, 0.0)}
MAX_LAYERS = 8
MAX_PARAMETERS = 4_000_000
MAX_WEIGHT = 1e6  # a weight or bias past this in magnitude is refused (softmax of its logits overflows)


class SnapshotError(ValueError):
    """A pushed snapshot that cannot be a policy for this seat (the message says why)."""


class MLPSnapshot(Simulator):
    """A frozen MLP playing the user seat: softmax of its logits over the legal acts."""

    name = "pushed_snapshot"
    wants_observation = True

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], activation: str = "tanh"):
        self.layers, self.activation = layers, ACTIVATIONS[activation]

    @classmethod
    def from_wire(cls, spec, obs_dim: int, n_actions: int) -> "MLPSnapshot":
        if not isinstance(spec, dict) or not isinstance(spec.get("layers"), list) or not spec["layers"]:
            raise SnapshotError('a snapshot is {"layers": [{"weight": ..., "bias": ...}, ...], "activation": ...}')
        unknown = sorted(str(k)[:40] for k in spec if k not in ("layers", "activation"))
        if unknown:  # the wire says nothing else: a typo ("activaton") would play another policy than was sent
            raise SnapshotError(f"a snapshot has keys 'layers' and 'activation'; unknown: {unknown[:5]}")
        activation = spec.get("activation", "tanh")
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise SnapshotError(f"snapshot 'activation' must be one of {sorted(ACTIVATIONS)}, got {activation!r:.60}")
        if len(spec["layers"]) > MAX_LAYERS:
            raise SnapshotError(f"a snapshot has at most {MAX_LAYERS} layers, got {len(spec['layers'])}")
        layers, width, total = [], obs_dim, 0
        for i, layer in enumerate(spec["layers"]):
            if isinstance(layer, dict) and set(layer) - {"weight", "bias"}:
                raise SnapshotError(f"snapshot layer {i}: a layer has keys 'weight' and 'bias'; unknown: "
                                    f"{sorted(str(k)[:40] for k in set(layer) - {'weight', 'bias'})[:5]}")
            try:
                raw_w, raw_b = np.asarray(layer["weight"]), np.asarray(layer["bias"])
            except (KeyError, TypeError, ValueError) as e:
                raise SnapshotError(f"snapshot layer {i}: needs numeric 'weight' (out, in) and 'bias' (out,): {e}") \
                    from None
            for name, raw in (("weight", raw_w), ("bias", raw_b)):
                if raw.dtype.kind not in "iuf":
                    raise SnapshotError(f"snapshot layer {i}: {name} must hold numbers (not strings, booleans or "
                                        f"nulls), got {raw.dtype.kind!r} values")
            with np.errstate(over="ignore", invalid="ignore"):
                w, b = raw_w.astype(np.float32), raw_b.astype(np.float32)
            if w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != width:
                raise SnapshotError(f"snapshot layer {i}: weight {w.shape} and bias {b.shape} do not take "
                                    f"inputs of width {width}")
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise SnapshotError(f"snapshot layer {i}: weights must be finite")
            if w.size and np.abs(w).max() > MAX_WEIGHT or b.size and np.abs(b).max() > MAX_WEIGHT:
                raise SnapshotError(f"snapshot layer {i}: weights must be at most {MAX_WEIGHT:g} in magnitude")
            total += w.size + b.size
            if total > MAX_PARAMETERS:
                raise SnapshotError(f"a snapshot has at most {MAX_PARAMETERS} parameters")
            layers.append((w, b))
            width = w.shape[0]
        if width != n_actions:
            raise SnapshotError(f"the snapshot's last layer has {width} outputs; the user seat has {n_actions} acts")
        policy = cls(layers, activation)
        with np.errstate(all="ignore"):  # a probe forward pass: the logits of plausible inputs must be finite
            for probe in (np.zeros(obs_dim, np.float32), np.ones(obs_dim, np.float32), -np.ones(obs_dim, np.float32)):
                if not np.isfinite(policy.logits(probe)).all():
                    raise SnapshotError("snapshot weights: the logits are not finite on a probe input")
        return policy

    def logits(self, x: np.ndarray) -> np.ndarray:
        for i, (w, b) in enumerate(self.layers):
            x = w @ x + b
            if i < len(self.layers) - 1:
                x = self.activation(x)
        return x

    def distribution(self, view: View) -> np.ndarray:
        x = self.logits(np.asarray(view.observation, np.float32))
        legal = np.asarray(view.legal, bool)
        logits = np.where(legal, x.astype(np.float64), -np.inf)
        p = np.exp(logits - logits.max())
        return p / p.sum()


def _flat(module, torch) -> list:
    """The layers of a ``Sequential`` in order (nested ``Sequential`` s flattened), or a lone ``Linear``."""
    if type(module) is torch.nn.Sequential:
        return [m for child in module for m in _flat(child, torch)]
    return [module]


def mlp_wire(module) -> dict:
    """The wire form of a torch ``Sequential`` (nested ``Sequential`` s flattened) of ``Linear`` layers with
    one ``Tanh`` or one ``ReLU`` between every two of them, the last ``Linear`` giving the logits; or a lone
    ``Linear``. The wire can say nothing else, so anything else is a ``ValueError`` naming it (never a policy
    silently played with another activation): another module (``GELU``, ``Sigmoid``, a ``Softmax`` after the
    logits, ``Dropout``), two ``Linear`` layers with no activation between them, two activations in a row, or
    both kinds. A ``Linear(bias=False)`` goes with a zero bias."""
    import torch

    from scope_envs.train.act_ppo import Tanh  # the package's own networks' tanh

    kinds = {torch.nn.Tanh: "tanh", Tanh: "tanh", torch.nn.ReLU: "relu"}
    if type(module) not in (torch.nn.Sequential, torch.nn.Linear):
        raise ValueError(f"mlp_wire takes a torch Sequential of Linear layers with Tanh or ReLU between them "
                         f"(or one Linear), got {type(module).__name__}")
    parts = _flat(module, torch)
    layers, acts, previous = [], set(), None
    for i, m in enumerate(parts):
        if type(m) is torch.nn.Linear:
            if previous == "linear":
                raise ValueError(f"mlp_wire: layers {i - 1} and {i} are two Linear layers with no activation "
                                 "between them; the wire puts the activation (Tanh or ReLU) between every two")
            w = m.weight.detach().cpu().numpy()
            b = np.zeros(w.shape[0], np.float32) if m.bias is None else m.bias.detach().cpu().numpy()
            layers.append({"weight": w.tolist(), "bias": b.tolist()})
            previous = "linear"
        elif type(m) in kinds:
            if previous != "linear":
                where = "first" if previous is None else f"right after another activation (layer {i})"
                raise ValueError(f"mlp_wire: {type(m).__name__} comes {where}; the wire puts one activation "
                                 "between two Linear layers")
            acts.add(kinds[type(m)])
            previous = "activation"
        else:
            raise ValueError(f"mlp_wire: layer {i} is {type(m).__name__}; a snapshot holds only Linear layers with "
                             "Tanh or ReLU between them, the last Linear giving the logits (no Softmax)")
    if previous != "linear":
        raise ValueError("mlp_wire: the last layer must be a Linear (its outputs are the logits); an activation "
                         f"after it ({type(parts[-1]).__name__}) is not on the wire" if parts else
                         "mlp_wire: the Sequential is empty")
    if len(acts) > 1:
        raise ValueError("mlp_wire: a snapshot has one activation kind between its layers, got both Tanh and ReLU")
    return {"layers": layers, "activation": acts.pop() if acts else "tanh"}
