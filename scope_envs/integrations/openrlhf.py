"""OpenRLHF: scope-envs episodes as an ``AgentExecutor`` for ``--train.agent_func_path``.

OpenRLHF loads the file given to ``--train.agent_func_path`` (this one: it is self-contained, so its path
can be passed as it is, ``python -c "import scope_envs.integrations.openrlhf as m; print(m.__file__)"``),
builds its ``AgentExecutor`` and, for every prompt of a batch and every sample of it, awaits
``execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine)``. ``llm_engine.generate(ids,
sampling_params)`` is its vLLM actor: token ids in, a vLLM ``RequestOutput`` out. This executor plays the
episode named by the row (its label, ``--label_key``, or its prompt:
``{"env_id": "tau2-frozen", "seed": 5, "role": "agent_0"}``) through that engine and returns the
trajectory of the row's ``role`` (default ``agent_0``) in the form OpenRLHF turns into an ``Experience``:
``observation_tokens`` (the role's whole stream), ``action_ranges`` (the ``[start, end)`` spans it sampled;
OpenRLHF's ``action_mask`` is 1 exactly there), ``rollout_log_probs`` (aligned with
``observation_tokens``, 0.0 off the actions; ``None`` unless the sampling parameters ask for logprobs),
``reward`` and ``scores`` (the environment's reward to that role), ``truncated`` and ``extra_logs`` (the
game's outcome). The other live agents are played by the same engine and are not in the trajectory;
OpenRLHF trains one trajectory per call, so co-training lists one row per role (the shared model learns
both sides).
"""

from __future__ import annotations

from copy import deepcopy

from scope_envs.integrations.episodes import EpisodeSpec, Generated, play

try:
    from openrlhf.utils.agent import AgentExecutorBase
except ImportError as e:
    raise ImportError("scope_envs.integrations.openrlhf needs openrlhf (pip install openrlhf); see "
                      ".ci/engines.sh for a CPU environment in which its agent interface imports") from e


def action_ranges(offset: int, mask: list[int]) -> list[tuple[int, int]]:
    """The ``[start, end)`` runs of 1 in ``mask``, shifted by ``offset``."""
    ranges, start = [], None
    for i, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            ranges.append((offset + start, offset + i))
            start = None
    return ranges


class AgentExecutor(AgentExecutorBase):
    """One scope-envs episode per call, through OpenRLHF's vLLM engine; see the module docstring."""

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        spec = EpisodeSpec.parse(label, prompt)
        role = spec.role or "agent_0"
        want_logprobs = getattr(sampling_params, "logprobs", None) is not None

        async def ask(agent: str, prompt_ids: list[int], max_new_tokens: int) -> Generated:
            params = deepcopy(sampling_params)
            params.max_tokens = max_new_tokens
            out = (await llm_engine.generate(prompt_ids, params)).outputs[0]
            ids = list(out.token_ids)
            logprobs = None
            if want_logprobs and out.logprobs is not None:  # one {token id: Logprob} per sampled token
                logprobs = [float(step[t].logprob) for step, t in zip(out.logprobs, ids)]
            return Generated(ids, logprobs)

        per_turn = getattr(sampling_params, "max_tokens", None) or max_length
        result = await play(spec, hf_tokenizer, ask, max_len=max_length, max_new_tokens=per_turn)
        if role not in result.trajectories:
            raise ValueError(f"{spec.env_id}: role {role!r} never spoke; it spoke: {sorted(result.trajectories)}")
        traj = result.trajectories[role]
        n = len(traj.prompt_ids)
        logprobs = None
        if want_logprobs and traj.response_logprobs is not None:
            logprobs = [0.0] * n + traj.response_logprobs
        return {
            "prompt": prompt, "label": label, "images": images, "mm_train_inputs": None,
            "reward": traj.reward, "scores": traj.reward,
            "observation_tokens": traj.ids, "action_ranges": action_ranges(n, traj.response_mask),
            "rollout_log_probs": logprobs, "truncated": result.truncated,
            "extra_logs": {**{f"scope_envs/{k}": v for k, v in result.outcome.items()},
                           "scope_envs/env_truncated": float(result.env_truncated)},
        }
