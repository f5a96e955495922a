"""The slime, verl and OpenRLHF adapters (scope_envs.integrations), each driven against a local stand-in for
its engine's generation server that answers with real tokens and logprobs from the tiny model.

* slime is not on PyPI: its ``Sample`` is mirrored below from slime's documented type (``slime/utils/types.py``);
  the stand-in is an SGLang-style ``POST /generate`` HTTP server on 127.0.0.1.
* verl and OpenRLHF run against their own classes where they import (``.ci/engines.sh`` builds
  ``.venv-engines`` for that); elsewhere those tests skip. verl's stand-in honours its server manager's
  ``generate(request_id, prompt_ids=, sampling_params=) -> TokenOutput``; OpenRLHF's honours its vLLM
  actor's ``generate(prompt_token_ids, sampling_params) -> RequestOutput`` (vLLM itself needs CUDA: its
  ``RequestOutput``/``SamplingParams`` are stand-ins with vLLM's field names).

Every trajectory is checked for real: each run of loss-mask 1 is exactly what the server sampled for that
role, the server was prompted with exactly the stream before it, the logprobs are the tiny model's own
(recomputed by a forward pass), and the reward is what the environment pays when the same messages are
replayed into a fresh env.
"""

from __future__ import annotations

import asyncio
import enum
import importlib.util
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from llm_fixtures import _one_thread, tiny_model_dir  # noqa: F401

import scope_envs
from scope_envs.integrations.episodes import EpisodeSpec

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

MAX_NEW = 10


# ----------------------------------------------------------------------------- the tiny model as a server
class TinyEngine:
    """Samples from the tiny model, token ids in and out, and logs every call."""

    def __init__(self, path):
        from scope_envs.agents.llm.backends import TransformersBackend

        self.backend = TransformersBackend.from_path(path)
        self.tokenizer = self.backend.tokenizer
        self.calls = []  # (prompt ids, sampled ids, logprobs)
        self.lock = threading.Lock()

    def sample(self, prompt_ids, max_new_tokens):
        with self.lock:
            seed = len(self.calls)
            gen = self.backend.generate_ids([list(prompt_ids)], max_new_tokens=max_new_tokens, temperature=1.0,
                                            seed=seed)[0]
            self.calls.append((list(prompt_ids), list(gen.token_ids), list(gen.logprobs)))
        return gen

    def logprobs(self, ids):
        """log p(ids[i] | ids[:i]) under the model, for every i >= 1 (index i-1)."""
        import torch

        with torch.no_grad():
            logits = self.backend.model(torch.tensor([ids])).logits[0, :-1].float()
        return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1).tolist()


@pytest.fixture
def model_dir():
    return tiny_model_dir()


@pytest.fixture
def engine(model_dir):
    return TinyEngine(model_dir)


def check_trajectory(engine, ids, prompt_len, mask, logprobs, calls):
    """``mask`` (over ``ids[prompt_len:]``) is 1 exactly on the ``calls``' sampled ids, each prompted with
    the stream before it; ``logprobs`` are the model's own there and 0.0 elsewhere."""
    assert len(ids) == prompt_len + len(mask)
    runs, start = [], None
    for i, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((prompt_len + start, prompt_len + i))
            start = None
    assert len(runs) == len(calls) and calls
    for (a, b), (prompt, out, lps) in zip(runs, calls):
        assert ids[:a] == prompt  # token in: the server saw exactly the stream so far
        assert ids[a:b] == out  # token out: the sampled ids, never re-tokenized
        if logprobs is not None:
            assert logprobs[a - prompt_len:b - prompt_len] == pytest.approx(lps, abs=1e-5)
    assert sum(mask) == sum(len(c[1]) for c in calls)
    if logprobs is not None:
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask) if not m)
        model = engine.logprobs(ids)
        for (a, b) in runs:
            assert model[a - 1:b - 1] == pytest.approx(logprobs[a - prompt_len:b - prompt_len], abs=1e-3)


def calls_of(engine, ids):
    """The server calls that belong to the stream ``ids`` (their prompt and output are a prefix of it)."""
    return [c for c in engine.calls if ids[:len(c[0]) + len(c[1])] == c[0] + c[1]]


