"""Batched rollouts: ``make_vec(id, num_envs=N)`` steps N episodes of one id together, as arrays.

    >>> import numpy as np, scope_envs
    >>> vec = scope_envs.make_vec("p4g-frozen", num_envs=4)
    >>> obs, infos = vec.reset(seed=0)
    >>> obs["agent_0"]["observation"].shape, obs["agent_0"]["action_mask"].shape
    ((4, 77), (4, 18))
    >>> acts = {"agent_0": np.full(4, 1)}  # a logical appeal in every episode
    >>> obs, rewards, terminations, truncations, infos = vec.step(acts)
    >>> rewards["agent_0"].shape, infos["active"]["agent_0"].tolist()
    ((4,), [True, True, True, True])

The API is PettingZoo's parallel one with a leading batch axis:

* ``obs[agent]``: ``{"observation": (N, dim) float32, "action_mask": (N, n) int8}`` for every agent of
  ``possible_agents``; a slot where the agent is not to move has only the no-op unmasked. On the text surface
  (``surface="text"``, run by ``LoopVecEnv``) it is Gymnasium's batch of a ``Text`` space instead: a tuple of N
  transcripts, each the scalar env's (``""`` in a slot where the agent is not live).
* ``step(actions)``: ``actions[agent]`` an int array (N,) (on the text surface, a sequence of N strings); only the
  slots where that agent moves are read (checked against the mask: an illegal act raises ``ValueError``), and an
  agent outside ``possible_agents`` raises ``ValueError``. A simulator in the user seat replies inside ``step``,
  as in the scalar env.
* ``rewards[agent]``, ``terminations[agent]``, ``truncations[agent]``: (N,) arrays.
* ``infos``: ``active[agent]`` and ``live[agent]`` (bool (N,)), ``member`` (the user seat's member per
  slot), ``turn`` (turns played), ``_final_info`` (bool (N,): the slots whose episode ended this step) and,
  when any did, ``final_info``: the finished episodes' ``outcome`` (a dict of (N,) arrays, the game's
  outcome keys), ``agent_score``, ``return`` (``agent_0``'s), ``member``, ``persona`` and ``user_acts``
  (object arrays), valid where ``_final_info`` is set, as Gymnasium's vector envs keep them.
* Auto-reset in the same step (Gymnasium's ``SAME_STEP`` mode): a finished slot's observation is its next
  episode's first. ``next_episode(slot)`` decides: it returns ``reset`` options for the slot's next
  episode (``{}``, or ``{"scenario_seed": s}``), or None to leave the slot idle until ``reset``.
  ``reset(seed=s)`` seeds the slots' generator (``s`` an int >= 0; a sequence of N of them gives each slot its
  seed; the loop engine seeds scalar env ``i`` with ``s + i``); ``slots=`` resets only those slots and leaves the
  others idle.

Every regime is covered, learnable users included (``user_j`` act in the slots whose episode drew them).
On p4g and cooperbench the game state and the built-in simulators' reply distributions (the frozen
simulator, rotation members, families, the held-out proxies at their default assumptions, verbalized
sampling of the game's reference) are computed for all N at once (``scope_envs.games.p4g.batched``,
``scope_envs.games.cooperbench.batched``); any other user-seat player (a checkpoint pool's snapshots,
verbalized sampling of another simulator, a custom ``Simulator``) is asked slot by slot through the scalar
env's own sampler. tau2's act game is arrays too (``scope_envs.games.tau2.batched``), over its tasks compiled
into tables (``scope_envs.games.tau2.compiled``: the calls and grounding tokens as bits; a tool call's answer, a
policy check and the evaluation asked of the world once per state and kept). Every other case loops over N
scalar envs inside the same API (``LoopVecEnv``: the text surface, text players, the held-out proxies'
``assumptions`` variants, tau2 with an NL judge, any option this module does not know).

Each slot keeps its member schedule and its configuration in a scalar env of the id (``envs[i]``); its draws come
from its stream's generator. By default one stream drives all N slots (seeded by ``reset(seed=s)`` with ``s``
itself, or by the list of seeds given), so nothing is drawn slot by slot: every simulator reply of a step from
one call, each new episode's persona (and task) drawn as indices into the split with the card's terms read from
arrays built once per split, the member picked at once where the schedule is the default one (a single member,
or uniform over the roster). What keeps per-slot state still runs per slot, on the slot's stream: ``MemberSchedule``
(rotation and population schedules), a checkpoint pool's pick, simulators asked slot by slot (pool snapshots,
custom users), ``scenario_seed`` options, the human proxy's follow-through. ``reset(seed, streams=)`` splits the
slots into streams, a generator each, seeded by its own slots' seeds: a stream's episodes are then those of a vec
env of its slots alone, whatever the other streams do (``collect_blocks`` gives each block, a seed of a row, its
stream). The batched episodes are not those of N scalar envs seeded alike (``LoopVecEnv`` plays those), but they
are drawn from the same distribution: tests/test_vec_distribution.py compares 10,000 episodes of each path per id
(outcomes, lengths, the user's acts) and shows the comparison rejects a perturbed engine.

``GymVectorEnv(vec)`` is the single-agent case (``agent_0`` alone acts) as a ``gymnasium.vector.VectorEnv``,
for libraries that consume those (CleanRL-style loops; SB3 through a VecEnv adapter).
"""

