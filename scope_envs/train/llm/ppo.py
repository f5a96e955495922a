"""LLM-PPO on multi-turn text episodes: ``scope-envs train-llm``.

Reads top to bottom: config -> token traces -> learners -> rollout -> advantages -> update -> loop.

* Token-in-token-out: each trained agent's episode is one token stream. Its own
  turns are the sampled ids with their sampling logprobs (``loss_mask`` 1); the
  system prompt, the partner's turns and chat-template glue are tokenized from the
  env's messages (``loss_mask`` 0). Text is never re-tokenized to recover what was sampled.
* Rewards from the env land on the last token of the turn that earned them;
  a per-token KL penalty to a frozen reference (``k1`` or ``k3``; fixed or adaptive
  coefficient) is added; a value head on the last hidden state; GAE over the
  trained tokens; clipped policy and value losses; optional LoRA (``peft``).
* Modes: ``agent`` (train agent_0 against the env's user: its built-in simulator,
  or a frozen LLM user, verbalized-sampled under a ``-vs`` env), ``cotrain`` (agent
  and user, two models or ``shared`` one model with role prompts), ``population``
  (K user adapters on one base model; one is drawn per episode).
* Generation: ``transformers.generate`` (``engine="hf"``, CPU or GPU, on the very
  weights being trained) or vLLM (``engine="vllm"``, GPU; weights, or LoRA adapters,
  pushed into the engine after each update, prefix cache reset) — one code path.
* Output: ``out/metrics.jsonl`` (one line per update) and ``out/checkpoints/``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn


# ----------------------------------------------------------------------------- config
@dataclass
class Config:
    env: str = "p4g-frozen"  # a registered id (text surface) or "llm-toy"
    env_kwargs: dict = field(default_factory=dict)
    mode: str = "agent"  # agent | cotrain | population
    model: str = "tiny"  # a local model directory, or "tiny" (a random tiny Llama built on the spot)
    user_model: str | None = None  # agent mode: a frozen LLM user (directory or "tiny"); cotrain: the user's model
    shared: bool = False  # cotrain: one model plays both roles
    members: int = 2  # population size K
    lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    engine: str = "hf"  # hf | vllm
    device: str = "cpu"
    updates: int = 10
    groups: int = 4  # scenario seeds per update
    group_size: int = 2  # episodes per seed (in-group reward variance: the early sign of collapse)
    max_new_tokens: int = 32
    max_len: int = 2048  # an episode stops once its token stream would exceed this
    temperature: float = 1.0
    lr: float = 1e-4
    ppo_epochs: int = 2
    minibatch: int = 4  # sequences per gradient step
    clip: float = 0.2
    vf_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    gamma: float = 1.0
    lam: float = 0.95
    kl_coef: float = 0.05
    kl_estimator: str = "k1"  # k1 | k3
    kl_target: float | None = None  # set: adaptive coefficient (Ziegler et al. 2019)
    kl_horizon: int = 10000
    max_grad_norm: float = 1.0
    whiten: bool = True
    seed: int = 0
    out: str = "runs/llm"
    save_every: int = 0  # 0: only at the end
    log: bool = True

    def __post_init__(self):
        if self.mode not in ("agent", "cotrain", "population"):
            raise ValueError(f"mode must be agent, cotrain or population, got {self.mode!r}")
        if self.engine not in ("hf", "vllm"):
            raise ValueError(f"engine must be 'hf' or 'vllm', got {self.engine!r}")
        if self.kl_estimator not in ("k1", "k3"):
            raise ValueError(f"kl_estimator must be 'k1' or 'k3', got {self.kl_estimator!r}")


# ----------------------------------------------------------------------------- token traces
def assistant_suffix(tokenizer) -> str:
    """What the chat template writes after an assistant message's content (e.g. ``<|im_end|>\\n``)."""
    probe = "\x00PROBE\x00"
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}, {"role": "assistant", "content": probe}],
                                         tokenize=False)
    return text[text.rindex(probe) + len(probe):]