def replay(engine, spec: EpisodeSpec, order: list[str]) -> tuple[dict, dict]:
    """Step a fresh env of ``spec`` with the decoded calls in order; its rewards per agent and its outcome
    (with ``env_truncated``: whether the env cut the episode short)."""
    env = scope_envs.make(spec.env_id, surface="text", **spec.env_kwargs)
    env.reset(seed=spec.seed if spec.episode is None else spec.episode, options={"scenario_seed": spec.seed})
    stops = {engine.tokenizer.eos_token_id}
    totals: dict[str, float] = {}
    cut = False
    for agent, (_, out, _) in zip(order, engine.calls):
        text = engine.tokenizer.decode(out[:-1] if out and out[-1] in stops else out, skip_special_tokens=True)
        _, rewards, _, truncs, _ = env.step({agent: text})
        cut = cut or any(truncs.values())
        for a, r in rewards.items():
            totals[a] = totals.get(a, 0.0) + r
    assert env.agents == []
    return totals, {**{k: float(v) for k, v in env.unwrapped.game.outcome().items()}, "env_truncated": cut}


def speakers(engine, trajectories: dict[str, list[int]]) -> list[str]:
    """Who made each server call, in order."""
    return [next(a for a, ids in trajectories.items() if ids[:len(p) + len(o)] == p + o) for p, o, _ in engine.calls]


# ----------------------------------------------------------------------------- slime
@dataclass
class MirrorSample:
    """A mirror of slime's ``Sample`` (slime/utils/types.py): the fields a generate function reads and
    sets, with slime's names and defaults. slime itself is not on PyPI, so it is not installed here."""

    class Status(enum.Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    group_index: int | None = None
    index: int | None = None
    prompt: str | list = ""
    tokens: list[int] = field(default_factory=list)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict | None = None
    loss_mask: list[int] | None = None
    rollout_log_probs: list[float] | None = None
    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)


class SGLangStandIn:
    """SGLang's ``POST /generate`` on 127.0.0.1: ``input_ids`` + ``sampling_params`` + ``return_logprob`` in,
    ``text`` and ``meta_info.output_token_logprobs`` ([logprob, token id, None] per token) out."""

    def __init__(self, engine):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/generate" or "input_ids" not in body:
                    self.send_error(404)
                    return
                outer.requests.append(body)
                outer.routing_keys.append(self.headers.get("X-SMG-Routing-Key"))
                gen = engine.sample(body["input_ids"], body["sampling_params"]["max_new_tokens"])
                out = {"text": gen.text, "meta_info": {
                    "output_token_logprobs": [[lp, t, None] for t, lp in zip(gen.token_ids, gen.logprobs)]
                    if body.get("return_logprob") else [],
                    "finish_reason": {"type": "stop" if gen.finished else "length"}}}
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.requests, self.routing_keys = [], []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sglang(engine):
    server = SGLangStandIn(engine)
    yield server
    server.close()


def slime_args(model_dir, server, **extra):
    settings = dict(custom_reward_post_process_path="scope_envs.integrations.slime.post_process_rewards",
                    rollout_max_context_len=4096, advantage_estimator="grpo", rewards_normalization=True,
                    grpo_std_normalization=False, n_samples_per_prompt=2, rollout_batch_size=1)
    return SimpleNamespace(hf_checkpoint=model_dir, sglang_router_ip="127.0.0.1", sglang_router_port=server.port,
                           **{**settings, **extra})


