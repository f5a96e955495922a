"""The LLM trainer (scope_envs.train.llm): its regressions (token streams, masks, KL, logprob positions, old
logprobs, scale, chat templates), GRPO groups, simulator rewards, collapse diagnostics, per-learner models, the
pooled LoRA population.

Every model is a tiny random Llama built on the spot (tests/llm_fixtures.py); nothing is downloaded.
"""

from __future__ import annotations

import json
import math

import llm_fixtures
import numpy as np
import pytest
from llm_fixtures import ScriptedEngine, tiny_model_dir

import scope_envs

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

_one_thread, tiny_dir = llm_fixtures._one_thread, llm_fixtures.tiny_dir  # pytest fixtures


def _cfg(tmp_path, **kw):
    from scope_envs.train.llm import ppo

    base = {"model": tiny_model_dir(), "out": str(tmp_path), "log": False, "updates": 1, "groups": 2, "group_size": 1,
                "max_new_tokens": 6, "lr": 1e-3}
    base.update(kw)
    return ppo.Config(**base)


def _learners(cfg):
    from scope_envs.train.llm import ppo

    learners = ppo.build_learners(cfg)
    ppo.build_engines(cfg, learners)
    return learners


# ----------------------------------------------------------------------------- defect 1: context after an error
def test_the_partners_message_after_an_in_game_error_reaches_the_stream(tmp_path, tiny_dir):
    """user_0's [DONATE $9] is refused; the persuader's next message must still be in user_0's tokens."""
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", env_kwargs={"max_turns": 3}, groups=1)
    learners = _learners(cfg)
    learners["agent"].engine = ScriptedEngine(learners["agent"].tokenizer, [
        "Hello! Would you donate to Save the Children?", "PERSUADERLINETWO the children need you.",
        "Thank you so much."])
    learners["user"].engine = ScriptedEngine(learners["user"].tokenizer, [
        "[DONATE $9]", "Tell me more about it.", "Maybe, I am thinking.", "[DONATE $0.50] Goodbye!"])
    env = ppo.make_env_factory(cfg)()
    traces, _ = ppo.rollout(cfg, [env], learners, seed=0, rng=np.random.default_rng(0))
    history = [t.text for t in env.unwrapped.game.history]
    assert "PERSUADERLINETWO the children need you." in history  # the env recorded it
    user = next(t for t in traces if t.agent == "user_0")
    tok = learners["user"].tokenizer
    context = tok.decode([i for i, m in zip(user.ids, user.mask) if m == 0])
    assert "could not be used" in context  # the error note is in the stream
    assert context.count("PERSUADERLINETWO") == 1
    # the stream is what the chat template renders for the env's conversation plus the refused turn and its note
    agent = next(t for t in traces if t.agent == "agent_0")
    assert tok.decode(agent.ids).count("Tell me more about it.") == 1
    assert "[DONATE $9]" not in learners["agent"].tokenizer.decode(agent.ids)  # refused: the persuader never saw it
    # the loss mask covers exactly what each role sampled: its turns (the refused one too) and their end of turn
    for trace, lines in ((user, ["[DONATE $9]", "Tell me more about it.", "Maybe, I am thinking.",
                                 "[DONATE $0.50] Goodbye!"]),
                         (agent, ["Hello! Would you donate to Save the Children?",
                                  "PERSUADERLINETWO the children need you.", "Thank you so much."])):
        mask = np.array(trace.mask)
        runs = np.split(np.arange(len(mask)), np.flatnonzero(np.diff(mask)) + 1)
        own = learners[trace.learner].tokenizer
        sampled = [own.decode([trace.ids[i] for i in r]) for r in runs if mask[r[0]] == 1]
        assert sampled == [line + own.eos_token for line in lines]


# ----------------------------------------------------------------------------- defect 2: one tokenizer per learner
def test_each_learner_tokenizes_with_its_own_tokenizer(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    other = tiny_model_dir(corpus="upper")  # a different vocabulary: other merges, other ids
    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", user_model=other, env_kwargs={"max_turns": 1},
               max_new_tokens=4)
    learners = _learners(cfg)
    agent_tok, user_tok = learners["agent"].tokenizer, learners["user"].tokenizer
    assert agent_tok.get_vocab() != user_tok.get_vocab()
    env = ppo.make_env_factory(cfg)()
    _, _infos = env.reset(seed=0)
    first_user_prompt = {}
    step = env.step

    def recording_step(actions):
        out = step(actions)
        if "user_0" in out[4] and out[4]["user_0"].get("active") and "user_0" not in first_user_prompt:
            first_user_prompt["user_0"] = [dict(m) for m in out[4]["user_0"]["messages"]]
        return out

    env.step = recording_step
    traces, _ = ppo.rollout(cfg, [env], learners, seed=0, rng=np.random.default_rng(0))
    user = next(t for t in traces if t.agent == "user_0")
    rendered = user_tok.apply_chat_template(first_user_prompt["user_0"], tokenize=False, add_generation_prompt=True)
    expected = user_tok(rendered, add_special_tokens=False)["input_ids"]
    assert user.ids[:len(expected)] == expected
    lp = ppo.recompute_logprobs(learners["user"], [user], cfg.temperature)[0]
    sampled = [p for p, m in zip(user.logprobs, user.mask) if m]
    assert np.allclose(lp, sampled[-len(lp):], atol=1e-4)


# ----------------------------------------------------------------------------- defect 3: episodes cut at max_len
def _toy_first_prompt_len(tok):
    from scope_envs.agents.llm.toy import make_toy_env

    _, infos = make_toy_env().reset(seed=0)
    text = tok.apply_chat_template(infos["agent_0"]["messages"], tokenize=False, add_generation_prompt=True)
    return len(tok(text, add_special_tokens=False)["input_ids"])


