"""The user seat as an LLM on the server: ``scope-envs serve ID --surface text --user-llm SPEC``.

``SPEC`` is a backend of ``scope_envs.agents.llm.backends.load_backend``: ``openai:BASE_URL#MODEL`` (any
OpenAI-compatible chat-completions endpoint), a local model directory (``hf:DIR`` or ``DIR``: transformers)
or ``vllm:DIR``. The server builds that backend once and every session's user seat talks through it:

* a ``frozen`` or ``vs`` id seats an ``LLMPlayer`` over it as ``user=`` (the regime's own option), in place
  of the game's built-in simulator, so the client plays ``agent_0`` against the LLM;
* a ``population`` id with a checkpoint pool (``--kwarg pool_size=K``) adds, at a client's
  ``reset(adapter=NAME)``, a frozen snapshot to the session's pool: an ``LLMPlayer`` generating with the
  LoRA adapter ``NAME``, the text-level counterpart of the act level's pushed MLP (``snapshot.py``). Behind
  an OpenAI-compatible endpoint an adapter is a model name the endpoint serves (vLLM:
  ``vllm serve BASE --enable-lora --lora-modules NAME=PATH``, or loaded at run time), so the snapshot asks
  for model ``NAME``; behind a local transformers model, ``NAME`` is a directory under the server's
  ``adapter_dir`` (``--user-adapter-dir``), saved by PEFT's ``save_pretrained``, loaded on first use.

An endpoint that fails during play (unreachable, overloaded past its retries, refusing the request) is
not a protocol error: the turn counts as one of the user's in-game errors, as an unreadable message does
(the env's ``max_errors`` ends the episode, truncated, when they run out), and each driven agent's info
carries the backend's sentence as ``user_llm_error``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import threading
from pathlib import Path
from typing import Optional

import numpy as np

from scope_envs.core.simulator import Simulator, View

USER_LLM_REGIMES = ("frozen", "vs")  # the regimes whose user= option takes a player
# one path component, never "..": train-llm --mode population --lora names its adapters user@1, user@2, ...
ADAPTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
MAX_LOADED_ADAPTERS = 16  # a local model keeps this many adapters in memory; older ones reload when named


class UserLLMError(ValueError):
    """A ``--user-llm`` setting the server cannot serve (the message says why; ``argument``: the option)."""

    def __init__(self, message: str, argument: str = "--user-llm"):
        super().__init__(message)
        self.argument = argument


@dataclasses.dataclass(frozen=True)
class UserLLMOptions:
    """How the served LLM plays: ``LLMPlayer``'s generation length and temperature; for an endpoint, its
    per-request ``timeout`` seconds and ``retries``."""

    max_new_tokens: int = 256
    temperature: float = 1.0
    timeout: float = 60.0
    retries: int = 3


def check_regime(env_id: str, surface: str, kwargs: dict) -> str:
    """What an LLM does on this id: ``"user"`` (it is the user) or ``"adapters"`` (pool snapshots)."""
    import scope_envs

    if surface != "text":
        raise UserLLMError("an LLM user plays the text surface: serve with --surface text")
    regime = scope_envs.registry[env_id].regime
    if regime in USER_LLM_REGIMES:
        if "user" in kwargs:
            raise UserLLMError("give the user seat either --user-llm or a user= keyword argument, not both")
        return "user"
    if regime == "population" and "pool_size" in kwargs:
        return "adapters"
    raise UserLLMError(f"{env_id} is a {regime} id: an LLM sits in the user seat of a frozen or vs id (user=), "
                       "or plays named adapters in the checkpoint pool of a population id with --kwarg pool_size=K")


def check_spec_form(spec) -> str:
    """``spec`` when it has a backend spec's form (the command line's check; loading it is ``build_backend``'s)."""
    if not isinstance(spec, str) or not spec or len(spec) > 4096:
        raise UserLLMError("a backend spec is openai:BASE_URL#MODEL, a local model directory, or vllm:DIR")
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise UserLLMError(f"an endpoint is openai:BASE_URL#MODEL (e.g. openai:http://127.0.0.1:8001/v1#my-model), "
                               f"got {spec[:80]!r}")
    return spec