def render(tokenizer, messages, add_generation_prompt):
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


@dataclass
class Trace:
    """One trained agent's token stream through one episode."""

    agent: str
    learner: str
    group: int
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)  # 1 on tokens this agent sampled
    logprobs: list[float] = field(default_factory=list)  # sampling logprob where mask is 1
    rewards: list[float] = field(default_factory=list)  # env reward on the last token of the turn that earned it
    conversation: list[dict] = field(default_factory=list)  # messages already in ``ids``
    turns: int = 0
    episode_return: float = 0.0
    _pending: float = 0.0
    _last_reply: dict | None = None
    _last_turn_end: int = -1

    def _append(self, ids, mask, logprobs=None):
        self.ids += ids
        self.mask += [mask] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)
        self.rewards += [0.0] * len(ids)

    def prompt(self, tokenizer, messages: list[dict], errors: list[str]) -> list[int]:
        """Extend the stream with what happened since this agent's last turn; returns the full prompt ids."""
        if not self.ids:
            new_conv = [dict(m) for m in messages]
            self._append(_encode(tokenizer, render(tokenizer, new_conv, True)), 0)
        else:
            n = len(self.conversation)
            accepted = len(messages) > n and messages[n]["role"] == "assistant"
            new = [dict(m) for m in messages[n + 1:]] if accepted else [dict(m) for m in messages[n:]]
            if errors:
                new.append({"role": "user", "content": "Your last message could not be used: " + "; ".join(errors)})
            prev_conv = self.conversation + [self._last_reply]
            new_conv = _merge(prev_conv + new)
            prev_text = render(tokenizer, prev_conv, False)
            full = render(tokenizer, new_conv, True)
            if not full.startswith(prev_text):
                raise ValueError("the chat template is not prefix-preserving; multi-turn token traces need one that is")
            self._append(_encode(tokenizer, full[len(prev_text):]), 0)
        self.conversation = new_conv
        return list(self.ids)

    def add_turn(self, tokenizer, token_ids, logprobs, text, finished, suffix, stop_text):
        """Append a sampled turn (mask 1) and the template's closing glue (mask 0)."""
        self._append(list(token_ids), 1, list(logprobs))
        self.turns += 1
        self._last_reply = {"role": "assistant", "content": text}
        glue = suffix[len(stop_text):] if finished and suffix.startswith(stop_text) else suffix
        self._last_turn_end = len(self.ids) - 1
        if self._pending:
            self.add_reward(0.0)
        if glue:
            self._append(_encode(tokenizer, glue), 0)

    def add_reward(self, r: float):
        self.episode_return += r
        if self.turns == 0:  # before this agent's first turn: it goes on that turn
            self._pending += r
            return
        self.rewards[self._last_turn_end] += r + self._pending
        self._pending = 0.0


def _encode(tokenizer, text):
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def _merge(msgs):
    out = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"] and m["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + m["content"]}
        else:
            out.append(m)
    return out


def _errors(observation) -> list[str]:
    return [line[len("[error] "):] for line in str(observation).splitlines() if line.startswith("[error] ")]


