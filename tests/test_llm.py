"""The LLM stack on CPU: backends, players, verbalized sampling for LLM users, the LLM-PPO trainer.

Every model is a tiny random Llama built on the spot (tests/llm_fixtures.py); nothing is downloaded.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from llm_fixtures import ChatStandIn, ScriptedBackend, _one_thread, tiny_dir, tiny_model_dir  # noqa: F401

import scope_envs
from scope_envs.agents.llm import BackendError, LLMPlayer, OpenAIBackend, parse_verbalized
from scope_envs.agents.llm.player import USER_GUIDELINES

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


def readable(text: str) -> bool:
    from scope_envs.core.game import InGameError
    from scope_envs.core.surfaces import MAX_MESSAGE_CHARS, check_message

    try:
        return bool(check_message(text, MAX_MESSAGE_CHARS))
    except InGameError:
        return False


# ----------------------------------------------------------------------------- import cost
def test_import_stays_light():
    code = ("import sys, scope_envs, scope_envs.agents.llm, scope_envs.train.llm.ppo, scope_envs.train.llm.trl;"
            "import scope_envs.train.llm.pool, scope_envs.train.llm.panel, scope_envs.train.llm.commands;"
            "print([m for m in ('transformers', 'peft', 'vllm', 'trl', 'tokenizers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- backends
def test_transformers_backend_chat_and_token_ids(tiny_dir):
    from scope_envs.agents.llm import TransformersBackend

    backend = TransformersBackend.from_path(tiny_dir)
    msgs = [{"role": "system", "content": "You are a persuader."}, {"role": "user", "content": "Hello!"}]
    a = backend.chat([msgs, msgs], max_new_tokens=6, seed=3)
    b = backend.chat([msgs, msgs], max_new_tokens=6, seed=3)
    assert [g.text for g in a] == [g.text for g in b]  # seeded
    for g in a:
        assert 1 <= len(g.token_ids) <= 6 and len(g.logprobs) == len(g.token_ids)
        assert all(lp <= 0 and math.isfinite(lp) for lp in g.logprobs)
        assert g.text == backend.tokenizer.decode(g.token_ids, skip_special_tokens=True)


def test_a_chat_template_is_checked_through_the_rollouts_path(tmp_path):
    """templates.check_template renders an episode's opening (conform, then a reply and the partner's answer):
    a missing or broken template is a TemplateError naming where it is, and TransformersBackend refuses it when
    it is built (a BackendError naming the folder), not inside the first episode."""
    from llm_fixtures import template_variant
    from transformers import AutoTokenizer

    from scope_envs.agents.llm import TransformersBackend
    from scope_envs.agents.llm.templates import TemplateError, check_template

    check_template(AutoTokenizer.from_pretrained(tiny_model_dir()))  # the tiny model's ChatML template renders
    for kind, said in (("broken", "unexpected '}'"), ("missing", "has no chat template")):
        folder = template_variant(tmp_path / kind, kind)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        with pytest.raises(TemplateError, match=said) as refused:
            check_template(tokenizer, repr(folder))
        assert str(refused.value).startswith(repr(folder))
        with pytest.raises(BackendError, match=said) as refused:
            TransformersBackend.from_path(folder)
        assert repr(folder) in str(refused.value)


def test_a_template_that_refuses_a_conversation_mid_game_is_a_backend_error(tiny_dir):
    """A template that renders an episode's opening but refuses a later conversation: the backend could not reply
    (a BackendError, and still the ValueError the template's refusal was), which a served user seat counts as the
    user's in-game error (tests/test_serve_llm.py), not an exception of another kind."""
    from scope_envs.agents.llm import TransformersBackend
    from scope_envs.agents.llm.templates import TemplateError

    backend = TransformersBackend.from_path(tiny_dir)
    backend.tokenizer.chat_template = ("{% for m in messages %}{% if 'REFUSE' in m['content'] %}"
                                       "{{ raise_exception('no REFUSE here') }}{% endif %}<|im_start|>{{ m['role'] }}\n"
                                       "{{ m['content'] }}<|im_end|>\n{% endfor %}"
                                       "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
    assert backend.chat([chat], max_new_tokens=2, seed=0)[0].token_ids
    with pytest.raises(BackendError, match="no REFUSE here") as refused:
        backend.chat([chat + [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "REFUSE"}]],
                     max_new_tokens=2, seed=0)
    assert isinstance(refused.value, ValueError) and not isinstance(refused.value, TemplateError)


def test_transformers_backend_samples_the_distribution_whose_logprobs_it_logs(tmp_path, tiny_dir):
    """Issue 30, defect 5: a model whose generation_config has a repetition penalty (as instruct models ship,
    here a strong one) must still sample from softmax(logits / T), the logprobs it logs and the trainer
    recomputes. 400 one-token draws after one prompt: how often a token of the prompt comes out against the
    logged probability of the prompt's tokens."""
    import shutil

    import torch
    from transformers import GenerationConfig

    from scope_envs.agents.llm import TransformersBackend

    path = tmp_path / "penalised"
    shutil.copytree(tiny_dir, path)
    GenerationConfig(do_sample=True, repetition_penalty=50.0, eos_token_id=0, pad_token_id=0).save_pretrained(path)
    backend = TransformersBackend.from_path(path)
    assert backend.model.generation_config.repetition_penalty == 50.0
    with torch.no_grad():  # a random model's logits are near 0; a trained model's are not
        backend.model.get_output_embeddings().weight.mul_(30.0)
    from scope_envs.games.p4g import game

    text = game.PERSUADER_INSTRUCTIONS + " " + game.PERSUADEE_INSTRUCTIONS  # many distinct tokens to repeat
    prompt = backend.encode(backend.render([{"role": "user", "content": text}]))
    gens = backend.generate_ids([prompt] * 400, max_new_tokens=1, temperature=1.0, seed=0)
    with torch.no_grad():
        logits = backend.model(torch.tensor([prompt])).logits[0, -1].float()
    logp = torch.log_softmax(logits, -1)
    for g in gens[:20]:  # the logged logprob is the policy's, softmax(logits / T)
        assert g.logprobs[0] == pytest.approx(logp[g.token_ids[0]].item(), abs=1e-4)
    seen = sorted(set(prompt))
    mass = logp.exp()[seen].sum().item()  # the policy's probability of repeating a prompt token
    hits = sum(g.token_ids[0] in seen for g in gens)
    assert mass > 0.2
    assert abs(hits - 400 * mass) < 5 * math.sqrt(400 * mass * (1 - mass)), (hits, 400 * mass)
    assert backend.model.generation_config.repetition_penalty == 50.0  # the model's own config is left as it was


def test_local_backends_never_download():
    from scope_envs.agents.llm import TransformersBackend, load_backend

    with pytest.raises(BackendError, match="never downloads"):
        TransformersBackend.from_path("Qwen/Qwen2.5-0.5B-Instruct")
    with pytest.raises(BackendError, match="never downloads"):
        load_backend("vllm:meta-llama/Llama-3.2-1B")


def test_vllm_backend_without_vllm_says_how_to_install(tiny_dir):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm is installed")
    except ImportError:
        pass
    from scope_envs.agents.llm import VLLMBackend

    with pytest.raises(BackendError, match=r"scope-envs\[vllm\]"):
        VLLMBackend(tiny_dir)


class _FakeLLM:
    """vLLM's offline ``LLM`` as far as VLLMBackend's construction and weight sync touch it: it seeds the
    process's generators from its seed, as vLLM's set_random_seed does, and its ``reset_prefix_cache``
    answers False (requests still running) when told to."""

    instances = []

    def __init__(self, **kwargs):
        import random

        import torch

        self.kwargs, self.reset_ok = kwargs, True
        torch.manual_seed(kwargs.get("seed", 0))
        np.random.seed(kwargs.get("seed", 0))
        random.seed(kwargs.get("seed", 0))
        _FakeLLM.instances.append(self)

    def get_tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.kwargs["tokenizer"], local_files_only=True)

    def reset_prefix_cache(self):
        return self.reset_ok

    def collective_rpc(self, fn):
        return None


