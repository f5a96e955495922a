"""Wrappers: one concern each.

* ``VerbalizedSampling``: the user simulator answers by verbalized sampling.
* ``SimulatorPopulation``: one member of a population plays the user role per episode.
* ``CheckpointPool``: SCOPE's population, frozen snapshots of the co-trained user beside the live one.
* ``SingleAgentView``: one role as a ``gymnasium.Env``, the others played by given policies.
* ``RecordTranscripts``: every finished episode appended to a JSON-lines file.
* ``LegalActions``: for trainers without action masking, a masked act becomes a random legal one.
"""

from scope_envs.wrappers.legal import LegalActions
from scope_envs.wrappers.pool import CheckpointPool
from scope_envs.wrappers.population import SimulatorPopulation
from scope_envs.wrappers.record import RecordTranscripts, TornTranscriptWarning, read_transcripts
from scope_envs.wrappers.single_agent import SingleAgentView
from scope_envs.wrappers.verbalized import VerbalizedSampling, candidate_weights

__all__ = [
    "CheckpointPool",
    "LegalActions",
    "RecordTranscripts",
    "SimulatorPopulation",
    "SingleAgentView",
    "TornTranscriptWarning",
    "VerbalizedSampling",
    "candidate_weights",
    "read_transcripts",
]