def slime_group_norm(args, samples):
    """slime's own reward post-processing, transcribed to learn its rule (THUDM/slime, slime/ray/rollout.py,
    ``RolloutManager._post_process_rewards``, read at commit 00de6b00714ea329e8f82a24340ac7f27ea63087): the
    nested groups are flattened; under a group estimator with ``rewards_normalization`` the rewards are
    reshaped into rows of ``n_samples_per_prompt`` only when their count is ``n_samples_per_prompt *
    rollout_batch_size``, else into ONE row; each row less its mean, divided by ``torch.std`` (ddof 1) + 1e-6
    under ``grpo_std_normalization``."""
    import torch

    while isinstance(samples[0], list):
        samples = sum(samples, [])
    raw = [s.reward for s in samples]
    if not (args.advantage_estimator in ("grpo", "gspo", "reinforce_plus_plus_baseline")
            and args.rewards_normalization):
        return raw, raw
    rewards = torch.tensor(raw, dtype=torch.float)
    if rewards.shape[-1] == args.n_samples_per_prompt * args.rollout_batch_size:
        rewards = rewards.reshape(-1, args.n_samples_per_prompt)
    else:
        rewards = rewards.view(-1, rewards.shape[-1])
    rewards = rewards - rewards.mean(dim=-1, keepdim=True)
    if args.advantage_estimator in ("grpo", "gspo") and args.grpo_std_normalization:
        rewards = rewards / (rewards.std(dim=-1, keepdim=True) + 1e-6)
    return raw, rewards.flatten().tolist()


def cotrain_samples(rewards):
    """A rollout's output as ``generate_rollout`` returns it for one scenario of p4g-cotrain, with given rewards:
    ``[[agent_0's samples], [user_0's samples]]``."""
    groups = []
    for agent in ("agent_0", "user_0"):
        groups.append([MirrorSample(index=k, group_index=0, reward=r,
                                    metadata={"scope_envs": {"agent": agent, "env_id": "p4g-cotrain", "seed": 3}})
                       for k, r in enumerate(rewards[agent])])
    return groups


def test_slime_grpo_baseline_is_per_role_and_scenario_not_the_whole_batch(model_dir, sglang):
    """Issue 30, defect 1: an adversarial user (agent [1.0, 0.5], user [-1.0, -0.5]) doubles the sample count,
    so slime's own rule centres all four together; the hook centres each role within its scenario."""
    from scope_envs.integrations import slime

    args = slime_args(model_dir, sglang)
    samples = cotrain_samples({"agent_0": [1.0, 0.5], "user_0": [-1.0, -0.5]})
    _, mixed = slime_group_norm(args, samples)
    assert mixed == pytest.approx([1.0, 0.5, -1.0, -0.5])  # slime alone: the agent's worse episode reinforced
    raw, rewards = slime.post_process_rewards(args, samples)
    assert raw == [1.0, 0.5, -1.0, -0.5]
    assert rewards == pytest.approx([0.25, -0.25, -0.25, 0.25])
    # per (group, role) the hook is slime's rule itself: each role's samples alone have the count slime expects
    for std in (False, True):
        args.grpo_std_normalization = std
        two_groups = cotrain_samples({"agent_0": [1.0, 0.5, 0.0], "user_0": [-1.0, -0.5, 0.7]})
        one_role = SimpleNamespace(**{**vars(args), "n_samples_per_prompt": 3})
        expected = [x for g in two_groups for x in slime_group_norm(one_role, [g])[1]]
        assert slime.post_process_rewards(args, two_groups)[1] == pytest.approx(expected, abs=1e-5)
    # two scenarios, one role: grouped by group_index, not mixed
    a, b = cotrain_samples({"agent_0": [1.0, 0.0], "user_0": []})[0], cotrain_samples(
        {"agent_0": [5.0, 3.0], "user_0": []})[0]
    for s in b:
        s.group_index = 1
    args.grpo_std_normalization = False
    assert slime.post_process_rewards(args, a + b)[1] == pytest.approx([0.5, -0.5, 1.0, -1.0])
    args.advantage_estimator = "ppo"  # no group baseline: the raw rewards, as slime
    assert slime.post_process_rewards(args, samples)[1] == [1.0, 0.5, -1.0, -0.5]