# ----------------------------------------------------------------------------- models
def load_model(path: str, device: str, seed: int):
    """(model, tokenizer, local path) from a local directory; "tiny" builds a random tiny Llama first."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from scope_envs.agents.llm.backends import local_model_dir

    if path == "tiny":
        import tempfile

        from scope_envs.agents.llm.tiny import build_tiny_model

        path = tempfile.mkdtemp(prefix="scope-tiny-")
        build_tiny_model(path, seed=seed)
    p = local_model_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, dtype=torch.float32).to(device)
    return model, tokenizer, str(p)


@dataclass
class Learner:
    """A trained policy: a model (or one LoRA adapter of a shared base), its value head and optimizer."""

    name: str
    agents: set
    model: nn.Module
    tokenizer: object
    path: str  # the base model's directory
    adapter: str | None
    ref: nn.Module | None  # frozen reference (None with LoRA: the base with adapters disabled)
    value_head: nn.Module = None
    optimizer: torch.optim.Optimizer = None
    engine: object = None

    def activate(self):
        if self.adapter is not None:
            self.model.set_adapter(self.adapter)

    def params(self):
        if self.adapter is None:
            return [p for p in self.model.parameters() if p.requires_grad]
        return [p for n, p in self.model.named_parameters() if f".{self.adapter}." in n]


def build_learners(cfg: Config) -> dict[str, Learner]:
    """The learners of a mode, keyed by name; LoRA learners of one run share one base model."""
    if cfg.mode == "agent":
        specs = [("agent", {"agent_0"}, cfg.model)]
    elif cfg.mode == "cotrain":
        specs = ([("policy", {"agent_0", "user_0"}, cfg.model)] if cfg.shared else
                 [("agent", {"agent_0"}, cfg.model), ("user", {"user_0"}, cfg.user_model or cfg.model)])
    else:
        specs = [("agent", {"agent_0"}, cfg.model)] + [(f"user_{k}", {f"user_{k}"}, cfg.user_model or cfg.model)
                                                       for k in range(cfg.members)]
    learners = {}
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        if len({s[2] for s in specs}) > 1:
            raise ValueError("with LoRA every learner shares one base model: pass no separate user_model")
        base, tokenizer, path = load_model(cfg.model, cfg.device, cfg.seed)
        lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, task_type="CAUSAL_LM")
        model = None
        for i, (name, agents, _) in enumerate(specs):
            torch.manual_seed(cfg.seed + i)  # distinct initial A matrices per adapter
            if model is None:
                model = get_peft_model(base, lcfg, adapter_name=name)
            else:
                model.add_adapter(name, lcfg)
            learners[name] = Learner(name, agents, model, tokenizer, path, name, None)
    else:
        loaded = {}
        for i, (name, agents, path) in enumerate(specs):
            model, tokenizer, local = load_model(path, cfg.device, cfg.seed + i)
            ref = copy.deepcopy(model).eval().requires_grad_(False)
            loaded[name] = (model, tokenizer, local, ref)
            learners[name] = Learner(name, agents, model, tokenizer, local, None, ref)
    for i, learner in enumerate(learners.values()):
        hidden = learner.model.config.hidden_size
        torch.manual_seed(cfg.seed + 100 + i)
        learner.value_head = nn.Linear(hidden, 1).to(cfg.device)
        nn.init.zeros_(learner.value_head.weight)
        nn.init.zeros_(learner.value_head.bias)
        learner.activate()
        learner.optimizer = torch.optim.AdamW(learner.params() + list(learner.value_head.parameters()), lr=cfg.lr,
                                              weight_decay=0.0)
    return learners


def build_engines(cfg: Config, learners: dict[str, Learner]) -> None:
    """One generation engine per distinct model: transformers on the live weights, or vLLM."""
    from scope_envs.agents.llm.backends import TransformersBackend, VLLMBackend

    engines = {}
    for learner in learners.values():
        key = id(learner.model)
        if key not in engines:
            if cfg.engine == "hf":
                engines[key] = TransformersBackend(learner.model, learner.tokenizer)
            else:
                engines[key] = VLLMBackend(learner.path, enable_lora=cfg.lora, max_loras=max(len(learners), 1))
        learner.engine = engines[key]


def sync_engines(cfg: Config, learners: dict[str, Learner], scratch: Path) -> None:
    """After an update: vLLM gets the new weights (or adapters); transformers already generates with them."""
    if cfg.engine == "hf":
        return
    for learner in learners.values():
        if cfg.lora:
            d = scratch / "vllm_lora" / learner.name
            learner.model.save_pretrained(str(d), selected_adapters=[learner.adapter])
            learner.engine.set_adapter_path(learner.adapter, d / learner.adapter if (d / learner.adapter).exists() else d)
        else:
            learner.engine.load_weights(learner.model)


# ----------------------------------------------------------------------------- environments
def make_env_factory(cfg: Config, user_player=None) -> Callable:
    import scope_envs
    from scope_envs.agents.llm.toy import make_toy_env

    if cfg.env == "llm-toy":
        return lambda: make_toy_env(**cfg.env_kwargs)
    kwargs = dict(cfg.env_kwargs)
    if cfg.mode == "population":
        kwargs.setdefault("members", cfg.members)
    if user_player is not None:
        kwargs["user"] = user_player
    return lambda: scope_envs.make(cfg.env, surface="text", **kwargs)


def frozen_user(cfg: Config):
    """Agent mode with ``user_model``: a frozen LLM user (``LLMPlayer``) in the env's user seat."""
    if cfg.mode != "agent" or cfg.user_model is None:
        return None
    from scope_envs.agents.llm.backends import TransformersBackend
    from scope_envs.agents.llm.player import LLMPlayer

    model, tokenizer, _ = load_model(cfg.user_model, cfg.device, cfg.seed + 7)
    return LLMPlayer(TransformersBackend(model.eval(), tokenizer), max_new_tokens=cfg.max_new_tokens)