def test_gae_bootstraps_a_cut_trace_with_its_value():
    import torch

    from scope_envs.train.llm.ppo import token_gae

    mask = torch.tensor([[0, 1, 1, 0], [0, 1, 1, 0]], dtype=torch.float32)
    values = torch.tensor([[0, 1, 1, 0], [0, 1, 1, 0]], dtype=torch.float32)
    adv, _ = token_gae(torch.zeros_like(mask), values, mask, gamma=1.0, lam=1.0, bootstrap=torch.tensor([5.0, 0.0]))
    assert adv[0].tolist() == [0, 4, 4, 0]  # the cut row learns its value at the cut, not 0
    assert adv[1].tolist() == [0, -1, -1, 0]


@pytest.mark.parametrize("algo", ["ppo", "grpo"])
def test_cut_episodes_are_counted_and_never_learn_a_zero_return(tmp_path, tiny_dir, algo):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="llm-toy", algo=algo, groups=1, group_size=2, max_new_tokens=4)
    learners = _learners(cfg)
    cfg.max_len = _toy_first_prompt_len(learners["agent"].tokenizer) + cfg.max_new_tokens + 2  # 2nd turn overflows
    row = ppo.train(cfg, learners=learners)["history"][0]
    assert row["cut_episodes"] == 2
    if algo == "ppo":
        assert row["bootstrapped/agent"] == 2 and row["sequences/agent"] == 2
    else:  # no value to bootstrap with: dropped, and counted
        assert row["cut_dropped/agent"] == 2 and "sequences/agent" not in row


# ----------------------------------------------------------------------------- defect 4: tool schemas in the prompt
def test_tool_schemas_reach_the_agents_prompt(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="tau2-frozen", groups=1, env_kwargs={"max_steps": 4}, max_len=10**6)  # no model runs
    learners = _learners(cfg)
    learners["agent"].engine = ScriptedEngine(learners["agent"].tokenizer, ["Hello, how can I help you today?"])
    env = ppo.make_env_factory(cfg)()
    shown, reset = {}, env.reset

    def recording_reset(**kwargs):  # the tools of the task the rollout was dealt
        out = reset(**kwargs)
        shown.update(out[1]["agent_0"])
        return out

    env.reset = recording_reset
    traces, _ = ppo.rollout(cfg, [env], learners, seed=0, rng=np.random.default_rng(0))
    names = [t["function"]["name"] for t in shown["tools"]]
    context = learners["agent"].tokenizer.decode(traces[0].ids)
    assert names and all(f'"{n}"' in context for n in names)


def test_trace_prompt_passes_tools_to_a_template_that_takes_them(tiny_dir):
    from transformers import AutoTokenizer

    from scope_envs.train.llm.ppo import Trace

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    tok.chat_template = ("{% if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
                         + tok.chat_template)
    tools = [{"type": "function", "function": {"name": "find_order", "parameters": {}}}]
    trace = Trace("agent_0", "agent", 0)
    ids = trace.prompt(tok, [{"role": "system", "content": "Help."}], [], tools=tools)
    text = tok.decode(ids)
    assert text.startswith("<|im_start|>tools") and text.count("find_order") == 1


# ----------------------------------------------------------------------------- defect 5: adaptive KL in tokens
def test_adaptive_kl_moves_by_tokens_not_episodes(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="llm-toy", updates=2, groups=2, group_size=2, max_new_tokens=6, kl_target=1e-6,
               kl_horizon=10000, kl_estimator="k3")
    h = ppo.train(cfg)["history"]
    err = float(np.clip(h[0]["kl/agent"] / cfg.kl_target - 1, -0.2, 0.2))
    assert h[0]["tokens/agent"] > h[0]["episodes"]
    assert h[1]["kl_coef"] == pytest.approx(h[0]["kl_coef"] * (1 + err * h[0]["tokens/agent"] / cfg.kl_horizon))


# ----------------------------------------------------------------------------- defect 6: no full-vocabulary batch
def test_the_no_grad_pass_projects_only_sampled_positions_in_chunks(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="llm-toy", groups=2, group_size=2, max_new_tokens=6, chunk_tokens=5)
    learners = _learners(cfg)
    traces, _ = ppo.rollout(cfg, [ppo.make_env_factory(cfg)() for _ in range(4)], learners, seed=0,
                            rng=np.random.default_rng(0))
    rows = []
    head = learners["agent"].model.get_output_embeddings()
    handle = head.register_forward_hook(lambda m, i, o: rows.append(int(np.prod(i[0].shape[:-1]))))
    try:
        lp = ppo.recompute_logprobs(learners["agent"], traces, cfg.temperature, cfg.chunk_tokens)
    finally:
        handle.remove()
    sampled = sum(sum(t.mask[1:]) for t in traces)
    assert sum(len(x) for x in lp) == sampled
    assert max(rows) <= cfg.chunk_tokens and sum(rows) == sampled
    for t, x in zip(traces, lp):  # and they are the generation's logprobs
        assert np.allclose(x, [p for p, m in zip(t.logprobs[1:], t.mask[1:]) if m], atol=1e-4)


