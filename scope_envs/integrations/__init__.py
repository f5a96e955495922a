"""Adapters that let the LLM RL engines the field runs train on scope-envs' text surface.

Each adapter plays whole multi-turn episodes of any registered id (``scope_envs.make(id, surface="text")``)
through the engine's own generation server and hands back what that engine trains on: the token ids of one
role's stream, a loss mask that is 1 on the tokens that role sampled and 0 everywhere else (system prompt,
the other side's turns, chat-template glue), the sampling logprobs of those tokens, and the environment's
reward for that role.

=========================  ==========================================================  =====================
engine                     entry point                                                 one call returns
=========================  ==========================================================  =====================
slime (THUDM)              ``scope_envs.integrations.slime.generate`` for              ``list[Sample]``, one
                           ``--custom-generate-function-path``;                        per trained role
                           ``scope_envs.integrations.slime.generate_rollout`` for
                           ``--rollout-function-path`` (grouped rollouts)
verl                       ``ScopeAgentLoop``, registered as ``"scope_envs"``          one ``AgentLoopOutput``
                           (``scope_envs.integrations.verl``)                          (the row's ``role``)
OpenRLHF                   ``AgentExecutor`` in ``scope_envs/integrations/openrlhf.py``  one trajectory dict
                           for ``--train.agent_func_path``                             (the row's ``role``)
=========================  ==========================================================  =====================

What an episode is comes from the dataset row (``EpisodeSpec.parse``): ``{"env_id": "p4g-cotrain",
"seed": 7, "role": "user_0", "env_kwargs": {...}}``, as the row's metadata / ``extra_info`` / label, or as
its prompt when that is this JSON. Every live agent of the episode is played by the engine's model; the
shared loop is ``scope_envs.integrations.episodes.play`` and the token bookkeeping is the same
``Trace`` that ``scope_envs.train.llm.ppo`` trains on.

On the act surface, ``scope_envs.integrations.sb3`` gives Stable-Baselines3 (and sb3-contrib's
``MaskablePPO``) ``make_vec``'s batched rollouts as an SB3 ``VecEnv`` (extra ``sb3``; not imported here);
``scope_envs.integrations.gymnasium_registry`` puts every id in Gymnasium's registry (``gymnasium.make``,
``gymnasium.make_vec``); ``scope_envs.integrations.torchrl_env`` gives TorchRL ``make_vec`` as one batched env
(``TorchRLVecEnv``, extra ``torchrl``; not imported here), on which ``scope_envs.integrations.benchmarl`` makes every
trainable id a BenchMARL task (needs ``benchmarl``, in a virtualenv of its own; not imported here).
"""

from scope_envs.integrations.episodes import (
    EpisodeResult,
    EpisodeSpec,
    Generated,
    Trajectory,
    play,
)

__all__ = ["EpisodeResult", "EpisodeSpec", "Generated", "Trajectory", "play"]
