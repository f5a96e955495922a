"""LLM backends: one interface, chat messages in, text (and token ids with logprobs when asked) out.

* ``TransformersBackend``: a local model directory (or an in-memory model), CPU or GPU,
  through ``transformers.generate``.
* ``VLLMBackend``: vLLM's offline ``LLM`` on a GPU (``pip install scope-envs[vllm]``),
  with ``load_weights`` to push trained weights into the engine.
* ``OpenAIBackend``: any OpenAI-compatible chat-completions server (``vllm serve``,
  llama.cpp, a hosted API), with timeouts, retries and a clear error when it is unreachable.

Nothing here downloads a model: local backends read a directory, and a hub id
gives a clear error. ``transformers`` and ``vllm`` are imported only when a
backend that needs them is built.

Token-in-token-out: ``generate_ids(prompts)`` takes prompt token ids and returns
the sampled ids with their logprobs (under ``temperature``, no top-k/top-p), so
a trainer never re-tokenizes text to recover what was sampled.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


class BackendError(RuntimeError):
    """A backend could not produce a reply (unreachable server, bad response, missing model)."""


class TemplateBackendError(BackendError, ValueError):
    """A local backend's chat template renders no form of a conversation (``templates.TemplateError``'s sentence):
    a ``BackendError`` (the backend could not reply) and, as the template's refusal was, a ``ValueError``."""


@dataclass
class Generation:
    """One completion: its text, and for local backends its token ids and their sampling logprobs."""

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finished: bool = True  # ended on a stop token (False: cut at max_new_tokens)


def local_model_dir(path) -> Path:
    """``path`` as an existing local model directory, or a clear error (no download is ever attempted)."""
    p = Path(os.path.expanduser(str(path)))
    if not p.is_dir():
        raise BackendError(
            f"no local model directory at {str(path)!r}: scope-envs never downloads models. Pass the path of a "
            "directory holding a saved model and tokenizer (save_pretrained), e.g. one made by "
            "scope_envs.agents.llm.tiny.build_tiny_model or fetched beforehand on a machine with network."
        )
    return p