# ----------------------------------------------------------------------------- rollout
def rollout(cfg: Config, envs: list, learners: dict[str, Learner], seed: int, rng: np.random.Generator):
    """One episode in each of ``envs`` (``groups * group_size`` of them, kept across updates so that
    population schedules go on), stepped together; returns the traces and rollout stats."""
    by_agent = {a: lr for lr in learners.values() for a in lr.agents}
    tok = next(iter(learners.values())).tokenizer
    suffix = assistant_suffix(tok)
    stop_text = tok.eos_token or ""
    episodes = []
    for i, env in enumerate(envs):
        g = i // cfg.group_size
        obs, infos = env.reset(seed=seed + g)  # a group shares its scenario (persona, task)
        episodes.append({"env": env, "obs": obs, "infos": infos, "traces": {}, "group": g})
    gen_tokens, gen_time = 0, 0.0
    while True:
        live = [e for e in episodes if e["env"].agents and not e.get("cut")]
        if not live:
            break
        requests = defaultdict(list)  # learner name -> [(episode, agent, trace, prompt)]
        for e in live:
            env, infos = e["env"], e["infos"]
            speaker = next((a for a in env.agents if infos[a].get("active")), None)
            if speaker is None or speaker not in by_agent:
                raise ValueError(f"no trained learner plays the speaking agent {speaker!r} of {cfg.env}")
            learner = by_agent[speaker]
            trace = e["traces"].setdefault(speaker, Trace(speaker, learner.name, e["group"]))
            prompt = trace.prompt(tok, infos[speaker]["messages"], _errors(e["obs"][speaker]))
            if len(prompt) + cfg.max_new_tokens > cfg.max_len:
                e["cut"] = True
                continue
            requests[learner.name].append((e, speaker, trace, prompt))
        actions = defaultdict(dict)
        for name, reqs in requests.items():
            learner = learners[name]
            t0 = time.perf_counter()
            gens = learner.engine.generate_ids([r[3] for r in reqs], max_new_tokens=cfg.max_new_tokens,
                                               temperature=cfg.temperature, adapter=learner.adapter,
                                               seed=int(rng.integers(2**31 - 1)))
            gen_time += time.perf_counter() - t0
            for (e, speaker, trace, _), gen in zip(reqs, gens):
                trace.add_turn(tok, gen.token_ids, gen.logprobs, gen.text, gen.finished, suffix, stop_text)
                gen_tokens += len(gen.token_ids)
                actions[id(e)][speaker] = gen.text
        for e in live:
            if e.get("cut"):  # its token stream outgrew max_len: the episode stops here
                continue
            obs, rew, term, trunc, infos = e["env"].step(actions[id(e)])
            e["obs"], e["infos"] = obs, infos
            for agent, r in rew.items():
                if agent in e["traces"]:
                    e["traces"][agent].add_reward(float(r))
            if not e["env"].agents:
                e["outcome"] = {k: v for k, v in infos.get("agent_0", {}).items() if isinstance(v, float)}
    traces = [t for e in episodes for t in e["traces"].values() if t.turns > 0]
    returns = defaultdict(lambda: defaultdict(list))
    for t in traces:
        returns[t.agent.split("_")[0]][t.group].append(t.episode_return)
    group_var = {role: float(np.mean([np.var(v) for v in groups.values()])) for role, groups in returns.items()}
    stats = {"gen_tokens": gen_tokens, "gen_time": gen_time, "group_var": group_var,
             "cut": sum(1 for e in episodes if e.get("cut")), "episodes": len(episodes)}
    return traces, stats


