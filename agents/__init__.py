"""Players: the simulator interface and the built-in simulators of each game."""

from scope_envs.core.simulator import Simulator, View

__all__ = ["Simulator", "View"]
