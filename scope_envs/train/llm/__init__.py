"""LLM training on the text surface: LLM-PPO and GRPO (``ppo``, ``scope-envs train-llm``), the pooled LoRA
population (``pool``), the held-out LLM panel (``panel``, ``scope-envs eval-llm``) and the TRL adapter (``trl``).

Light to import: ``transformers``, ``peft`` and ``trl`` load only when a trainer runs.
"""
