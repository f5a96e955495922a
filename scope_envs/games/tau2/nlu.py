"""A light NLU for the tau2 text surface: free text back to the act vocabulary.

The act-level users (collapsed, rotation, human proxy) react to *agent acts*
(``dialogue_acts.AGENT_ACTS``). On the text surface the agent (an LLM) writes free text
or a JSON tool call; ``read_agent`` maps it to one act and, where the act has
an argument, its target:

* a JSON tool call -> ``tool_call`` (executed verbatim; the records it returns
  are what the dialogue has revealed);
* ``###STOP###`` -> ``end``; talk of a transfer to a human -> ``transfer``;
* a phone instruction naming a user tool (telecom) -> ``instruct`` (target: the
  task's phone action it names, or that tool when it needs no arguments);
* a confirmation question about a change -> ``confirm`` (target: the requested
  write, or the decoy, whose values or verb the message names best);
* a question asking for a slot -> ``request:<slot>`` (user id, email, name and
  zip, phone, reservation / order number, details: items, reason, payment, ...);
* a refusal citing the policy -> ``deny``; a greeting -> ``greet``; anything
  else -> ``answer`` (a statement; whether it *answered* the user's questions is
  decided by content, as tau^2's COMMUNICATE check does).

``read_user`` labels a text player's message with a user act (its effect on the
dialogue state is taken from the text itself, see ``text_game.py``).
Keyword rules, no model: deterministic and fast, and linear in the message
length: no pattern backtracks over the rest of the text (``A.*B`` rules are read
by ``_then``, one search for A and one for B per line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope_envs.games.tau2 import text_protocol
from scope_envs.games.tau2.dialogue_acts import USER_INDEX
from scope_envs.games.tau2.goals import TRANSFER, Call, leaves, tokens

_ASK = re.compile(r"\?|\b(please|provide|need|may i|could you|can you|tell me|share|give me|let me know|what is|"
                  r"what's|which|verify|confirm your)\b")
_CONFIRM = re.compile(r"\b(confirm|proceed|go ahead|yes/no|yes or no|shall i|should i|would you like me to|"
                      r"do you want me to|is that correct|are you sure|ok to|okay to|want me to)\b")
# A refusal citing the policy: the regular expression ``(P.*N|N.*Q|R)`` with P = policy words, N = negations,
# Q = what a policy allows, R = plain refusals, read as ``_then(P, N) or _then(N, Q) or R.search`` (``_refuses``):
# the same verdict in linear time (``A.*B`` backtracks over the rest of the line from every A: quadratic).
_NEGATION = re.compile(r"\b(not|cannot|can't|unable|doesn't|does not|won't)\b")
_DENY_PAIRS = ((re.compile(r"\b(policy|policies)\b"), _NEGATION),
               (_NEGATION, re.compile(r"\b(policy|policies|allowed|permitted|eligible)\b")))
_DENY_PLAIN = re.compile(r"\bnot eligible\b|\bnot possible\b|\bi(?: am|'m)? (?:unable|not able) to\b|\bi cannot\b|"
                         r"\bi can't\b|\bunfortunately\b")
_GREET = re.compile(r"^\W*(hello|hi|hey|good (morning|afternoon|evening|day)|welcome|thanks for (reaching|contacting)"
                    r"|thank you for (reaching|contacting))\b|how (can|may) i (help|assist)")
# talk of a transfer to a person: ``transfer(?:ring|red)?\b.*\b(human|...)``, read by ``_then`` (linear)
_TRANSFER = (re.compile(r"transfer(?:ring|red)?\b"), re.compile(r"\b(human|agent|representative|specialist|colleague)"))
# slot -> patterns (first match in the text wins among the identity slots)
SLOT_PATTERNS = {
    "user_id": r"\buser[ _-]?id\b|\bcustomer id\b|\baccount id\b",
    "email": r"\be-?mail\b",
    "name_zip": r"\bzip\b|\bpostal code\b|\bpost code\b|\bfull name\b|\bfirst and last name\b|\byour name\b|"
                r"\bdate of birth\b",
    "phone": r"\bphone number\b|\bnumber on (?:the|your) account\b",
    "record_id": r"\breservation\b|\bbooking\b|\border (?:id|number|#)\b|\border\b|\bconfirmation (?:number|code)\b",
    "details": r"\bdetails?\b|\bwhich items?\b|\bwhat items?\b|\breason\b|\bpayment method\b|\baddress\b|"
               r"\bwhich flight\b|\bwhat date\b|\bwhat (?:do|would) you (?:need|like)\b|\bwhat can i do\b|"
               r"\bwhat (?:seems to be|is) the (?:problem|issue)\b|\bdescribe\b|\bmore information\b",
}
_VERBS = {"cancel", "exchange", "return", "modify", "update", "book", "change", "upgrade", "refund", "suspend",
          "resume", "refuel", "send", "enable", "disable", "add", "remove", "pay", "transfer"}
_VERB_SYNONYMS = {"toggle": "toggle|turn|switch|enable|disable", "check": "check|look|see|what does|tell me",
                  "reboot": "reboot|restart", "run": "run|do|perform", "reseat": "reseat|remove|re-insert|reinsert",
                  "reset": "reset", "make": "make|pay", "can": "send|try", "connect": "connect",
                  "disconnect": "disconnect|turn off", "grant": "grant|allow|give"}
_GENERIC_WORDS = {"check", "set", "toggle", "run", "get", "make", "can", "the", "status", "app", "device"}


@dataclass(frozen=True)
class Reading:
    act: str  # a name in ``dialogue_acts.AGENT_TEXT_ACTS``
    slot: str | None = None
    target: Call | None = None


def _then(first: re.Pattern, then: re.Pattern, text: str) -> bool:
    """Whether the regular expression ``first.*then`` matches somewhere in ``text``, in linear time.

    ``.`` stops at a newline, so it matches iff on some line a ``then`` starts at or after the end of a
    ``first``; the leftmost ``first`` on a line ends first (for the word lists here a later match never ends
    before an earlier one: tests/test_tau2_hostile.py checks the verdicts against the regular expressions),
    so one search for ``then`` after it settles the line."""
    start = 0
    while (a := first.search(text, start)) is not None:
        line_end = text.find("\n", a.start())
        line_end = len(text) if line_end < 0 else line_end
        if then.search(text, a.end(), line_end) is not None:
            return True
        start = line_end + 1
    return False


def _refuses(low: str) -> bool:
    return any(_then(a, b, low) for a, b in _DENY_PAIRS) or _DENY_PLAIN.search(low) is not None


def _words(s: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", s.lower()))


def _score(call: Call, low: str) -> float:
    """How well a message names a call: its values (most), then its verb and name words."""
    vals = [str(v).lower() for v in tokens(call.arguments)]
    s = sum(2.0 for v in vals if v and v in low)
    words = _words(call.name.replace("_", " "))
    s += sum(1.0 for w in words & _VERBS if re.search(rf"\b{w}", low))
    s += 0.25 * sum(1.0 for w in words - _GENERIC_WORDS - _VERBS if re.search(rf"\b{w}", low))
    return s


def _slot(low: str) -> str | None:
    hits = [(m.start(), slot) for slot, pat in SLOT_PATTERNS.items() for m in [re.search(pat, low)] if m]
    if not hits:
        return None
    ident = sorted(h for h in hits if h[1] not in ("record_id", "details"))
    if ident:
        return ident[0][1]
    return "record_id" if any(s == "record_id" for _, s in hits) else "details"


def _phone_target(game, low: str) -> Call | None:
    """The phone action a message tells the user to do: a pending task action it names, or a no-argument tool."""
    user_tools = game.world.module.USER_TOOLS
    if not user_tools:
        return None
    best, score = None, 0.0
    for c in game.goal.phone_actions:
        if c.key() in game.done:
            continue
        words = _words(c.name.replace("_", " ")) - _GENERIC_WORDS
        if words and all(re.search(rf"\b{w}", low) for w in words):
            s = len(words) + sum(2.0 for v in leaves(c.arguments) if str(v[1]).lower().replace("_", " ") in low)
            if s > score:
                best, score = c, s
    if best is not None:
        return best
    for name, tool in user_tools.items():
        first = name.split("_")[0]
        rest = _words(name.replace("_", " ")) - _GENERIC_WORDS - {first}
        verb = _VERB_SYNONYMS.get(first, first)
        required = tool.schema["function"]["parameters"].get("required") or []
        if required or not re.search(rf"\b({verb})", low):
            continue
        if all(re.search(rf"\b{w}", low) for w in rest) and (rest or re.search(r"\b(phone|device)\b", low)):
            s = len(rest) + 1
            if s > score:
                best, score = Call(name, {}, "user", "phone"), s
    return best


def _write_target(game, low: str) -> tuple[Call | None, float]:
    g = game.goal
    pool = [c for c in g.requests if c.name != TRANSFER and c.key() not in game.done]
    if g.decoy is not None:
        pool.append(g.decoy)
    best, score = None, 0.0
    for c in pool:
        s = _score(c, low)
        if s > score:
            best, score = c, s
    return best, score


def read_agent(game, text: str) -> Reading:
    """The agent act a message or tool call amounts to, in the state of ``game`` (a ``Tau2TextGame``)."""
    if text_protocol.parse(text) is not None:
        return Reading("tool_call")
    low = " ".join(text.lower().split())
    if text_protocol.STOP in text:
        return Reading("end")
    if _then(*_TRANSFER, low):
        return Reading("transfer")
    asks = bool(_ASK.search(low))
    target, score = _write_target(game, low)
    confirm = bool(_CONFIRM.search(low))
    if confirm and target is not None and score >= 1.0:
        return Reading("confirm", target=target)
    if game.domain == "telecom":
        phone = _phone_target(game, low)
        if phone is not None and (asks or re.search(r"\b(try|let's|go to|turn|open|restart|reboot)\b", low)):
            return Reading("instruct", target=phone)
    slot = _slot(low) if asks else None
    if slot is not None and not _refuses(low):
        return Reading(f"request:{slot}", slot=slot)
    if confirm and target is not None:
        return Reading("confirm", target=target)
    if _refuses(low):
        return Reading("deny")
    if _GREET.search(low):
        return Reading("greet")
    if asks and not game.stated:
        return Reading("request:details", slot="details")
    return Reading("answer")


def read_user(game, text: str) -> int:
    """A user act label for a text player's message (tool call, stop tokens, or what it says)."""
    if text_protocol.parse(text) is not None:
        return USER_INDEX["phone_action"]
    if text_protocol.TRANSFER in text:
        return USER_INDEX["transfer"]
    if text_protocol.STOP in text or text_protocol.OUT_OF_SCOPE in text:
        return USER_INDEX["stop"]
    low = " ".join(text.lower().split())
    g = game.goal
    ids = [s for s, vals in g.identity.items() if vals and all(str(v).lower() in low for v in vals.values())]
    dets = [v for v in g.details.values() if str(v).lower() in low]
    if re.match(r"^\W*(yes|yeah|yep|sure|ok|okay|correct|please do|go ahead)\b", low) and not ids and not dets:
        return USER_INDEX["confirm"]
    if re.match(r"^\W*(no|nope|don't|do not)\b", low):
        return USER_INDEX["deny"]
    if ids and (dets or not game.stated):
        return USER_INDEX["inform_all"]
    if ids:
        return USER_INDEX["inform_identity"]
    if dets:
        return USER_INDEX["inform_details"]
    return USER_INDEX["state_request"]
