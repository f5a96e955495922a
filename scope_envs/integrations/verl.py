"""verl: scope-envs episodes as an agent loop, ``ScopeAgentLoop``, registered under ``"scope_envs"``.

verl's agent-loop rollout instantiates the loop named by each row's ``agent_name`` with its server manager
(``server_manager.generate(request_id, prompt_ids=..., sampling_params=...) -> TokenOutput``) and the
policy's tokenizer, and awaits ``run(sampling_params, **row)``. This loop plays the row's whole episode
through that server and returns one ``AgentLoopOutput`` for the row's ``role`` (default ``agent_0``):
``prompt_ids`` (system prompt and opening), ``response_ids`` (every later token of that role's stream),
``response_mask`` (1 on the tokens it sampled), ``response_logprobs`` (when the rollout computes them,
``actor_rollout_ref.rollout.calculate_log_probs=True``), ``reward_score`` (the environment's reward to that
role; verl then skips its reward function) and ``num_turns`` (the conversation's messages plus the prompt).
The other live agents of the episode are played by the same server; their tokens are not in this output.
verl returns one trajectory per row, so co-training puts one row per role in the dataset
(``{"env_id": "p4g-cotrain", "seed": 3, "role": "user_0"}`` beside ``"role": "agent_0"``): the shared
model is trained on both sides, as SCOPE's shared-model co-training is.

The episode is read from the row's ``extra_info`` (``{"scope_envs": {"env_id": ..., "seed": ...}}`` or those
keys at its top level). Use: import this module before verl builds its workers (e.g. in the entry script or
through ``actor_rollout_ref.rollout.agent.agent_loop_config_path``) and set ``agent_name: scope_envs`` on the
rows. Each sample of a group (``rollout.n``) plays its own episode on the row's scenario.
"""

from __future__ import annotations

import itertools
import time
from typing import Any
from uuid import uuid4

from scope_envs.integrations.episodes import EpisodeSpec, Generated, play
from scope_envs.train.groups import derive_seed

try:
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopBase,
        AgentLoopOutput,
        register,
    )
except ImportError as e:  # a clear message rather than verl's import chain
    raise ImportError("scope_envs.integrations.verl needs verl (pip install verl); see .ci/engines.sh for a "
                      "CPU environment in which it imports") from e

_episodes = itertools.count()


@register("scope_envs")
class ScopeAgentLoop(AgentLoopBase):
    """One scope-envs episode per row, through verl's server manager; see the module docstring."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        spec = EpisodeSpec.parse(kwargs.get("extra_info"), kwargs.get("scope_envs"))
        if spec.episode is None:  # each sample of a group: its own episode on the row's scenario
            spec.episode = derive_seed(spec.seed, next(_episodes))
        role = spec.role or "agent_0"
        config = self.rollout_config
        prompt_length, response_length = int(config.prompt_length), int(config.response_length)
        session = uuid4().hex  # one sticky session per episode: the server keeps its prefix cache
        spent = {"generate": 0.0}

        async def ask(agent: str, prompt_ids: list[int], max_new_tokens: int) -> Generated:
            t0 = time.perf_counter()
            out = await self.server_manager.generate(
                request_id=f"{session}-{agent}", prompt_ids=prompt_ids,
                sampling_params={**sampling_params, "max_tokens": max_new_tokens})
            spent["generate"] += time.perf_counter() - t0
            return Generated(list(out.token_ids), list(out.log_probs) if out.log_probs else None)

        per_turn = int(kwargs.get("max_new_tokens") or response_length)
        result = await play(spec, self.tokenizer, ask, max_len=prompt_length + response_length,
                            max_new_tokens=per_turn, max_response_len=response_length)
        if role not in result.trajectories:
            raise ValueError(f"{spec.env_id}: role {role!r} never spoke; it spoke: {sorted(result.trajectories)}")
        traj = result.trajectories[role]
        logprobs = traj.response_logprobs
        return AgentLoopOutput(
            prompt_ids=traj.prompt_ids[-prompt_length:],
            response_ids=traj.response_ids[:response_length],
            response_mask=traj.response_mask[:response_length],
            response_logprobs=logprobs[:response_length] if logprobs is not None else None,
            reward_score=traj.reward,
            num_turns=result.messages + 1,
            metrics={"generate_sequences": spent["generate"]},
            extra_fields={"scope_envs": {"agent": role, "env_id": spec.env_id, "seed": spec.seed,
                                         "episode": spec.episode, "outcome": result.outcome,
                                         "truncated": result.truncated,
                                         "env_truncated": result.env_truncated}},
        )
