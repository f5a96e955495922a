"""Wrappers: verbalized sampling and simulator populations in the user seat."""

from scope_envs.wrappers.population import SimulatorPopulation
from scope_envs.wrappers.verbalized import VerbalizedSampling, candidate_weights

__all__ = ["SimulatorPopulation", "VerbalizedSampling", "candidate_weights"]
