"""Held-out LLM panel evaluation: ``scope-envs eval-llm``.

A trained LLM agent (``--policy``, one or more) plays ``--episodes`` episodes against
each user simulator of a panel, a YAML (or JSON) file naming simulators and their
backends. SCOPE evaluates on six API models; any mix works here::

    simulators:
      - {name: qwen-local, kind: local, path: models/qwen-user}        # transformers, a local directory
      - {name: llama-vllm, kind: vllm, path: models/llama-user}        # vLLM (GPU), a local directory
      - {name: gpt-4o-mini, kind: openai, base_url: https://api.openai.com/v1, model: gpt-4o-mini,
         api_key_env: OPENAI_API_KEY}                                  # any OpenAI-compatible endpoint
    verbalized_sampling: false    # or {k: 5, tau: 0.05}: the panel answers through the game's -vs env
                                  # (--env p4g-frozen then plays p4g-vs: eval.json's env, beside env_asked)

Every entry is checked before any episode: a known ``kind``, an existing model
directory with a tokenizer, a reachable endpoint (``GET base_url/models``; any HTTP
answer counts, a refused connection or a timeout does not).

Each simulator sits in the env's user seat as an ``LLMPlayer``; the policy plays
agent_0 as an ``LLMPlayer`` too. A policy is a model directory (a trainer's
``checkpoints/final/agent``), a LoRA adapter directory whose base model is a local
directory (``checkpoints/final/adapters/agent``; merged on load), ``vllm:DIR`` or
``openai:BASE_URL#MODEL``. Reported, per simulator and as the panel mean (the
mean of the simulators' means): ``score`` (the game's ``agent_score()`` in [0, 1];
p4g: the gift over $2, tau2: the task reward) and ``success`` (the fraction of
episodes with a score above 0). With several policies, each pair is compared on the
per-episode scores, per simulator and over the whole panel, by Welch's t-test
(``scipy.stats.ttest_ind(equal_var=False)``), Holm-adjusted over all those
comparisons. Written as ``eval.json`` and ``eval.md`` under ``out``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import operator
import os
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

PANEL_KINDS = ("local", "vllm", "openai")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


class PanelError(ValueError):
    """A panel or policy that cannot be evaluated (the user's input, reported as one line)."""


class ModelLoadError(PanelError):
    """A model or LoRA adapter directory that passed ``check_model_dir`` but whose files transformers, peft,
    safetensors or torch cannot read: a corrupt or truncated weights file, an unknown ``model_type`` or
    ``peft_type``, a config that is not JSON. ``path``: the directory as given; ``role``: ``"policy"`` or
    ``"simulator"`` where the panel loaded it (the commands name the argument from it), else None."""

    def __init__(self, message: str, path, role: str | None = None):
        super().__init__(message)
        self.path, self.role = str(path), role


def _load_errors() -> tuple[type, ...]:
    """What transformers, peft, safetensors and torch raise for a directory whose files are broken, and no more:
    ValueError (an unknown model_type, a JSON error), OSError (a config that is not JSON, an unreadable file),
    KeyError (an unknown peft_type), RuntimeError (torch.load of a truncated .bin, weights of another shape),
    pickle's UnpicklingError (a .bin of garbage), safetensors' SafetensorError (a corrupt or truncated
    .safetensors) and huggingface_hub's StrictDataclassError (a config field of the wrong type)."""
    import pickle

    errors: list[type] = [ValueError, OSError, KeyError, RuntimeError, pickle.UnpicklingError]
    try:
        from safetensors import SafetensorError

        errors.append(SafetensorError)
    except ImportError:
        pass
    try:
        from huggingface_hub.errors import StrictDataclassError

        errors.append(StrictDataclassError)
    except ImportError:
        pass
    return tuple(errors)


def _not_a_load_error(e: BaseException) -> bool:
    """Errors of the load-error types that say nothing about the directory: a missing-directory BackendError
    (reported by its own handlers), out of memory, something not implemented, a recursion."""
    from scope_envs.agents.llm.backends import BackendError

    kinds = [BackendError, NotImplementedError, RecursionError]
    try:
        import torch

        kinds.append(torch.OutOfMemoryError)
    except (ImportError, AttributeError):
        pass
    return isinstance(e, tuple(kinds))


def _reason(e: BaseException) -> str:
    """The load error ``e`` as one short line: what is wrong with the directory's files."""
    import pickle

    if type(e).__name__ == "SafetensorError":
        return f"a .safetensors weights file is corrupt or truncated ({' '.join(str(e).split())})"
    if isinstance(e, pickle.UnpicklingError) or _unpickling(e):  # torch's message: a page about weights_only
        return "a .bin weights file is corrupt or not a torch checkpoint (torch.load cannot unpickle it)"
    if isinstance(e, KeyError):
        return f"its config names {e}, which this version does not know"  # e.g. an unknown peft_type
    if isinstance(e, TypeError):  # (only where ``loading`` was asked to take it: peft reading a config's fields)
        return f"its config has a field of the wrong type ({' '.join(str(e).split())[:200]})"
    lines = [" ".join(line.split()) for line in str(e).splitlines() if line.strip()]
    line = lines[0] if lines else type(e).__name__
    if len(line) > 240:  # transformers' messages run on: the sentences that say what is wrong
        cut = line.rfind(". ", 0, 240)
        line = line[:cut + 1] if cut > 0 else line[:240] + "..."
    return line


@contextlib.contextmanager
def loading(path, what: str = "model", role: str | None = None, also: tuple[type, ...] = ()):
    """Around a from_pretrained (or config-loading) call on the user's directory ``path``: the errors those
    libraries raise for its broken files (``_load_errors``, and the types ``also`` names) become one
    ``ModelLoadError`` naming ``path``; any other error (a bug, out of memory) goes on as it is."""
    try:
        yield
    except Exception as e:
        if _not_a_load_error(e) or not (isinstance(e, _load_errors() + also) or _unpickling(e)):
            raise
        raise ModelLoadError(f"{str(path)!r}: cannot load the {what} there: {_reason(e)}", path, role) from None


def _unpickling(e: BaseException) -> bool:
    """Whether ``e`` was raised while torch.load read a .bin file: unpickling random bytes raises whatever the
    bytes lead pickle into (UnpicklingError, a KeyError of its memo, EOFError, ...), all a file that is no
    checkpoint."""
    import traceback

    torch_load = os.path.join("torch", "serialization.py")
    return any(frame.filename.endswith(torch_load) for frame in traceback.extract_tb(e.__traceback__))


class AdapterNotModel(PanelError):
    """A LoRA adapter directory (``adapter_config.json``) given where a model directory goes; ``base``: the base
    model its config names (None where it names none). The commands say what to pass instead."""

    def __init__(self, path, base: str | None):
        named = f"base model {base!r}" if base else "its config names no base model"
        super().__init__(f"{str(path)!r} is a LoRA adapter ({named}), not a model directory")
        self.path, self.base = str(path), base


def adapter_named_base(path) -> str | None:
    """The base model a LoRA adapter directory's ``adapter_config.json`` names, as written, unchecked (None where
    it names none or cannot be read)."""
    try:
        data = json.loads((Path(os.path.expanduser(str(path))) / "adapter_config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    base = data.get("base_model_name_or_path") if isinstance(data, dict) else None
    return base if isinstance(base, str) and base else None


def check_model_dir(path) -> str:
    """``path`` as a local model directory holding a tokenizer whose chat template renders the envs' conversations
    (``templates.check_template``), or a ``PanelError`` saying what is missing (``AdapterNotModel`` for a LoRA
    adapter directory; ``ModelLoadError`` for files that cannot be read)."""
    p = Path(os.path.expanduser(str(path)))
    if not p.is_dir():
        raise PanelError(f"no model directory {str(path)!r} (scope-envs never downloads models)")
    if (p / "adapter_config.json").is_file() and not (p / "config.json").is_file():
        raise AdapterNotModel(path, adapter_named_base(p))  # (its folder holds no tokenizer: not that advice)
    if not any((p / f).exists() for f in TOKENIZER_FILES):
        raise PanelError(f"{str(path)!r} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
                         "save one there with tokenizer.save_pretrained")
    # a tokenizer alone (or a run's folder) would only fail inside transformers, as a traceback, once loading
    try:
        config = json.loads((p / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        config = None
    if not isinstance(config, dict):
        raise PanelError(f"{str(path)!r} holds no model: no readable config.json (save one there with "
                         "model.save_pretrained)")
    if not any(p.glob("*.safetensors")) and not any(p.glob("pytorch_model*.bin")):
        raise PanelError(f"{str(path)!r} holds no model weights (no *.safetensors, no pytorch_model*.bin); "
                         "save them there with model.save_pretrained")
    with loading(path):  # the config and the weights' headers, in milliseconds: the second of several policies
        # is not found broken only after the first has played (a .bin has no header to read without loading it)
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(p), local_files_only=True)
        _read_headers(p.glob("*.safetensors"))
    check_chat_template(path)
    return str(p)


def check_chat_template(path) -> None:
    """The tokenizer of the model directory ``path`` loads and its chat template renders the conversations an
    episode starts with (``templates.check_template``, the rollout's code path), in a second, before any model
    loads: else a ``PanelError`` naming ``path`` (``ModelLoadError`` where the tokenizer's files cannot be read)."""
    from transformers import AutoTokenizer

    from scope_envs.agents.llm.templates import TemplateError, check_template

    with loading(path, "tokenizer"):
        tokenizer = AutoTokenizer.from_pretrained(str(Path(os.path.expanduser(str(path)))), local_files_only=True)
    try:
        check_template(tokenizer, repr(str(path)))
    except TemplateError as e:
        raise PanelError(str(e)) from None


def _read_headers(files) -> None:
    """Open each .safetensors file's header (its tensors' names, shapes and offsets, checked against the file's
    size): a corrupt or truncated file raises safetensors' error here, without a tensor read."""
    from safetensors import safe_open

    for f in sorted(files):
        with safe_open(str(f), "pt"):
            pass


@dataclass
class Simulator:
    name: str
    kind: str
    path: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0


def load_panel(path) -> tuple[list[Simulator], dict]:
    """The panel's simulators and its options (``verbalized_sampling``), checked (``PanelError``)."""
    p = Path(path)
    if not p.is_file():
        raise PanelError(f"no panel file {str(path)!r}")
    try:  # not UTF-8 or not readable: the user's file, said in one line
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise PanelError(f"cannot read the panel file {str(path)!r}: {e}") from None
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except ImportError as e:
        raise PanelError("a YAML panel needs pyyaml (pip install 'scope-envs[llm]'), or write it as .json") from e
    except Exception as e:  # the parsers' own errors: the file is not YAML/JSON
        reason = " ".join(str(e).split())  # a YAML error spans lines: one line
        raise PanelError(f"{path} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {reason}") from None
    if isinstance(data, list):
        data = {"simulators": data}
    if not isinstance(data, dict) or not isinstance(data.get("simulators"), list) or not data["simulators"]:
        raise PanelError(f"{path}: expected a 'simulators' list of {{name, kind, ...}} entries")
    unknown = set(data) - {"simulators", "verbalized_sampling"}
    if unknown:
        raise PanelError(f"{path}: unknown key(s) {sorted(unknown)}; a panel has 'simulators' and "
                         "'verbalized_sampling'")
    fields = set(Simulator.__dataclass_fields__)
    sims = []
    for i, entry in enumerate(data["simulators"]):
        if not isinstance(entry, dict):
            raise PanelError(f"{path}: simulator {i} is not a mapping")
        bad = set(entry) - fields
        if bad:
            raise PanelError(f"{path}: simulator {i} has unknown key(s) {sorted(bad)}")
        kind = entry.get("kind")
        if kind not in PANEL_KINDS:
            raise PanelError(f"{path}: simulator {entry.get('name', i)!r} has unknown kind {kind!r}; "
                             f"the kinds are {', '.join(PANEL_KINDS)}")
        wrong = [k for k in ("name", "path", "base_url", "model", "api_key_env")
                 if k in entry and not isinstance(entry[k], str)]
        if wrong:  # e.g. a YAML list or number where a name or path goes: it would fail later, as a traceback
            raise PanelError(f"{path}: simulator {i}: {', '.join(wrong)} must be text, got "
                             f"{', '.join(repr(entry[k]) for k in wrong)}")
        timeout = entry.get("timeout", 60.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
            raise PanelError(f"{path}: simulator {i}: timeout is seconds in (0, 3600], got {timeout!r}")
        sim = Simulator(**{"name": f"{kind}-{i}", **entry})
        if kind == "openai":
            if not sim.base_url or not sim.model:
                raise PanelError(f"{path}: simulator {sim.name!r} (openai) needs base_url and model")
        else:
            if not sim.path:
                raise PanelError(f"{path}: simulator {sim.name!r} ({kind}) needs path, a local model directory")
            try:
                sim.path = check_model_dir(sim.path)
            except PanelError as e:
                raise PanelError(f"{path}: simulator {sim.name!r}: {e}") from None
        sims.append(sim)
    names = [s.name for s in sims]
    if len(set(names)) != len(names):
        raise PanelError(f"{path}: simulator names must be unique, got {names}")
    vs = data.get("verbalized_sampling", False)
    if vs is True:
        vs = {}
    if vs is not False and not isinstance(vs, dict):
        raise PanelError(f"{path}: verbalized_sampling is false, true or options such as {{k: 5, tau: 0.05}}")
    return sims, {"verbalized_sampling": vs}


def check_reachable(sim: Simulator, timeout: float = 5.0) -> None:
    """An OpenAI-compatible endpoint answers ``GET base_url/models`` (any HTTP status), else ``PanelError``."""
    url = sim.base_url.rstrip("/") + "/models"
    headers = {}
    key = os.environ.get(sim.api_key_env) if sim.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout):
            pass
    except urllib.error.HTTPError:
        return  # it answered: reachable (a wrong key or path shows up on the first request, with its message)
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise PanelError(f"simulator {sim.name!r}: the endpoint {sim.base_url} is unreachable ({reason})") from None


def simulator_backend(sim: Simulator):
    from scope_envs.agents.llm.backends import (
        OpenAIBackend,
        TransformersBackend,
        VLLMBackend,
    )

    if sim.kind == "local":
        try:
            with loading(sim.path, role="simulator"):
                return TransformersBackend.from_path(sim.path)
        except ModelLoadError as e:
            raise ModelLoadError(f"simulator {sim.name!r}: {e}", e.path, e.role) from None
    if sim.kind == "vllm":
        return VLLMBackend(sim.path)
    key = os.environ.get(sim.api_key_env) if sim.api_key_env else None
    return OpenAIBackend(sim.base_url, sim.model, api_key=key, timeout=sim.timeout)


def adapter_base(path) -> str | None:
    """A LoRA adapter directory (``adapter_config.json``, e.g. ``checkpoints/final/adapters/agent``): the
    local base model it was trained on, checked; None for any other directory."""
    config = Path(os.path.expanduser(str(path))) / "adapter_config.json"
    if not config.is_file():
        return None
    try:
        data = json.loads(config.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PanelError(f"{str(path)!r}: its adapter_config.json is not readable JSON "
                         f"({' '.join(str(e).split())})") from None
    if not isinstance(data, dict):
        raise PanelError(f"{str(path)!r}: its adapter_config.json is not a JSON object (a LoRA adapter's is "
                         "written by save_pretrained)")
    base = data.get("base_model_name_or_path")
    try:
        base = check_model_dir(base)
    except ModelLoadError as e:
        raise ModelLoadError(f"{str(path)!r} is a LoRA adapter whose base model cannot be loaded: {e}", e.path,
                             e.role) from None
    except PanelError as e:
        missing = not Path(os.path.expanduser(str(base))).is_dir() if isinstance(base, str) else True
        raise PanelError(f"{str(path)!r} is a LoRA adapter whose base model is "
                         f"{'not here' if missing else 'not usable'}: {e}") from None
    if not any((config.parent / f).is_file() for f in ADAPTER_WEIGHTS):  # else peft takes it for a hub repo id
        raise PanelError(f"{str(path)!r} is a LoRA adapter without its weights (no {' or '.join(ADAPTER_WEIGHTS)}); "
                         "save them there with model.save_pretrained")
    with loading(path, "LoRA adapter"):
        _read_headers(config.parent.glob("*.safetensors"))
    return base


def policy_backend(spec: str):
    """A policy: a local model directory or LoRA adapter directory (transformers; ``hf:DIR`` too, as ``diagnose``
    and ``serve`` name one), ``vllm:DIR`` or ``openai:BASE_URL#MODEL``."""
    from scope_envs.agents.llm.backends import TransformersBackend, load_backend

    spec = spec.removeprefix("hf:")
    if spec.startswith(("openai:", "vllm:")):
        return load_backend(spec)
    base = adapter_base(spec)
    if base is None:
        with loading(spec, role="policy"):
            return load_backend(spec)
    from peft import PeftModel

    try:
        with loading(base, role="policy"):
            backend = TransformersBackend.from_path(base)
    except ModelLoadError as e:
        raise ModelLoadError(f"{spec!r} is a LoRA adapter whose base model cannot be loaded: {e}", e.path,
                             e.role) from None
    # peft reads adapter_config.json's fields as they are: one of the wrong type ("r": "4") is its TypeError
    with loading(spec, "LoRA adapter", role="policy", also=(TypeError,)):
        model = PeftModel.from_pretrained(backend.model, spec)
    model = model.merge_and_unload()  # the adapter folded in
    return TransformersBackend(model.eval(), backend.tokenizer)


def check_policy(spec: str, timeout: float = 5.0) -> None:
    """``spec`` can be played: an endpoint answers within ``timeout`` seconds, a directory holds a model or a
    LoRA adapter with its base; else ``PanelError``, naming ``spec``."""
    spec = spec.removeprefix("hf:")
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        if not model:
            raise PanelError(f"{spec!r}: an endpoint policy is openai:BASE_URL#MODEL")
        try:
            check_reachable(Simulator("policy", "openai", base_url=url, model=model), timeout=timeout)
        except PanelError as e:  # a policy, not a panel simulator
            raise PanelError(str(e).replace("simulator 'policy'", repr(spec), 1)) from None
    elif spec.startswith("vllm:") or adapter_base(spec) is None:
        try:
            check_model_dir(spec.removeprefix("vllm:"))
        except AdapterNotModel as e:  # vllm:ADAPTER (a bare adapter directory is taken above, with its base)
            raise PanelError(f"{spec!r}: vllm: serves a model directory, and {e}; pass the adapter directory "
                             "without vllm: (eval-llm merges it into its base model with transformers)") from None
        except PanelError as e:
            # a --lora run's checkpoints/final/agent holds only the value head: its policy is adapters/agent
            p = Path(os.path.expanduser(spec.removeprefix("vllm:")))
            lora = p.parent / "adapters" / p.name
            if (lora / "adapter_config.json").is_file():
                raise PanelError(f"{spec!r} is not a model: that run trained LoRA adapters, and its policy is "
                                 f"the adapter directory {str(lora)!r}") from None
            raise e


def eval_env_id(env_id: str, options: dict) -> tuple[str, dict]:
    """The env the panel plays in (the user seat must take a player) and its extra options."""
    import scope_envs

    if env_id not in scope_envs.registry:
        raise PanelError(f"unknown env {env_id!r}")
    spec = scope_envs.registry[env_id]
    vs = options.get("verbalized_sampling", False)
    if vs is not False:
        return f"{spec.game}-vs", dict(vs)
    if spec.regime not in ("frozen", "vs"):
        raise PanelError(f"{env_id} is a {spec.regime} env: the panel sits in the user seat of a -frozen or -vs env "
                         f"(e.g. {spec.game}-frozen)")
    return env_id, {}


def play(env, agent, scenario: int, rng) -> float:
    obs, infos = env.reset(seed=scenario)
    while env.agents:
        speaker = next(a for a in env.agents if infos[a].get("active"))
        obs, _, _, _, infos = env.step({speaker: agent(obs[speaker], infos[speaker], rng)})
    return float(env.unwrapped.game.agent_score())


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone)."""
    p = np.asarray(pvalues, float)
    adj = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adj[i] = running
    return adj.tolist()


def welch(a, b) -> tuple[float, float]:
    """Welch's t and two-sided p; p = 1 where both samples are constant and equal (no evidence of a gap)."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan"), 1.0
    if a.std() == 0 and b.std() == 0:
        return (0.0, 1.0) if a.mean() == b.mean() else (float("inf") * np.sign(a.mean() - b.mean()), 0.0)
    t, p = stats.ttest_ind(a, b, equal_var=False)
    return float(t), float(p)


def evaluate(policies: list[str], env_id: str, panel, episodes: int, *, seed: int = 0, max_new_tokens: int = 64,
             env_kwargs: dict | None = None, out=None, log=print) -> dict:
    """Every policy against every simulator of the panel (``load_panel``'s output or a path)."""
    from tqdm import tqdm

    import scope_envs
    from scope_envs.agents.llm.player import LLMPlayer

    sims, options = load_panel(panel) if not isinstance(panel, tuple) else panel
    for spec in policies:
        check_policy(spec)
    for sim in sims:
        if sim.kind == "openai":
            check_reachable(sim)
    run_id, vs_kwargs = eval_env_id(env_id, options)
    kwargs = {**(env_kwargs or {}), **vs_kwargs}
    if run_id != env_id and log:  # said, and kept in eval.json (env_asked): the command line named another id
        log(f"the panel's verbalized_sampling plays {run_id} in place of {env_id}")
    scores: dict[str, dict[str, list[float]]] = {}
    # an episode of a large model can take minutes: a bar per episode, not only a line per simulator
    bar = tqdm(total=len(policies) * len(sims) * episodes, desc="eval-llm", unit="episode", disable=not log)
    try:  # closed before an error is said (e.g. a model whose files cannot be loaded), not after it
        for spec in policies:
            agent = LLMPlayer(policy_backend(spec), max_new_tokens=max_new_tokens, name="policy")
            scores[spec] = {}
            for i, sim in enumerate(sims):
                user = LLMPlayer(simulator_backend(sim), max_new_tokens=max_new_tokens, name=sim.name)
                env = scope_envs.make(run_id, surface="text", user=user, **kwargs)
                rng = np.random.default_rng([seed, i])
                # the same scenarios (personas, tasks) for every policy and simulator
                scores[spec][sim.name] = []
                for k in range(episodes):
                    scores[spec][sim.name].append(play(env, agent, seed * 100003 + k, rng))
                    bar.update(1)
                env.close()
                if log:
                    log(f"{spec} vs {sim.name}: score {np.mean(scores[spec][sim.name]):.3f} over {episodes} "
                        "episodes")
    finally:
        bar.close()
    report = {"env": run_id, "env_asked": env_id, "env_kwargs": dict(env_kwargs or {}), "episodes": episodes,
              "seed": seed, "max_new_tokens": max_new_tokens, "panel": [asdict(s) for s in sims],  # all a rerun needs
              "verbalized_sampling": options["verbalized_sampling"], "policies": {}, "comparisons": []}
    for spec, by_sim in scores.items():
        per = {name: {"score": float(np.mean(v)), "success": float(np.mean(np.asarray(v) > 0)), "scores": v}
               for name, v in by_sim.items()}
        report["policies"][spec] = {"simulators": per,
                                    "mean": {k: float(np.mean([p[k] for p in per.values()]))
                                             for k in ("score", "success")}}
    tests = []
    for i, a in enumerate(policies):
        for b in policies[i + 1:]:
            for name in [s.name for s in sims] + ["panel"]:
                xa = functools.reduce(operator.iadd, scores[a].values(), []) if name == "panel" else scores[a][name]
                xb = functools.reduce(operator.iadd, scores[b].values(), []) if name == "panel" else scores[b][name]
                t, p = welch(xa, xb)
                tests.append({"a": a, "b": b, "simulator": name, "diff": float(np.mean(xa) - np.mean(xb)),
                              "t": t, "p": p})
    for test, adj in zip(tests, holm([t["p"] for t in tests]) if tests else []):
        test["p_holm"] = adj
    report["comparisons"] = tests
    if out is not None:
        from scope_envs.files import jsonable, write_atomic, write_json

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        # whole or not at all; a t of NaN (fewer than 2 episodes) or inf is null: JSON has neither
        write_json(out / "eval.json", jsonable(report))
        write_atomic(out / "eval.md", to_markdown(report))
    return report


def to_markdown(report: dict) -> str:
    sims = [s["name"] for s in report["panel"]]
    env = report["env"]
    if report.get("env_asked", env) != env:
        env += f" (--env {report['env_asked']}, through the panel's verbalized_sampling)"
    lines = [f"# Held-out panel: {env}, {report['episodes']} episodes per simulator", "",
             "Score (success) per simulator and the panel mean.", "",
             "| policy | " + " | ".join(sims) + " | mean |", "|---" * (len(sims) + 2) + "|"]
    for spec, r in report["policies"].items():
        cells = [f"{r['simulators'][s]['score']:.3f} ({r['simulators'][s]['success']:.2f})" for s in sims]
        lines.append(f"| {spec} | " + " | ".join(cells) + f" | {r['mean']['score']:.3f} ({r['mean']['success']:.2f}) |")
    if report["comparisons"]:
        lines += ["", "Welch's t-test on per-episode scores, Holm-adjusted over every comparison below.", "",
                  "| a | b | simulator | diff | t | p | p (Holm) |", "|---|---|---|---|---|---|---|"]
        for c in report["comparisons"]:
            lines.append(f"| {c['a']} | {c['b']} | {c['simulator']} | {c['diff']:+.3f} | {c['t']:.2f} | "
                         f"{c['p']:.3g} | {c['p_holm']:.3g} |")
    return "\n".join(lines) + "\n"