# ----------------------------------------------------------------------------- GRPO
def test_grpo_advantages_are_group_relative():
    """The trainer's groups are (role, scenario); the math is scope_envs.train.groups' (sample std, ddof 1)."""
    from scope_envs.train.groups import group_advantages
    from scope_envs.train.llm.ppo import Trace, group_key

    traces = []
    for agent, g, returns in [("agent_0", 0, [1.0, 0.0, 0.5]), ("agent_0", 1, [2.0, 2.0, 2.0]),
                              ("user_0", 0, [-1.0, -0.5])]:
        for r in returns:
            t = Trace(agent, agent.split("_")[0], g)
            t.episode_return = r
            traces.append(t)
    returns, keys = [t.episode_return for t in traces], [group_key(t) for t in traces]
    adv = group_advantages(returns, keys, std_norm=False)
    assert adv[:3] == pytest.approx([0.5, -0.5, 0.0]) and list(adv[3:6]) == [0.0, 0.0, 0.0]
    assert adv[6:] == pytest.approx([-0.25, 0.25])  # the user's own baseline, not the agent's
    adv = group_advantages(returns, keys, std_norm=True)
    assert adv[0] == pytest.approx(0.5 / np.std([1.0, 0.0, 0.5], ddof=1), rel=1e-4)


def test_grpo_defaults_and_the_asymmetric_clip():
    import torch

    from scope_envs.train.llm.ppo import Config, clipped_pg, kl_estimate

    cfg = Config(algo="grpo")
    assert (cfg.group_size, cfg.clip_low, cfg.clip_high, cfg.kl_estimator, cfg.ent_coef) == (8, 0.2, 0.28,
                                                                                          "low_var_kl", 0.0)
    assert Config().group_size == 2 and Config().clip_low == Config().clip_high == 0.2
    with pytest.raises(ValueError, match="group_size"):
        Config(algo="grpo", group_size=1)
    ratio, adv, mask = torch.tensor([1.5, 0.5]), torch.tensor([1.0, -1.0]), torch.ones(2)
    # a positive advantage stops at 1 + clip_high, a negative one at 1 - clip_low
    assert clipped_pg(ratio, adv, mask, 0.2, 0.28).item() == pytest.approx((-1.28 + 0.8) / 2)
    big = kl_estimate(torch.tensor([30.0]), torch.tensor([0.0]), "low_var_kl")
    assert big.item() == 10.0 and kl_estimate(torch.tensor([0.3]), torch.tensor([0.1]), "low_var_kl").item() > 0


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "grpo"])
def test_the_toy_reward_rises(tmp_path, tiny_dir, algo):
    """Issue 30, defect 7: each algorithm learns llm-toy at its defaults (lr, KL, epochs, minibatch, clip);
    only the run's size is set here (updates, episodes, the reply budget)."""
    from scope_envs.train.llm import ppo

    size = {"groups": 8, "updates": 40} if algo == "ppo" else {"groups": 2, "updates": 30}
    cfg = ppo.Config(model=tiny_model_dir(), out=str(tmp_path), log=False, env="llm-toy", algo=algo,
                     max_new_tokens=8, seed=0, **size)
    assert (cfg.lr, cfg.ppo_epochs, cfg.minibatch) == (1e-4, 4, 8)
    assert (cfg.kl_coef, cfg.kl_estimator) == ((0.01, "k1") if algo == "ppo" else (0.001, "low_var_kl"))
    history = ppo.train(cfg)["history"]
    rewards = [h["reward_mean"] for h in history]
    assert np.mean(rewards[-5:]) > np.mean(rewards[:5]) + 0.01, rewards
    assert all(math.isfinite(h["kl"]) for h in history)
    assert all(h["logprob_gap/agent"] < 1e-3 for h in history)
    for key in ("zero_std_group_frac/agent", "all_fail_group_frac/agent", "entropy/agent_0",
                "group_reward_var/agent"):
        assert key in history[-1], key
    if algo == "grpo":
        assert "vf_loss/agent" not in history[-1]
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == cfg.updates and lines[-1]["reward_mean"] == history[-1]["reward_mean"]
    head = tmp_path / "checkpoints" / "final" / "agent" / "value_head.pt"
    assert head.exists() == (algo == "ppo")  # grpo has no value head


def test_a_group_shares_its_scenario_not_its_episode_seed(tmp_path, tiny_dir):
    """Issue 30, defect 2: the episodes of a group are dealt one persona card (the scenario seed) and play
    their own dialogue randomness; the same agent lines then draw different simulator replies."""
    from scope_envs.train.llm import ppo

    # (p4g-frozen's three collapsed members hold a card each: the group's scenario picks the member, and so the card)
    cfg = _cfg(tmp_path, env="p4g-frozen", algo="grpo", groups=2, group_size=4, env_kwargs={"max_turns": 3})
    learners = _learners(cfg)
    learners["agent"].engine = ScriptedEngine(learners["agent"].tokenizer, [
        "Hello! Would you consider a donation to Save the Children?"])
    envs = [ppo.make_env_factory(cfg)() for _ in range(8)]
    traces, _ = ppo.rollout(cfg, envs, learners, seed=5, rng=np.random.default_rng(0))
    tok = learners["agent"].tokenizer
    cards, replies = {}, {}
    for t, env in zip(traces, envs):
        cards.setdefault(t.group, set()).add(tok.decode(t.ids).split("<|im_end|>")[0])  # the system prompt
        replies.setdefault(t.group, set()).add(tuple(x.text for x in env.unwrapped.game.history
                                                     if x.role != "persuader"))
        assert env.unwrapped.game.persona == envs[4 * t.group].unwrapped.game.persona
    assert all(len(c) == 1 for c in cards.values())  # one scenario per group
    assert all(len(r) > 1 for r in replies.values()), replies  # ...and each episode its own dialogue


