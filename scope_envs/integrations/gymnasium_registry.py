"""Every scope-envs id in Gymnasium's registry, under its PettingZoo name (``scope/P4G-Frozen-v0``).

``scope_envs.registry.register`` registers each id with Gymnasium as it does with PettingZoo, these two functions
its entry points, so after ``import scope_envs``:

* ``gymnasium.make(name, role="agent_0", others=None, illegal="random", **kwargs)`` is
  ``SingleAgentView(scope_envs.make(id, **kwargs), role, others, illegal)`` (``scope_envs.wrappers``): one seat as a
  ``gymnasium.Env``, the other live seats played by ``others``; a regime whose user learns (``cotrain``,
  ``population``) needs ``others`` for it.
* ``gymnasium.make_vec(name, num_envs=N, illegal="random", **kwargs)`` on a regime whose only agent is ``agent_0``
  (``frozen``, ``vs``, ``rotation``, ``heldout``, ``grounded``) is
  ``GymVectorEnv(scope_envs.make_vec(id, num_envs=N, **kwargs), illegal)``:
  the N episodes stepped together by the batched engine (docs/engines.md), not N copies of the scalar env.

Example::

    >>> import gymnasium, scope_envs
    >>> env = gymnasium.make("scope/P4G-Frozen-v0")
    >>> obs, info = env.reset(seed=0)
    >>> env.action_space, obs["observation"].shape
    (Discrete(18), (77,))
    >>> envs = gymnasium.make_vec("scope/P4G-Frozen-v0", num_envs=8)
    >>> type(envs).__name__, envs.observation_space["observation"].shape
    ('GymVectorEnv', (8, 77))
"""

from __future__ import annotations

from scope_envs.registry import make
from scope_envs.vec import GymVectorEnv, make_vec
from scope_envs.wrappers import SingleAgentView


def make_view(env_id: str, role: str = "agent_0", others=None, illegal: str = "random", render_mode=None, **kwargs):
    """``gymnasium.make``'s entry point: one seat of ``scope_envs.make(env_id, **kwargs)``. A render mode the env
    has not (``rgb_array``, which SB3's ``make_vec_env`` asks of every id) is left out, after Gymnasium's own
    warning (``metadata`` below), as Gymnasium does for an env that cannot draw."""
    if render_mode in make_view.metadata["render_modes"]:  # the env takes it as its own
        kwargs["render_mode"] = render_mode
    return SingleAgentView(make(env_id, **kwargs), role=role, others=others, illegal=illegal)


make_view.metadata = {"render_modes": ["ansi"]}  # what gymnasium.make reads of its entry point, to warn of another


def make_vector(env_id: str, num_envs: int = 1, illegal: str = "random", role: str = "agent_0", others=None,
                render_mode=None, **kwargs):
    """``gymnasium.make_vec``'s entry point: ``scope_envs.make_vec(env_id, num_envs, **kwargs)`` as a
    ``gymnasium.vector.VectorEnv`` (``illegal`` as ``make_view``'s). It views ``agent_0``, the one seat that acts
    (``role`` and ``others`` are ``gymnasium.make``'s choices: refused here but for that default), and draws
    nothing: a ``render_mode`` is refused, where the batched engine would otherwise fall back to a loop of envs."""
    if role != "agent_0":
        raise ValueError(f"role: make_vec views agent_0, the only seat of a single-agent id, got {role!r}; another "
                         "seat is gymnasium.make(..., role=...) or scope_envs.make_vec on a cotrain id")
    if others:
        raise ValueError("others: make_vec's ids have no other acting seat (the simulator plays the user); "
                         "others= is for gymnasium.make on a cotrain or population id")
    if render_mode is not None:
        raise ValueError(f"render_mode: the batched engine draws nothing, got {render_mode!r}; render one episode "
                         "with gymnasium.make(..., render_mode='ansi'), or pass vectorization_mode='sync'")
    return GymVectorEnv(make_vec(env_id, num_envs=num_envs, **kwargs), illegal=illegal)