class Backend:
    """The interface. ``chat`` serves players; ``generate_ids`` serves trainers (local backends only)."""

    tokenizer = None

    def chat(self, conversations: list[list[dict]], *, max_new_tokens: int = 256, temperature: float = 1.0,
             seed: int | None = None) -> list[Generation]:
        """Replies to chat conversations (local backends: the chat template, then ``generate_ids``)."""
        prompts = [self.encode(self.render(m)) for m in conversations]
        return self.generate_ids(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)

    def generate_ids(self, prompts: list[list[int]], *, max_new_tokens: int = 256, temperature: float = 1.0,
                     seed: int | None = None, adapter: str | None = None) -> list[Generation]:
        raise NotImplementedError(f"{type(self).__name__} does not return token ids; use a local backend to train")

    def render(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The chat template applied to ``messages`` (``templates.conform``-ed), as text. A template that renders
        no form of them is this backend failing to reply (``TemplateBackendError``, a ``BackendError``): a served
        user seat counts it as the user's in-game error, as it counts an endpoint that fails."""
        from scope_envs.agents.llm.templates import TemplateError, conform, render

        if self.tokenizer is None:
            raise NotImplementedError(f"{type(self).__name__} has no local tokenizer")
        # the form the template accepts (e.g. Gemma's: no system role, a user turn first)
        try:
            return render(self.tokenizer, conform(self.tokenizer, messages), add_generation_prompt)
        except TemplateError as e:
            raise TemplateBackendError(str(e)) from None

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def load_weights(self, model) -> None:
        """Make the engine generate with ``model``'s current weights (a no-op where it already does)."""


def _stop_ids(tokenizer, generation_config=None) -> list[int]:
    ids = set()
    for source in (getattr(generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if source is None:
            continue
        ids.update(source if isinstance(source, (list, tuple)) else [source])
    return sorted(ids)


class TransformersBackend(Backend):
    """``transformers.generate`` on CPU or GPU, over a model that may be the one being trained.

    ``TransformersBackend.from_path(dir)`` loads a local directory; ``TransformersBackend(model, tokenizer)``
    wraps an in-memory model, so a trainer generates with its current weights and ``load_weights`` is a no-op.
    """

    def __init__(self, model, tokenizer, where: str = "the tokenizer"):
        """``where``: what the tokenizer's errors name (``from_path``: its folder)."""
        from scope_envs.agents.llm.templates import TemplateError, check_template

        try:  # now, not inside the first episode
            check_template(tokenizer, where)
        except TemplateError as e:
            raise TemplateBackendError(str(e)) from None
        self.model, self.tokenizer = model, tokenizer
        self.stop_ids = _stop_ids(tokenizer, getattr(model, "generation_config", None))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]

    @classmethod
    def from_path(cls, path, device: str = "cpu", dtype: str = "float32"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        p = local_model_dir(path)
        tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, dtype=getattr(torch, dtype)).to(device)
        return cls(model.eval(), tokenizer, repr(str(path)))

    def generate_ids(self, prompts, *, max_new_tokens=256, temperature=1.0, seed=None, adapter=None):
        import torch

        if not prompts:
            return []
        if adapter is not None:
            self.model.set_adapter(adapter)
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):  # left padding: every prompt ends where generation starts
            ids[i, width - len(p):] = torch.tensor(p)
            mask[i, width - len(p):] = 1
        from transformers import GenerationConfig

        generator_state = None
        if seed is not None:
            generator_state = torch.random.get_rng_state()
            torch.manual_seed(seed)
        was_training = self.model.training
        self.model.eval()
        # The policy is softmax(logits / temperature), as the trainer computes it: the model's own
        # generation_config (an instruct model's repetition_penalty, top_k, min_p, suppressed tokens...) would
        # add processors to the sampling that no logprob the trainer computes has. transformers fills every
        # field left unset from model.generation_config, so a neutral one stands in for it while sampling.
        hf_model = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        model_config = hf_model.generation_config
        hf_model.generation_config = GenerationConfig(eos_token_id=self.stop_ids, pad_token_id=self.pad_id)
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=max_new_tokens,
                    do_sample=temperature > 0, temperature=temperature if temperature > 0 else None, top_k=0, top_p=1.0,
                    eos_token_id=self.stop_ids, pad_token_id=self.pad_id, output_scores=True,
                    return_dict_in_generate=True,
                )
        finally:
            hf_model.generation_config = model_config
            self.model.train(was_training)
            if generator_state is not None:
                torch.random.set_rng_state(generator_state)
        new = out.sequences[:, width:].cpu()
        # logprobs of the distribution each token was drawn from: the processed scores (logits / temperature)
        logp = torch.log_softmax(torch.stack(out.scores, dim=1).float().cpu(), dim=-1)
        token_logp = logp.gather(-1, new.unsqueeze(-1)).squeeze(-1)
        results = []
        for i in range(len(prompts)):
            toks, lps, finished = [], [], False
            for t in range(new.shape[1]):
                tok = int(new[i, t])
                toks.append(tok)
                lps.append(float(token_logp[i, t]))
                if tok in self.stop_ids:
                    finished = True
                    break
            text = self.tokenizer.decode(toks, skip_special_tokens=True)
            results.append(Generation(text, toks, lps, finished))
        return results