@pytest.mark.parametrize("entry", ["generate", "generate_rollout"])
def test_slime_refuses_a_cotraining_episode_without_the_grouping_hook(model_dir, engine, sglang, entry):
    from scope_envs.integrations import slime

    args = slime_args(model_dir, sglang, custom_reward_post_process_path=None, rollout_max_response_len=MAX_NEW)
    row = json.dumps({"env_id": "p4g-cotrain", "seed": 4})

    class DataSource:
        def get_samples(self, n):
            return [[MirrorSample(index=k, group_index=0, prompt=row) for k in range(2)]]

    with pytest.raises(ValueError, match="post_process_rewards"):
        if entry == "generate":
            asyncio.run(slime.generate(args, MirrorSample(index=0, prompt=row), {"max_new_tokens": MAX_NEW}))
        else:
            slime.generate_rollout(args, 0, DataSource())
    args.advantage_estimator = "ppo"  # no group baseline to mix: allowed
    assert len(asyncio.run(slime.generate(args, MirrorSample(index=0, prompt=row), {"max_new_tokens": MAX_NEW}))) == 2


def test_the_scale_out_pages_slime_command_trains_a_cotraining_id():
    """docs/scale-out.md's slime command, its flags read as slime's argparse names them, is one under which a
    co-training episode's samples are accepted (it once left out the grouping hook, so slime's default GRPO run
    refused every co-training row the page describes)."""
    from pathlib import Path

    from scope_envs.integrations import slime

    page = (Path(__file__).resolve().parents[1] / "docs" / "scale-out.md").read_text()
    command = next(b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if slime.__name__ + ".generate" in b)
    flags = dict(re.findall(r"--([\w-]+) ([^\s\\-][^\s\\]*)", command.split("#")[0]))
    args = SimpleNamespace(**{k.replace("-", "_"): v for k, v in flags.items()})
    assert args.custom_generate_function_path == "scope_envs.integrations.slime.generate"
    slime.check_grouping(args, [s for group in cotrain_samples({"agent_0": [1.0], "user_0": [0.0]}) for s in group])


def test_slime_generate_returns_one_sample_per_role_of_a_cotraining_episode(model_dir, engine, sglang):
    from scope_envs.integrations import slime

    row = {"env_id": "p4g-cotrain", "seed": 4}
    sample = MirrorSample(index=7, group_index=2, prompt=json.dumps(row))
    out = asyncio.run(slime.generate(slime_args(model_dir, sglang), sample, {"max_new_tokens": MAX_NEW,
                                                                         "temperature": 1.0}))
    assert [s.metadata["scope_envs"]["agent"] for s in out] == ["agent_0", "user_0"]
    assert all(r["sampling_params"]["max_new_tokens"] <= MAX_NEW and r["return_logprob"] for r in sglang.requests)
    streams = {s.metadata["scope_envs"]["agent"]: s.tokens for s in out}
    order = speakers(engine, streams)
    assert order[0] == "agent_0" and "user_0" in order
    spec = slime.episode_spec(sample)
    rewards, outcome = replay(engine, spec, order)
    for s in out:
        agent = s.metadata["scope_envs"]["agent"]
        prompt_len = len(s.tokens) - s.response_length
        assert len(s.loss_mask) == len(s.rollout_log_probs) == s.response_length
        check_trajectory(engine, s.tokens, prompt_len, s.loss_mask, s.rollout_log_probs, calls_of(engine, s.tokens))
        assert s.reward == pytest.approx(rewards[agent])
        assert s.status is MirrorSample.Status.COMPLETED and s.rollout_id == 7 and s.group_index == 2
        meta = s.metadata["scope_envs"]
        assert {**meta["outcome"], "env_truncated": meta["env_truncated"]} == pytest.approx(outcome)
    assert sample.tokens == [] and sample.reward is None  # the input sample is copied, not changed
    # sticky: every request of the episode carried one routing key
    assert len(set(sglang.routing_keys)) == 1 and sglang.routing_keys[0]
    # each side's stream holds the other side's messages, unmasked
    agent, user = out
    first_user_text = engine.tokenizer.decode(calls_of(engine, user.tokens)[0][1], skip_special_tokens=True).strip()
    if first_user_text:
        assert first_user_text in engine.tokenizer.decode(agent.tokens)


