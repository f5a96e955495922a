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

**Groups are (scenario, role).** slime mean-centres rewards in groups of ``n_samples_per_prompt`` only when
the sample count is exactly ``n_samples_per_prompt * rollout_batch_size`` (``RolloutManager._post_process_rewards``
in ``slime/ray/rollout.py``); otherwise it centres the whole batch as one group. A co-training episode returns
one ``Sample`` per role, so the count doubles and slime would mix both roles of every scenario into one
baseline — an adversarial user's rewards would then pull the agent's baseline down. Pass
``--custom-reward-post-process-path scope_envs.integrations.slime.post_process_rewards``: it centres (and, with
``--grpo-std-normalization``, scales) each (prompt group, role)'s rewards within themselves. ``generate`` and
``generate_rollout`` refuse to return a co-training episode's samples under a group-normalising estimator
without that hook, rather than let slime train on a mixed baseline.

**Sticky sessions.** Every request of one episode carries the header ``X-SMG-Routing-Key`` (the episode's
own key), so a router with a manual / consistent-hash policy keeps the conversation on one server and its
prefix cache; a router without one ignores the header.

The episode comes from the row (``scope_envs.integrations.episodes.EpisodeSpec``): the sample's
``metadata`` (``--metadata-key``), its ``label`` or its ``prompt`` holding
``{"env_id": ..., "seed": ...}``. The scenario is the row's ``seed``; each copy in a group plays its own
episode (seed ``derive_seed(seed, index)``, ``scope_envs.train.groups``) on that scenario. slime is not on
PyPI: this module imports nothing from it at module level and uses ``type(sample)`` for the samples it
returns.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import json
from uuid import uuid4

from scope_envs.integrations.episodes import EpisodeSpec, Generated, play
from scope_envs.train.groups import derive_seed, group_advantages

DEFAULT_MAX_LEN = 8192
ROUTING_KEY_HEADER = "X-SMG-Routing-Key"  # SGLang's model gateway: one key, one worker (manual routing policy)
HOOK = "scope_envs.integrations.slime.post_process_rewards"
# slime's advantage estimators that centre rewards in groups (slime/ray/rollout.py, _post_process_rewards)
GROUP_ESTIMATORS = ("grpo", "gspo", "reinforce_plus_plus_baseline")


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=True)


async def _post(url: str, payload: dict, headers: dict | None = None) -> dict:
    try:  # slime's pooled HTTP client when slime is installed (and it can carry the routing header)
        from slime.utils.http_utils import post
    except ImportError:
        post = None
    if post is not None and "headers" in inspect.signature(post).parameters:
        return await post(url, payload, headers=headers)

    def send():
        import urllib.request

        request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json", **(headers or {})})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())

    return await asyncio.to_thread(send)


def episode_spec(sample) -> EpisodeSpec:
    spec = EpisodeSpec.parse(getattr(sample, "metadata", None), getattr(sample, "label", None), sample.prompt)
    if spec.episode is None:
        spec.episode = derive_seed(spec.seed, int(sample.index or 0))
    return spec


async def generate(args, sample, sampling_params: dict, evaluation: bool = False) -> list:
    """One episode of the sample's row through slime's SGLang router; one ``Sample`` per agent that spoke."""
    tokenizer = _tokenizer(args.hf_checkpoint)
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    spec = episode_spec(sample)
    sticky = {ROUTING_KEY_HEADER: f"{spec.env_id}-{spec.seed}-{spec.episode}-{uuid4().hex[:8]}"}

    async def ask(agent: str, prompt_ids: list[int], max_new_tokens: int) -> Generated:
        params = {**sampling_params, "max_new_tokens": max_new_tokens}
        out = await _post(url, {"input_ids": prompt_ids, "sampling_params": params, "return_logprob": True},
                          headers=sticky)
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
            "turns": traj.turns, "outcome": result.outcome, "template_fallbacks": traj.template_fallbacks,
            "env_truncated": result.env_truncated}}
        s.rollout_id = sample.index
        samples.append(s)
    if not evaluation:
        check_grouping(args, samples)
    return samples


def _group_normalised(args) -> bool:
    # slime's defaults: --advantage-estimator grpo, rewards normalised
    return (getattr(args, "advantage_estimator", "grpo") in GROUP_ESTIMATORS
            and getattr(args, "rewards_normalization", True))


def check_grouping(args, samples) -> None:
    """Refuse samples of more than one role when slime would centre them together (see the module docstring)."""
    roles = {s.metadata["scope_envs"]["agent"] for s in samples}
    hook = getattr(args, "custom_reward_post_process_path", None)
    if len(roles) > 1 and _group_normalised(args) and hook != HOOK:
        raise ValueError(
            f"these episodes return one Sample per role ({sorted(roles)}); slime's own reward normalisation would "
            f"take one baseline over both roles. Pass --custom-reward-post-process-path {HOOK} so that each "
            f"(prompt group, role) is centred on its own (got {hook!r})")


def group_key(sample) -> tuple:
    """A sample's GRPO group: its prompt group (slime's ``group_index``, else the row's scenario) and its role."""
    meta = (sample.metadata or {}).get("scope_envs", {})
    group = sample.group_index if sample.group_index is not None else (meta.get("env_id"), meta.get("seed"))
    return group, meta.get("agent")


def post_process_rewards(args, samples):
    """slime's ``--custom-reward-post-process-path`` hook: ``(raw_rewards, rewards)`` in the samples' order.

    As slime's own post-processing, with one change: the groups are (prompt group, role), found from the
    samples' ``group_index`` and ``metadata["scope_envs"]["agent"]``, not from their count. With a
    group-normalising estimator and ``rewards_normalization``, each reward less its group's mean, divided by
    the group's std (+1e-6; slime's ``torch.std``, ddof 1) under ``grpo_std_normalization``; otherwise the
    raw rewards (``scope_envs.train.groups.group_advantages``: sample std, ddof 1, and eps 1e-6, as slime's).
    A group of one is centred to 0 (slime's ``torch.std`` would make it NaN)."""
    while samples and isinstance(samples[0], list):  # slime flattens nested groups first
        samples = sum(samples, [])
    raw = [float(s.get_reward_value(args)) if hasattr(s, "get_reward_value") else float(s.reward) for s in samples]
    if not _group_normalised(args):
        return raw, list(raw)
    scale = getattr(args, "advantage_estimator", "grpo") in ("grpo", "gspo") and getattr(
        args, "grpo_std_normalization", False)
    out = group_advantages(raw, [group_key(s) for s in samples], std_norm=scale)
    return raw, [float(a) for a in out]


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
