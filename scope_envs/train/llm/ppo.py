"""LLM-PPO and GRPO on multi-turn text episodes: ``scope-envs train-llm``.

Reads top to bottom: config -> token traces -> learners -> rollout -> advantages -> update -> loop.

* Token-in-token-out: each trained agent's episode is one token stream. Its own
  turns are the sampled ids with their sampling logprobs (``loss_mask`` 1); the
  system prompt (with the env's tool schemas, ``infos["tools"]``), the partner's
  turns, the notes on refused replies and chat-template glue are tokenized from the
  env's messages (``loss_mask`` 0), each learner with its own tokenizer. Text is
  never re-tokenized to recover what was sampled. Templates that refuse a conversation's
  shape or rewrite earlier turns (Gemma, Qwen3): ``scope_envs.agents.llm.templates``.
* ``algo="ppo"``: rewards from the env land on the last token of the turn that
  earned them; a per-token KL penalty to a frozen reference (``k1``, ``k3`` or
  ``low_var_kl``; fixed or adaptive coefficient, adapted per learner in tokens) is
  added; a value head on the last hidden state; GAE over the trained tokens; clipped
  policy and value losses.
* ``algo="grpo"`` (SCOPE's): ``group_size`` episodes per scenario; each trajectory's
  advantage is its return minus its group's mean return (``grpo_std_norm``: divided
  by the group's std too; off by default, as in SCOPE), on all of its tokens; an
  asymmetric clip (``clip_low=0.2``, ``clip_high=0.28``); the KL to the reference is
  a loss term (``low_var_kl``, the clamped k3); no value head, entropy coefficient 0.
* The ratio's old logprobs are the trainer's recompute before the update (``old_logprobs="trainer"``, as
  verl, slime and TRL), not the engine's sampling logprobs, which differ under vLLM (bf16 engine, fp32
  trainer); ``logprob_gap`` / ``logprob_gap_max`` (mean and largest |trainer - engine| per token) report
  the difference. ``old_logprobs="engine"`` takes the engine's.
* Episodes cut at ``max_len`` never learn a return of 0: PPO bootstraps them with
  the value at the cut, GRPO drops them; both are counted in the metrics.
* The no-grad passes project only the sampled positions through the LM head, in
  chunks of ``chunk_tokens``: no full-vocabulary logits for the batch.
* Modes: ``agent`` (train agent_0 against the env's user: its built-in simulator,
  or a frozen LLM user, verbalized-sampled under a ``-vs`` env), ``cotrain`` (agent
  and user: two models, each with its own tokenizer, optimizer, KL reference and
  learning rate, or two LoRA adapters on one base, or ``shared`` one model with
  role prompts), ``population`` (SCOPE's pool: the co-trained user's past LoRA
  snapshots in a FIFO pool of ``pool_size``, one snapshot every ``snapshot_every``
  updates, one entry drawn per rollout batch, ``pool.AdapterPool``), ``members``
  (K user adapters on one base model, one drawn per episode by the env).
* ``user_reward``: the trained user's reward, with the act level's definitions
  (``scope_envs.core.rewards``): ``adversarial`` and ``cooperative`` are paid by the
  game, ``curriculum`` by the trainer over each group, ``realism`` (and
  ``realism_mixed``) by the trainer's discriminator of the game's real reply pairs
  (``scope_envs.train.realism``), each episode on the user's last turn: the mean
  log-odds of its replies, read from the game's acts (the NLU's reading of its text).
* Generation: ``transformers.generate`` (``engine="hf"``, CPU or GPU, on the very
  weights being trained) or vLLM (``engine="vllm"``, GPU; weights, or LoRA adapters,
  pushed into the engine after each update, prefix cache reset) — one code path.
* Output: ``out/metrics.jsonl`` (one line per update, with the collapse diagnostics
  ``zero_std_group_frac``, ``all_fail_group_frac``, ``group_reward_var`` per role and
  token ``entropy`` per agent) and ``out/checkpoints/``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from scope_envs.agents.llm.templates import render, takes_tools
from scope_envs.core.rewards import TRAINED_USER_REWARDS, check_user_reward
from scope_envs.registry import check_trainable
from scope_envs.files import jsonable, write_atomic
from scope_envs.train.advantage import gae
from scope_envs.train.groups import (
    agent_score,
    by_group,
    curriculum_setting,
    curriculum_values,
    derive_seed,
    group_advantages,
    group_diagnostics,
    scenario_options,
)
from scope_envs.train.realism import Realism

ALGOS = ("ppo", "grpo")
MODES = ("agent", "cotrain", "population", "members")
KL_ESTIMATORS = ("k1", "k3", "low_var_kl")
POOL_SAMPLES = ("uniform", "latest")
OLD_LOGPROBS = ("trainer", "engine")
USER_REWARDS = TRAINED_USER_REWARDS
DTYPES = ("float32", "bfloat16")
RANDOM = "random:"  # a model spec: random weights from a directory's config (see load_model)
FROZEN_USER = "frozen_user"  # the metrics' name for a frozen LLM user's generation (agent mode, user_model)


# ----------------------------------------------------------------------------- config
@dataclass
class Config:
    env: str = "p4g-frozen"  # a registered id (text surface) or "llm-toy"
    env_kwargs: dict = field(default_factory=dict)
    mode: str = "agent"  # agent | cotrain | population | members
    algo: str = "ppo"  # ppo | grpo
    model: str = "tiny"  # a local model directory, or "tiny" (a random tiny Llama built on the spot)
    user_model: str | None = None  # agent mode: a frozen LLM user (directory or "tiny"); cotrain: the user's model
    shared: bool = False  # cotrain: one model plays both roles
    members: int = 2  # members mode: K user adapters
    pool_size: int = 5  # population: the live user and up to pool_size - 1 snapshots (SCOPE: 5)
    snapshot_every: int = 4  # population: updates between snapshots (SCOPE: 4)
    pool_sample: str = "uniform"  # population: uniform over the pool, or latest (the live user)
    user_reward: str | None = None  # adversarial | cooperative | curriculum | realism | realism_mixed (None: the
    # game's default)
    lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    engine: str = "hf"  # hf | vllm
    device: str = "cpu"
    updates: int = 10
    groups: int = 4  # scenario seeds per update
    group_size: int | None = None  # episodes per seed (default: 2 under ppo, 8 under grpo)
    max_new_tokens: int = 32
    max_len: int = 2048  # an episode stops once its token stream would exceed this
    temperature: float = 1.0
    lr: float = 1e-4
    user_lr: float | None = None  # the user learner's learning rate (cotrain, population; default: lr)
    ppo_epochs: int = 4  # (TRL's and Ziegler et al.'s 4; defaults chosen on llm-toy: docs/llm-training.md)
    minibatch: int = 8  # sequences per gradient step
    clip: float = 0.2  # ppo's symmetric clip, the default of clip_low and clip_high under ppo
    clip_low: float | None = None  # ratio floor 1 - clip_low (default: clip; grpo 0.2)
    clip_high: float | None = None  # ratio ceiling 1 + clip_high (default: clip; grpo 0.28, DAPO's clip-higher)
    vf_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    gamma: float = 1.0
    lam: float = 0.95
    grpo_std_norm: bool = False  # grpo: divide by the group's std too (SCOPE: off)
    kl_coef: float | None = None  # default: 0.01 (ppo, a reward penalty, OpenRLHF's); 0.001 (grpo, a loss term)
    kl_estimator: str | None = None  # k1 | k3 | low_var_kl (default: k1 under ppo, low_var_kl under grpo)
    kl_target: float | None = None  # set: adaptive coefficient (Ziegler et al. 2019), per learner
    kl_horizon: int = 10000  # in trained tokens
    max_grad_norm: float = 1.0
    whiten: bool = True
    chunk_tokens: int = 1024  # positions per LM-head chunk in the logprob passes
    old_logprobs: str = "trainer"  # the ratio's denominator: the trainer's recompute (as verl, slime, TRL) | engine
    gpu_memory_fraction: float = 0.3  # vLLM engines: the share of GPU memory each one reserves
    dtype: str | None = None  # the models' weights: float32 | bfloat16 (default: bfloat16 on cuda, float32 on cpu)
    gradient_checkpointing: bool | None = None  # recompute activations in the backward pass (default: on cuda)
    seed: int = 0
    out: str = "runs/llm"
    save_every: int = 0  # 0: only at the end
    save_final: bool = True  # the final checkpoint (benchmarks/llm_gpu.py measures without writing models)
    resume: bool = False  # continue the run in out from its newest checkpoint (scope_envs.train.llm.resume)
    log: bool = True

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {self.algo!r}")
        if self.engine not in ("hf", "vllm"):
            raise ValueError(f"engine must be 'hf' or 'vllm', got {self.engine!r}")
        grpo = self.algo == "grpo"
        if self.group_size is None:
            self.group_size = 8 if grpo else 2
        if self.kl_estimator is None:
            self.kl_estimator = "low_var_kl" if grpo else "k1"
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {self.kl_estimator!r}")
        if self.kl_coef is None:
            self.kl_coef = 0.001 if grpo else 0.01
        if self.clip_low is None:
            self.clip_low = 0.2 if grpo else self.clip
        if self.clip_high is None:
            self.clip_high = 0.28 if grpo else self.clip
        if not 0.0 <= self.clip_low < 1.0:  # at 1 or above the floor 1 - clip_low is <= 0: no lower clip at all
            raise ValueError(f"clip_low sets the ratio floor 1 - clip_low: it must be in [0, 1), got {self.clip_low}")
        if self.user_model is not None and self.mode == "cotrain" and self.shared:
            raise ValueError("user_model (--user-model) is not used with shared=True (--shared): one model, model "
                             "(--model), plays both roles; leave out shared for a second model")
        if self.user_model is not None and self.user_model != self.model and self.lora and self.mode != "agent":
            raise ValueError("user_model (--user-model): with lora=True (--lora) every learner is an adapter on one "
                             "base model, model (--model); pass no separate user_model, or train without lora")
        if grpo and self.group_size < 2:
            raise ValueError(f"grpo's advantages are relative to a group: group_size must be >= 2, "
                             f"got {self.group_size}")
        if self.dtype is None:
            self.dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.gradient_checkpointing is None:
            self.gradient_checkpointing = self.device.startswith("cuda")
        if not 0.0 < self.gpu_memory_fraction <= 1.0:
            raise ValueError(f"gpu_memory_fraction is a share of the GPU's memory, in (0, 1]: got "
                             f"{self.gpu_memory_fraction}")
        if self.engine == "vllm" and self.lora:
            from scope_envs.agents.llm.backends import check_vllm_lora_rank

            check_vllm_lora_rank(self.lora_r)
        if self.old_logprobs not in OLD_LOGPROBS:
            raise ValueError(f"old_logprobs must be one of {OLD_LOGPROBS}, got {self.old_logprobs!r}")
        if self.pool_sample not in POOL_SAMPLES:
            raise ValueError(f"pool_sample must be one of {POOL_SAMPLES}, got {self.pool_sample!r}")
        if self.mode == "population" and not self.lora:
            raise ValueError("mode 'population' keeps the user's snapshots as LoRA adapters: pass lora=True (--lora)")
        if self.user_reward is not None:
            check_user_reward(self.user_reward, USER_REWARDS)
            if self.mode == "agent":
                raise ValueError("user_reward pays a trained user: use mode cotrain, population or members")
            if self.user_reward == "curriculum" and self.group_size < 2:
                raise ValueError(f"the curriculum user reward is computed over a group of episodes: group_size "
                                 f"must be >= 2, got {self.group_size}")


# ----------------------------------------------------------------------------- token traces
def assistant_suffix(tokenizer) -> str:
    """What the chat template writes after an assistant message's content (e.g. ``<|im_end|>\\n``): the tokens
    it writes there both where the conversation ends and where a user message follows. A template that closes
    a rendering without a generation prompt with the eos (Phi-3's ``<|end|>\\n<|endoftext|>``) writes that
    only at the end, so it is not the assistant's closing glue."""
    probe = "\x00PROBE\x00"
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": probe}]
    last = tokenizer.apply_chat_template(turns, tokenize=False)
    last = last[last.rindex(probe) + len(probe):]
    try:
        going_on = tokenizer.apply_chat_template(turns + [{"role": "user", "content": "and?"}], tokenize=False,
                                                 add_generation_prompt=True)
    except Exception:  # noqa: BLE001  (a template that refuses the shape: the ending alone, as it renders)
        return last
    going_on = going_on[going_on.rindex(probe) + len(probe):]
    a, b = _encode(tokenizer, last), _encode(tokenizer, going_on)
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    shared = tokenizer.decode(a[:n])
    return shared if n < len(a) and last.startswith(shared) else last


def with_tools(tokenizer, messages: list[dict], tools) -> list[dict]:
    """A chat template without a tools section gets the schemas in the system prompt, as ``LLMPlayer`` writes them."""
    if not tools or takes_tools(tokenizer) or not messages or messages[0]["role"] != "system":
        return messages
    from scope_envs.agents.llm.player import tools_text

    return [{**messages[0], "content": messages[0]["content"] + "\n\n" + tools_text(tools)}] + messages[1:]


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
    cut: bool = False  # its episode outgrew max_len: the return is not final
    score: float | None = None  # the game's agent_score() at the end (None: cut, or the game has none)
    acts: tuple | None = None  # the episode's (agent's acts, user's acts) as the game read them, at its end
    template_fallbacks: int = 0  # turns whose glue the template could not render as a prefix extension
    _pending: float = 0.0
    _last_reply: dict | None = None
    _last_turn_end: int = -1
    _suffix: str = ""  # the template's closing glue after a reply (``assistant_suffix``), as add_turn was given it
    _env_seen: int = 0  # how many of the env's messages are already in ``ids``
    _tools: list | None = None

    @property
    def role(self) -> str:
        return self.agent.split("_")[0]

    def _append(self, ids, mask, logprobs=None):
        self.ids += ids
        self.mask += [mask] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)
        self.rewards += [0.0] * len(ids)

    def prompt(self, tokenizer, messages: list[dict], errors: list[str], tools=None) -> list[int]:
        """Extend the stream with what happened since this agent's last turn; returns the full prompt ids.

        ``messages`` is the env's conversation (``infos[agent]["messages"]``); ``tools`` its tool schemas.
        The stream also holds what the env never records: a refused reply and the note on why, so the
        env's new messages are found by the count of env messages seen, not by the stream's length."""
        from scope_envs.agents.llm.templates import conform, join_users, new_turn_text

        if not self.ids:
            self._tools = tools
            # the form the template accepts (an opening user turn, the system prompt folded), kept all episode
            new_conv = conform(tokenizer, with_tools(tokenizer, [dict(m) for m in messages], tools), tools)
            self._append(_encode(tokenizer, render(tokenizer, new_conv, True, tools)), 0)
        else:
            n = self._env_seen
            # the env recorded this agent's last reply (it was accepted): the stream already holds it as sampled
            accepted = len(messages) > n and messages[n]["role"] == "assistant"
            new = [dict(m) for m in messages[n + 1:]] if accepted else [dict(m) for m in messages[n:]]
            if errors:
                new.append({"role": "user", "content": "Your last message could not be used: " + "; ".join(errors)})
            prev_conv = self.conversation + [self._last_reply]
            new_conv = join_users(prev_conv + new)
            prev_text = render(tokenizer, prev_conv, False, self._tools)
            full = render(tokenizer, new_conv, True, self._tools)
            if full.startswith(prev_text):  # prefix-preserving: the stream is the template's own rendering
                text = full[len(prev_text):]
            else:  # the template rewrites earlier turns (Qwen3's <think>): keep them as sampled, add what is new
                text = new_turn_text(tokenizer, prev_conv, new_conv[len(prev_conv):], self._suffix, self._tools)
                self.template_fallbacks += 1
            self._append(_encode(tokenizer, text), 0)
        self._env_seen = len(messages)
        self.conversation = new_conv
        return list(self.ids)

    def add_turn(self, tokenizer, token_ids, logprobs, text, finished, suffix, stop_text):
        """Append a sampled turn (mask 1) and the template's closing glue (mask 0)."""
        self._append(list(token_ids), 1, list(logprobs))
        self.turns += 1
        self._last_reply, self._suffix = {"role": "assistant", "content": text}, suffix
        # the token that ended the turn is the glue's start where the template writes it (Phi-3 stops on <|end|>,
        # which is not its tokenizer's eos): the stream then holds it once, as the template renders the reply
        ended = tokenizer.decode(list(token_ids[-1:])) if finished and len(token_ids) else ""
        glue = (suffix[len(ended):] if ended and suffix.startswith(ended) else
                suffix[len(stop_text):] if finished and suffix.startswith(stop_text) else suffix)
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