# ----------------------------------------------------------------------------- old logprobs
@pytest.mark.parametrize("algo", ["ppo", "grpo"])
def test_the_ratio_is_taken_against_the_trainers_recompute_and_the_gap_is_reported(tmp_path, tiny_dir, algo):
    """An engine whose logprobs are off (every token -1.0, as a bf16 engine's differ from an fp32 trainer's):
    the first minibatch's ratio is 1 (nothing clipped), and the gap is a metric."""
    from scope_envs.train.llm import ppo

    stats = {}
    for source in ("trainer", "engine"):
        cfg = _cfg(tmp_path / source, env="llm-toy", algo=algo, groups=2, group_size=2, ppo_epochs=1, minibatch=64,
                   old_logprobs=source)
        learners = _learners(cfg)
        learners["agent"].engine = ScriptedEngine(learners["agent"].tokenizer, ["aaaa bbbb", "ok aa", "hello"])
        traces, _ = ppo.rollout(cfg, [ppo.make_env_factory(cfg)() for _ in range(4)], learners, seed=0,
                                rng=np.random.default_rng(0))
        trainer_lp = ppo.recompute_logprobs(learners["agent"], traces, cfg.temperature)
        stats[source] = ppo.ppo_update(cfg, learners["agent"], traces, cfg.kl_coef)
        gap = np.mean([abs(a + 1.0) for lp in trainer_lp for a in lp])
        assert stats[source]["logprob_gap"] == pytest.approx(gap, rel=1e-3)
        assert stats[source]["logprob_gap_max"] >= stats[source]["logprob_gap"] > 1.0
    assert stats["trainer"]["clipfrac"] == 0.0 and abs(stats["trainer"]["approx_kl_old"]) < 1e-5
    assert stats["engine"]["clipfrac"] > 0.5  # the engine's logprobs: the gap enters the ratio at once
    with pytest.raises(ValueError, match="old_logprobs"):
        ppo.Config(old_logprobs="sampler")


@pytest.mark.parametrize("lists, rate", [('{"responses": [{"text": "No. [DONATE $0] Bye!", "probability": 1}]}', 0.0),
                                         ("<think>{hmm}</think> I cannot list replies.", 1.0)])
def test_the_verbalized_sampling_fallback_rate_is_a_metric(tmp_path, tiny_dir, lists, rate):
    from llm_fixtures import ScriptedBackend

    from scope_envs.agents.llm import LLMPlayer
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-vs", env_kwargs={"max_turns": 2})
    user = LLMPlayer(ScriptedBackend(replies=["Tell me more."], lists=lists))
    history = ppo.train(cfg, make_env=lambda: scope_envs.make("p4g-vs", surface="text", user=user, k=2,
                                                              max_turns=2))["history"]
    assert history[0]["vs_fallback_rate"] == rate


# ----------------------------------------------------------------------------- a frozen LLM user (defect 6)
def test_a_frozen_llm_user_is_batched_across_episodes_and_its_tokens_counted(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-frozen", user_model=tiny_model_dir(), env_kwargs={"max_turns": 2}, groups=3,
               group_size=2)
    user = ppo.frozen_user(cfg)
    envs = [ppo.make_env_factory(cfg, user)() for _ in range(6)]
    learners = _learners(cfg)
    traces, stats = ppo.rollout(cfg, envs, learners, seed=0, rng=np.random.default_rng(0))
    batching = user.backend
    assert ppo.batching_backend(envs) is batching
    assert batching.batch_sizes and max(batching.batch_sizes) == 6  # one call for the six users of a round
    assert batching.calls < sum(batching.batch_sizes)  # fewer calls than replies (retries after errors included)
    assert stats["gen_tokens_by"][ppo.FROZEN_USER] == batching.tokens > 0
    assert stats["gen_tokens_by"]["agent"] == sum(sum(t.mask) for t in traces)
    # the same rollout again replays: the batch order is the envs' order, its seed theirs
    again = ppo.frozen_user(cfg)
    envs2 = [ppo.make_env_factory(cfg, again)() for _ in range(6)]
    ppo.rollout(cfg, envs2, _learners(cfg), seed=0, rng=np.random.default_rng(0))
    assert [[t.text for t in e.unwrapped.game.history] for e in envs] == [
        [t.text for t in e.unwrapped.game.history] for e in envs2]
    history = ppo.train(cfg)["history"]
    assert history[0]["tokens_per_s/frozen_user"] > 0 and history[0]["gen_tokens/agent"] > 0
    from scope_envs.agents.llm.backends import BackendError

    with pytest.raises(BackendError, match="vLLM"):  # the run's engine serves the user too (no vLLM here)
        ppo.frozen_user(ppo.Config(**{**vars(cfg), "engine": "vllm"}))


