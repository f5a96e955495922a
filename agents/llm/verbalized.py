"""Verbalized sampling for LLM players: the prompt that asks for k candidates, and a robust parser.

``parse_verbalized(text)`` reads what a model answers to ``vs_prompt(k)``: JSON
(``{"responses": [{"text": ..., "probability": ...}]}``, a bare list, ``[text, p]``
pairs), possibly in a code fence, with trailing commas or single quotes, or the
XML-tag form (``<response><text>..</text><probability>..</probability></response>``).
What chatty and reasoning models emit around it is skipped: prose with brackets of
its own before or after the JSON (``[as requested]``, a ``:}``), and a
``<think>...</think>`` block (its own braces included) before the answer; the first
bracketed span that holds candidates wins.
Weights are repaired (percent strings, negatives, values above 1, NaN, missing)
and renormalized; an optional ``tau`` floor keeps at least ``min_survivors``.
Anything unreadable gives ``[]`` — the caller then falls back to a direct reply.
It never raises on any string.
"""

from __future__ import annotations

import ast
import json
import math
import re

import numpy as np

TEXT_KEYS = ("text", "response", "reply", "message", "content", "candidate", "utterance")
PROB_KEYS = ("probability", "prob", "p", "weight", "confidence", "likelihood", "score")

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_XML_ITEM = re.compile(r"<response>(.*?)</response>", re.DOTALL | re.IGNORECASE)
_XML_TEXT = re.compile(r"<text>(.*?)</text>", re.DOTALL | re.IGNORECASE)
_XML_PROB = re.compile(r"<probability>(.*?)</probability>", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.IGNORECASE)


def vs_prompt(k: int, tail: float | None = None) -> str:
    """The instruction appended to a player's messages to ask for ``k`` candidates with probabilities."""
    tail_text = (f" Sample from the tails of the distribution: each response's probability must be below {tail:g}."
                 if tail is not None else "")
    return (
        f"Instead of one reply, write {k} different replies you might send next, each with its probability: how "
        f"likely you would be to send that reply, relative to the full distribution of replies you could give.{tail_text} "
        'Answer with JSON only, in this form: {"responses": [{"text": "<a reply>", "probability": 0.4}, ...]}'
    )


def _number(value) -> float:
    """A stated probability as a float: numbers, numeric strings, percent strings; NaN when unreadable."""
    if isinstance(value, bool):
        return float("nan")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        s = value.strip()
        m = _NUMBER.search(s)
        if not m:
            return float("nan")
        try:
            x = float(m.group(0))
        except ValueError:
            return float("nan")
        return x / 100.0 if "%" in s[m.end():m.end() + 2] else x
    return float("nan")


def _json_scan(text: str, start: int = 0):
    """``(i, c, structural)`` for each character of ``text`` from ``start``: ``structural`` is False inside a
    JSON string and for its quotes (escapes honoured), so brackets and commas in a reply's words are ignored."""
    in_string, escaped = False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            yield i, c, False
        else:
            in_string = c == '"'
            yield i, c, not in_string


def _drop_trailing_commas(body: str) -> str:
    """``[1, 2,]`` -> ``[1, 2]``: commas before a closing bracket, outside strings (a reply may say ",}")."""
    next_char = [""] * (len(body) + 1)  # the next non-blank character after each position
    for i in range(len(body) - 1, -1, -1):
        next_char[i] = next_char[i + 1] if body[i].isspace() else body[i]
    return "".join(c for i, c, structural in _json_scan(body)
                   if not (structural and c == "," and next_char[i + 1] in ("}", "]")))


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPENERS = {"{": "}", "[": "]"}
MAX_CANDIDATES = 64  # bracketed spans tried per chunk: bounds the work on adversarial text


def without_reasoning(text: str) -> str:
    """``text`` less its ``<think>...</think>`` blocks (and everything up to a lone ``</think>``, the form a
    template that prefills ``<think>`` leaves): the answer a reasoning model gives after thinking."""
    text = _THINK.sub("", text)
    end = text.lower().rfind("</think>")
    return text[end + len("</think>"):] if end >= 0 else text


def _spans(chunk: str):
    """Each balanced ``{...}`` / ``[...]`` span of ``chunk`` in order of its start, brackets inside JSON
    strings ignored. An unclosed span runs to the chunk's last closing bracket, and nothing inside it is
    tried on its own: a truncated list gives nothing rather than the one candidate that was complete."""
    tried, inside_unclosed = 0, -1
    for start, c in enumerate(chunk):
        if c not in _OPENERS or start <= inside_unclosed:
            continue
        tried += 1
        if tried > MAX_CANDIDATES:
            return
        stack, end = [], None
        for i, ch, structural in _json_scan(chunk, start):
            if not structural:
                continue
            if ch in _OPENERS:
                stack.append(_OPENERS[ch])
            elif ch in "}]":
                if not stack or ch != stack[-1]:
                    break  # mismatched: not JSON from this start
                stack.pop()
                if not stack:
                    end = i
                    break
        if end is None:  # unclosed or mismatched (single quotes, a truncated list): up to the last closer
            end = inside_unclosed = max(chunk.rfind("}"), chunk.rfind("]"))
        if end > start:
            yield chunk[start:end + 1]