@pytest.fixture
def fake_vllm(monkeypatch):
    import types

    module = types.ModuleType("vllm")
    module.LLM = _FakeLLM
    monkeypatch.setitem(sys.modules, "vllm", module)
    _FakeLLM.instances.clear()
    return _FakeLLM


def test_vllm_engine_keeps_the_trainers_generators_checks_its_cache_reset_and_lora_ranks(tiny_dir, fake_vllm,
                                                                                      tmp_path):
    """Issue 30, defect 10, against a stand-in for vLLM's LLM (vLLM needs CUDA)."""
    import random

    import torch

    from scope_envs.agents.llm import VLLMBackend
    from scope_envs.train.llm import ppo

    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    expected = (torch.rand(3).tolist(), np.random.rand(), random.random())
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    engine = VLLMBackend(tiny_dir, seed=0)
    assert (torch.rand(3).tolist(), np.random.rand(), random.random()) == expected  # not reseeded
    engine._engine_model = lambda: None
    fake_vllm.instances[-1].reset_ok = False
    with pytest.raises(BackendError, match="prefix cache"):
        engine.load_weights(torch.nn.Linear(2, 2))
    # the engines' memory share is an argument, LoRA ranks vLLM refuses are refused with the ones it takes
    cfg = ppo.Config(model=tiny_dir, engine="vllm", lora=True, lora_r=32, gpu_memory_fraction=0.55,
                     out=str(tmp_path), log=False)
    ppo.build_engines(cfg, ppo.build_learners(cfg))
    kwargs = fake_vllm.instances[-1].kwargs
    assert kwargs["gpu_memory_utilization"] == 0.55 and kwargs["max_lora_rank"] == 32
    for bad in (4, 24):
        with pytest.raises(ValueError, match=r"vLLM serves LoRA ranks \(1, 8, 16, 32"):
            ppo.Config(engine="vllm", lora=True, lora_r=bad)
    assert ppo.Config(engine="hf", lora=True, lora_r=4).lora_r == 4  # transformers takes any rank
    with pytest.raises(ValueError, match="gpu_memory_fraction"):
        ppo.Config(gpu_memory_fraction=1.5)