def test_slime_rollout_function_groups_episodes_by_role_on_one_scenario(model_dir, engine, sglang):
    from scope_envs.integrations import slime

    row = json.dumps({"env_id": "p4g-cotrain", "seed": 11})

    class DataSource:  # slime's data source: get_samples(n) -> n groups of n_samples_per_prompt samples
        def get_samples(self, n):
            return [[MirrorSample(index=10 * g + k, group_index=g, prompt=row) for k in range(2)] for g in range(n)]

    args = slime_args(model_dir, sglang, rollout_batch_size=1, rollout_max_response_len=MAX_NEW,
                      rollout_temperature=1.0)
    groups = slime.generate_rollout(args, 0, DataSource())
    assert len(groups) == 2 and all(len(g) == 2 for g in groups)
    for group, agent in zip(groups, ("agent_0", "user_0")):
        meta = [s.metadata["scope_envs"] for s in group]
        assert {m["agent"] for m in meta} == {agent}
        assert meta[0]["seed"] == meta[1]["seed"] == 11 and meta[0]["episode"] != meta[1]["episode"]
        for s in group:
            check_trajectory(engine, s.tokens, len(s.tokens) - s.response_length, s.loss_mask, s.rollout_log_probs,
                             calls_of(engine, s.tokens))
    # one scenario: the persuadee of both episodes of a group holds the same persona card (its system prompt)
    cards = [engine.tokenizer.decode(s.tokens).split("<|im_end|>")[0] for s in groups[1]]
    assert cards[0] == cards[1] and "<|im_start|>system" in cards[0]
    evaluation = slime.generate_rollout(args, 0, DataSource(), evaluation=True)
    assert len(evaluation["scope_envs"]["rewards"]) == 2 and evaluation["scope_envs"]["truncated"] == [False] * 2


def test_an_episode_that_outgrows_max_len_stops_truncated(model_dir, engine, sglang):
    from scope_envs.integrations import slime

    sample = MirrorSample(index=0, prompt=json.dumps({"env_id": "p4g-frozen", "seed": 0}))
    first = asyncio.run(slime.generate(slime_args(model_dir, sglang), sample, {"max_new_tokens": MAX_NEW}))[0]
    limit = len(first.tokens) - first.response_length + 3 * MAX_NEW  # room for the opening and a turn or two
    engine.calls.clear()
    args = slime_args(model_dir, sglang)
    args.rollout_max_context_len = limit
    (s,) = asyncio.run(slime.generate(args, sample, {"max_new_tokens": MAX_NEW}))
    assert s.status is MirrorSample.Status.TRUNCATED and len(s.tokens) <= limit
    check_trajectory(engine, s.tokens, len(s.tokens) - s.response_length, s.loss_mask, s.rollout_log_probs,
                     engine.calls)


@pytest.mark.parametrize("row, message", [
    ({"env_id": "p4g-frozen", "seeds": 3}, "unknown episode keys"),
    ({"prompt": "hello"}, "no episode in the row"),
])
def test_a_row_that_names_no_episode_is_refused(row, message):
    with pytest.raises(ValueError, match=message):
        EpisodeSpec.parse(row, json.dumps(row))


@pytest.mark.parametrize("row, message", [
    ({"env_id": "p4g-frozen", "seed": "abc"}, "the row's seed must be an integer, got 'abc'"),
    ({"env_id": "p4g-frozen", "seed": 1.5}, "the row's seed must be an integer, got 1.5"),
    ({"env_id": "p4g-frozen", "seed": 1, "episode": "x"}, "the row's episode must be an integer"),
    ({"env_id": "p4g-frozen", "seed": 1, "env_kwargs": "k=3"}, "the row's env_kwargs must be a dict"),
    ({"env_id": "p4g-frozen", "seed": 1, "env_kwargs": {"surface": "act"}}, "other than surface"),
    ({"env_id": ["p4g-frozen"], "seed": 1}, "the row's env_id must be an env id string"),
    ({"env_id": "p4g-frozen", "seed": 1, "role": 0}, "the row's role must be an agent name"),
])
def test_a_malformed_row_is_refused_naming_its_key(row, message):
    """A row's fields are checked where the row is read: one ValueError naming the key, not int()'s or dict()'s
    message, and not an integral float's silent truncation (seed 1.5 once played scenario 1)."""
    with pytest.raises(ValueError, match=re.escape(message)):
        EpisodeSpec.parse(row)
    assert EpisodeSpec.parse({"env_id": "p4g-frozen", "seed": 3.0, "episode": "7"}).episode == 7


