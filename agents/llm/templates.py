"""Chat templates in multi-turn token streams: the conversations templates accept, and what is new each turn.

A trainer (``scope_envs.train.llm.ppo.Trace``) and every engine adapter keep each agent's episode as one
token stream: the ids it sampled, as sampled, and between its turns the chat template's rendering of what
happened since. Templates differ in what they accept and in whether they are *prefix-preserving*
(rendering n + 1 messages extends the rendering of n):

* ChatML-like templates (Qwen2.5, Qwen3-Instruct-2507, Llama 3.1/3.2) accept every conversation the envs
  produce and are prefix-preserving: the stream is **token-exact**, the template's own rendering of the
  whole conversation.
* Some refuse the conversation's shape. ``conform`` rewrites it once, at the first prompt, and the trace
  keeps that form for the rest of the episode:

  - a template that needs a user turn before the first reply (Qwen3.5: "No user query found"; Gemma,
    whose roles must alternate from a user turn) gets the opening user message ``OPENING`` after the system
    prompt, where the persuader's first prompt is a system message alone;
  - a template without a system role (Gemma: "System role not supported") gets the system prompt at the
    head of the first user message;
  - consecutive user messages (the partner's message and a note on a refused reply) are always joined,
    for templates whose roles must alternate.

* Some rewrite earlier turns as the conversation grows (Qwen3's hybrid-thinking template renders the
  ``<think>`` block only of assistant turns after the last user message, so it drops a reply's reasoning
  once the partner answers). Re-rendering cannot extend the stream there, and re-tokenizing it would
  change what was sampled. The **fallback** (``new_turn_text``): the stream keeps every turn as sampled
  and appends the template's rendering of the new messages alone, read after a sentinel reply; the
  trace counts each use (``Trace.template_fallbacks``, ``template_fallbacks`` in the trainer's
  metrics). Generation and training both see that stream, so the logprobs stay the policy's own; the
  stream differs from a fresh rendering of the conversation only where the template rewrites history.

Tests: ``tests/test_llm_trainer.py::test_chat_templates_of_common_models_keep_a_token_trace`` runs the
templates shipped in TRL's package (``trl/chat_templates``).
"""

from __future__ import annotations

OPENING = "Please start the conversation."  # the user turn before a first reply, for templates that need one
_SENTINEL = "\x00SCOPE-ENVS-REPLY\x00"
# what ``check_template`` renders: the shapes of the envs' first prompts (a system prompt alone, as the persuader's;
# a system prompt and the partner's opening message), each followed by a reply and the partner's answer
_PROBE_SYSTEM = {"role": "system", "content": "You are in a conversation."}
_PROBE_USER = {"role": "user", "content": "Hello."}
_PROBE_REPLY = {"role": "assistant", "content": "Hi."}


class TemplateError(ValueError):
    """A tokenizer with no chat template, or one that renders none of the forms of a conversation (``conform``)."""


def render(tokenizer, messages, add_generation_prompt, tools=None) -> str:
    """The chat template applied to ``messages``, as text; ``tools`` go to a template that has a tools section."""
    if tools and takes_tools(tokenizer):
        return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                             add_generation_prompt=add_generation_prompt)
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


def takes_tools(tokenizer) -> bool:
    """Whether the chat template has a tools section (it names ``tools``)."""
    template = tokenizer.chat_template
    return isinstance(template, str) and "tools" in template


def join_users(messages: list[dict]) -> list[dict]:
    """Consecutive user messages joined into one (templates whose roles alternate refuse two in a row)."""
    out: list[dict] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + m["content"]}
        else:
            out.append(dict(m))
    return out


def _with_opening(messages):
    """An opening user message after the system prompt where the first turn is not the user's."""
    head = 1 if messages and messages[0]["role"] == "system" else 0
    if len(messages) > head and messages[head]["role"] == "user":
        return messages
    return messages[:head] + [{"role": "user", "content": OPENING}] + messages[head:]


def _fold_system(messages):
    """The system prompt at the head of the first user message (templates without a system role)."""
    if not messages or messages[0]["role"] != "system":
        return messages
    rest = _with_opening(messages)[1:]
    return [{"role": "user", "content": messages[0]["content"] + "\n\n" + rest[0]["content"]}] + rest[1:]


def conform(tokenizer, messages: list[dict], tools=None) -> list[dict]:
    """``messages`` (users joined) in the first form the chat template renders: as they are, with an opening
    user message, or with the system prompt folded into the first user message. Raises ``TemplateError`` (a
    ``ValueError``) naming the template's own complaint when none renders."""
    from jinja2 import TemplateError as JinjaError

    messages = join_users(messages)
    errors = []
    for form in (messages, _with_opening(messages), _fold_system(messages)):
        try:
            render(tokenizer, form, True, tools)
            return form
        except (JinjaError, ValueError, TypeError, KeyError, IndexError) as e:
            errors.append(str(e))
    raise TemplateError(f"the chat template renders none of the forms of this conversation (as is, with an opening "
                        f"user message, with the system prompt in the first user message): {errors[-1]}")


def check_template(tokenizer, where: str = "the tokenizer") -> None:
    """``tokenizer``'s chat template renders the conversations an episode starts with, through the code path of a
    rollout (``conform`` at the first prompt, then the template on the reply and the partner's answer), or a
    ``TemplateError`` whose sentence starts with ``where`` (e.g. the model folder, quoted): a template missing
    or broken is found when a model loads, not inside the first episode."""
    from jinja2 import TemplateError as JinjaError

    if getattr(tokenizer, "chat_template", None) is None:
        raise TemplateError(f"{where} has no chat template (no chat_template.jinja, no chat_template in "
                            "tokenizer_config.json): use an instruct or chat model's tokenizer, or set "
                            "tokenizer.chat_template and save it there with tokenizer.save_pretrained")
    try:
        for first in ([_PROBE_SYSTEM], [_PROBE_SYSTEM, _PROBE_USER]):
            form = conform(tokenizer, first)
            render(tokenizer, form + [_PROBE_REPLY], False)
            render(tokenizer, join_users(form + [_PROBE_REPLY, _PROBE_USER]), True)
    except (JinjaError, ValueError, TypeError, KeyError, IndexError) as e:
        raise TemplateError(f"{where}: {e}") from None


def new_turn_text(tokenizer, conversation: list[dict], new: list[dict], suffix: str, tools=None) -> str:
    """The template's rendering of ``new`` (with the generation prompt) after ``conversation``, whose last
    message is an assistant reply already in the stream with its closing ``suffix``: the fallback for
    templates that rewrite earlier turns. The reply is replaced by a sentinel, so the text after it is
    the template's rendering of what follows that reply, however it renders the ones before."""
    probe = conversation[:-1] + [{"role": "assistant", "content": _SENTINEL}]
    full = render(tokenizer, probe + new, True, tools)
    at = full.rfind(_SENTINEL)
    after = full[at + len(_SENTINEL):] if at >= 0 else None
    if after is None or not after.startswith(suffix):
        raise ValueError("the chat template neither preserves prefixes nor renders an earlier reply as it was "
                         "given; multi-turn token traces cannot follow it")
    return after[len(suffix):]