def test_openai_backend_sends_chat_and_retries_server_errors():
    server = ChatStandIn(fail_first=2)
    try:
        backend = OpenAIBackend(server.url, "my-model", timeout=5, retries=3, backoff=0.01, api_key="")
        msgs = [{"role": "user", "content": "hello"}]
        (g,) = backend.chat([msgs], max_new_tokens=7, temperature=0.5, seed=11)
        assert g.text == "Hi! [DONATE $1]"
        assert len(server.requests) == 3  # two 500s, then the answer
        path, body = server.requests[-1]
        assert path == "/v1/chat/completions"
        assert body["model"] == "my-model" and body["messages"] == msgs
        assert body["max_tokens"] == 7 and body["temperature"] == 0.5 and body["seed"] == 11
    finally:
        server.close()


def test_openai_backend_unreachable_is_a_clear_error():
    import socket

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIBackend(f"http://127.0.0.1:{port}/v1", "m", timeout=1, retries=1, backoff=0.01)
    with pytest.raises(BackendError, match=r"could not reach .* after 2 tries.*Is the server running"):
        backend.chat([[{"role": "user", "content": "hi"}]])


# ----------------------------------------------------------------------------- players
def _scripted_persuader(env, texts=("Hello! Would you like to donate to Save the Children?",
                                    "Even a small amount helps. How much would you like to donate?")):
    obs, infos = env.reset(seed=1)
    i, last = 0, infos
    while env.agents:
        obs, rew, term, trunc, last = env.step({"agent_0": texts[min(i, len(texts) - 1)]})
        i += 1
    return rew, last


def test_llm_player_in_the_user_seat_gets_persona_card_and_history():
    backend = ScriptedBackend(replies=["Hi, what does the charity do?", "Okay, I'll give some. [DONATE $0.75] Bye!"])
    env = scope_envs.make("p4g-frozen", surface="text", user=LLMPlayer(backend), max_turns=3)
    rew, infos = _scripted_persuader(env)
    assert rew["agent_0"] == pytest.approx(0.75)
    first, second = backend.calls[0], backend.calls[1]
    assert first[0]["role"] == "system" and first[0]["content"].startswith(USER_GUIDELINES)
    assert "[DONATE $N]" in first[0]["content"] and "Personality" in first[0]["content"]  # task and persona card
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]  # its own turn is assistant
    assert second[2]["content"] == "Hi, what does the charity do?"


def test_llm_player_errors_are_shown_back_to_it():
    backend = ScriptedBackend(replies=["[DONATE $9]", "Fine. [DONATE $0.25] Bye."])
    env = scope_envs.make("p4g-frozen", surface="text", user=LLMPlayer(backend), max_turns=1)
    rew, infos = _scripted_persuader(env)
    assert infos["agent_0"]["simulator_errors"] == 1 and rew["agent_0"] == pytest.approx(0.25)
    assert "at most $2.00" in backend.calls[1][-1]["content"]


