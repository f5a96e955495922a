"""scope-envs: multi-agent RL environments in which the user simulator is itself an agent."""

from scope_envs.registry import REGIMES, EnvSpec, make, register, registry

from scope_envs.games import cooperbench as _cooperbench  # noqa: E402,F401  (registers the ids)
from scope_envs.games import p4g as _p4g  # noqa: E402,F401
from scope_envs.games import tau2 as _tau2  # noqa: E402,F401

__version__ = "0.1.0"
__all__ = ["REGIMES", "EnvSpec", "make", "register", "registry"]
