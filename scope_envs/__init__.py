"""scope-envs: multi-agent RL environments in which the user simulator is itself an agent."""

from scope_envs.registry import REGIMES, EnvSpec, make, register, registry

from scope_envs import regimes as _regimes  # noqa: E402,F401  (registers every <game>-<regime> id)
from scope_envs.vec import make_vec

__version__ = "0.1.0"
__all__ = ["REGIMES", "EnvSpec", "make", "make_vec", "register", "registry"]