def test_tiny_llm_user_plays_an_episode_without_crashing(tiny_dir):
    from scope_envs.agents.llm import TransformersBackend

    player = LLMPlayer(TransformersBackend.from_path(tiny_dir), max_new_tokens=8)
    env = scope_envs.make("p4g-frozen", surface="text", user=player, max_turns=2)
    rew, infos = _scripted_persuader(env)
    assert set(rew) == {"agent_0"} and math.isfinite(rew["agent_0"])


def test_llm_player_in_the_agent_seat():
    backend = ScriptedBackend(replies=["Would you donate to Save the Children?"])
    player = LLMPlayer(backend)
    env = scope_envs.make("p4g-frozen", surface="text", max_turns=1)
    obs, infos = env.reset(seed=0)
    text = player(obs["agent_0"], infos["agent_0"])
    assert text == "Would you donate to Save the Children?"
    assert "persuader" in backend.calls[0][0]["content"]
    env.step({"agent_0": text})


VS_JSON = '```json\n{"responses": [{"text": "No thanks. [DONATE $0]", "probability": "70%"},\n' \
          '{"text": "Sure! [DONATE $2] Bye!", "probability": 30},]}\n```'


def test_vs_with_an_llm_user_samples_from_its_list():
    backend = ScriptedBackend(replies=["Goodbye. [DONATE $0.10]"], lists=VS_JSON)
    env = scope_envs.make("p4g-vs", surface="text", user=LLMPlayer(backend), k=2, max_turns=1)
    gifts = []
    for seed in range(20):
        env.reset(seed=seed)
        _, rew, _, _, infos = env.step({"agent_0": "Would you like to donate to Save the Children?"})
        info = infos["agent_0"]
        assert info["vs_fallback"] == 0
        assert info["vs_texts"] == ["No thanks. [DONATE $0]", "Sure! [DONATE $2] Bye!"]
        assert info["vs_probs"][:2] == pytest.approx([0.7, 0.3])
        gifts.append(rew["agent_0"])
    assert set(gifts) == {0.0, 2.0}  # both candidates drawn, never the direct reply
    assert "probability" in backend.calls[0][-1]["content"]


def test_vs_falls_back_to_a_direct_reply_when_the_list_is_unreadable():
    backend = ScriptedBackend(replies=["Goodbye. [DONATE $0.10]"], lists="I would say something nice.")
    env = scope_envs.make("p4g-vs", surface="text", user=LLMPlayer(backend), k=3, max_turns=1)
    env.reset(seed=0)
    _, rew, _, _, infos = env.step({"agent_0": "Would you like to donate?"})
    assert infos["agent_0"]["vs_fallback"] == 1 and rew["agent_0"] == pytest.approx(0.10)


def test_docs_name_the_vs_keys_an_llm_user_leaves_in_infos():
    """docs/llm.md's verbalized-sampling paragraph names exactly the keys found in ``infos["agent_0"]``: a list
    read (``vs_texts`` then too) and a fallback (a 0/1 flag per step, not a count)."""
    import re
    from pathlib import Path

    keys = set()
    for lists in (VS_JSON, "I would say something nice."):
        env = scope_envs.make("p4g-vs", surface="text", user=LLMPlayer(ScriptedBackend(lists=lists)), k=2,
                              max_turns=1)
        env.reset(seed=0)
        _, _, _, _, infos = env.step({"agent_0": "Would you like to donate?"})
        assert set(infos) == {"agent_0"} and infos["agent_0"]["vs_fallback"] in (0, 1)
        keys |= {k for k in infos["agent_0"] if k.startswith("vs_")}
    text = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    paragraph = re.search(r"\*\*Verbalized sampling for LLM users\.\*\*(.*)", text).group(1)
    assert set(re.findall(r"`(vs_\w+)`", paragraph)) - {"vs_fallback_rate"} == keys  # (the trainer's metric)
    assert 'infos["agent_0"]' in paragraph and 'infos["vs_' not in paragraph