# ----------------------------------------------------------------------------- scale
@pytest.mark.parametrize("lora", [False, True])
def test_bf16_weights_fp32_master_gradient_checkpointing_and_a_free_lora_reference(tmp_path, tiny_dir, lora):
    import torch

    from scope_envs.train.llm import ppo

    if lora:
        pytest.importorskip("peft")
    cfg = _cfg(tmp_path, env="llm-toy", dtype="bfloat16", gradient_checkpointing=True, lora=lora, lora_r=8,
               groups=2, group_size=2)
    assert ppo.Config(device="cuda").dtype == "bfloat16" and ppo.Config(device="cuda").gradient_checkpointing
    assert ppo.Config().dtype == "float32" and not ppo.Config().gradient_checkpointing
    learners = ppo.build_learners(cfg)
    agent = learners["agent"]
    model = agent.model
    trained = agent.params()
    if lora:  # the reference is the base with its adapters off: no second copy; the adapters train in fp32
        assert agent.ref is None and agent.master is None
        assert all(p.dtype == torch.float32 for p in trained)
        assert all(p.dtype == torch.bfloat16 for n, p in model.named_parameters() if "lora_" not in n)
    else:  # bf16 weights (the reference too), stepped through fp32 master copies
        assert all(p.dtype == torch.bfloat16 for p in trained) and next(agent.ref.parameters()).dtype == torch.bfloat16
        assert [m.dtype for _, m in agent.master] == [torch.float32] * len(trained)
        stepped = {id(p) for g in agent.optimizer.param_groups for p in g["params"]}
        assert all(id(m) in stepped for _, m in agent.master) and not any(id(p) in stepped for p in trained)
    before = [p.detach().float().clone() for p in trained]
    calls = []
    layer = model.get_decoder().layers[0] if not lora else model.base_model.model.model.layers[0]
    hook = layer.register_forward_hook(lambda mod, *a: calls.append((torch.is_grad_enabled(), mod.training,
                                                                      mod.gradient_checkpointing)))
    history = ppo.train(cfg, learners=learners)["history"]
    hook.remove()
    assert math.isfinite(history[0]["pg_loss/agent"])
    assert any(not torch.equal(a, p.detach().float()) for a, p in zip(before, trained))  # the update landed
    if not lora:
        assert all(torch.equal(p, m.to(p.dtype)) for p, m in agent.master)  # the weights are their masters'
    # the gradient passes run the decoder layers checkpointed (transformers checkpoints a layer that is in
    # training mode with gradient_checkpointing set)
    grad_calls = [c for c in calls if c[0]]
    assert grad_calls and all(training and checkpointed for _, training, checkpointed in grad_calls)


# ----------------------------------------------------------------------------- chat templates
LINES = {"agent_0": ["Hello! Would you donate to Save the Children?", "The children need your help.",
                     "Even a little goes a long way.", "Thank you for listening."],
         "user_0": ["Who are they?", "Tell me more about it.", "Maybe, I am thinking.", "[DONATE $0.50] Goodbye!"]}
THINK = {"agent_0": ["<think>\nOpen warmly.\n</think>\n\n" + x for x in LINES["agent_0"]],
         "user_0": ["<think>\nBe wary.\n</think>\n\n" + x for x in LINES["user_0"]]}


@pytest.mark.parametrize("name, fallback", [
    ("qwen2_5", False), ("qwen3_instruct_2507", False), ("llama3_2", False),  # prefix-preserving as they are
    ("gemma", False),  # no system role, roles alternate from a user turn: conformed once, then exact
    ("qwen3_5_nothink", True),  # needs a user query first; prompts an empty <think>, dropped from earlier turns
    ("qwen3", True),  # hybrid thinking: drops earlier turns' <think> blocks, the documented fallback
    ("phi3", True),  # closes a rendering without a generation prompt with the eos: never a prefix, and that eos is
    # no part of the assistant's closing glue (its traces were a ValueError at the first rollout)
])
def test_chat_templates_of_common_models_keep_a_token_trace(tmp_path, tiny_dir, name, fallback):
    from llm_fixtures import template_tokenizer

    from scope_envs.agents.llm.templates import OPENING, check_template, render
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", env_kwargs={"max_turns": 4}, groups=1)
    learners = _learners(cfg)
    lines = THINK if name.startswith("qwen3") and "nothink" not in name else LINES
    tok = template_tokenizer(name)
    check_template(tok)  # the check a model's template passes when it loads takes each of these
    for learner, agent in ((learners["agent"], "agent_0"), (learners["user"], "user_0")):
        learner.tokenizer = tok
        learner.engine = ScriptedEngine(tok, lines[agent])
    env = ppo.make_env_factory(cfg)()
    traces, _ = ppo.rollout(cfg, [env], learners, seed=0, rng=np.random.default_rng(0))
    game = env.unwrapped.game
    history = [(t.role, t.text) for t in game.history]
    assert len(history) >= 5, history  # past the agent's third turn
    by_agent = {t.agent: t for t in traces}
    for agent, trace in by_agent.items():
        text = tok.decode(trace.ids)
        mask = np.array(trace.mask)
        runs = np.split(np.arange(len(mask)), np.flatnonzero(np.diff(mask)) + 1)
        sampled = [tok.decode([trace.ids[i] for i in r]) for r in runs if mask[r[0]] == 1]
        assert sampled == [x + tok.eos_token for x in lines[agent][:trace.turns]]  # token out, as sampled
        role = game.agent_role if agent == "agent_0" else game.user_role
        last = max(i for i, (r, _) in enumerate(history) if r == role)
        at = 0
        for _, said in history[:last + 1]:  # every message up to its last turn, in order, in its stream
            at = text.index(said.strip(), at)
        if trace.template_fallbacks == 0:  # token-exact: the template's own rendering of the conversation
            assert text == render(tok, trace.conversation + [trace._last_reply], False)
        assert (trace.template_fallbacks > 0) == fallback
    agent_conv = by_agent["agent_0"].conversation
    if name == "gemma":  # the system prompt opens the first user turn
        assert agent_conv[0]["role"] == "user" and agent_conv[0]["content"].endswith(OPENING)
    if name == "qwen3_5_nothink":
        assert agent_conv[1] == {"role": "user", "content": OPENING}
    if lines is THINK:  # the reasoning the agent sampled stays in its stream after the partner answered
        assert tok.decode(by_agent["agent_0"].ids).count("Open warmly.") == by_agent["agent_0"].turns


