"""slime: scope-envs episodes as a custom generate function and as a rollout function.

slime (THUDM; Megatron for training, SGLang for generation, on Ray) is what SCOPE runs on. Two entry points:

* ``generate(args, sample, sampling_params, evaluation=False) -> list[Sample]`` for
  ``--custom-generate-function-path scope_envs.integrations.slime.generate``. It plays one whole episode
  through slime's SGLang router (``POST http://{sglang_router_ip}:{sglang_router_port}/generate`` with
  ``input_ids``, ``sampling_params`` and ``return_logprob``; the sampled ids and logprobs come back as
  ``meta_info.output_token_logprobs``) and returns one ``Sample`` per agent that spoke — for a co-training
  id (``p4g-cotrain``) one for ``agent_0`` and one for ``user_0``, as slime's multi-agent example returns
  one per agent. Each is a copy of the input sample with ``tokens`` (prompt + response ids),
  ``response_length``, ``loss_mask`` (1 on that agent's sampled tokens only), ``rollout_log_probs``,
  ``reward`` (the environment's reward to that agent), ``status`` and
  ``metadata["scope_envs"]`` (agent, env id, seeds, outcome). Their ``rollout_id`` is the input sample's
  ``index``, so slime counts the episode once.
* ``generate_rollout(args, rollout_id, data_source, evaluation=False)`` for ``--rollout-function-path``:
  takes ``args.rollout_batch_size`` groups from the data source (a group: ``n_samples_per_prompt``
  copies of one row, one scenario), plays every episode concurrently, and returns the groups split by
  role — ``[[agent_0's samples of group 0], [user_0's samples of group 0], ...]`` — so GRPO normalises
  each role's rewards within its own group. Evaluation returns slime's
  ``{"scope_envs": {"rewards": [...], "truncated": [...]}}`` for ``agent_0``.

The episode comes from the row (``scope_envs.integrations.episodes.EpisodeSpec``): the sample's
``metadata`` (``--metadata-key``), its ``label`` or its ``prompt`` holding
``{"env_id": ..., "seed": ...}``. The scenario is the row's ``seed``; each copy in a group plays its own
episode (seed ``seed * 10_000 + index``) on that scenario. slime is not on PyPI: this module imports
nothing from it at module level and uses ``type(sample)`` for the samples it returns.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json

from scope_envs.integrations.episodes import EpisodeSpec, Generated, play

DEFAULT_MAX_LEN = 8192


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=True)


async def _post(url: str, payload: dict) -> dict:
    try:  # slime's pooled HTTP client when slime is installed
        from slime.utils.http_utils import post
    except ImportError:
        post = None
    if post is not None:
        return await post(url, payload)

    def send():
        import urllib.request

        request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())

    return await asyncio.to_thread(send)


def episode_spec(sample) -> EpisodeSpec:
    spec = EpisodeSpec.parse(getattr(sample, "metadata", None), getattr(sample, "label", None), sample.prompt)
    if spec.episode is None:
        spec.episode = spec.seed * 10_000 + int(sample.index or 0)
    return spec


async def generate(args, sample, sampling_params: dict, evaluation: bool = False) -> list:
    """One episode of the sample's row through slime's SGLang router; one ``Sample`` per agent that spoke."""
    tokenizer = _tokenizer(args.hf_checkpoint)
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    spec = episode_spec(sample)

    async def ask(agent: str, prompt_ids: list[int], max_new_tokens: int) -> Generated:
        params = {**sampling_params, "max_new_tokens": max_new_tokens}
        out = await _post(url, {"input_ids": prompt_ids, "sampling_params": params, "return_logprob": True})
        pairs = out.get("meta_info", {}).get("output_token_logprobs") or []  # [(logprob, token id, ...)]
        return Generated([int(p[1]) for p in pairs], [float(p[0]) for p in pairs])

    max_len = (getattr(args, "eval_max_context_len", None) if evaluation else None) \
        or getattr(args, "rollout_max_context_len", None) or DEFAULT_MAX_LEN
    result = await play(spec, tokenizer, ask, max_len=max_len,
                        max_new_tokens=int(sampling_params.get("max_new_tokens") or 256))
    status = type(sample).Status
    samples = []
    for agent, traj in result.trajectories.items():
        s = copy.deepcopy(sample)
        s.tokens = traj.ids
        s.response_length = len(traj.response_ids)
        s.response = tokenizer.decode(traj.response_ids, skip_special_tokens=False)
        s.loss_mask = traj.response_mask
        s.rollout_log_probs = traj.response_logprobs
        s.reward = traj.reward
        s.status = status.TRUNCATED if result.truncated else status.COMPLETED
        s.metadata = {**(s.metadata or {}), "scope_envs": {
            "agent": agent, "env_id": spec.env_id, "seed": spec.seed, "episode": spec.episode,
            "turns": traj.turns, "outcome": result.outcome,
            "env_truncated": result.env_truncated}}
        s.rollout_id = sample.index
        samples.append(s)
    return samples


def sampling_params_from_args(args) -> dict:
    """SGLang sampling parameters from slime's rollout arguments (the same ones its default rollout uses)."""
    params = {"temperature": getattr(args, "rollout_temperature", 1.0), "top_p": getattr(args, "rollout_top_p", 1.0),
              "top_k": getattr(args, "rollout_top_k", -1),
              "max_new_tokens": getattr(args, "rollout_max_response_len", None) or 256,
              "no_stop_trim": True, "spaces_between_special_tokens": False}
    for key, name in (("stop", "rollout_stop"), ("stop_token_ids", "rollout_stop_token_ids")):
        if getattr(args, name, None):
            params[key] = getattr(args, name)
    return params


def generate_rollout(args, rollout_id, data_source, evaluation: bool = False):
    """Grouped rollouts for ``--rollout-function-path``; see the module docstring."""
    groups = data_source.get_samples(args.rollout_batch_size)
    params = sampling_params_from_args(args)

    async def run_all():
        return await asyncio.gather(*(asyncio.gather(*(generate(args, s, params, evaluation) for s in group))
                                      for group in groups))

    try:
        from slime.utils.async_utils import (
            run,  # slime keeps one event loop for its rollouts
        )
    except ImportError:
        run = asyncio.run
    played = run(run_all())
    if evaluation:
        mine = [s for group in played for episode in group for s in episode
                if s.metadata["scope_envs"]["agent"] == "agent_0"]
        data = {"scope_envs": {"rewards": [s.reward for s in mine],
                               "truncated": [s.status == type(s).Status.TRUNCATED for s in mine]}}
        return _wrap("RolloutFnEvalOutput", data=data)
    out = []
    for group in played:
        by_agent: dict[str, list] = {}
        for episode in group:
            for s in episode:
                by_agent.setdefault(s.metadata["scope_envs"]["agent"], []).append(s)
        out += list(by_agent.values())
    return _wrap("RolloutFnTrainOutput", samples=out)


def _wrap(name: str, **fields):
    """slime's output dataclass when slime is installed; its legacy bare value otherwise (slime accepts both)."""
    try:
        from slime.rollout import base_types
    except ImportError:
        return next(iter(fields.values()))
    return getattr(base_types, name)(**fields)