# ----------------------------------------------------------------------------- the parser
@pytest.mark.parametrize("text, expected", [
    ('{"responses": [{"text": "a", "probability": 0.2}, {"text": "b", "probability": 0.8}]}', [("a", .2), ("b", .8)]),
    ('Here you go:\n```json\n[{"text": "a", "probability": 0.5}, {"text": "b", "probability": 0.5},]\n```', [("a", .5), ("b", .5)]),
    ('{"responses": [{"text": "a", "probability": "25%"}, {"text": "b", "probability": "75 %"}]}', [("a", .25), ("b", .75)]),
    ('{"responses": [{"text": "a", "probability": 30}, {"text": "b", "probability": 70}]}', [("a", .3), ("b", .7)]),
    ('{"responses": [{"text": "a", "probability": -1}, {"text": "b", "probability": 0.4}]}', [("b", 1.0)]),
    ('{"responses": [{"text": "a", "probability": NaN}, {"text": "b", "probability": 0.5}]}', [("b", 1.0)]),
    ('{"responses": [{"text": "a"}, {"text": "b"}]}', [("a", .5), ("b", .5)]),
    ('{"responses": [{"text": "a", "probability": 0}, {"text": "b", "probability": 0}]}', [("a", .5), ("b", .5)]),
    ("[{'response': 'a', 'prob': 0.1}, {'response': 'b', 'prob': 0.3}]", [("a", .25), ("b", .75)]),
    ('[["a", 0.6], ["b", 0.4]]', [("a", .6), ("b", .4)]),
    ('<response><text>a</text><probability>0.9</probability></response>'
     '<response><text> b </text><probability>0.1</probability></response>', [("a", .9), ("b", .1)]),
    ('{"responses": [{"text": "a", "probability": 0.2}, {"text": "a", "probability": 0.2}, {"text": "", "probability": 0.6}]}',
     [("a", 1.0)]),
    ("no list here", []),
    ('{"responses": []}', []),
    ("", []),
    ('{"responses": [{"text": "a", "probability": 0.5}', []),  # truncated mid-answer
])
def test_parse_verbalized_repairs(text, expected):
    got = parse_verbalized(text)
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [p for _, p in got] == pytest.approx([p for _, p in expected])


_LIST = '{"responses": [{"text": "Sure!", "probability": 0.6}, {"text": "No.", "probability": 0.4}]}'


@pytest.mark.parametrize("text", [
    f"Here are my options [as requested]:\n{_LIST}",  # brackets in the prose before the JSON
    f"{_LIST}\nHope that helps :}}",  # a closing brace in the trailing prose
    f'<think>The format is {{"responses": [...]}}, so I pick {{one}}.</think>\n{_LIST}',  # a reasoning block
    f"<think>\nI need {{k}} [replies].\n</think>\n\nSure [ok]! {_LIST} :]",  # all three
    f"Let me think about {{this}}.\n</think>\n{_LIST}",  # a template that prefilled <think>
])
def test_parse_verbalized_reads_what_chatty_and_reasoning_models_emit(text):
    """Issue 30, defect 8: each of these fell back to a direct reply."""
    assert parse_verbalized(text) == [("Sure!", pytest.approx(0.6)), ("No.", pytest.approx(0.4))]


def test_parse_verbalized_tau_floor_keeps_survivors():
    text = json.dumps({"responses": [{"text": f"r{i}", "probability": p} for i, p in enumerate([0.6, 0.3, 0.06, 0.04])]})
    got = parse_verbalized(text, tau=0.1)
    assert [t for t, _ in got] == ["r0", "r1"] and sum(p for _, p in got) == pytest.approx(1)
    got = parse_verbalized(text, tau=0.9, min_survivors=3)
    assert [t for t, _ in got] == ["r0", "r1", "r2"]


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_verbalized_never_raises_and_returns_a_distribution(text):
    got = parse_verbalized(text)
    if got:
        assert all(isinstance(t, str) and t.strip() == t and t for t, _ in got)
        assert all(math.isfinite(p) and 0 < p <= 1 for _, p in got)
        assert sum(p for _, p in got) == pytest.approx(1)


def test_trailing_comma_repair_leaves_strings_alone():
    """A reply may itself end in ",}": only a comma before a closing bracket *outside* a string is dropped."""
    body = json.dumps({"responses": [{"text": ",}", "probability": 0.5}, {"text": 'a ",]', "probability": 0.5}]})
    assert parse_verbalized(body[:-2] + ",]}") == [(",}", 0.5), ('a ",]', 0.5)]