def _errors(observation) -> list[str]:
    return [line[len("[error] "):] for line in str(observation).splitlines() if line.startswith("[error] ")]


# ----------------------------------------------------------------------------- models
def load_model(path: str, device: str, seed: int, dtype: str = "float32", tiny_dir=None):
    """(model, tokenizer, local path) from a local directory, weights in ``dtype``; "tiny" builds a random
    tiny Llama first, into ``tiny_dir`` (the trainer's ``out/base-model``: kept, so that LoRA adapters saved
    on it load later), or without ``tiny_dir`` into a temporary directory removed once it has loaded;
    ``random:DIR`` builds random weights from DIR's config (a GPU check's models, of any size, with nothing
    to download or load). A directory of the user's whose files transformers cannot read (corrupt weights, an
    unknown model_type, a config that is not JSON) is a ``panel.ModelLoadError`` naming it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from scope_envs.agents.llm.backends import local_model_dir
    from scope_envs.train.llm.panel import loading

    def from_dir(p):
        tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, dtype=getattr(torch, dtype))
        return model.to(device), tokenizer

    if path.startswith(RANDOM):  # a config and a tokenizer, no weights: random weights built on the device
        from transformers import AutoConfig

        d = local_model_dir(path[len(RANDOM):])
        with loading(path[len(RANDOM):]):  # a broken config or tokenizer: panel.ModelLoadError, one line
            config = AutoConfig.from_pretrained(d, local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(d, local_files_only=True)
        _check_template(tokenizer, path[len(RANDOM):])
        torch.manual_seed(seed)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        return model, tokenizer, str(d)
    if path == "tiny":  # built here: its files are no mistake of the user's (loaded without ``loading``)
        from scope_envs.agents.llm.tiny import build_tiny_model

        if tiny_dir is None:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="scope-tiny-") as scratch:
                build_tiny_model(scratch, seed=seed)
                model, tokenizer = from_dir(scratch)
            return model, tokenizer, "tiny"  # its directory is gone: nothing may load it again
        path = Path(tiny_dir).resolve()  # absolute: what adapter_config.json's base_model_name_or_path records
        build_tiny_model(path, seed=seed)
        return (*from_dir(path), str(path))
    p = local_model_dir(path)
    with loading(path):
        model, tokenizer = from_dir(p)
    _check_template(tokenizer, path)
    return model, tokenizer, str(p)


def _check_template(tokenizer, path) -> None:
    """The chat template of the user's model ``path`` renders an episode's first prompts, as the rollout renders
    them (``templates.check_template``): else a ``panel.ModelLoadError`` naming the folder, at load, not inside
    the first rollout."""
    from scope_envs.agents.llm.templates import TemplateError, check_template
    from scope_envs.train.llm.panel import ModelLoadError

    try:
        check_template(tokenizer, repr(str(path)))
    except TemplateError as e:
        raise ModelLoadError(str(e), path) from None


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
    master: list | None = None  # (bf16 parameter, its fp32 master copy) pairs: what the optimizer steps

    def step(self, extra: list, max_grad_norm: float) -> None:
        """Clip and apply the gradients of ``params() + extra``; bf16 weights step through their fp32 master
        copies (mixed precision: the update is not lost to bf16's 8-bit mantissa), then are copied back."""
        if self.master is None:
            nn.utils.clip_grad_norm_(self.params() + extra, max_grad_norm)
            self.optimizer.step()
            return
        for p, m in self.master:
            m.grad = None if p.grad is None else p.grad.float()
            p.grad = None
        nn.utils.clip_grad_norm_([m for _, m in self.master] + extra, max_grad_norm)
        self.optimizer.step()
        with torch.no_grad():
            for p, m in self.master:
                p.copy_(m)

    def activate(self):
        if self.adapter is not None:
            self.model.set_adapter(self.adapter)

    def params(self):
        if self.adapter is None:
            return [p for p in self.model.parameters() if p.requires_grad]
        return [p for n, p in self.model.named_parameters() if f".{self.adapter}." in n]


def tiny_dir(cfg: Config, name: str | None = None) -> Path:
    """Where a ``tiny`` model of this run is built: ``out/base-model`` (the agent's, or the base every LoRA
    adapter of the run is saved on), ``out/base-model-NAME`` for another learner's or the frozen user's."""
    return Path(cfg.out) / ("base-model" if name is None else f"base-model-{name}")


def build_learners(cfg: Config) -> dict[str, Learner]:
    """The learners of a mode, keyed by name; LoRA learners of one run share one base model. A ``tiny``
    model is built under ``cfg.out`` (``tiny_dir``)."""
    if cfg.mode == "agent":
        specs = [("agent", {"agent_0"}, cfg.model)]
    elif cfg.mode in ("cotrain", "population"):
        specs = ([("policy", {"agent_0", "user_0"}, cfg.model)] if cfg.shared and cfg.mode == "cotrain" else
                 [("agent", {"agent_0"}, cfg.model), ("user", {"user_0"}, cfg.user_model or cfg.model)])
    else:
        specs = [("agent", {"agent_0"}, cfg.model)] + [(f"user_{k}", {f"user_{k}"}, cfg.user_model or cfg.model)
                                                       for k in range(cfg.members)]
    learners = {}
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        if len({s[2] for s in specs}) > 1:
            raise ValueError("with LoRA every learner shares one base model: pass no separate user_model")
        base, tokenizer, path = load_model(cfg.model, cfg.device, cfg.seed, cfg.dtype, tiny_dir(cfg))
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
        for i, (name, agents, path) in enumerate(specs):
            model, tokenizer, local = load_model(path, cfg.device, cfg.seed + i, cfg.dtype,
                                                 tiny_dir(cfg, None if i == 0 else name))
            ref = copy.deepcopy(model).eval().requires_grad_(False)
            learners[name] = Learner(name, agents, model, tokenizer, local, None, ref)
    for i, learner in enumerate(learners.values()):
        params = []
        if cfg.algo == "ppo":  # grpo's baseline is the group: no value head
            hidden = learner.model.config.hidden_size
            torch.manual_seed(cfg.seed + 100 + i)
            learner.value_head = nn.Linear(hidden, 1).to(cfg.device)
            nn.init.zeros_(learner.value_head.weight)
            nn.init.zeros_(learner.value_head.bias)
            params = list(learner.value_head.parameters())
        learner.activate()
        lr = cfg.user_lr if cfg.user_lr is not None and learner.name.startswith("user") else cfg.lr
        trained = learner.params()
        if any(p.dtype != torch.float32 for p in trained):  # full fine-tuning in bf16: fp32 master weights
            learner.master = [(p, p.detach().float().clone().requires_grad_(True)) for p in trained]
            trained = [m for _, m in learner.master]
        learner.optimizer = torch.optim.AdamW(trained + params, lr=lr, weight_decay=0.0)
    for model in {id(lr.model): lr.model for lr in learners.values()}.values():
        _disable_dropout(model)  # RL updates without dropout, as TRL's trainers (train mode is then eval's math)
        if cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return learners


def _disable_dropout(model: nn.Module) -> None:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0


def build_engines(cfg: Config, learners: dict[str, Learner]) -> None:
    """One generation engine per distinct model: transformers on the live weights, or vLLM."""
    from scope_envs.agents.llm.backends import TransformersBackend, VLLMBackend, check_vllm_lora_rank

    engines = {}
    for learner in learners.values():
        key = id(learner.model)
        if key not in engines:
            if cfg.engine == "hf":
                engines[key] = TransformersBackend(learner.model, learner.tokenizer)
            else:
                loras = len(learners) + (cfg.pool_size - 1 if cfg.mode == "population" else 0)
                engines[key] = VLLMBackend(learner.path, enable_lora=cfg.lora, max_loras=max(loras, 1),
                                           max_lora_rank=check_vllm_lora_rank(cfg.lora_r),
                                           gpu_memory_utilization=cfg.gpu_memory_fraction, seed=cfg.seed)
        learner.engine = engines[key]


def sync_engines(cfg: Config, learners: dict[str, Learner], scratch: Path) -> None:
    """After an update: vLLM gets the new weights (or adapters); transformers already generates with them."""
    if cfg.engine == "hf":
        return
    for learner in learners.values():
        if cfg.lora:
            register_adapter(learner, learner.adapter, scratch)
        else:
            learner.engine.load_weights(learner.model)


def register_adapter(learner: Learner, adapter: str, scratch: Path) -> None:
    """Save one LoRA adapter of ``learner``'s model and register it with its vLLM engine under a fresh id."""
    d = scratch / "vllm_lora" / adapter
    learner.model.save_pretrained(str(d), selected_adapters=[adapter])
    learner.engine.set_adapter_path(adapter, d / adapter if (d / adapter).exists() else d)


# ----------------------------------------------------------------------------- environments
def make_env_factory(cfg: Config, user_player=None) -> Callable:
    import scope_envs
    from scope_envs.agents.llm.toy import make_toy_env

    if cfg.env == "llm-toy":
        return lambda: make_toy_env(**cfg.env_kwargs)
    check_trainable(cfg.env, cfg.env_kwargs)
    return lambda: scope_envs.make(cfg.env, surface="text", **env_kwargs(cfg, user_player))


def env_kwargs(cfg: Config, user_player=None) -> dict:
    """The env's options: ``env_kwargs``, the mode's own, ``user_reward`` and a frozen LLM user."""
    import scope_envs

    kwargs = dict(cfg.env_kwargs)
    regime = scope_envs.registry[cfg.env].regime if cfg.env in scope_envs.registry else None
    if cfg.mode == "members":
        kwargs.setdefault("members", cfg.members)
    if cfg.mode == "population" and regime == "population":
        # the env's pool form (agent_0 and one live user_0); its pool stays the live user alone, because the
        # snapshots are LoRA adapters that the trainer plays in the user_0 seat (pool.AdapterPool)
        kwargs.setdefault("pool_size", cfg.pool_size)
    if cfg.user_reward is not None:
        kwargs["user_reward"] = cfg.user_reward
    if user_player is not None:
        kwargs["user"] = user_player
    return kwargs


def frozen_user(cfg: Config):
    """Agent mode with ``user_model``: a frozen LLM user (``LLMPlayer``) in the env's user seat, served by
    the run's engine (``transformers`` or vLLM) through a ``BatchingBackend``: the rollout steps its envs
    together and every user that speaks in a round is generated in one batch."""
    if cfg.mode != "agent" or cfg.user_model is None:
        return None
    from scope_envs.agents.llm.backends import TransformersBackend, VLLMBackend, local_model_dir
    from scope_envs.agents.llm.batching import BatchingBackend
    from scope_envs.agents.llm.player import LLMPlayer

    if cfg.engine == "vllm":
        path = cfg.user_model
        if path == "tiny":
            from scope_envs.agents.llm.tiny import build_tiny_model

            path = tiny_dir(cfg, FROZEN_USER).resolve()
            build_tiny_model(path, seed=cfg.seed + 7)
        backend = VLLMBackend(local_model_dir(path), gpu_memory_utilization=cfg.gpu_memory_fraction, seed=cfg.seed)
    else:
        model, tokenizer, _ = load_model(cfg.user_model, cfg.device, cfg.seed + 7, cfg.dtype,
                                         tiny_dir(cfg, FROZEN_USER))
        backend = TransformersBackend(model.eval().requires_grad_(False), tokenizer)
    return LLMPlayer(BatchingBackend(backend), max_new_tokens=cfg.max_new_tokens)


def batching_backend(envs: list):
    """The ``BatchingBackend`` of the LLM user the envs' user seats share, if any (see ``frozen_user``)."""
    from scope_envs.agents.llm.batching import BatchingBackend

    for env in envs:
        for member in getattr(env.unwrapped, "members", ()):
            backend = getattr(member, "backend", None)
            if isinstance(backend, BatchingBackend):
                return backend
    return None


# ----------------------------------------------------------------------------- rollout
def rollout(cfg: Config, envs: list, learners: dict[str, Learner], seed: int, rng: np.random.Generator,
            seats: dict[str, Learner] | None = None):
    """One episode in each of ``envs`` (``groups * group_size`` of them, kept across updates so that
    population schedules go on), stepped together; returns the traces and rollout stats.

    ``seats``: agent -> the learner that generates for it instead (a pool snapshot in the user seat);
    its traces carry that learner's name, so no learner in ``learners`` trains on them."""
    by_agent = {a: lr for lr in learners.values() for a in lr.agents}
    by_agent.update(seats or {})
    glue = {}  # learner name -> (the template's assistant suffix, the stop text), each in its own tokenizer
    users = batching_backend(envs)  # a frozen LLM user: the envs step together, its replies are batched
    user_tokens, user_seconds = (users.tokens, users.seconds) if users is not None else (0, 0.0)

    def step_all(calls):
        return users.run(calls) if users is not None else [call() for call in calls]

    # a group shares its scenario (persona, task); every episode's own randomness (the simulator's replies,
    # the dialogue) is its own, so a group's returns can differ for reasons other than the policy's
    resets = step_all([functools.partial(env.reset, seed=derive_seed(seed, i),
                                         options=scenario_options(seed, i, cfg.group_size))
                       for i, env in enumerate(envs)])
    episodes = [{"env": env, "obs": obs, "infos": infos, "traces": {}, "group": i // cfg.group_size}
                for i, (env, (obs, infos)) in enumerate(zip(envs, resets))]
    gen_tokens, gen_time = defaultdict(int), defaultdict(float)  # by learner name
    vs_turns = vs_fallbacks = 0
    while True:
        live = [e for e in episodes if e["env"].agents and not e.get("cut")]
        if not live:
            break
        requests = defaultdict(list)  # learner name -> [(episode, agent, trace, prompt)]
        speakers = {}
        for e in live:
            env, infos = e["env"], e["infos"]
            speaker = next((a for a in env.agents if infos[a].get("active")), None)
            if speaker is None or speaker not in by_agent:
                raise ValueError(f"no trained learner plays the speaking agent {speaker!r} of {cfg.env}")
            learner = by_agent[speaker]
            trace = e["traces"].setdefault(speaker, Trace(speaker, learner.name, e["group"]))
            prompt = trace.prompt(learner.tokenizer, infos[speaker]["messages"], _errors(e["obs"][speaker]),
                                  infos[speaker].get("tools"))
            if len(prompt) + cfg.max_new_tokens > cfg.max_len:
                e["cut"] = True
                continue
            requests[learner.name].append((e, speaker, trace, prompt))
            speakers[learner.name] = learner
        actions = defaultdict(dict)
        for name, reqs in requests.items():
            learner = speakers[name]
            tok = learner.tokenizer
            if name not in glue:  # (setdefault would render the template's probes at every batch)
                glue[name] = (assistant_suffix(tok), tok.eos_token or "")
            suffix, stop_text = glue[name]
            t0 = time.perf_counter()
            gens = learner.engine.generate_ids([r[3] for r in reqs], max_new_tokens=cfg.max_new_tokens,
                                               temperature=cfg.temperature, adapter=learner.adapter,
                                               seed=int(rng.integers(2**31 - 1)))
            gen_time[name] += time.perf_counter() - t0
            for (e, speaker, trace, _), gen in zip(reqs, gens):
                trace.add_turn(tok, gen.token_ids, gen.logprobs, gen.text, gen.finished, suffix, stop_text)
                gen_tokens[name] += len(gen.token_ids)
                actions[id(e)][speaker] = gen.text
        stepping = [e for e in live if not e.get("cut")]  # a cut stream outgrew max_len: its episode stops
        before = [len(e["env"].unwrapped.game.history) for e in stepping]
        results = step_all([functools.partial(e["env"].step, actions[id(e)]) for e in stepping])
        for e, n, (obs, rew, _term, _trunc, infos) in zip(stepping, before, results):
            game = e["env"].unwrapped.game
            e["obs"], e["infos"] = obs, infos
            info = next(iter(infos.values()), {})
            if "vs_fallback" in info and any(t.role == game.user_role for t in game.history[n:]):
                vs_turns += 1  # a verbalized-sampling user turn: its list was read, or it fell back to a reply
                vs_fallbacks += int(info["vs_fallback"])
            for agent, r in rew.items():
                if agent in e["traces"]:
                    e["traces"][agent].add_reward(float(r))
            if not e["env"].agents:
                e["score"] = agent_score(e["env"].unwrapped.game)
                e["acts"] = tuple([t.act for t in game.history if t.role == role]
                                  for role in (game.agent_role, game.user_role))
    for e in episodes:
        for t in e["traces"].values():
            t.cut = bool(e.get("cut"))
            t.score = None if t.cut else e.get("score")
            t.acts = None if t.cut else e.get("acts")
    traces = [t for e in episodes for t in e["traces"].values() if t.turns > 0]
    if users is not None:  # the frozen user's share, as its batching backend counted it
        gen_tokens[FROZEN_USER] += users.tokens - user_tokens
        gen_time[FROZEN_USER] += users.seconds - user_seconds
    stats = {"gen_tokens": sum(gen_tokens.values()), "gen_time": sum(gen_time.values()),
             "gen_tokens_by": dict(gen_tokens), "gen_time_by": dict(gen_time),
             "cut": sum(1 for e in episodes if e.get("cut")), "episodes": len(episodes), "vs_turns": vs_turns,
             "vs_fallbacks": vs_fallbacks}
    return traces, stats


def group_key(trace: Trace) -> tuple[str, int]:
    """A trace's GRPO group: one role's traces on one scenario."""
    return trace.role, trace.group


def role_diagnostics(traces: list[Trace]) -> dict[str, float]:
    """SCOPE's collapse diagnostics (``scope_envs.train.groups.group_diagnostics``) per role, keyed
    ``<diagnostic>/<role>``: a group is one role's traces on one scenario."""
    out = {}
    for role, mine in sorted(by_group(traces, key=lambda t: t.role).items()):
        d = group_diagnostics([t.episode_return for t in mine], [t.score for t in mine], [t.group for t in mine])
        out.update({f"{k}/{role}": v for k, v in d.items()})
    return out


def pay_curriculum(traces: list[Trace], game) -> dict[int, float]:
    """SCOPE's curriculum user reward (``scope_envs.train.groups.curriculum_values``, with ``game``'s own
    ``target_var`` and ``width``): every user trace of a group is paid its group's value, on its last turn
    (the env paid 0); cut episodes have no score and are not paid. Returns each paying group's value. Under
    ``grpo`` the users of a group share that value, so their group-relative advantage is 0
    (``zero_std_group_frac/user`` shows it): the curriculum teaches a user through ``ppo``'s value baseline,
    which compares groups."""
    agents = [t for t in traces if t.agent == "agent_0"]
    values = curriculum_values([t.score for t in agents], [t.group for t in agents], *curriculum_setting(game))
    for t in traces:
        if t.role == "user" and not t.cut and t.group in values:
            t.add_reward(values[t.group])
    return values


def pay_realism(traces: list[Trace], realism) -> dict[str, float]:
    """The realism user reward (``scope_envs.train.realism``): the discriminator updated on this batch's user
    replies (``Realism.update``), then each user trace paid the weighted mean clipped log-odds of its replies, on its
    last turn; cut episodes are not paid. Returns the batch's figures (as the act-level trainer's log rows name
    them)."""
    users = [(t, realism.pairs.cells(*t.acts)) for t in traces if t.role == "user" and t.acts is not None]
    figures = realism.update([c for _, c in users])
    for t, c in users:
        replies = c[c >= 0]
        if len(replies):
            t.add_reward(realism.weight * float(realism.discriminator.rewards(replies).mean()))
    return figures


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
    # where a cut trace's value is read: its last token (the state after the prompt that did not fit)
    bootstrap_at = torch.tensor([len(t.ids) - 1 if t.cut else -1 for t in traces])
    # action at position t is predicted from position t-1: shift everything by one
    return {"ids": out["ids"].to(device), "attn": out["attn"].to(device), "mask": out["mask"][:, 1:].to(device),
            "old_logprobs": out["logprobs"][:, 1:].to(device), "env_rewards": out["rewards"][:, 1:].to(device),
            "bootstrap_at": bootstrap_at.to(device)}


def forward(model, value_head, ids, attn, temperature, select=None, chunk_tokens: int = 1024,
            entropy: bool = True):
    """Per-position logprob of the next token and its entropy (length T-1, zero outside ``select``), and
    the value of every position (length T; None without a value head).

    The LM head runs only on the ``select``-ed positions (default: every real one), ``chunk_tokens`` at a
    time: a batch never holds its full-vocabulary logits."""
    hidden = model.get_decoder()(input_ids=ids, attention_mask=attn).last_hidden_state
    head = model.get_output_embeddings()
    softcap = getattr(model.config, "final_logit_softcapping", None)
    sel = (attn[:, 1:] > 0) if select is None else select > 0
    rows, cols = torch.nonzero(sel, as_tuple=True)
    h, targets = hidden[rows, cols], ids[rows, cols + 1]
    lps, ents = [], []
    for start in range(0, len(rows), chunk_tokens):
        logits = head(h[start:start + chunk_tokens]).float()
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        logits = logits / temperature
        logz = torch.logsumexp(logits, dim=-1)
        lps.append(logits.gather(-1, targets[start:start + chunk_tokens, None]).squeeze(-1) - logz)
        if entropy:
            ents.append(logz - (torch.softmax(logits, dim=-1) * logits).sum(-1))
    shape = (ids.shape[0], ids.shape[1] - 1)
    token_logp = torch.zeros(shape, device=ids.device, dtype=torch.float32).index_put((rows, cols), _cat(lps))
    ent = (torch.zeros(shape, device=ids.device, dtype=torch.float32).index_put((rows, cols), _cat(ents))
           if entropy else None)
    values = value_head(hidden.float()).squeeze(-1) if value_head is not None else None
    return token_logp, values, ent


def _cat(parts):
    return torch.cat(parts) if parts else torch.zeros(0)


def recompute_logprobs(learner: Learner, traces: list[Trace], temperature: float,
                       chunk_tokens: int = 1024) -> list[list[float]]:
    """The trainer's logprobs of each trace's sampled tokens (to compare with the generation's)."""
    b = batch_tensors(traces, _pad_id(learner.tokenizer), next(learner.model.parameters()).device)
    learner.activate()
    with torch.no_grad():
        logp, _, _ = forward(learner.model, None, b["ids"], b["attn"], temperature, select=b["mask"],
                             chunk_tokens=chunk_tokens, entropy=False)
    return [logp[i][b["mask"][i] > 0].tolist() for i in range(len(traces))]


def _pad_id(tokenizer):
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def kl_estimate(logp, ref_logp, estimator):
    """Per-token KL(policy || reference) estimates from sampled tokens (Schulman's k1 and k3).
    ``low_var_kl``: k3 clamped to [-10, 10] (verl's and slime's GRPO KL loss)."""
    log_ratio = logp - ref_logp
    if estimator == "k1":
        return log_ratio
    k3 = torch.exp(-log_ratio) - 1 + log_ratio  # unbiased, non-negative
    return k3.clamp(-10.0, 10.0) if estimator == "low_var_kl" else k3


def token_gae(rewards, values, mask, gamma, lam, bootstrap=None):
    """GAE (``scope_envs.train.advantage.gae``, in float64) over each row's masked positions only (the trained
    tokens). After the last one the return is 0 (the episode ended) or, for a row cut short, ``bootstrap[row]``:
    the value where it was cut. Returns the advantages and the returns (advantages + values), as ``rewards``."""
    adv = torch.zeros_like(rewards)
    r_all, v_all, m_all = (x.detach().cpu().double().numpy() for x in (rewards, values, mask))
    rows = [np.flatnonzero(m > 0) for m in m_all]
    after = None if bootstrap is None else [float(b) for b in bootstrap]
    out = gae([r[idx] for r, idx in zip(r_all, rows)], [v[idx] for v, idx in zip(v_all, rows)], gamma, lam, after,
              dtype=np.float64)
    for i, (idx, a) in enumerate(zip(rows, out)):
        if len(idx):
            adv[i, torch.from_numpy(idx).to(adv.device)] = torch.from_numpy(a).to(adv)
    return adv, adv + values


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1)


def clipped_pg(ratio, adv, mask, clip_low: float, clip_high: float):
    """The clipped policy loss, with the ratio kept in [1 - clip_low, 1 + clip_high] (DAPO's clip-higher)."""
    return masked_mean(torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip_low, 1 + clip_high)), mask)