class VLLMBackend(Backend):
    """vLLM's offline ``LLM`` (GPU). ``load_weights(model)`` pushes a trainer's weights into the engine.

    LoRA: with ``enable_lora=True``, ``generate_ids(adapter=...)`` serves adapters that
    ``set_adapter_path`` registered (a trainer saves each adapter after an update and
    registers it under a fresh id, so the engine never serves stale LoRA weights).
    Not run in CI: no GPU there. ``benchmarks/llm_gpu.py`` exercises it.
    """

    def __init__(self, path, *, gpu_memory_utilization: float = 0.3, dtype: str = "auto", max_model_len: int | None = None,
                 enable_lora: bool = False, max_lora_rank: int = 16, max_loras: int = 4, seed: int = 0, **llm_kwargs):
        p = local_model_dir(path)
        # in-process engine, so load_weights can reach the model without crossing a process boundary
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            from vllm import LLM
        except ImportError as e:  # pragma: no cover - vllm is an optional extra
            raise BackendError("VLLMBackend needs vLLM: pip install 'scope-envs[vllm]' (GPU only)") from e
        kwargs = dict(model=str(p), tokenizer=str(p), gpu_memory_utilization=gpu_memory_utilization, dtype=dtype,
                      seed=seed, enable_prefix_caching=True, logprobs_mode="processed_logprobs", **llm_kwargs)
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        if enable_lora:
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=max_loras)
        # an in-process engine seeds the process's generators with its own seed (vLLM's set_random_seed):
        # the trainer's torch, numpy and random streams are put back as they were
        with _generators_kept():
            try:
                self.llm = LLM(**kwargs)
            except TypeError:  # an older vLLM without logprobs_mode: its logprobs are then raw, not tempered
                kwargs.pop("logprobs_mode")
                self.llm = LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.stop_ids = _stop_ids(self.tokenizer)
        self._lora: dict[str, object] = {}
        self._lora_next_id = 1

    def set_adapter_path(self, name: str, path) -> None:
        from vllm.lora.request import LoRARequest

        self._lora[name] = LoRARequest(f"{name}-{self._lora_next_id}", self._lora_next_id, str(path))
        self._lora_next_id += 1

    def generate_ids(self, prompts, *, max_new_tokens=256, temperature=1.0, seed=None, adapter=None):
        from vllm import SamplingParams

        if not prompts:
            return []
        # every processor set explicitly: vLLM otherwise takes the model's generation_config defaults
        # (repetition_penalty, top_k, min_p), which the trainer's logprobs do not have
        params = [SamplingParams(max_tokens=max_new_tokens, temperature=temperature, top_p=1.0, top_k=-1, min_p=0.0,
                                 repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, logprobs=0,
                                 stop_token_ids=self.stop_ids, seed=None if seed is None else seed + i)
                  for i in range(len(prompts))]
        lora = self._lora.get(adapter) if adapter is not None else None
        if adapter is not None and lora is None:
            raise BackendError(f"no LoRA adapter {adapter!r} registered with set_adapter_path")
        outs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, lora_request=lora,
                                 use_tqdm=False)
        results = []
        for o in outs:
            c = o.outputs[0]
            toks = list(c.token_ids)
            lps = [float(step[t].logprob) for step, t in zip(c.logprobs or [], toks)]
            results.append(Generation(c.text, toks, lps, finished=c.finish_reason == "stop"))
        return results

    def _engine_model(self):
        engine = self.llm.llm_engine
        for path in ("model_executor.driver_worker.worker.model_runner.model",
                     "model_executor.driver_worker.model_runner.model"):
            obj = engine
            try:
                for attr in path.split("."):
                    obj = getattr(obj, attr)
                return obj
            except AttributeError:
                continue
        return None

    def load_weights(self, model) -> None:
        """Push ``model``'s weights (a plain transformers model) into the engine, then reset its prefix cache."""
        weights = [(name, p.detach()) for name, p in model.state_dict().items()]
        target = self._engine_model()
        if target is not None:
            target.load_weights(weights)
        else:  # newer engines: run the load inside the worker
            self.llm.collective_rpc(lambda worker: worker.model_runner.model.load_weights(weights))
        self.reset_prefix_cache()

    def reset_prefix_cache(self) -> None:
        """Drop the engine's cached prefixes (they hold the old weights' keys and values); vLLM answers
        False when it could not (requests still running), which must not pass silently."""
        if self.llm.reset_prefix_cache() is False:
            raise BackendError("vLLM could not reset its prefix cache after a weight update (requests still "
                               "running?): generating now would reuse keys and values of the old weights")