def build_backend(spec: str, options: UserLLMOptions):
    """The backend of ``spec``, checked before anything listens (``UserLLMError`` says what is wrong): an
    endpoint must answer, a directory must hold a model and its tokenizer (``eval-llm``'s checks)."""
    from scope_envs.agents.llm.backends import BackendError, load_backend
    from scope_envs.train.llm.panel import PanelError, adapter_base, check_policy

    check_spec_form(spec)
    try:
        check_policy(spec if spec.startswith(("openai:", "vllm:")) else spec.removeprefix("hf:"))
    except PanelError as e:
        raise UserLLMError(str(e)) from None
    if spec.startswith("openai:"):
        return load_backend(spec, timeout=options.timeout, retries=options.retries)
    if not spec.startswith("vllm:") and (base := adapter_base(spec.removeprefix("hf:"))) is not None:
        # check_policy takes an adapter (eval-llm merges it into its base), the server's backend does not: it
        # would fail reading a tokenizer the adapter folder does not hold, in transformers' words
        raise UserLLMError(f"{spec[:200]!r} is a LoRA adapter, not a model: pass its base model {base!r} to "
                           "--user-llm (a population id's adapters are served by name from --user-adapter-dir)")
    try:
        return load_backend(spec)
    except BackendError as e:
        raise UserLLMError(str(e)) from None
    except ImportError as e:
        raise UserLLMError(f"a local model needs the llm extra: pip install 'scope-envs[llm]' ({e.name} is "
                           "missing)") from None
    except (OSError, ValueError) as e:  # transformers' own refusal of a directory that holds no model
        raise UserLLMError(f"{spec[:200]!r} is not a loadable model directory: {' '.join(str(e).split())}") from None


class ServedLLM:
    """The server's one LLM backend, shared by every session's user seat.

    ``spec``: a ``load_backend`` spec, or a ready backend (``Backend``: anything with ``chat``).
    A local model is one set of weights that sessions take turns on (its generation swaps the torch
    generator and the active adapter), so its calls hold a lock; an endpoint's requests run side by side.
    """

    def __init__(self, spec, options: Optional[UserLLMOptions] = None, adapter_dir=None):
        from scope_envs.agents.llm.backends import OpenAIBackend, VLLMBackend

        self.options = options or UserLLMOptions()
        if isinstance(spec, str):
            self.spec, self.backend = spec, build_backend(spec, self.options)
        else:
            if not callable(getattr(spec, "chat", None)):
                raise UserLLMError(f"user_llm must be a backend spec or a backend with chat(), got "
                                   f"{type(spec).__name__}")
            self.spec, self.backend = type(spec).__name__, spec
        self.endpoint = isinstance(self.backend, OpenAIBackend)
        self.lock = None if self.endpoint else threading.Lock()
        self.adapter_dir = None
        if adapter_dir is not None:
            if self.endpoint:
                raise UserLLMError("--user-adapter-dir is for a local model: an endpoint serves its adapters "
                                   "by model name (vLLM's --lora-modules)", "--user-adapter-dir")
            if isinstance(self.backend, VLLMBackend):
                raise UserLLMError("adapters of a vllm: backend are not served (its engine takes LoRA only when "
                                   "built with enable_lora=True); serve the model with `vllm serve --enable-lora` "
                                   "and pass --user-llm openai:URL#MODEL", "--user-adapter-dir")
            path = Path(os.path.expanduser(str(adapter_dir)))
            if not path.is_dir():
                raise UserLLMError(f"no adapter directory {str(adapter_dir)!r}", "--user-adapter-dir")
            self.adapter_dir = path
        self._loaded: list[str] = []  # local adapters in the model, least recently named first

    def describe(self) -> dict:
        return {"spec": self.spec, "adapters": "endpoint" if self.endpoint else
                ("local" if self.adapter_dir is not None else None),
                "max_new_tokens": self.options.max_new_tokens, "temperature": self.options.temperature}

    def player(self, backend=None, name: str = "llm") -> "SeatedLLM":
        from scope_envs.agents.llm.player import LLMPlayer

        llm = LLMPlayer(backend or self.backend, name=name, max_new_tokens=self.options.max_new_tokens,
                        temperature=self.options.temperature)
        return SeatedLLM(llm, self.lock)

    def adapter_player(self, name) -> "SeatedLLM":
        """A frozen pool snapshot: the LLM generating with LoRA adapter ``name`` (``UserLLMError`` if not)."""
        if not isinstance(name, str) or not ADAPTER_NAME.fullmatch(name) or ".." in name:
            raise UserLLMError(f"an adapter name is 1 to 128 letters, digits, '.', '_', '-' or '@', starting "
                               f"with a letter or digit (no '..'), got {name!r:.80}")
        if self.endpoint:  # the endpoint serves the adapter as a model of that name
            backend = copy.copy(self.backend)
            backend.model = name
            return self.player(backend, name=f"adapter:{name}")
        if self.adapter_dir is None:
            raise UserLLMError("this server names no adapter directory: serve with --user-adapter-dir DIR "
                               "(or serve the model behind an endpoint that serves adapters by name)")
        path = self.adapter_dir / name
        if not (path / "adapter_config.json").is_file():
            raise UserLLMError(f"no adapter {name!r}: {path} holds no adapter_config.json (PEFT's save_pretrained)")
        return self.player(LocalAdapter(self, name, path), name=f"adapter:{name}")

    def load_adapter(self, name: str, path: Path) -> None:
        """Make adapter ``name`` the model's active one, loading it first if it is not in memory (under the
        lock). The oldest of more than ``MAX_LOADED_ADAPTERS`` leaves memory; naming it again reloads it."""
        backend = self.backend
        model = backend.model
        if name in self._loaded:
            self._loaded.remove(name)
        elif not hasattr(model, "load_adapter") or not hasattr(model, "peft_config"):
            from peft import PeftModel

            backend.model = PeftModel.from_pretrained(model, str(path), adapter_name=name).eval()
        else:
            model.load_adapter(str(path), adapter_name=name)
        self._loaded.append(name)
        while len(self._loaded) > MAX_LOADED_ADAPTERS:
            backend.model.delete_adapter(self._loaded.pop(0))
        backend.model.set_adapter(name)