def ppo_update(cfg: Config, learner: Learner, traces: list[Trace], kl_coef: float) -> dict:
    """One update of ``learner`` on its traces: PPO (value head, GAE) or GRPO (group baseline), as ``cfg.algo``."""
    model, device = learner.model, next(learner.model.parameters()).device
    grpo = cfg.algo == "grpo"
    learner.activate()
    b = batch_tensors(traces, _pad_id(learner.tokenizer), device)
    mask = b["mask"]
    chunk = cfg.chunk_tokens
    with torch.no_grad():
        logp_now, values_all, entropy = forward(model, None if grpo else learner.value_head, b["ids"], b["attn"],
                                                cfg.temperature, select=mask, chunk_tokens=chunk)
        if learner.ref is None:
            with model.disable_adapter():
                ref_logp, _, _ = forward(model, None, b["ids"], b["attn"], cfg.temperature, select=mask,
                                         chunk_tokens=chunk, entropy=False)
        else:
            ref_logp, _, _ = forward(learner.ref, None, b["ids"], b["attn"], cfg.temperature, select=mask,
                                     chunk_tokens=chunk, entropy=False)
        # the engine's sampling logprobs differ from the trainer's (bf16 engine, fp32 trainer, other kernels):
        # the ratio is taken against the trainer's own recompute, and the gap is reported
        engine_logp = b["old_logprobs"]
        old_logp = logp_now if cfg.old_logprobs == "trainer" else engine_logp
        if grpo:
            adv = group_advantages([t.episode_return for t in traces], [group_key(t) for t in traces],
                                   cfg.grpo_std_norm)
            adv = torch.tensor(adv, dtype=torch.float32, device=device)[:, None] * mask
            values = returns = None
        else:
            kl = kl_estimate(old_logp, ref_logp, cfg.kl_estimator) * mask
            rewards = b["env_rewards"] - kl_coef * kl
            at = b["bootstrap_at"]
            bootstrap = torch.where(at >= 0, values_all.gather(1, at.clamp(min=0)[:, None]).squeeze(1),
                                    torch.zeros_like(at, dtype=values_all.dtype))
            values = values_all[:, :-1] * mask
            adv, returns = token_gae(rewards, values, mask, cfg.gamma, cfg.lam, bootstrap)
            if cfg.whiten and mask.sum() > 1:
                mu, var = masked_mean(adv, mask), masked_mean((adv - masked_mean(adv, mask)) ** 2, mask)
                adv = (adv - mu) * torch.rsqrt(var + 1e-8) * mask
        gap = (logp_now - engine_logp).abs() * mask
        logprob_gap, logprob_gap_max = masked_mean(gap, mask).item(), gap.max().item() if mask.sum() else 0.0
        k1 = masked_mean(kl_estimate(old_logp, ref_logp, "k1"), mask).item()
        k3 = masked_mean(kl_estimate(old_logp, ref_logp, "k3"), mask).item()
        kl_now = masked_mean(kl_estimate(old_logp, ref_logp, cfg.kl_estimator), mask).item()
        agent_entropy = defaultdict(list)
        for i, t in enumerate(traces):
            agent_entropy[t.agent].append((float((entropy[i] * mask[i]).sum()), float(mask[i].sum())))
    stats = defaultdict(list)
    n = len(traces)
    model.train()  # gradient checkpointing recomputes activations in train mode only (no dropout: see above)
    for _ in range(cfg.ppo_epochs):
        order = torch.randperm(n)
        for start in range(0, n, cfg.minibatch):
            mb = order[start:start + cfg.minibatch]
            m = mask[mb]
            if m.sum() == 0:
                continue
            new_logp, new_v, ent_t = forward(model, None if grpo else learner.value_head, b["ids"][mb],
                                             b["attn"][mb], cfg.temperature, select=m, chunk_tokens=chunk)
            ratio = torch.exp(new_logp - old_logp[mb])
            pg = clipped_pg(ratio, adv[mb], m, cfg.clip_low, cfg.clip_high)
            ent = masked_mean(ent_t, m)
            loss = pg - cfg.ent_coef * ent
            if grpo:
                if kl_coef > 0:  # GRPO's KL is a loss term, on the current policy's tokens
                    kl_loss = masked_mean(kl_estimate(new_logp, ref_logp[mb], cfg.kl_estimator), m)
                    loss = loss + kl_coef * kl_loss
                    stats["kl_loss"].append(kl_loss.item())
            else:
                new_v = new_v[:, :-1]
                v_clipped = values[mb] + (new_v - values[mb]).clamp(-cfg.vf_clip, cfg.vf_clip)
                vf = 0.5 * masked_mean(torch.max((new_v - returns[mb]) ** 2, (v_clipped - returns[mb]) ** 2), m)
                loss = loss + cfg.vf_coef * vf
                stats["vf_loss"].append(vf.item())
            learner.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            learner.step([] if grpo else list(learner.value_head.parameters()), cfg.max_grad_norm)
            stats["pg_loss"].append(pg.item())
            stats["entropy"].append(ent.item())
            outside = (ratio < 1 - cfg.clip_low) | (ratio > 1 + cfg.clip_high)
            stats["clipfrac"].append(masked_mean(outside.float(), m).item())
            stats["approx_kl_old"].append(masked_mean(old_logp[mb] - new_logp, m).item())
    out = {k: float(np.mean(v)) for k, v in stats.items()}
    out.update(kl_k1=k1, kl_k3=k3, kl=kl_now, logprob_gap=logprob_gap, logprob_gap_max=logprob_gap_max,
               reward=float(np.mean([t.episode_return for t in traces])), sequences=n,
               tokens=int(mask.sum().item()))
    if not grpo:
        out["bootstrapped"] = sum(t.cut for t in traces)
    out["agent_entropy"] = {a: sum(s for s, _ in v) / max(sum(c for _, c in v), 1) for a, v in agent_entropy.items()}
    return out


