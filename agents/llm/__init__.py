"""LLM players, backends, verbalized sampling for LLM users, and the LLM-PPO trainer.

Light to import: ``transformers``, ``peft``, ``vllm`` and ``trl`` load only when a
backend, the trainer or the TRL adapter needs them.

    >>> from scope_envs.agents.llm import LLMPlayer, TransformersBackend, parse_verbalized
    >>> parse_verbalized('{"responses": [{"text": "Sure!", "probability": "60%"}, {"text": "No.", "probability": 40}]}')
    [('Sure!', 0.6), ('No.', 0.4)]
"""

from scope_envs.agents.llm.backends import (
    Backend,
    BackendError,
    Generation,
    OpenAIBackend,
    TransformersBackend,
    VLLMBackend,
    load_backend,
)
from scope_envs.agents.llm.player import LLMPlayer
from scope_envs.agents.llm.verbalized import parse_verbalized, vs_prompt

__all__ = [
    "Backend", "BackendError", "Generation", "LLMPlayer", "OpenAIBackend", "TransformersBackend", "VLLMBackend",
    "load_backend", "parse_verbalized", "vs_prompt",
]
