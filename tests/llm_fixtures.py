"""Shared by the LLM tests: a tiny random chat model built on the spot (no download), and fakes."""

from __future__ import annotations

import functools
import os
import tempfile

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # any attempt to reach the hub fails loudly
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@functools.lru_cache(maxsize=None)
def tiny_model_dir(arch: str = "llama", corpus: str = "default") -> str:
    """A 2-layer, hidden-64 random model with a byte-level BPE tokenizer (vocab 400) trained on the spot.

    ``corpus="upper"``: the tokenizer is trained on the upper-cased corpus, so its merges and ids differ
    from the default one's (a second model with its own vocabulary)."""
    from scope_envs.agents.llm.tiny import build_tiny_model, corpus as default_corpus

    texts = None if corpus == "default" else [line.upper() for line in default_corpus()]
    path = tempfile.mkdtemp(prefix=f"scope-tiny-{arch}-{corpus}-")
    build_tiny_model(path, arch=arch, hidden=64, layers=2, vocab_size=400, seed=0, texts=texts)
    return path


BROKEN_TEMPLATE = "{% for m in messages %}{{ m.content }"  # one '}' missing: jinja's "unexpected '}'"


def template_variant(path, kind: str) -> str:
    """A copy of the tiny model at ``path`` (a new folder) whose chat template is ``"broken"`` (``BROKEN_TEMPLATE``)
    or ``"missing"`` (no chat_template.jinja, none in tokenizer_config.json); its path."""
    import json
    import shutil
    from pathlib import Path

    path = Path(path)
    shutil.copytree(tiny_model_dir(), path)
    if kind == "broken":
        (path / "chat_template.jinja").write_text(BROKEN_TEMPLATE)
    else:
        (path / "chat_template.jinja").unlink(missing_ok=True)
        config = json.loads((path / "tokenizer_config.json").read_text())
        config.pop("chat_template", None)
        (path / "tokenizer_config.json").write_text(json.dumps(config))
    return str(path)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run fastest on one thread (and the CI machine is shared)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def tiny_dir():
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    return tiny_model_dir()


class ScriptedBackend:
    """A backend that answers from a script: ``replies`` for direct turns, ``lists`` for verbalized ones."""

    def __init__(self, replies=("Okay. [DONATE $0.50] Goodbye!",), lists=None):
        self.replies, self.lists = list(replies), lists
        self.calls = []

    def chat(self, conversations, *, max_new_tokens=256, temperature=1.0, seed=None):
        from scope_envs.agents.llm.backends import Generation

        out = []
        for msgs in conversations:
            self.calls.append(msgs)
            asks_list = "probability" in msgs[-1]["content"] and msgs[-1]["role"] == "user"
            if asks_list and self.lists is not None:
                out.append(Generation(self.lists))
            else:
                out.append(Generation(self.replies[(len(self.calls) - 1) % len(self.replies)]))
        return out


class ScriptedEngine:
    """A trainer's generation engine that answers from a script, one line per prompt in order (cycling):
    the token ids of the line and its end of turn, each with logprob -1."""

    def __init__(self, tokenizer, lines):
        """``lines``: a list, or a dict of lists by LoRA adapter (one engine serving several adapters)."""
        self.tokenizer, self.calls = tokenizer, {}
        self.lines = {k: list(v) for k, v in lines.items()} if isinstance(lines, dict) else {None: list(lines)}

    def generate_ids(self, prompts, *, max_new_tokens=256, temperature=1.0, seed=None, adapter=None):
        from scope_envs.agents.llm.backends import Generation

        key = adapter if adapter in self.lines else None
        lines = self.lines[key]
        out = []
        for _ in prompts:
            n = self.calls.get(key, 0)
            text = lines[n % len(lines)]
            self.calls[key] = n + 1
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) + [self.tokenizer.eos_token_id]
            out.append(Generation(text, ids, [-1.0] * len(ids), True))
        return out


# The end-of-turn marker (the stop token) of each chat template used from TRL's package, and its other markers
TEMPLATE_MARKERS = {
    "qwen2_5": ("<|im_end|>", ["<|im_start|>"]),
    "qwen3": ("<|im_end|>", ["<|im_start|>", "<think>", "</think>"]),
    "qwen3_instruct_2507": ("<|im_end|>", ["<|im_start|>"]),
    "qwen3_5_nothink": ("<|im_end|>", ["<|im_start|>", "<think>", "</think>"]),
    "llama3_2": ("<|eot_id|>", ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>"]),
    "gemma": ("<end_of_turn>", ["<bos>", "<start_of_turn>"]),
    "phi3": ("<|end|>", ["<|system|>", "<|user|>", "<|assistant|>"]),
}


def template_tokenizer(name: str):
    """The tiny tokenizer with the chat template TRL ships as ``trl/chat_templates/{name}.jinja`` (no
    download: the installed package's file), its markers added as special tokens and its end-of-turn
    marker as the eos (the stop token), as the model's own tokenizer would have them."""
    trl = pytest.importorskip("trl")
    from pathlib import Path

    from scope_envs.agents.llm.tiny import train_tokenizer

    path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
    if not path.exists():
        pytest.skip(f"this TRL ships no {name}.jinja")
    eos, markers = TEMPLATE_MARKERS[name]
    tok = train_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": [eos, *markers]})
    tok.eos_token = eos
    if "<bos>" in markers:
        tok.bos_token = "<bos>"
    if "<|begin_of_text|>" in markers:
        tok.bos_token = "<|begin_of_text|>"
    tok.chat_template = path.read_text()
    return tok


class ChatStandIn:
    """A local stand-in for an OpenAI-compatible chat endpoint on 127.0.0.1 (a real HTTP server in a thread).

    POST answers ``replies`` in turn (cycling), after failing the first ``fail_first`` POSTs with HTTP 500;
    GET (``/v1/models``, the reachability check) lists one model. ``requests`` holds every POST's (path, body)."""

    def __init__(self, replies=("Hi! [DONATE $1]",), fail_first: int = 0):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, HTTPServer

        self.replies, self.fail_first, self.requests = list(replies), fail_first, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._send({"data": [{"id": "stand-in"}]})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, json.loads(body) if body else None))
                if len(outer.requests) <= outer.fail_first:
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"overloaded")
                    return
                text = outer.replies[(len(outer.requests) - outer.fail_first - 1) % len(outer.replies)]
                self._send({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})

            def _send(self, payload):
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