def _decode(body: str):
    body = body.replace("\u201c", '"').replace("\u201d", '"')
    attempts = (body, _drop_trailing_commas(body))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except (json.JSONDecodeError, RecursionError, ValueError):
            pass
    for attempt in attempts:  # single quotes, True/None: a Python literal
        try:
            return ast.literal_eval(attempt)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return None


def _values(text: str):
    """The JSON values in ``text``, best first: fenced blocks, then every balanced span in order, tolerating
    prose around and between them (brackets in it too), trailing commas and Python literals."""
    fenced = [f for f in _FENCE.findall(text) if f.strip()]
    for chunk in fenced + [text]:
        for body in _spans(chunk):
            value = _decode(body)
            if value is not None:
                yield value


def _load(text: str):
    """The first JSON value in ``text`` that holds candidates (see ``_values``); None when none does."""
    for value in _values(text):
        if _items(value):
            return value
    return None


def _items(value) -> list[tuple[str, object]]:
    """(text, raw probability) pairs from a parsed JSON value."""
    if isinstance(value, dict):
        for key in ("responses", "candidates", "replies", "answers", "options", "items"):
            if isinstance(value.get(key), list):
                return _items(value[key])
        if any(k in value for k in TEXT_KEYS):
            return _items([value])
        # {"reply one": 0.4, "reply two": 0.6}
        if value and all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value.values()):
            return [(str(k), v) for k, v in value.items()]
        return []
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, dict):
            text = next((item[k] for k in TEXT_KEYS if k in item and isinstance(item[k], str)), None)
            prob = next((item[k] for k in PROB_KEYS if k in item), None)
            if text is not None:
                out.append((text, prob))
        elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
            out.append((item[0], item[1]))
        elif isinstance(item, str):
            out.append((item, None))
    return out


def _xml_items(text: str) -> list[tuple[str, object]]:
    out = []
    for block in _XML_ITEM.findall(text):
        t, p = _XML_TEXT.search(block), _XML_PROB.search(block)
        if t:
            out.append((t.group(1), p.group(1) if p else None))
    return out


def repair_weights(raw) -> np.ndarray:
    """Stated probabilities to a distribution: unreadable or negative count 0; plain numbers on a 0-100
    scale (40 for 40%) are rescaled; percent strings are read as percent; all-zero becomes uniform."""
    raw = list(raw)
    if not raw:
        return np.zeros(0)
    p = np.array([_number(x) if x is not None else float("nan") for x in raw], dtype=float)
    percent = np.array([isinstance(x, str) and "%" in x for x in raw])
    p = np.where(np.isfinite(p) & (p > 0), p, 0.0)
    plain = p[~percent]
    if len(plain) and 1.0 < plain.max() <= 100.0:
        p = np.where(percent, p, p / 100.0)
    total = p.sum()
    if total <= 0 or not math.isfinite(total):
        return np.full(len(p), 1.0 / len(p))
    return p / total


def parse_verbalized(text, tau: float | None = None, min_survivors: int = 1) -> list[tuple[str, float]]:
    """``[(reply, probability), ...]`` read from a model's verbalized answer, probabilities summing to 1.

    Empty replies are dropped and duplicates merged. ``tau``: drop candidates below it (after
    renormalizing), keeping the ``min_survivors`` most probable, then renormalize again.
    Returns ``[]`` when nothing can be read.
    """
    if not isinstance(text, str) or not text.strip():
        return []
    items = []
    for source in dict.fromkeys((without_reasoning(text), text)):  # the answer first, then what the thinking held
        value = _load(source)
        items = _items(value) if value is not None else _xml_items(source)
        if items:
            break
    merged: dict[str, list] = {}
    for reply, prob in items:
        reply = reply.strip()
        if reply:
            merged.setdefault(reply, []).append(prob)
    if not merged:
        return []
    texts = list(merged)
    weights = repair_weights([_sum(ps) for ps in merged.values()])
    if tau is not None:
        from scope_envs.wrappers.verbalized import candidate_weights

        weights = candidate_weights(weights, tau=tau, min_survivors=min(min_survivors, len(texts)))
    return [(t, float(w)) for t, w in zip(texts, weights) if w > 0]


def _sum(probs: list):
    """Duplicate replies: their stated probabilities added (unreadable ones count 0)."""
    if len(probs) == 1:
        return probs[0]
    vals = [_number(p) if p is not None else float("nan") for p in probs]
    vals = [v for v in vals if math.isfinite(v) and v > 0]
    return sum(vals) if vals else None