class LocalAdapter:
    """A local model generating with one LoRA adapter: ``Backend.chat`` with the adapter set first."""

    def __init__(self, served: ServedLLM, name: str, path: Path):
        self.served, self.name, self.path = served, name, path

    def chat(self, conversations, *, max_new_tokens=256, temperature=1.0, seed=None):
        from scope_envs.agents.llm.backends import BackendError

        backend = self.served.backend
        try:  # the caller (SeatedLLM) holds the served model's lock
            self.served.load_adapter(self.name, self.path)
        # the adapter does not fit the model, went away, or its config names an unknown type or a field of the
        # wrong type (peft's KeyError, TypeError)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError) as e:
            raise BackendError(f"adapter {self.name!r} could not be loaded from {self.path}: {e}") from None
        prompts = [backend.encode(backend.render(m)) for m in conversations]
        return backend.generate_ids(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                                    adapter=self.name)


class SeatedLLM(Simulator):
    """An ``LLMPlayer`` in a served user seat: a backend that fails mid-game costs the user a turn's try.

    ``reply`` answers ``""`` when the backend fails, which the env counts as one of the user's in-game
    errors (``max_errors`` of them truncate the episode). The player never wrote that message, so the
    error the env records for it is taken out of the views the player is shown afterwards; ``faults``
    holds the backend's sentences (the server passes them on as ``user_llm_error``).
    """

    plays_text = True

    def __init__(self, player, lock=None):
        self.player, self.lock = player, lock
        self.name = player.name
        self.persona = player.persona
        self.faults: list[str] = []
        self._ours: set[int] = set()  # positions in this turn's view.errors that were backend faults

    def _shown(self, view: View) -> View:
        if not view.errors:
            self._ours = set()
            return view
        return dataclasses.replace(view, errors=tuple(e for i, e in enumerate(view.errors) if i not in self._ours))

    def _call(self, fn):
        from scope_envs.agents.llm.backends import BackendError

        try:
            if self.lock is None:
                return fn(), None
            with self.lock:
                return fn(), None
        except BackendError as e:
            self.faults.append(str(e))
            return None, e

    def reply(self, view: View, rng: np.random.Generator) -> str:
        shown = self._shown(view)
        text, fault = self._call(lambda: self.player.reply(shown, rng))
        if fault is not None:
            self._ours.add(len(view.errors))  # the env records this turn's error at that position
            return ""
        return text

    def verbalize(self, view: View, k: int, rng: np.random.Generator, tail: float | None = None):
        shown = self._shown(view)
        cands, fault = self._call(lambda: self.player.verbalize(shown, k, rng, tail))
        return [] if fault is not None else cands  # nothing verbalized: the env takes a direct reply

    def distribution(self, view: View) -> np.ndarray:
        return self.player.distribution(view)

    def act(self, view: View, rng: np.random.Generator) -> int:
        return self.player.act(view, rng)

