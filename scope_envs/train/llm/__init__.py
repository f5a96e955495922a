"""LLM training on the text surface: LLM-PPO (``ppo``, ``scope-envs train-llm``) and the TRL adapter (``trl``).

Light to import: ``transformers``, ``peft`` and ``trl`` load only when a trainer runs.
"""
