"""SCOPE's pooled population for LLM users: the co-trained user's past snapshots as LoRA adapters.

``AdapterPool`` keeps, on the one base model the learners share, the live user
adapter and up to ``size - 1`` frozen copies of it, oldest first (FIFO: the
oldest adapter is deleted when a new one would overflow the pool). Every
``every`` updates ``after_update`` copies the live adapter's weights into a new
adapter named ``<live>@<update>``. Before each rollout batch ``draw`` picks the
entry that plays the user seat: ``uniform`` over the pool (SCOPE), or ``latest``
(always the live user: plain co-training). Only the live user learns, from the
batches it played; a snapshot is cheap (an adapter, not a checkpoint) and serves
on both engines (transformers: ``set_adapter``; vLLM: a LoRA request, registered
through ``on_snapshot``).

The act level's counterpart is ``scope_envs.wrappers.CheckpointPool`` (one entry
per episode, drawn by the env); here the draw is per rollout batch, as in SCOPE.

    >>> pool = AdapterPool(peft_model, "user", size=5, every=4, sample="uniform", rng=np.random.default_rng(0))
    >>> pool.entries            # doctest: +SKIP
    ['user']
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch

POOL_SAMPLES = ("uniform", "latest")


class AdapterPool:
    def __init__(self, model, live: str, size: int = 5, every: int = 4, sample: str = "uniform",
                 rng: np.random.Generator | None = None, on_snapshot: Callable[[str], None] | None = None):
        for name, value in (("pool_size", size), ("snapshot_every", every)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if sample not in POOL_SAMPLES:
            raise ValueError(f"pool_sample must be one of {POOL_SAMPLES}, got {sample!r}")
        if live not in getattr(model, "peft_config", {}):
            raise ValueError(f"the pool's live user must be a LoRA adapter of the model, got {live!r}")
        self.model, self.live, self.size, self.every, self.sample = model, live, size, every, sample
        self.rng = rng if rng is not None else np.random.default_rng()
        self.on_snapshot = on_snapshot
        self.snapshots: list[str] = []

    @property
    def entries(self) -> list[str]:
        """The pool, oldest first: the frozen snapshots, then the live user."""
        return self.snapshots + [self.live]

    def draw(self) -> str:
        """The adapter that plays the user seat in the next rollout batch."""
        entries = self.entries
        return entries[int(self.rng.integers(len(entries)))] if self.sample == "uniform" else self.live

    def after_update(self, update: int) -> str | None:
        """Every ``every`` updates, snapshot the live adapter (returns the new adapter's name, else None)."""
        if update % self.every or self.size < 2:
            return None
        name = f"{self.live}@{update}"
        self.model.add_adapter(name, copy.deepcopy(self.model.peft_config[self.live]))
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for key, p in list(params.items()):
                if f".{self.live}." in key:
                    target = params[key.replace(f".{self.live}.", f".{name}.")]
                    target.copy_(p)
                    target.requires_grad_(False)
        self.snapshots.append(name)
        while len(self.snapshots) > self.size - 1:
            oldest = self.snapshots.pop(0)
            self.model.set_adapter(self.live)  # never delete the active adapter
            self.model.delete_adapter(oldest)
        if self.on_snapshot is not None:
            self.on_snapshot(name)
        return name