class KLController:
    """Fixed coefficient, or adaptive toward ``target`` (Ziegler et al. 2019); ``n_steps`` and ``horizon``
    count trained tokens."""

    def __init__(self, coef: float, target: float | None, horizon: int):
        self.coef, self.target, self.horizon = coef, target, horizon

    def update(self, kl: float, n_steps: int):
        if self.target is None or not np.isfinite(kl):
            return
        error = float(np.clip(kl / self.target - 1, -0.2, 0.2))
        self.coef *= 1 + error * n_steps / self.horizon


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(cfg: Config, learners: dict[str, Learner], directory: Path, snapshots: list[str] = (),
                    state: dict | None = None) -> None:
    """Written whole or not at all: into a temporary folder beside ``directory``, then renamed over it, so a run
    stopped while saving leaves the previous checkpoint of that name (or none), never a torn one. ``state``: the
    trainer's (``resume.capture``), what ``--resume`` continues from."""
    import os
    import shutil

    target, directory = directory, directory.with_name(f".{directory.name}.{os.getpid()}.tmp")
    old = target.with_name(f".{target.name}.{os.getpid()}.old")
    shutil.rmtree(directory, ignore_errors=True)
    try:
        _save_checkpoint(cfg, learners, directory, snapshots)
        if state is not None:
            from scope_envs.train.llm.resume import STATE

            torch.save(state, directory / STATE)
        if target.exists():
            os.replace(target, old)
        os.replace(directory, target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:  # Ctrl-C, SIGTERM, a full disk: nothing half-written is left
        shutil.rmtree(directory, ignore_errors=True)
        if old.exists() and not target.exists():  # stopped between the two renames: the previous one goes back
            os.replace(old, target)
        raise


def _save_checkpoint(cfg: Config, learners: dict[str, Learner], directory: Path, snapshots) -> None:
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
        if learner.value_head is not None:
            torch.save(learner.value_head.state_dict(), d / "value_head.pt")
    if snapshots:  # the pool's user snapshots, beside the live adapters
        model = next(iter(learners.values())).model
        model.save_pretrained(str(directory / "adapters"), selected_adapters=list(snapshots))
    (directory / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))