_reply = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
    lambda s: s.strip() == s and s)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)  # the same examples in every CI run
@given(st.lists(st.tuples(_reply, st.floats(0.01, 1.0)), min_size=1, max_size=6, unique_by=lambda x: x[0]),
       st.sampled_from(["plain", "percent", "scaled", "fence", "comma", "prose"]))
def test_parse_verbalized_recovers_malformed_lists(items, damage):
    total = sum(p for _, p in items)
    expected = [(t, p / total) for t, p in items]
    if damage == "percent":
        entries = [{"text": t, "probability": f"{100 * p:.6f}%"} for t, p in items]
    elif damage == "scaled":  # a 0-100 scale
        entries = [{"text": t, "probability": 100 * p} for t, p in items]
    else:
        entries = [{"text": t, "probability": p} for t, p in items]
    body = json.dumps({"responses": entries})
    if damage == "fence":
        body = f"```json\n{body}\n```"
    elif damage == "comma":
        body = body[:-2] + ",]}"
    elif damage == "prose":
        body = f"Sure! Here are my options:\n{body}\nHope that helps."
    got = parse_verbalized(body)
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [p for _, p in got] == pytest.approx([p for _, p in expected], rel=1e-4)


# ----------------------------------------------------------------------------- the trainer
def _cfg(tmp_path, **kw):
    from scope_envs.train.llm import ppo

    base = dict(model=tiny_model_dir(), out=str(tmp_path), log=False, updates=1, groups=2, group_size=1,
                max_new_tokens=6, lr=1e-3)
    base.update(kw)
    return ppo.Config(**base)