# ----------------------------------------------------------------------------- the update
def batch_tensors(traces: list[Trace], pad_id: int, device):
    width = max(len(t.ids) for t in traces)
    out = {k: torch.zeros(len(traces), width, dtype=d) for k, d in
           (("ids", torch.long), ("attn", torch.long), ("mask", torch.float32), ("logprobs", torch.float32),
            ("rewards", torch.float32))}
    out["ids"].fill_(pad_id)
    for i, t in enumerate(traces):  # right padding: positions as in generation
        n = len(t.ids)
        out["ids"][i, :n] = torch.tensor(t.ids)
        out["attn"][i, :n] = 1
        out["mask"][i, :n] = torch.tensor(t.mask, dtype=torch.float32)
        out["logprobs"][i, :n] = torch.tensor(t.logprobs)
        out["rewards"][i, :n] = torch.tensor(t.rewards)
    # action at position t is predicted from position t-1: shift everything by one
    return {"ids": out["ids"].to(device), "attn": out["attn"].to(device), "mask": out["mask"][:, 1:].to(device),
            "old_logprobs": out["logprobs"][:, 1:].to(device), "env_rewards": out["rewards"][:, 1:].to(device)}


def forward(model, value_head, ids, attn, temperature):
    """Per-position logprob of the next token, value, and entropy (all of length T-1)."""
    out = model(input_ids=ids, attention_mask=attn, output_hidden_states=True)
    logits = out.logits[:, :-1].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    token_logp = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    values = value_head(out.hidden_states[-1][:, :-1].float()).squeeze(-1) if value_head is not None else None
    return token_logp, values, entropy


def recompute_logprobs(learner: Learner, traces: list[Trace], temperature: float) -> list[list[float]]:
    """The trainer's logprobs of each trace's sampled tokens (to compare with the generation's)."""
    b = batch_tensors(traces, _pad_id(learner.tokenizer), next(learner.model.parameters()).device)
    learner.activate()
    with torch.no_grad():
        logp, _, _ = forward(learner.model, None, b["ids"], b["attn"], temperature)
    return [logp[i][b["mask"][i] > 0].tolist() for i in range(len(traces))]


def _pad_id(tokenizer):
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def kl_estimate(logp, ref_logp, estimator):
    log_ratio = logp - ref_logp
    if estimator == "k1":
        return log_ratio
    return torch.exp(-log_ratio) - 1 + log_ratio  # k3: unbiased, non-negative


def gae(rewards, values, mask, gamma, lam):
    """GAE over each row's masked positions only (the trained tokens), bootstrapping 0 at the end."""
    adv = torch.zeros_like(rewards)
    for i in range(rewards.shape[0]):
        idx = torch.nonzero(mask[i] > 0).squeeze(-1)
        last = 0.0
        for k in range(len(idx) - 1, -1, -1):
            t = idx[k]
            next_v = values[i, idx[k + 1]] if k + 1 < len(idx) else 0.0
            delta = rewards[i, t] + gamma * next_v - values[i, t]
            last = delta + gamma * lam * last
            adv[i, t] = last
    return adv, adv + values


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1)


