"""Tiny (or not so tiny) randomly initialised chat models built on the spot: no download.

``build_tiny_model(path)`` trains a byte-level BPE tokenizer with ``tokenizers`` on
text this package ships (the games' renderings and instructions), gives it a
ChatML chat template, builds a Llama (or GPT-2) from a config with random
weights, and saves both to ``path`` so every backend can load them from a local
directory. Tests use it at 2 layers / hidden 64; ``benchmarks/llm_gpu.py`` at ~0.5B.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

# ChatML; prefix-preserving (rendering n+1 messages extends the rendering of n).
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def corpus() -> list[str]:
    """Text to train the tokenizer on: what this package's games say, plus digits and tags."""
    from scope_envs.games.p4g import game as p4g_game
    from scope_envs.games.p4g import language as p4g_language

    lines = [p4g_game.PERSUADER_INSTRUCTIONS, p4g_game.PERSUADEE_INSTRUCTIONS]
    for table in (p4g_language.PERSUADER_TEXT, p4g_language.PERSUADEE_TEXT):
        for options in table.values():
            lines += options
    lines += [f"[DONATE ${x:.2f}]" for x in (0, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2)]
    lines += ['{"responses": [{"text": "Hello", "probability": 0.25}]}', "0123456789 aaaa bbbb"]
    return lines


def printable_byte_alphabet() -> list[str]:
    """The byte-level alphabet less the control bytes (NUL .. US but tab, newlines and feeds; DEL).

    A random model samples any token; one that could write control bytes would
    write messages the text surface refuses as not printable text, which no
    real chat model does. Multi-byte UTF-8 stays possible.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbol = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):  # GPT-2's byte-to-unicode table: the other bytes get 256, 257, ...
        if b not in symbol:
            symbol[b] = chr(256 + extra)
            extra += 1
    control = {*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F}
    return [symbol[b] for b in range(256) if b not in control]


def train_tokenizer(vocab_size: int = 400, texts: list[str] | None = None):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with a ChatML template, trained in milliseconds."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=printable_byte_alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((texts or corpus()) * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        additional_special_tokens=["<|im_start|>", "<tool_call>", "</tool_call>"],
    )
    fast.chat_template = CHATML_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_tiny_model(path, *, arch: str = "llama", hidden: int = 64, layers: int = 2, heads: int = 2,
                     intermediate: int | None = None, vocab_size: int = 400, max_positions: int = 2048,
                     seed: int = 0, dtype: str = "float32", texts: list[str] | None = None):
    """Save a random chat model and its tokenizer under ``path``; returns ``(model, tokenizer)``.

    ``texts``: what the tokenizer is trained on (default: ``corpus()``)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = train_tokenizer(vocab_size, texts)
    common = dict(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                  bos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    if arch == "llama":
        config = LlamaConfig(hidden_size=hidden, intermediate_size=intermediate or 2 * hidden, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=max_positions,
                             tie_word_embeddings=False, **common)
        model = LlamaForCausalLM(config)
    elif arch == "gpt2":
        config = GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, n_positions=max_positions, **common)
        model = GPT2LMHeadModel(config)
    else:
        raise ValueError(f"arch must be 'llama' or 'gpt2', got {arch!r}")
    model = model.to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                               do_sample=True, top_k=0, top_p=1.0)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer


def save_random_model_config(path, *, hidden: int, layers: int, heads: int, intermediate: int, vocab_size: int = 4000,
                             kv_heads: int | None = None, max_positions: int = 4096, texts: list[str] | None = None):
    """Save a Llama config of this shape and a tokenizer trained on the spot under ``path``, no weights:
    ``scope_envs.train.llm.ppo.load_model("random:" + path)`` builds random weights on the device. Returns
    the parameter count."""
    from transformers import GenerationConfig, LlamaConfig

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(vocab_size, texts)
    config = LlamaConfig(hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads or heads,
                         max_position_embeddings=max_positions, tie_word_embeddings=False, vocab_size=len(tokenizer),
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.eos_token_id)
    config.save_pretrained(path)
    GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id).save_pretrained(path)
    tokenizer.save_pretrained(path)
    head_dim = hidden // heads
    attention = hidden * head_dim * (2 * heads + 2 * (kv_heads or heads))
    return layers * (attention + 3 * hidden * intermediate + 2 * hidden) + 2 * len(tokenizer) * hidden + hidden