def test_rollout_loss_mask_covers_exactly_the_persuaders_tokens(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-frozen", env_kwargs={"max_turns": 3}, groups=3, group_size=1, max_new_tokens=10)
    learners = ppo.build_learners(cfg)
    ppo.build_engines(cfg, learners)
    # record what the env was sent and what it kept
    sent, kept = [], []
    base_factory = ppo.make_env_factory(cfg)

    def make_env():
        env = base_factory()
        step = env.step

        def recording_step(actions):
            sent.append((id(env), actions["agent_0"]))
            out = step(actions)
            kept.append((id(env), [t.text for t in env.unwrapped.game.history if t.role == "persuader"]))
            return out

        env.step = recording_step
        return env

    envs = [make_env() for _ in range(3)]
    traces, stats = ppo.rollout(cfg, envs, learners, seed=5, rng=np.random.default_rng(0))
    tok = learners["agent"].tokenizer
    by_env, kept_by_env = {}, dict(kept)
    for e, text in sent:
        by_env.setdefault(e, []).append(text)
    assert len(traces) == 3 and all(t.agent == "agent_0" for t in traces)
    for trace in traces:
        mask = np.array(trace.mask)
        runs = np.split(np.arange(len(mask)), np.flatnonzero(np.diff(mask)) + 1)
        own = [r for r in runs if mask[r[0]] == 1]
        assert len(own) == trace.turns >= 1
        for r in own:  # each run of mask 1 is one sampled turn, and only sampled tokens carry a logprob
            assert all(trace.logprobs[i] < 0 for i in r)
        assert all(trace.logprobs[i] == 0 for i in np.flatnonzero(mask == 0))
        texts = [tok.decode([trace.ids[i] for i in r], skip_special_tokens=True) for r in own]
        # the decoded mask-1 runs are exactly the messages this persuader sent, in order, and the env kept them
        matches = [e for e in by_env if by_env[e] == texts]
        assert len(matches) >= 1
        # (a random tiny model also writes control bytes: the env refuses those messages as not printable text)
        assert kept_by_env[matches[0]] == [t.strip() for t in texts if readable(t)]
        # and nothing the persuadee said is under the mask
        ctx = tok.decode([t for t, m in zip(trace.ids, trace.mask) if m == 0])
        assert "<|im_start|>system" in ctx and ctx.count("<|im_start|>user") >= trace.turns - 1
    # logprobs recomputed by the trainer match the generation's
    recomputed = ppo.recompute_logprobs(learners["agent"], traces, cfg.temperature)
    for trace, lp in zip(traces, recomputed):
        gen = [p for p, m in zip(trace.logprobs, trace.mask) if m][: len(lp)]
        assert len(lp) == sum(trace.mask) - (1 if trace.mask[0] else 0)
        assert np.allclose(lp, gen, atol=1e-4)


def test_gae_runs_over_trained_tokens_only():
    import torch

    from scope_envs.train.llm.ppo import token_gae

    mask = torch.tensor([[0, 1, 1, 0, 0, 1, 0]], dtype=torch.float32)
    rewards = torch.tensor([[9, 0, 1, 9, 9, 2, 9]], dtype=torch.float32)  # 9s sit on untrained tokens
    adv, ret = token_gae(rewards, torch.zeros_like(rewards), mask, gamma=1.0, lam=1.0)
    assert adv[0].tolist() == [0, 3, 3, 0, 0, 2, 0]


def test_kl_estimators_and_adaptive_coefficient():
    import torch

    from scope_envs.train.llm.ppo import KLController, kl_estimate

    logp, ref = torch.tensor([-1.0, -2.0, -0.5]), torch.tensor([-1.5, -1.0, -0.5])
    assert kl_estimate(logp, ref, "k1").tolist() == pytest.approx([0.5, -1.0, 0.0])
    assert (kl_estimate(logp, ref, "k3") >= 0).all() and kl_estimate(logp, ref, "k3")[2] == 0
    ctl = KLController(0.1, target=0.05, horizon=100)
    ctl.update(0.5, n_steps=10)
    assert ctl.coef > 0.1
    ctl2 = KLController(0.1, target=None, horizon=100)
    ctl2.update(0.5, n_steps=10)
    assert ctl2.coef == 0.1


def _snapshot(params):
    return [p.detach().clone() for p in params]


def _changed(before, params):
    return any(not np.allclose(a.numpy(), b.detach().numpy()) for a, b in zip(before, params))


def test_cotraining_updates_both_models(tmp_path, tiny_dir, monkeypatch):
    from llm_fixtures import ScriptedEngine

    from scope_envs.train.llm import ppo

    build_engines = ppo.build_engines

    def engines(cfg, learners):  # a user that gives $2 in one episode and nothing in the other: a signal for both
        build_engines(cfg, learners)
        learners["user"].engine = ScriptedEngine(learners["user"].tokenizer, ["[DONATE $2] Goodbye!",
                                                                              "[DONATE $0] Goodbye!"])

    monkeypatch.setattr(ppo, "build_engines", engines)
    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", env_kwargs={"max_turns": 2}, updates=1)
    learners = ppo.build_learners(cfg)
    assert set(learners) == {"agent", "user"} and learners["agent"].model is not learners["user"].model
    before = {n: _snapshot(lr.model.parameters()) for n, lr in learners.items()}
    history = ppo.train(cfg, learners=learners)["history"]
    for name, lr in learners.items():
        assert _changed(before[name], lr.model.parameters()), name
        assert history[0][f"sequences/{name}"] == 2
    # a checkpoint holds both models, reloadable offline
    from transformers import AutoModelForCausalLM

    for name in ("agent", "user"):
        AutoModelForCausalLM.from_pretrained(tmp_path / "checkpoints" / "final" / name, local_files_only=True)


def test_population_keeps_k_distinct_lora_adapters(tmp_path, tiny_dir, monkeypatch):
    pytest.importorskip("peft")
    import torch
    from llm_fixtures import ScriptedEngine

    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-population", mode="members", members=2, lora=True, lora_r=4,
               env_kwargs={"max_turns": 2, "schedule": "round_robin"}, groups=2, group_size=1, updates=2, lr=1e-2)
    build_engines = ppo.build_engines

    def engines(cfg, learners):  # the users give $2 in one episode and nothing in the other: a signal for all
        build_engines(cfg, learners)
        script = ScriptedEngine(learners["agent"].tokenizer, {
            "agent": ["Hello, would you donate?"], **{f"user_{k}": ["[DONATE $2] Goodbye!", "[DONATE $0] Goodbye!"]
                                                     for k in range(2)}})
        for lr in learners.values():
            lr.engine = script

    monkeypatch.setattr(ppo, "build_engines", engines)
    learners = ppo.build_learners(cfg)
    assert set(learners) == {"agent", "user_0", "user_1"}
    model = learners["agent"].model
    assert all(lr.model is model for lr in learners.values())  # one base, K+1 adapters
    b_params = {n: [p for k, p in model.named_parameters() if f"lora_B.{n}." in k] for n in learners}
    assert all(len(v) > 0 for v in b_params.values())
    assert all(float(p.detach().abs().sum()) == 0 for v in b_params.values() for p in v)  # LoRA starts as the identity
    base_before = _snapshot(p for k, p in model.named_parameters() if "lora_" not in k)
    history = ppo.train(cfg, learners=learners)["history"]
    # round robin over persistent envs: user_0 plays in update 1, user_1 in update 2
    assert history[0]["sequences/user_0"] == 2 and history[1]["sequences/user_1"] == 2
    for n in learners:  # every adapter moved, the base did not
        assert any(float(p.detach().abs().sum()) > 0 for p in b_params[n]), n
    assert not _changed(base_before, [p for k, p in model.named_parameters() if "lora_" not in k])
    # the K user adapters are distinct policies
    ids = torch.tensor([learners["agent"].tokenizer("Hello there, would you donate?")["input_ids"]])
    outs = {}
    for n in ("user_0", "user_1"):
        model.set_adapter(n)
        with torch.no_grad():
            outs[n] = model(input_ids=ids).logits
    assert not torch.allclose(outs["user_0"], outs["user_1"])
    adapters = tmp_path / "checkpoints" / "final" / "adapters"
    assert {p.name for p in adapters.iterdir() if p.is_dir()} >= {"user_0", "user_1"}