def ppo_update(cfg: Config, learner: Learner, traces: list[Trace], kl_coef: float) -> dict:
    model, device = learner.model, next(learner.model.parameters()).device
    learner.activate()
    b = batch_tensors(traces, _pad_id(learner.tokenizer), device)
    mask = b["mask"]
    with torch.no_grad():
        logp_now, values, _ = forward(model, learner.value_head, b["ids"], b["attn"], cfg.temperature)
        if learner.ref is None:
            with model.disable_adapter():
                ref_logp, _, _ = forward(model, None, b["ids"], b["attn"], cfg.temperature)
        else:
            ref_logp, _, _ = forward(learner.ref, None, b["ids"], b["attn"], cfg.temperature)
        old_logp = b["old_logprobs"]
        kl = kl_estimate(old_logp, ref_logp, cfg.kl_estimator) * mask
        rewards = b["env_rewards"] - kl_coef * kl
        values = values * mask
        adv, returns = gae(rewards, values, mask, cfg.gamma, cfg.lam)
        if cfg.whiten and mask.sum() > 1:
            mu, var = masked_mean(adv, mask), masked_mean((adv - masked_mean(adv, mask)) ** 2, mask)
            adv = (adv - mu) * torch.rsqrt(var + 1e-8) * mask
        logprob_gap = masked_mean((logp_now - old_logp).abs(), mask).item()
        k1 = masked_mean(kl_estimate(old_logp, ref_logp, "k1"), mask).item()
        k3 = masked_mean(kl_estimate(old_logp, ref_logp, "k3"), mask).item()
    stats = defaultdict(list)
    n = len(traces)
    for _ in range(cfg.ppo_epochs):
        order = torch.randperm(n)
        for start in range(0, n, cfg.minibatch):
            mb = order[start:start + cfg.minibatch]
            m = mask[mb]
            if m.sum() == 0:
                continue
            new_logp, new_v, entropy = forward(model, learner.value_head, b["ids"][mb], b["attn"][mb], cfg.temperature)
            ratio = torch.exp(new_logp - old_logp[mb])
            a = adv[mb]
            pg = masked_mean(torch.max(-a * ratio, -a * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)), m)
            v_clipped = values[mb] + (new_v - values[mb]).clamp(-cfg.vf_clip, cfg.vf_clip)
            vf = 0.5 * masked_mean(torch.max((new_v - returns[mb]) ** 2, (v_clipped - returns[mb]) ** 2), m)
            ent = masked_mean(entropy, m)
            loss = pg + cfg.vf_coef * vf - cfg.ent_coef * ent
            learner.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(learner.params() + list(learner.value_head.parameters()), cfg.max_grad_norm)
            learner.optimizer.step()
            stats["pg_loss"].append(pg.item())
            stats["vf_loss"].append(vf.item())
            stats["entropy"].append(ent.item())
            stats["clipfrac"].append(masked_mean(((ratio - 1).abs() > cfg.clip).float(), m).item())
            stats["approx_kl_old"].append(masked_mean(old_logp[mb] - new_logp, m).item())
    out = {k: float(np.mean(v)) for k, v in stats.items()}
    out.update(kl_k1=k1, kl_k3=k3, kl=k1 if cfg.kl_estimator == "k1" else k3, logprob_gap=logprob_gap,
               reward=float(np.mean([t.episode_return for t in traces])), sequences=n,
               tokens=int(mask.sum().item()))
    return out


