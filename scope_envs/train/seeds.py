"""All seeds of a row as one computation: S act-level PPO trainers trained in lockstep on one vec env.

A benchmark row trains the same method on S seeds. ``train_seeds(trainers)`` trains S ``PPOTrainer``s (one per
seed, built as usual) together: each iteration, every trainer still under its budget plays its episodes in its
own block of one vec env of S x ``num_envs`` slots (``rollout.collect_blocks``: one ``vec.step`` a step for
all of them, the engine's per-step cost shared), then updates its own networks (``PPOTrainer.learn``).
Nothing is shared across seeds but the vec env's arrays: each seed keeps its networks, optimiser, generator,
training envs (their generators, schedules and checkpoint pools) and episodes, so a seed's training is the
one it gets alone, bit for bit, whichever seeds train beside it (``tests/test_train_seeds.py``: seed 3 alone
and among four give the same networks and log rows).

    >>> from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
    >>> trainers = [PPOTrainer(PPOConfig("p4g-frozen", seed=s, total_steps=600, num_envs=8, episodes_per_iter=8))
    ...             for s in range(3)]
    >>> histories = train_seeds(trainers)
    >>> [t.agent_steps >= 600 for t in trainers]
    [True, True, True]

The update still runs seed after seed (``benchmarks/seed_batch_speed.py`` measured stacking it at 1.1-1.6x);
``benchmarks/trainer_speed.py --seeds S`` measures what the shared rollout pays for a whole row.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from scope_envs.train.rollout import Rollout, collect_blocks
from scope_envs.vec import vectorize

MAX_SEEDS = 4096  # seeds trained together (a vec env of MAX_SEEDS x num_envs slots)


def check_together(trainers: list) -> None:
    """The ``ValueError`` of trainers that cannot share a vec env: none, too many, one trainer twice, or
    configs that differ in the env, its options, the slots or the episodes per iteration."""
    if not trainers:
        raise ValueError("train_seeds needs at least one trainer")
    if len(trainers) > MAX_SEEDS:
        raise ValueError(f"at most {MAX_SEEDS} trainers train together, got {len(trainers)}")
    if len({id(t) for t in trainers}) != len(trainers):
        raise ValueError("each trainer may appear once")
    first = trainers[0].cfg
    for t in trainers[1:]:
        differs = [k for k in ("env_id", "env_kwargs", "num_envs", "episodes_per_iter", "batched", "threads")
                   if getattr(t.cfg, k) != getattr(first, k)]
        if differs:
            raise ValueError(f"trainers that train together share one vec env: their configs differ in {differs}")


def rollouts(vec, trainers: list, live: list[int]) -> list[Rollout]:
    """One iteration's episodes of each live trainer (``trainers[k]`` for k in ``live``), each in its own block of
    ``vec``'s slots (trainer k's ``num_envs`` slots from ``k * num_envs``), played together."""
    n = trainers[0].cfg.num_envs
    blocks = [trainers[k].next_block(trainers[k].envs)._replace(slots=range(k * n, (k + 1) * n)) for k in live]
    return collect_blocks(vec, blocks)


def train_seeds(trainers: list, callback: Callable[[int, dict], None] | None = None) -> list[list[dict]]:
    """Train every trainer in ``trainers`` to its ``total_steps`` (see the module), each iteration's rollouts
    played together. After each iteration ``callback(k, row)`` (if given) receives trainer ``k``'s log row, in
    trainer order. Returns each trainer's log rows, as its ``train()`` would."""
    check_together(trainers)
    vec = vectorize([env for t in trainers for env in t.envs], batched=trainers[0].batched_engine)
    histories: list[list[dict]] = [[] for _ in trainers]
    with contextlib.ExitStack() as stack:
        for t in trainers:
            stack.enter_context(t.training_threads())
        while True:
            live = [k for k, t in enumerate(trainers) if t.agent_steps < t.cfg.total_steps]
            if not live:
                return histories
            t0 = time.perf_counter()
            for k, rollout in zip(live, rollouts(vec, trainers, live)):
                row = trainers[k].learn(rollout, t0)
                histories[k].append(row)
                if callback:
                    callback(k, row)
