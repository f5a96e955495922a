"""SCOPE's population: a FIFO pool of frozen snapshots of the co-trained user beside the live one.

The user seat holds the live, learning user (``user_0``) and up to
``pool_size - 1`` frozen snapshots of it, oldest first. Each episode one entry
plays: ``sample="uniform"`` draws among all entries, ``"latest"`` always takes
the live user (plain co-training). Only the live user learns, from the episodes
it plays; a snapshot plays inside the env like any frozen simulator. The
trainer adds a snapshot every ``snapshot_every`` updates (``add_snapshot``); the
oldest one leaves when the pool is full. SCOPE: ``pool_size=5``,
``snapshot_every=4``, uniform, seeded with the initial user (with a fresh pool
the live user is the initial user, so the first draws are all its own). SCOPE
draws per rollout batch; here the draw is per episode, which gives the same
expected mix.

Example::

    >>> import scope_envs
    >>> from scope_envs.wrappers import CheckpointPool
    >>> env = scope_envs.make("p4g-population", pool_size=3)
    >>> isinstance(env, CheckpointPool), env.possible_agents
    (True, ['agent_0', 'user_0'])
    >>> env.add_snapshot(scope_envs.make("p4g-frozen").unwrapped.members[0])
    >>> len(env.entries)
    2
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import check_int
from scope_envs.core.env import LEARNABLE
from scope_envs.core.simulator import Simulator
from scope_envs.wrappers.infos import InfosWrapper

POOL_SAMPLES = ("uniform", "latest")
MAX_POOL_SIZE = 1024  # the most users a checkpoint pool keeps: a larger one never evicts, and grows with training
MAX_SNAPSHOT_EVERY = 100_000  # the most episodes (act level) or updates (train-llm) between two snapshots


class PoolSchedule:
    """Picks the pool entry for each episode: uniform over the entries, or the live user (the last one)."""

    def __init__(self, sample: str):
        self.sample = sample

    def pick(self, n: int, rng: np.random.Generator) -> int:
        return int(rng.integers(n)) if self.sample == "uniform" else n - 1

    def episode_end(self, member: int, agent_return: float) -> None:
        pass

    def reset(self) -> None:
        pass


class CheckpointPool(InfosWrapper):
    """``infos[a]["pool_entry"]``: the index of the entry playing (``len(entries) - 1`` is the live user)."""

    def __init__(self, env, pool_size: int = 5, snapshot_every: int = 4, sample: str = "uniform"):
        super().__init__(env)
        pool_size, snapshot_every = (int(check_int(name, value, 1, high)) for name, value, high in
                                     (("pool_size", pool_size, MAX_POOL_SIZE),
                                      ("snapshot_every", snapshot_every, MAX_SNAPSHOT_EVERY)))
        if sample not in POOL_SAMPLES:
            raise ValueError(f"pool_sample must be one of {POOL_SAMPLES}, got {sample!r}")
        self.pool_size, self.snapshot_every, self.sample = pool_size, snapshot_every, sample
        self.snapshots: list[Simulator] = []
        env.unwrapped.set_members([LEARNABLE])
        env.unwrapped.schedule = PoolSchedule(sample)

    @property
    def entries(self) -> list:
        """The pool, oldest first: the frozen snapshots, then the live user (``LEARNABLE``)."""
        return self.env.unwrapped.members

    def add_snapshot(self, snapshot: Simulator) -> None:
        """Add a frozen snapshot of the live user (between episodes); the oldest leaves a full pool."""
        if not isinstance(snapshot, Simulator):
            raise ValueError(f"a snapshot must be a Simulator, got {type(snapshot).__name__}")
        if self.env.unwrapped.agents:
            raise ValueError("add_snapshot between episodes, not during one")
        self.snapshots = (self.snapshots + [snapshot])[-(self.pool_size - 1):] if self.pool_size > 1 else []
        self.env.unwrapped.set_members(self.snapshots + [LEARNABLE])

    def annotate(self, infos):
        for info in infos.values():
            info["pool_entry"] = self.env.unwrapped.member
        return infos