def test_agent_against_a_frozen_llm_user(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-frozen", user_model=tiny_model_dir(), env_kwargs={"max_turns": 1}, updates=1)
    history = ppo.train(cfg)["history"]
    assert history[0]["sequences/agent"] == 2 and math.isfinite(history[0]["kl"])


def test_cli_train_llm(tmp_path, tiny_dir):
    from scope_envs.cli import main

    main(["train-llm", "--env", "llm-toy", "--model", tiny_dir, "--updates", "2", "--max-new-tokens", "4",
          "--groups", "2", "--group-size", "2", "--out", str(tmp_path), "--kl-estimator", "k3", "--kl-target", "0.1"])
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["kl_coef"] == 0.01  # PPO's default coefficient...
    assert json.loads(lines[1])["kl_coef"] != 0.01  # ...adapted
    config = json.loads((tmp_path / "checkpoints" / "final" / "config.json").read_text())
    assert (config["ppo_epochs"], config["minibatch"]) == (4, 8)  # the CLI leaves the defaults to Config


def test_cotraining_one_shared_model_plays_both_roles(tmp_path, tiny_dir):
    from scope_envs.train.llm import ppo

    cfg = _cfg(tmp_path, env="p4g-cotrain", mode="cotrain", shared=True, env_kwargs={"max_turns": 1}, updates=1)
    learners = ppo.build_learners(cfg)
    assert set(learners) == {"policy"} and learners["policy"].agents == {"agent_0", "user_0"}
    history = ppo.train(cfg, learners=learners)["history"]
    assert history[0]["sequences/policy"] == 4  # two episodes, one stream per role
    assert "group_reward_var/user" in history[0] and "group_reward_var/agent" in history[0]


# ----------------------------------------------------------------------------- docs/llm.md's LLM snippet
def test_docs_llm_snippet_runs_as_written(capsys):
    """docs/llm.md's LLM players snippet defines every name it uses and runs on a tiny model built on the spot."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    section = re.search(r"^## LLMs\n(.*?)(?=^## |\Z)", text, re.S | re.M).group(1)
    snippets = re.findall(r"```python\n(.*?)```", section, re.S)
    assert snippets, "docs/llm.md's LLMs section has no python snippet"
    for code in snippets:
        exec(compile(code, "docs/llm.md", "exec"), {"__name__": "docs"})
    assert "'role'" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the GPU check's script
@pytest.mark.parametrize("argv, why", [(["--updates", "0"], "argument --updates"),
                                       (["--paths", "ppo,sft"], "argument --paths"),
                                       ([], "no CUDA device")])
def test_the_gpu_check_refuses_bad_arguments_with_exit_2(argv, why):
    """benchmarks/llm_gpu.py (its --dry-run, the same code paths on CPU, is run by hand: 2 min of CPU)."""
    from pathlib import Path

    torch = pytest.importorskip("torch")
    if not argv and torch.cuda.is_available():
        pytest.skip("a GPU is here: the script would run")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "llm_gpu.py"
    done = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and why in done.stderr and "Traceback" not in done.stderr, done.stderr