class KLController:
    """Fixed coefficient, or adaptive toward ``target`` (Ziegler et al. 2019)."""

    def __init__(self, coef: float, target: float | None, horizon: int):
        self.coef, self.target, self.horizon = coef, target, horizon

    def update(self, kl: float, n_steps: int):
        if self.target is None or not np.isfinite(kl):
            return
        error = float(np.clip(kl / self.target - 1, -0.2, 0.2))
        self.coef *= 1 + error * n_steps / self.horizon


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(cfg: Config, learners: dict[str, Learner], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    saved_models = set()
    for learner in learners.values():
        d = directory / learner.name
        if learner.adapter is not None:
            learner.model.save_pretrained(str(directory / "adapters"), selected_adapters=[learner.adapter])
        elif id(learner.model) not in saved_models:
            learner.model.save_pretrained(str(d))
            learner.tokenizer.save_pretrained(str(d))
            saved_models.add(id(learner.model))
        d.mkdir(parents=True, exist_ok=True)
        torch.save(learner.value_head.state_dict(), d / "value_head.pt")
    (directory / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))


# ----------------------------------------------------------------------------- the loop
def train(cfg: Config, make_env: Callable | None = None, learners: dict[str, Learner] | None = None) -> dict:
    """Run ``cfg.updates`` PPO updates; returns ``{"learners", "history"}`` (history: the JSONL lines)."""
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    learners = learners or build_learners(cfg)
    build_engines(cfg, learners)
    sync_engines(cfg, learners, out)  # vLLM: register the LoRA adapters before the first rollout
    make_env = make_env or make_env_factory(cfg, frozen_user(cfg))
    envs = [make_env() for _ in range(cfg.groups * cfg.group_size)]
    kl_ctl = KLController(cfg.kl_coef, cfg.kl_target, cfg.kl_horizon)
    history = []
    metrics_path = out / "metrics.jsonl"
    metrics_path.write_text("")
    for update in range(1, cfg.updates + 1):
        t0 = time.perf_counter()
        traces, rs = rollout(cfg, envs, learners, seed=cfg.seed * 100003 + update * 1009, rng=rng)
        t_roll = time.perf_counter() - t0
        row = {"update": update, "episodes": rs["episodes"], "cut_episodes": rs["cut"], "kl_coef": kl_ctl.coef,
               "tokens_per_s": rs["gen_tokens"] / max(rs["gen_time"], 1e-9), "gen_tokens": rs["gen_tokens"],
               "time_rollout": t_roll}
        row.update({f"group_reward_var/{role}": v for role, v in rs["group_var"].items()})
        t1 = time.perf_counter()
        kls = []
        for learner in learners.values():
            mine = [t for t in traces if t.learner == learner.name]
            if not mine:
                continue
            s = ppo_update(cfg, learner, mine, kl_ctl.coef)
            kls.append((s["kl"], s["tokens"]))
            row.update({f"{k}/{learner.name}": v for k, v in s.items()})
        row["time_update"] = time.perf_counter() - t1
        agent_returns = [t.episode_return for t in traces if t.agent == "agent_0"]
        row["reward_mean"] = float(np.mean(agent_returns)) if agent_returns else float("nan")
        if kls:
            kl = sum(k * n for k, n in kls) / max(sum(n for _, n in kls), 1)
            row["kl"] = kl
            kl_ctl.update(kl, rs["episodes"])
        sync_engines(cfg, learners, out)
        history.append(row)
        with metrics_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if cfg.log:
            print(f"update {update:>4}  reward {row['reward_mean']:+.4f}  kl {row.get('kl', float('nan')):.4f}  "
                  f"tok/s {row['tokens_per_s']:.0f}  rollout {t_roll:.1f}s  update {row['time_update']:.1f}s", flush=True)
        if cfg.save_every and update % cfg.save_every == 0:
            save_checkpoint(cfg, learners, out / "checkpoints" / f"update_{update}")
    save_checkpoint(cfg, learners, out / "checkpoints" / "final")
    return {"learners": learners, "history": history}