def test_a_turn_that_ends_on_the_templates_end_of_turn_marker_holds_it_once(tmp_path, tiny_dir):
    """A real Phi-3 stops on <|end|>, which is not its tokenizer's eos (<|endoftext|>): the glue after a finished
    turn was the whole suffix, so the stream held <|end|> twice where the template renders it once."""
    from llm_fixtures import template_tokenizer

    from scope_envs.train.llm import ppo

    tok = template_tokenizer("phi3")
    tok.add_special_tokens({"additional_special_tokens": ["<|endoftext|>"]})
    end = tok.convert_tokens_to_ids("<|end|>")
    tok.eos_token = "<|endoftext|>"

    class StopsOnEnd(ScriptedEngine):
        def generate_ids(self, prompts, **kw):
            gens = super().generate_ids(prompts, **kw)
            for g in gens:
                g.token_ids[-1] = end
            return gens

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", env_kwargs={"max_turns": 3}, groups=1)
    learners = _learners(cfg)
    for learner, agent in ((learners["agent"], "agent_0"), (learners["user"], "user_0")):
        learner.tokenizer = tok
        learner.engine = StopsOnEnd(tok, LINES[agent])
    traces, _ = ppo.rollout(cfg, [ppo.make_env_factory(cfg)()], learners, seed=0, rng=np.random.default_rng(0))
    agent = next(t for t in traces if t.agent == "agent_0")
    text = tok.decode(agent.ids)
    assert agent.turns >= 2 and "<|end|><|end|>" not in text.replace("\n", "")
    assert f"{LINES['agent_0'][0]}<|end|>\n<|user|>" in text  # as the template renders a reply and the next turn


# ----------------------------------------------------------------------------- simulator rewards, diagnostics
def test_group_diagnostics():
    from scope_envs.train.llm.ppo import Trace, role_diagnostics

    traces = []
    for g, (returns, scores) in enumerate([([1.0, 1.0], [0.0, 0.0]), ([0.0, 1.0], [0.0, 0.5])]):
        for r, s in zip(returns, scores):
            t = Trace("agent_0", "agent", g)
            t.episode_return, t.score = r, s
            traces.append(t)
    d = role_diagnostics(traces)
    assert d["zero_std_group_frac/agent"] == 0.5 and d["all_fail_group_frac/agent"] == 0.5
    assert d["group_reward_var/agent"] == pytest.approx(np.mean([0.0, 0.25]))
    assert d["all_success_group_frac/agent"] == 0.0


def test_curriculum_user_reward_is_paid_per_group(tmp_path, tiny_dir):
    from scope_envs.core.rewards import curriculum_reward
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", user_reward="curriculum", env_kwargs={"max_turns": 1},
               groups=2, group_size=2, max_new_tokens=4)
    learners = _learners(cfg)
    learners["user"].engine = ScriptedEngine(learners["user"].tokenizer,
                                             ["[DONATE $2] Goodbye!", "[DONATE $0] Goodbye!"])
    envs = [ppo.make_env_factory(cfg)() for _ in range(4)]
    assert all(e.unwrapped.game.user_reward == "curriculum" for e in envs)
    traces, _stats = ppo.rollout(cfg, envs, learners, seed=0, rng=np.random.default_rng(0))
    ppo.pay_curriculum(traces, envs[0].unwrapped.game)
    for g in (0, 1):
        scores = [t.score for t in traces if t.group == g and t.agent == "agent_0"]
        users = [t for t in traces if t.group == g and t.agent == "user_0"]
        assert len(scores) == 2 and len(users) == 2
        assert all(u.episode_return == pytest.approx(curriculum_reward(scores)) for u in users)
        assert all(u.rewards[u._last_turn_end] == pytest.approx(u.episode_return) for u in users)


def test_realism_user_reward_is_paid_from_the_games_acts(tmp_path, tiny_dir):
    """The LLM user paid for realism: each finished episode's user trace gets the discriminator's mean log-odds of
    its replies, as the game read them; a game without real dialogues refuses the reward before any rollout."""
    from scope_envs.train.llm import ppo
    from scope_envs.train.realism import Realism

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", user_reward="realism", env_kwargs={"max_turns": 2},
               groups=2, group_size=1, max_new_tokens=4)
    learners = _learners(cfg)
    learners["user"].engine = ScriptedEngine(learners["user"].tokenizer, ["Hello there.", "[DONATE $1] Goodbye!"])
    envs = [ppo.make_env_factory(cfg)() for _ in range(2)]
    assert all(e.unwrapped.game.user_reward == "realism" for e in envs)
    traces, _stats = ppo.rollout(cfg, envs, learners, seed=0, rng=np.random.default_rng(0))
    users = [t for t in traces if t.agent == "user_0"]
    assert users and all(t.acts is not None and len(t.acts[1]) >= 1 for t in users)
    assert all(t.episode_return == 0.0 for t in users)  # the env pays nothing under realism
    realism = Realism.for_game(envs[0].unwrapped.game, cfg.user_reward)
    row = ppo.pay_realism(traces, realism)
    assert 0.0 <= row["discriminator_held_back_accuracy"] <= 1.0 and np.isfinite(row["realism_distance"])
    for t in users:
        c = realism.pairs.cells(*t.acts)
        assert t.episode_return == pytest.approx(float(realism.discriminator.rewards(c[c >= 0]).mean()))
        assert t.rewards[t._last_turn_end] == pytest.approx(t.episode_return)
    with pytest.raises(ValueError, match="real dialogues"):
        Realism.for_game(scope_envs.make("cooperbench-cotrain").unwrapped.game, "realism")


def test_user_reward_needs_a_trained_user_and_curriculum_needs_groups():
    from scope_envs.train.llm.ppo import Config

    with pytest.raises(ValueError, match="trained user"):
        Config(user_reward="adversarial")
    with pytest.raises(ValueError, match="group"):
        Config(mode="cotrain", user_reward="curriculum", group_size=1)
    with pytest.raises(ValueError, match="user_reward"):
        Config(mode="cotrain", user_reward="nice")


