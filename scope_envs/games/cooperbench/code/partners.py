"""Scripted text teammates for the real-task game: the act-level partner styles, writing real code.

A ``ScriptedCoder`` plays either role on the text surface with JSON tool
calls and plain messages. Its coding is scripted: it writes the task's gold
``feature.patch`` for its own feature, function by function, and, for a
function both features change, the version of that function in the task's
``combined.patch`` (both changes at once; the act-level game's combined edit).
So it stands for a competent coder, and what varies is how it *coordinates*,
by the act-level style card (``scope_envs.games.cooperbench.styles``) and the
same decision rule as the act-level partners (``styles.decide``):

* ``announce``: opens by announcing its plan (the functions it will change);
* ``answer``: answers a question (a partner message ending in ``?``) with it;
* ``talk``: claims a function both need ("I'll take ...") and reports when done;
* ``keep``: writes the functions it claimed, in their combined version;
* ``respect``: leaves alone the functions its partner claimed.

It learns the partner's plan only from the partner's messages (a function of
its own named there is shared), and reads its own progress from its worktree,
so it holds no state between turns. With every trait 1 it coordinates; with
``announce``, ``answer`` and ``talk`` at 0 (``silent``) neither side learns
what is shared, both write their own version of a shared function, and the
merge conflicts.

Coins: ``sampled=True`` flips each decision's coin once per (card, task,
decision), so a held-out proxy is consistent within an episode (as
``HumanProxyPartner``); otherwise each decision is drawn from the env's
generator with the trait probability, sharpened by ``sharpening`` (the collapsed,
"one frozen chat model" partner). Needs ``combined.patch`` for shared
functions; without one it writes its own version (and so conflicts).
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from pathlib import Path

import numpy as np

from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.game import Persona
from scope_envs.core.simulator import Simulator, View
from scope_envs.games.cooperbench import styles
from scope_envs.games.tau2.text_protocol import call_text

CLAIM = re.compile(r"\b(i'll take|claim|claiming|leave it to me|i'll do)\b", re.IGNORECASE)
WHOLE = "*"  # a change outside any top-level function: the whole file is the unit


def _spans(src: str) -> dict[str, tuple[int, int]]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            out[node.name] = (start, node.end_lineno)
    return out


def unit(src: str, name: str) -> str | None:
    """The text of top-level function/class ``name`` in ``src`` (the whole file for ``WHOLE``)."""
    if name == WHOLE:
        return src
    span = _spans(src).get(name)
    return None if span is None else "\n".join(src.splitlines()[span[0]:span[1]])


def replace_unit(src: str, name: str, text: str) -> str:
    if name == WHOLE:
        return text
    span = _spans(src).get(name)
    if span is None:
        return src.rstrip("\n") + "\n\n\n" + text + "\n"
    lines = src.splitlines()
    return "\n".join(lines[:span[0]] + text.splitlines() + lines[span[1]:]) + ("\n" if src.endswith("\n") else "")


def changed_units(base: str, new: str) -> list[str]:
    """The top-level functions (or ``WHOLE``) of ``base`` that ``new`` changes."""
    spans = _spans(base)
    names = []
    matcher = difflib.SequenceMatcher(a=base.splitlines(), b=new.splitlines(), autojunk=False)
    for op, i1, i2, _, _ in matcher.get_opcodes():
        if op == "equal":
            continue
        lines = range(i1, max(i2, i1 + 1))
        hit = [n for n, (s, e) in spans.items() if any(s <= ln < e for ln in lines)]
        if not hit:
            return [WHOLE]
        names += [n for n in hit if n not in names]
    return names


def _label(path: str, name: str) -> str:
    return path if name == WHOLE else f"{path}:{name}"


class ScriptedCoder(Simulator):
    """A scripted teammate of a style card (``persona``; None: the card the episode deals, in the user seat)."""

    plays_text = True

    def __init__(self, persona: Persona | None = None, sharpening: float | None = None, sampled: bool = False,
                 run_tests: bool = True, name: str = "scripted_coder", *, gamma: float | None = None):
        sharpening = sharpening_of(sharpening, gamma)
        self.persona, self.sharpening, self.sampled, self.run_tests, self.name = \
            persona, sharpening, sampled, run_tests, name

    def _coin(self, p: float, rng: np.random.Generator, key: tuple, *what) -> bool:
        if self.sampled:
            return bool(styles.coin(p, True, *key, *what))
        if self.sharpening is not None and 0 < p < 1:
            p = p**self.sharpening / (p**self.sharpening + (1 - p) ** self.sharpening)
        return bool(rng.random() < p)

    def reply(self, view: View, rng: np.random.Generator) -> str:
        style = self.persona or view.persona or styles.default_persona()
        t = style.traits
        ref = view.private["reference"]
        root = Path(view.private["worktree"])
        key = (style.id, view.private["task"])
        units = [(p, n) for p in sorted(ref["own"]) for n in changed_units(ref["base"].get(p, ""), ref["own"][p])]
        mine = [turn for turn in view.history if turn.role == view.role]
        theirs = [turn for turn in view.history if turn.role != view.role]
        said = [x.text for x in mine if getattr(x, "call", None) is None]
        heard = [x.text for x in theirs if getattr(x, "call", None) is None]

        def named(texts, u, claim=False):
            word = re.compile(r"\b" + re.escape(u[0] if u[1] == WHOLE else u[1]) + r"\b")
            return any(word.search(x) and (not claim or CLAIM.search(x)) for x in texts)

        known = {u for u in units if named(heard, u)}
        partner_claims = {u for u in units if named(heard, u, claim=True)}
        own_claims = {u for u in units if named(said, u, claim=True)}
        plan = ", ".join(_label(*u) for u in units)
        last_heard = max((i for i, x in enumerate(view.history) if x.role != view.role
                          and getattr(x, "call", None) is None), default=-1)
        last_said = max((i for i, x in enumerate(view.history) if x.role == view.role
                         and getattr(x, "call", None) is None), default=-1)
        asked = last_heard > last_said and view.history[last_heard].text.rstrip().endswith("?")

        if asked and self._coin(t["answer"], rng, key, "answer", last_heard):
            return f"For my feature I need to change {plan}."
        if not mine and self._coin(t["announce"], rng, key, "announce"):
            return f"My plan: I need to change {plan}."

        def state(u):
            path, n = u
            current = (root / path).read_text() if (root / path).is_file() else ""
            now, own, both = unit(current, n), unit(ref["own"][path], n), unit(ref["combined"].get(path, ""), n)
            if now is not None and both is not None and now == both:
                return "combined"
            return "own" if now is not None and now == own else None

        todo = []
        for u in units:
            done = state(u)
            if done and (done == "combined" or u not in known):
                continue
            if u in partner_claims and self._coin(t["respect"], rng, key, "respect", u):
                continue
            if u in own_claims and not self._coin(t["keep"], rng, key, "keep", u):
                continue
            todo.append(u)
        for u in todo:  # claim a shared function it will write, before writing it
            if u in known and u not in own_claims and u not in partner_claims \
                    and self._coin(t["talk"], rng, key, "claim", u):
                return f"I'll take {_label(*u)}, leave it to me: I will put both our changes in it."
        if todo:
            path, n = todo[0]
            combined = unit(ref["combined"].get(path, ""), n)
            version = combined if (path, n) in known and combined is not None else unit(ref["own"][path], n)
            current = (root / path).read_text() if (root / path).is_file() else ref["base"].get(path, "")
            return call_text("write_file", {"path": path, "content": replace_unit(current, n, version)})
        if not any(re.search(r"\bdone\b", x, re.IGNORECASE) for x in said) \
                and self._coin(t["talk"], rng, key, "report"):
            return "I'm done with my part."
        if self.run_tests and not any(getattr(x, "call", None) and x.call["name"] == "run_tests" for x in mine):
            return call_text("run_tests", {})
        return call_text("submit", {})

    def verbalize(self, view: View, k: int, rng: np.random.Generator, tail: float | None = None) -> list:
        """Its stated top-``k`` replies: the unsharpened policy (as the act-level collapsed partners verbalize
        their reference), each reply's probability estimated from ``8 k`` draws."""
        reference = ScriptedCoder(self.persona, None, self.sampled, self.run_tests, self.name)
        draws = [reference.reply(view, rng) for _ in range(8 * k)]
        texts, counts = np.unique(draws, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        out = [(str(texts[i]), counts[i] / len(draws)) for i in order]
        return [(t, float(p)) for t, p in out if tail is None or p < tail][:k]

    def distribution(self, view: View) -> np.ndarray:
        raise NotImplementedError("a ScriptedCoder plays the text surface; it has no distribution over acts")


def coordinating(name: str = "coordinating") -> ScriptedCoder:
    """Every trait 1: announces, answers, claims shared functions, keeps claims, respects the partner's."""
    return ScriptedCoder(Persona(name, "default", dict.fromkeys(styles.TRAITS, 1.0), {"style": name}), name=name)


def silent(name: str = "silent") -> ScriptedCoder:
    """Never talks (announce, answer, talk 0); keeps to its own plan: a shared function conflicts."""
    traits = {"announce": 0.0, "answer": 0.0, "keep": 1.0, "respect": 1.0, "talk": 0.0}
    return ScriptedCoder(Persona(name, "default", traits, {"style": name}), name=name)


def collapsed(sharpening: float = 3.0, persona: Persona | None = None, cooperation: float = 0.3,
              name: str = "collapsed") -> ScriptedCoder:
    """The frozen partner: the modal style made over-cooperative (+``cooperation``), sharpened by ``sharpening``
    (as the act-level ``CollapsedPartner``)."""
    card = persona or styles.default_persona()
    traits = {k: min(1.0, v + cooperation) for k, v in card.traits.items()}
    return ScriptedCoder(Persona(card.id, card.split, traits, card.attributes), sharpening=sharpening, name=name)


def rotation_members() -> list[ScriptedCoder]:
    """Several frozen partners: different train styles and sharpness (the act-level rotation's cards)."""
    cards = [styles.default_persona(), *(styles.persona("train", i) for i in (3, 17, 42))]
    return [collapsed(g, c, name=f"collapsed-{c.id}-g{g:g}") for c, g in zip(cards, (3.0, 2.0, 4.0, 6.0))]


def human_proxy(assumptions: str | None = None) -> ScriptedCoder:
    """The held-out proxy: plays the dealt (held-out) card, each coin flipped once per card, task and decision."""
    if assumptions not in (None, "default"):
        raise ValueError(f"the real-task cooperbench proxy has no assumption variants (only 'default'), "
                         f"got {assumptions!r}")
    return ScriptedCoder(None, sampled=True, name="human_proxy")


class ChatPartner(Simulator):
    """An LLM partner for ``user=``: any chat backend of ``scope_envs.agents.llm.backends`` (an object with
    ``chat(batch, max_new_tokens=, temperature=, seed=)`` returning items with ``.text``) reading the partner's
    own chat (``view.private["messages"]``: its tool calls with their results, both sides' messages, never the
    teammate's tools) with the tool schemas in its system prompt. A generic ``LLMPlayer`` reads
    ``view.history`` instead, where the partner's own tool results are not shown."""

    plays_text = True

    def __init__(self, backend, *, max_new_tokens: int = 1024, temperature: float = 1.0, name: str = "llm_partner"):
        self.backend, self.max_new_tokens, self.temperature, self.name = backend, max_new_tokens, temperature, name

    def messages(self, view: View) -> list[dict]:
        msgs = [dict(m) for m in view.private["messages"]]
        msgs[0]["content"] += "\n\nTools:\n" + json.dumps(view.private["tools"], indent=1)
        if view.errors:
            msgs.append({"role": "user", "content": "Your last message could not be used: " + "; ".join(view.errors)
                         + ". Write it again."})
        return msgs

    def reply(self, view: View, rng: np.random.Generator) -> str:
        seed = int(rng.integers(2**31 - 1))
        return self.backend.chat([self.messages(view)], max_new_tokens=self.max_new_tokens,
                                 temperature=self.temperature, seed=seed)[0].text