# the LoRA ranks vLLM accepts for max_lora_rank (vllm.config.LoRAConfig's possible_max_ranks)
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def check_vllm_lora_rank(rank: int) -> int:
    """``rank`` when vLLM serves LoRA adapters of it; a ``ValueError`` naming the ranks it accepts otherwise
    (it would refuse the engine, or serve a padded rank the trainer never trained)."""
    if rank not in VLLM_LORA_RANKS:
        raise ValueError(f"vLLM serves LoRA ranks {VLLM_LORA_RANKS}; got lora_r={rank}: pick one of them")
    return rank


class _generators_kept:
    """Restore torch's (CPU and CUDA), numpy's and ``random``'s global generators on exit."""

    def __enter__(self):
        import random

        import numpy as np
        import torch

        self.states = (random.getstate(), np.random.get_state(), torch.random.get_rng_state(),
                       torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)

    def __exit__(self, *exc):
        import random

        import numpy as np
        import torch

        py, npy, cpu, cuda = self.states
        random.setstate(py)
        np.random.set_state(npy)
        torch.random.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        return False


class OpenAIBackend(Backend):
    """Any OpenAI-compatible chat-completions server, through the standard library (no SDK needed).

    ``timeout`` seconds per request; ``retries`` more tries on connection errors, timeouts, 429 and 5xx,
    with exponential backoff from ``backoff`` seconds. ``api_key`` defaults to ``$OPENAI_API_KEY`` when set.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 3, backoff: float = 0.5, extra_body: dict | None = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.timeout, self.retries, self.backoff = model, timeout, retries, backoff
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.extra_body = extra_body or {}

    def chat(self, conversations, *, max_new_tokens=256, temperature=1.0, seed=None):
        return [self._one(m, max_new_tokens, temperature, None if seed is None else seed + i)
                for i, m in enumerate(conversations)]

    def _one(self, messages, max_new_tokens, temperature, seed) -> Generation:
        body = {"model": self.model, "messages": messages, "max_tokens": max_new_tokens, "temperature": temperature,
                **self.extra_body}
        if seed is not None:
            body["seed"] = int(seed)
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        last = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode())
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:300]
                last = f"HTTP {e.code}: {detail}"
                if e.code == 429 or e.code >= 500:
                    continue
                raise BackendError(f"the chat-completions server at {self.url} refused the request ({last})") from e
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
                continue
            except json.JSONDecodeError as e:
                raise BackendError(f"the server at {self.url} did not answer with JSON: {e}") from e
            try:
                choice = payload["choices"][0]
                text = choice["message"]["content"] or ""
            except (KeyError, IndexError, TypeError) as e:
                raise BackendError(f"unexpected chat-completions answer from {self.url}: {str(payload)[:300]}") from e
            return Generation(text, finished=choice.get("finish_reason") != "length")
        raise BackendError(
            f"could not reach the chat-completions server at {self.url} after {self.retries + 1} tries "
            f"(timeout {self.timeout:g}s each); last error: {last}. Is the server running (e.g. `vllm serve MODEL`)?"
        )


def load_backend(spec: str, **kwargs) -> Backend:
    """A backend from a string: ``hf:DIR`` / a directory (transformers), ``vllm:DIR``, ``openai:URL#MODEL``."""
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        if not model:
            raise BackendError("an openai backend spec is openai:BASE_URL#MODEL, e.g. openai:http://localhost:8000/v1#my-model")
        return OpenAIBackend(url, model, **kwargs)
    if spec.startswith("vllm:"):
        return VLLMBackend(spec[len("vllm:"):], **kwargs)
    return TransformersBackend.from_path(spec.removeprefix("hf:"), **kwargs)