# ----------------------------------------------------------------------------- dual models, per-learner settings
def test_cotraining_two_models_keeps_an_optimizer_lr_and_kl_reference_each(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", user_model=tiny_model_dir(corpus="upper"), lr=1e-3,
               user_lr=5e-4, env_kwargs={"max_turns": 1}, kl_target=0.01)
    learners = ppo.build_learners(cfg)
    a, u = learners["agent"], learners["user"]
    assert a.optimizer.param_groups[0]["lr"] == 1e-3 and u.optimizer.param_groups[0]["lr"] == 5e-4
    assert a.ref is not u.ref and a.tokenizer is not u.tokenizer
    h = ppo.train(cfg, learners=learners)["history"][0]
    assert h["sequences/agent"] == 2 and h["sequences/user"] == 2
    assert "kl_coef/agent" in h and "kl_coef/user" in h
    assert "entropy/agent_0" in h and "entropy/user_0" in h


# ----------------------------------------------------------------------------- the pooled LoRA population
def test_adapter_pool_is_fifo_and_samples_uniformly_or_the_latest(tiny_dir):
    pytest.importorskip("peft")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from scope_envs.train.llm.pool import AdapterPool

    base = AutoModelForCausalLM.from_pretrained(tiny_dir)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, task_type="CAUSAL_LM"), adapter_name="user")
    registered = []  # the vLLM engine's hook: each snapshot is registered as a LoRA request
    pool = AdapterPool(model, "user", size=3, every=2, sample="uniform", rng=np.random.default_rng(0),
                       on_snapshot=registered.append)
    assert pool.entries == ["user"]
    live = {n: p for n, p in model.named_parameters() if ".user." in n}
    made = []
    for update in range(1, 9):
        with torch.no_grad():
            for p in live.values():
                p.add_(0.1)  # "an update" of the live adapter
        made += [pool.after_update(update)]
    snaps = [m for m in made if m is not None]
    assert len(snaps) == 4 and made[0] is None and made[1] is not None  # every 2nd update
    assert registered == snaps
    assert pool.entries == snaps[-2:] + ["user"]  # FIFO: at most size - 1 snapshots, the live user last
    assert set(model.peft_config) == {"user", *snaps[-2:]}  # the oldest adapters were deleted
    # a snapshot holds the live weights of its time, frozen
    newest = {n.replace(f".{snaps[-1]}.", ".user."): p for n, p in model.named_parameters() if f".{snaps[-1]}." in n}
    assert newest and all(torch.allclose(newest[n], live[n]) for n in newest)
    draws = [pool.draw() for _ in range(300)]
    assert set(draws) == set(pool.entries) and min(draws.count(e) for e in pool.entries) > 60
    latest = AdapterPool(model, "user", size=3, every=2, sample="latest", rng=np.random.default_rng(0))
    latest.after_update(2)
    assert latest.entries[-1] == "user" and {latest.draw() for _ in range(50)} == {"user"}


def test_pooled_population_trains_the_live_user_only(tmp_path, tiny_dir):
    pytest.importorskip("peft")
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-population", mode="population", lora=True, lora_r=4, pool_size=2,
               snapshot_every=1, pool_sample="uniform", env_kwargs={"max_turns": 1}, updates=5, lr=1e-2, seed=1)
    result = ppo.train(cfg)
    history, learners = result["history"], result["learners"]
    assert set(learners) == {"agent", "user"}
    model = learners["agent"].model
    snapshots = [n for n in model.peft_config if n.startswith("user@")]
    assert len(snapshots) == 1  # pool_size 2: one snapshot beside the live user
    entries = [h["pool_entry"] for h in history]
    assert all(h["pool_size"] == min(u, 2) for u, h in zip(range(1, 6), history))
    for h in history:  # the user learns only from the batches its live adapter played
        assert ("sequences/user" in h) == (h["pool_entry"] == "user")
    assert any(e != "user" for e in entries[1:]) and "user" in entries


def test_population_is_the_pool_and_members_the_k_member_form():
    from scope_envs.train.llm.ppo import Config

    with pytest.raises(ValueError, match="LoRA"):
        Config(mode="population")  # snapshots are adapters
    with pytest.raises(ValueError, match="pool_sample"):
        Config(mode="population", lora=True, pool_sample="best")
    assert Config(mode="members", members=3).members == 3  # tests/test_llm.py trains the K adapters


# ----------------------------------------------------------------------------- metrics file
def test_metrics_jsonl_carries_the_collapse_diagnostics(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", algo="grpo", group_size=2, user_reward="adversarial",
               env_kwargs={"max_turns": 1})
    ppo.train(cfg)
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    for role in ("agent", "user"):
        for key in ("zero_std_group_frac", "all_fail_group_frac", "group_reward_var"):
            assert 0.0 <= row[f"{key}/{role}"] <= 1.0
        assert row[f"entropy/{role}_0"] > 0
    assert scope_envs.make("p4g-cotrain", surface="text", user_reward="adversarial")  # the env's own option