def test_a_role_the_id_does_not_have_is_refused_before_the_episode():
    """A row's role that is not one of the id's agents is refused before any turn is generated (verl and OpenRLHF
    once played the whole episode through the engine, then said the role never spoke)."""
    from scope_envs.integrations.episodes import play

    async def never(*_):
        raise AssertionError("no turn may be generated")

    with pytest.raises(ValueError, match=r"p4g-frozen: role 'user_0' is not one of its agents \['agent_0'\]"):
        asyncio.run(play(EpisodeSpec.parse({"env_id": "p4g-frozen", "seed": 1, "role": "user_0"}), None, never))


# ----------------------------------------------------------------------------- verl
class VerlServerStandIn:
    """verl's server manager: ``await generate(request_id, prompt_ids=, sampling_params=) -> TokenOutput``,
    ``max_tokens`` capping the turn and ``logprobs`` asking for ``log_probs`` as verl's vLLM server does."""

    def __init__(self, engine):
        self.engine, self.request_ids = engine, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.request_ids.append(request_id)
        params = dict(sampling_params)
        gen = self.engine.sample(prompt_ids, params.pop("max_tokens"))
        return TokenOutput(token_ids=gen.token_ids, log_probs=gen.logprobs if params.get("logprobs") else None,
                           stop_reason="completed")


def test_verl_agent_loop_plays_each_role_of_a_cotraining_row(model_dir, engine):
    pytest.importorskip("verl.experimental.agent_loop", reason="verl is installed by .ci/engines.sh")
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopOutput,
        DictConfigWrap,
        _agent_loop_registry,
    )

    import scope_envs.integrations.verl  # noqa: F401  (registers "scope_envs")

    assert "scope_envs" in _agent_loop_registry
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 1024, "response_length": 2048}},
                               "data": {}})
    server = VerlServerStandIn(engine)
    outputs = {}
    for role in ("agent_0", "user_0"):
        engine.calls.clear()
        # the worker's own instantiation path (AgentLoopWorker._run_agent_loop)
        loop = hydra.utils.instantiate(config=_agent_loop_registry["scope_envs"],
                                       trainer_config=DictConfigWrap(config=config), server_manager=server,
                                       tokenizer=engine.tokenizer, processor=None, dataset_cls=None,
                                       data_config=DictConfigWrap(config.data))
        row = {"scope_envs": {"env_id": "p4g-cotrain", "seed": 5, "episode": 50, "role": role}}
        params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
        out = asyncio.run(loop.run(params, raw_prompt=[], extra_info=row, index=0, agent_name="scope_envs",
                                   max_new_tokens=MAX_NEW))
        assert isinstance(out, AgentLoopOutput)
        ids = out.prompt_ids + out.response_ids
        check_trajectory(engine, ids, len(out.prompt_ids), out.response_mask, out.response_logprobs,
                         calls_of(engine, ids))
        mine = calls_of(engine, ids)
        other = "user_0" if role == "agent_0" else "agent_0"
        order = [role if c in mine else other for c in engine.calls]
        assert other in order, "the other side is played by the same server"
        rewards, outcome = replay(engine, EpisodeSpec.parse(row), order)
        assert out.reward_score == pytest.approx(rewards[role])
        meta = out.extra_fields["scope_envs"]
        assert {**meta["outcome"], "env_truncated": meta["env_truncated"]} == pytest.approx(outcome)
        assert out.num_turns > 2
        tensors = out.as_dict()  # what the worker pads and batches
        assert tensors["response_mask"].sum().item() == sum(out.response_mask)
        assert tensors["rm_scores"][-1].item() == pytest.approx(rewards[role])
        outputs[role] = out
    # the same row, episode and server seeds: the two roles saw one conversation from either side
    assert outputs["agent_0"].extra_fields["scope_envs"]["outcome"] == outputs["user_0"].extra_fields[
        "scope_envs"]["outcome"]
    # verl pads responses to rollout.response_length: an episode that would outgrow it stops there
    engine.calls.clear()
    config.actor_rollout_ref.rollout.response_length = 3 * MAX_NEW
    loop = hydra.utils.instantiate(config=_agent_loop_registry["scope_envs"], trainer_config=DictConfigWrap(config),
                                   server_manager=server, tokenizer=engine.tokenizer, processor=None,
                                   dataset_cls=None, data_config=DictConfigWrap(config.data))
    out = asyncio.run(loop.run(params, extra_info={"scope_envs": {"env_id": "p4g-frozen", "seed": 1}},
                               max_new_tokens=MAX_NEW))
    assert len(out.response_ids) <= 3 * MAX_NEW and out.extra_fields["scope_envs"]["truncated"]
    check_trajectory(engine, out.prompt_ids + out.response_ids, len(out.prompt_ids), out.response_mask,
                     out.response_logprobs, engine.calls)