from __future__ import annotations

import numpy as np

from scope_envs.regimes import REGIME_KWARGS
from scope_envs.registry import make
from scope_envs.vec.base import LoopVecEnv
from scope_envs.vec.batched import BatchedVecEnv
from scope_envs.vec.games import BATCHED, CooperBenchVecEnv, P4GVecEnv, Tau2VecEnv
from scope_envs.vec.gym import GymVectorEnv, gym_vector_env, noop_mask

__all__ = ["BATCHED_KWARGS", "MAX_NUM_ENVS", "BatchedVecEnv", "CooperBenchVecEnv", "GymVectorEnv", "LoopVecEnv",
           "P4GVecEnv", "Tau2VecEnv", "gym_vector_env", "make_vec", "noop_mask", "vectorize"]

# the keyword arguments of make() that the batched engine reproduces: the games' options it knows and every
# regime's (scope_envs.regimes.REGIME_KWARGS) but the held-out proxies' assumption switch; any other falls back
# to looping the scalar envs, which implement it
GAME_KWARGS = frozenset({
    "surface", "max_turns", "user_reward", "sharpening", "gamma", "target_var", "width", "max_errors",
    "max_message_chars",
    "domain", "data_dir", "max_steps", "max_tool_errors", "judge",  # tau2's (with a judge: Tau2VecEnv.supports declines)
})
UNBATCHED_KWARGS = frozenset({"assumptions"})
BATCHED_KWARGS = GAME_KWARGS | frozenset().union(*REGIME_KWARGS.values()) - UNBATCHED_KWARGS
# the most slots make_vec builds: each slot is a scalar env built before the first step (15-60 KiB and 0.2-0.6 ms
# a slot, tau2 the most), so 65,536 slots are some 4 GiB; the benchmarks go to 16,384 and the server's
# --max-num-envs to 65,536. A count past it would fill memory one scalar env at a time before anything ran.
MAX_NUM_ENVS = 65_536


def make_vec(id: str, num_envs: int = 16, **kwargs):
    """N episodes of ``id`` stepped together (``scope_envs.make(id, **kwargs)`` per slot; see the module)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if num_envs > MAX_NUM_ENVS:
        raise ValueError(f"num_envs must be at most {MAX_NUM_ENVS:,} (each slot is a scalar env built now), got "
                         f"{num_envs:,}; for more episodes step more often, or split them over processes")
    envs = [make(id, **kwargs) for _ in range(int(num_envs))]
    return vectorize(envs, batched=not set(kwargs) - BATCHED_KWARGS)


def vectorize(envs: list, batched: bool = True):
    """The vec env over these scalar envs of one id: batched where their game and players allow (and
    ``batched``), else ``LoopVecEnv``. The envs stay the slots' configuration: their members (a pool's
    snapshots join there), schedules and dealing."""
    if batched:
        for cls in BATCHED:
            if cls.supports(envs):
                return cls(envs)
    return LoopVecEnv(envs)
