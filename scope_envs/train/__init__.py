"""Trainers: the act-level multi-agent PPO (``act_ppo``) and the LLM trainer (``llm``).

They sit above the regimes: they build environments by id and train the live
agents (``agent_0`` and any learnable ``user_k``) of any regime.
"""