def test_a_checkpoint_stopped_while_saving_is_not_left_torn(tmp_path, tiny_dir, monkeypatch):
    """Ctrl-C during save_checkpoint left a folder with the weights and no tokenizer or config.json, which
    loaded nowhere; now the previous checkpoint of that name stays whole, or there is none."""
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path / "run", env="llm-toy", model=tiny_dir)
    learners = ppo.build_learners(cfg)
    tokenizer = learners["agent"].tokenizer
    checkpoints = tmp_path / "run" / "checkpoints"

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    real = tokenizer.save_pretrained
    monkeypatch.setattr(tokenizer, "save_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ppo.save_checkpoint(cfg, learners, checkpoints / "final")
    assert not (checkpoints / "final").exists() and list(checkpoints.iterdir()) == []  # no leftovers either
    monkeypatch.setattr(tokenizer, "save_pretrained", real)
    ppo.save_checkpoint(cfg, learners, checkpoints / "final")
    before = sorted(p.relative_to(checkpoints) for p in checkpoints.rglob("*"))
    monkeypatch.setattr(tokenizer, "save_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ppo.save_checkpoint(cfg, learners, checkpoints / "final")
    assert sorted(p.relative_to(checkpoints) for p in checkpoints.rglob("*")) == before
    assert json.loads((checkpoints / "final" / "config.json").read_text())["env"] == "llm-toy"


def test_a_max_len_with_no_room_for_a_turn_is_an_argument_error(tmp_path, tiny_dir, capsys):
    """Every episode was cut before its first turn: the run went on for all its updates, training nothing, with
    reward nan on each line. It now stops at the first update with one line naming --max-len."""
    from scope_envs.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--env", "llm-toy", "--model", tiny_dir, "--max-len", "4", "--max-new-tokens", "4",
              "--updates", "3", "--groups", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --max-len: max_len (--max-len 4) is shorter" in err
    assert "Traceback" not in err and not (tmp_path / "metrics.jsonl").exists()  # no update: no metrics file


def test_a_refused_run_leaves_no_tiny_model_it_built(tmp_path, capsys):
    """--model tiny is built into OUT/base-model before the first prompt shows --max-len too short: the refusal
    left it (about a megabyte) in an output folder that holds no run."""
    from scope_envs.cli import main

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--env", "p4g-frozen", "--model", "tiny", "--max-len", "20", "--updates", "1",
              "--out", str(out)])
    assert exit_.value.code == 2 and "argument --max-len" in capsys.readouterr().err
    assert not out.exists()


def test_a_run_that_fails_before_its_first_update_leaves_the_previous_metrics(tmp_path, tiny_dir):
    """metrics.jsonl was truncated when a run started: one that then failed (a --max-len with no room, a model
    refused at load) left the previous run's file empty beside its checkpoints. It is replaced at the first
    update now, whole."""
    from scope_envs.train.llm import ppo

    ppo.train(_cfg(tmp_path, env="llm-toy", model=tiny_dir, updates=2, max_new_tokens=2, save_final=False))
    before = (tmp_path / "metrics.jsonl").read_text()
    assert len(before.splitlines()) == 2
    with pytest.raises(ppo.MaxLenError):
        ppo.train(_cfg(tmp_path, env="llm-toy", model=tiny_dir, max_len=4, max_new_tokens=4, save_final=False))
    assert (tmp_path / "metrics.jsonl").read_text() == before
    ppo.train(_cfg(tmp_path, env="llm-toy", model=tiny_dir, max_new_tokens=2, save_final=False))  # one update
    assert [json.loads(line)["update"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1]


def test_a_broken_chat_template_is_refused_when_the_model_loads(tmp_path, monkeypatch):
    """From Python too (ppo.train, not only the command line's check): a model whose chat template cannot
    render an episode's opening is a ModelLoadError naming its folder as it loads, not a ValueError from inside
    the first rollout; a frozen LLM user's alike."""
    from llm_fixtures import template_variant

    from scope_envs.train.llm import ppo
    from scope_envs.train.llm.panel import ModelLoadError

    def forbidden(*a, **k):
        raise AssertionError("a rollout started")

    monkeypatch.setattr(ppo, "rollout", forbidden)
    broken = template_variant(tmp_path / "broken", "broken")
    for kw in ({"model": broken}, {"user_model": broken, "env": "p4g-frozen"}):
        with pytest.raises(ModelLoadError, match="unexpected '}'") as refused:
            ppo.train(_cfg(tmp_path / "out", **kw))
        assert refused.value.path == broken and repr(broken) in str(refused.value)


def test_the_progress_line_prints_the_k3_kl(tmp_path, tiny_dir, capsys):
    """The progress line's kl was the run's estimator, k1 under PPO, which goes below 0: it prints kl(k3), the
    token-weighted k3 estimate (>= 0), kept as kl_k3 beside the estimator's kl in metrics.jsonl."""
    from scope_envs.train.llm import ppo

    history = ppo.train(_cfg(tmp_path, env="llm-toy", model=tiny_dir, updates=2, max_new_tokens=4, log=True,
                             save_final=False))["history"]
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("update ")]
    assert len(lines) == 2
    for line, row in zip(lines, history):
        assert f"kl(k3) {row['kl_k3']:.4f}" in line and " kl " not in line
        assert row["kl_k3"] >= 0 and row["kl_k3"] == pytest.approx(row["kl_k3/agent"])
        assert row["kl"] == pytest.approx(row["kl_k1/agent"])  # the run's estimator: k1 under ppo


def test_metrics_lines_are_strict_json(tmp_path, tiny_dir, monkeypatch):
    """A NaN in a row (e.g. the curriculum reward of an update whose episodes were all cut) was written as a bare
    NaN, which strict JSON readers (jq, JavaScript, pandas' default) refuse; it is null now."""
    from scope_envs.train.llm import ppo

    real = ppo.role_diagnostics
    monkeypatch.setattr(ppo, "role_diagnostics", lambda traces: {**real(traces), "curriculum_reward": math.nan})
    ppo.train(_cfg(tmp_path, env="llm-toy", model=tiny_dir, save_final=False))

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0], parse_constant=refuse)
    assert row["curriculum_reward"] is None