# ----------------------------------------------------------------------------- OpenRLHF
@dataclass
class VLLMSamplingParams:
    """The fields of vLLM's ``SamplingParams`` OpenRLHF's executors read and write (vLLM needs CUDA)."""

    max_tokens: int | None = None
    logprobs: int | None = 1
    temperature: float = 1.0


class OpenRLHFEngineStandIn:
    """OpenRLHF's vLLM actor: ``await generate(prompt_token_ids, sampling_params)`` -> a ``RequestOutput``
    whose ``outputs[0]`` has ``token_ids``, ``text``, ``finish_reason`` and ``logprobs`` ({id: Logprob})."""

    def __init__(self, engine):
        self.engine, self.params = engine, []

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.params.append(sampling_params)
        gen = self.engine.sample(prompt_token_ids, sampling_params.max_tokens)
        logprobs = [{t: SimpleNamespace(logprob=lp)} for t, lp in zip(gen.token_ids, gen.logprobs)] \
            if sampling_params.logprobs is not None else None
        out = SimpleNamespace(token_ids=gen.token_ids, text=gen.text, logprobs=logprobs,
                              finish_reason="stop" if gen.finished else "length")
        return SimpleNamespace(outputs=[out])


def load_agent_executor():
    """As OpenRLHF's ``_load_agent_executor`` does: the file by path, its ``AgentExecutor`` class."""
    from openrlhf.utils.agent import AgentExecutorBase

    import scope_envs.integrations.openrlhf as module

    spec = importlib.util.spec_from_file_location("agent_module", module.__file__)
    agent_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent_module)
    assert issubclass(agent_module.AgentExecutor, AgentExecutorBase)
    return agent_module.AgentExecutor()


def test_openrlhf_executor_returns_the_rows_role_as_openrlhf_consumes_it(engine):
    pytest.importorskip("openrlhf.utils.agent", reason="openrlhf is installed by .ci/engines.sh")
    import torch

    executor = load_agent_executor()
    llm = OpenRLHFEngineStandIn(engine)
    label = json.dumps({"env_id": "cooperbench-frozen", "seed": 2})
    out = asyncio.run(executor.execute(prompt="play", label=label, sampling_params=VLLMSamplingParams(max_tokens=12),
                                       max_length=4096, hf_tokenizer=engine.tokenizer, llm_engine=llm))
    ids = out["observation_tokens"]
    # OpenRLHF's _process_response_into_experience: action_mask is 1 on the action ranges, then shifted by one
    mask = torch.zeros(len(ids), dtype=torch.long)
    for a, b in out["action_ranges"]:
        mask[a:b] = 1
    prompt_len = out["action_ranges"][0][0]
    assert len(out["rollout_log_probs"]) == len(ids)
    check_trajectory(engine, ids, prompt_len, mask[prompt_len:].tolist(), out["rollout_log_probs"][prompt_len:],
                     engine.calls)
    assert all(p.max_tokens <= 12 for p in llm.params)
    rewards, outcome = replay(engine, EpisodeSpec.parse(label), ["agent_0"] * len(engine.calls))
    assert out["reward"] == out["scores"] == pytest.approx(rewards["agent_0"])
    outcome["env_truncated"] = float(outcome["env_truncated"])  # extra_logs become tensors: numbers only
    assert {k.split("/")[1]: v for k, v in out["extra_logs"].items()} == pytest.approx(outcome)
    assert out["truncated"] is False and out["label"] == label