# ----------------------------------------------------------------------------- the loop
class MaxLenError(ValueError):
    """``max_len`` leaves no room for a single turn: every episode was cut before its first."""


def train(cfg: Config, make_env: Callable | None = None, learners: dict[str, Learner] | None = None) -> dict:
    """Run ``cfg.updates`` updates (with ``cfg.resume``, those after the newest checkpoint in ``cfg.out``);
    returns ``{"learners", "history"}`` (history: the JSONL lines, the resumed run's earlier ones first)."""
    from scope_envs.train.llm import resume

    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    learners = learners or build_learners(cfg)
    start, state = 1, None
    if cfg.resume:
        resume.put_back_interrupted(out)
        done, folder = resume.resume_point(cfg)
        state = resume.load(folder, cfg.device)
        resume.restore_learners(state, folder, cfg, learners)
        start = done + 1
        if cfg.log:
            print(f"resuming the run in {out} from {folder.relative_to(out)} (update {done} of {cfg.updates})",
                  flush=True)
    build_engines(cfg, learners)
    sync_engines(cfg, learners, out)  # vLLM: register the LoRA adapters before the first rollout
    make_env = make_env or make_env_factory(cfg, frozen_user(cfg))
    envs = [make_env() for _ in range(cfg.groups * cfg.group_size)]
    kl_ctls = {name: KLController(cfg.kl_coef, cfg.kl_target, cfg.kl_horizon) for name in learners}
    pool = None
    if cfg.mode == "population":
        from scope_envs.train.llm.pool import AdapterPool

        user = learners["user"]
        pool = AdapterPool(user.model, user.adapter, cfg.pool_size, cfg.snapshot_every, cfg.pool_sample,
                           np.random.default_rng(cfg.seed + 17),
                           on_snapshot=(lambda name: register_adapter(user, name, out)) if cfg.engine == "vllm"
                           else None)
    realism = Realism.for_game(envs[0].unwrapped.game, cfg.user_reward)
    metrics_path = out / "metrics.jsonl"
    history = []
    if state is not None:  # last: building the learners, the pool and the envs drew from the generators
        resume.restore_loop(state, cfg, rng, kl_ctls, pool, realism, envs)
        history = resume.metrics_until(metrics_path, start - 1)
    # metrics.jsonl is replaced (by the resumed lines and the first new one, written whole) at the first update,
    # not here: a run that stops before it (a model, a template, --max-len) leaves the previous run's file as it was
    replaced = False
    first = next(iter(learners))

    def checkpoint(name: str, update: int):
        save_checkpoint(cfg, learners, out / "checkpoints" / name, pool.snapshots if pool else (),
                        state=resume.capture(update, cfg, rng, learners, kl_ctls, pool, realism, envs))

    for update in range(start, cfg.updates + 1):
        t0 = time.perf_counter()
        seats, row = None, {"update": update}
        if pool is not None:
            entry = pool.draw()
            row.update(pool_entry=entry, pool_size=len(pool.entries))
            if entry != pool.live:  # a snapshot plays the user seat this batch, and does not learn
                seats = {"user_0": dataclasses.replace(learners["user"], name=entry, adapter=entry)}
        traces, rs = rollout(cfg, envs, learners, seed=cfg.seed * 100003 + update * 1009, rng=rng, seats=seats)
        if not traces and rs["cut"] == rs["episodes"]:  # else every update would train nothing, without a word
            raise MaxLenError(f"max_len (--max-len {cfg.max_len}) is shorter than every episode's first prompt "
                              f"and {cfg.max_new_tokens} new tokens: no turn could be sampled; raise it")
        curriculum = pay_curriculum(traces, envs[0].unwrapped.game) if cfg.user_reward == "curriculum" else None
        if realism is not None:
            row.update(pay_realism(traces, realism))
        t_roll = time.perf_counter() - t0
        row.update({"episodes": rs["episodes"], "cut_episodes": rs["cut"], "kl_coef": kl_ctls[first].coef,
                    "tokens_per_s": rs["gen_tokens"] / max(rs["gen_time"], 1e-9), "gen_tokens": rs["gen_tokens"],
                    "time_rollout": t_roll})
        row.update({f"kl_coef/{name}": c.coef for name, c in kl_ctls.items()})
        for name, n in rs["gen_tokens_by"].items():  # every role's generation, the frozen LLM user's too
            row[f"gen_tokens/{name}"] = n
            row[f"tokens_per_s/{name}"] = n / max(rs["gen_time_by"][name], 1e-9)
        row.update(role_diagnostics(traces))
        if rs["vs_turns"]:  # a -vs env: the share of user turns whose verbalized list could not be read
            row["vs_fallback_rate"] = rs["vs_fallbacks"] / rs["vs_turns"]
        row["template_fallbacks"] = sum(t.template_fallbacks for t in traces)  # agents.llm.templates' fallback
        if curriculum is not None:
            row["curriculum_reward"] = float(np.mean(list(curriculum.values()))) if curriculum else float("nan")
        t1 = time.perf_counter()
        kls = []
        for learner in learners.values():
            mine = [t for t in traces if t.learner == learner.name]
            if cfg.algo == "grpo":  # no value to bootstrap a cut episode with: drop it
                row[f"cut_dropped/{learner.name}"] = sum(t.cut for t in mine)
                mine = [t for t in mine if not t.cut]
            if not mine:
                continue
            s = ppo_update(cfg, learner, mine, kl_ctls[learner.name].coef)
            row.update({f"entropy/{a}": v for a, v in s.pop("agent_entropy").items()})
            kl_ctls[learner.name].update(s["kl"], s["tokens"])
            kls.append((s["kl"], s["kl_k3"], s["tokens"]))
            row.update({f"{k}/{learner.name}": v for k, v in s.items()})
        row["time_update"] = time.perf_counter() - t1
        agent_returns = [t.episode_return for t in traces if t.agent == "agent_0"]
        row["reward_mean"] = float(np.mean(agent_returns)) if agent_returns else float("nan")
        if kls:  # token-weighted over the learners: the run's estimator (--kl-estimator), and k3 (>= 0) beside it
            tokens = max(sum(n for _, _, n in kls), 1)
            row["kl"] = sum(k * n for k, _, n in kls) / tokens
            row["kl_k3"] = sum(k3 * n for _, k3, n in kls) / tokens
        t2 = time.perf_counter()
        sync_engines(cfg, learners, out)
        if pool is not None:
            pool.after_update(update)
        row["time_sync"] = time.perf_counter() - t2
        history.append(row)
        line = json.dumps(jsonable(row)) + "\n"  # strict JSON: a NaN (e.g. an empty curriculum) as null
        if not replaced:
            write_atomic(metrics_path, "".join(json.dumps(jsonable(r)) + "\n" for r in history[:-1]) + line)
            replaced = True
        else:
            with metrics_path.open("a") as f:
                f.write(line)
        if cfg.log:  # k3, the >= 0 estimate, whatever the run's --kl-estimator (k1 is unbiased but goes below 0)
            print(f"update {update:>4}  reward {row['reward_mean']:+.4f}  kl(k3) {row.get('kl_k3', float('nan')):.4f}  "
                  f"tok/s {row['tokens_per_s']:.0f}  rollout {t_roll:.1f}s  update {row['time_update']:.1f}s", flush=True)
        if cfg.save_every and update % cfg.save_every == 0:
            checkpoint(f"update_{update}", update)
    if cfg.save_final:
        checkpoint("final", cfg.updates)
    return {"learners": learners, "history": history}
