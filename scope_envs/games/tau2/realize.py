"""Natural-language renderings of tau2 acts, in our own varied words.

``agent(game, act, rng)`` and ``user(game, act, rng)`` render an act in the
current state (a request names the slot, an ``answer`` carries the facts the
agent found, a user's ``inform_identity`` its id, ...). With ``rng=None`` the
first wording is used (the act surface stores these in the transcript, so that
the tau^2 COMMUNICATE check reads the agent's answers).
"""

from __future__ import annotations

import numpy as np

from scope_envs.games.tau2 import text_protocol
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, USER_ACTS
from scope_envs.games.tau2.goals import TRANSFER, leaves


def _pick(options, rng):
    return options[0] if rng is None else options[int(rng.integers(len(options)))]


SLOT_WORDS = {"user_id": "your user id", "email": "the email address on your account",
              "name_zip": "your first and last name and your zip code", "phone": "the phone number on your account",
              "record_id": "the reservation or order number", "details": "the details of what you need"}


def _describe(call) -> str:
    # a call's words are asked at every turn that names it (a user's request, a confirmation) and its arguments are
    # never mutated (``goals.Call.key``): formatted once per call object
    text = call.__dict__.get("_described")
    if text is None:
        args = ", ".join(f"{k} {v}" for k, v in call.arguments.items() if k != "summary")
        text = f"{call.name.replace('_', ' ')} ({args})" if args else call.name.replace("_", " ")
        object.__setattr__(call, "_described", text)
    return text


def agent(game, act: int, rng: np.random.Generator | None = None) -> str:
    name = AGENT_ACTS[act]
    kind, _, arg = name.partition(":")
    c = game.candidates()
    if kind == "greet":
        return _pick(["Hello! How can I help you today?", "Hi, thanks for reaching out. What can I do for you?",
                      "Good day! What brings you here today?"], rng)
    if kind == "request":
        w = SLOT_WORDS[arg]
        return _pick([f"Could you please give me {w}?", f"To help you, I need {w}.", f"May I have {w}, please?"], rng)
    if kind == "confirm":
        j = int(arg)
        what = _describe(c["write"][j]) if j < len(c["write"]) else "this change"
        return _pick([f"To confirm: I will {what}. Shall I proceed (yes/no)?",
                      f"Please confirm that you want me to {what}. Do you want me to go ahead?"], rng)
    if kind == "instruct":
        j = int(arg)
        what = _describe(c["phone"][j]) if j < len(c["phone"]) else "restart your phone"
        return _pick([f"Could you please {what} on your phone and tell me what you see?",
                      f"Let's try this: please {what} on your phone."], rng)
    if kind == "answer":
        g = game.goal
        if g.questions and all(l.key() in game.done for l in g.lookups):
            facts = "; ".join(g.questions)
            return _pick([f"Here is what I found: {facts}.", f"The information you asked for: {facts}."], rng)
        return _pick(["Let me look into that for you.", "I don't have that information yet."], rng)
    if kind == "deny":
        return _pick(["I'm sorry, but our policy does not allow me to do that.",
                      "Unfortunately I cannot do that: it is against our policy."], rng)
    if kind == "transfer":
        return "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
    if kind == "end":
        return _pick(["Thank you for contacting us. Goodbye! ###STOP###", "Have a great day! ###STOP###"], rng)
    if kind in ("lookup", "execute"):
        return ""  # tool calls are rendered as JSON by the game
    return "..."


def user(game, act: int, rng: np.random.Generator | None = None) -> str:
    if rng is not None:
        return _user(game, act, rng)
    # the first wording (the act surface's, at every user turn) reads only the goal, the act, whether the user is
    # verbose, the identity slots told (and how) and whether a decoy was stated: kept per goal under those
    key = (act, game.traits.get("verbose", 0.5) > 0.6, tuple(game.told.items()), game.decoy_stated)
    words = game.goal.__dict__.setdefault("_user_words", {})
    text = words.get(key)
    if text is None:
        text = words[key] = _user(game, act, None)
    return text


def _user(game, act: int, rng: np.random.Generator | None) -> str:
    name = USER_ACTS[act]
    g = game.goal
    verbose = game.traits.get("verbose", 0.5) > 0.6
    hello = _pick(["Hi there, I hope you're doing well. ", "Hello! Thanks for taking my call. "], rng) if verbose else ""
    # what the user knows, in words, spelled out only for the acts that say it (every user turn renders its text)
    want = ("; ".join(_describe(c) for c in g.requests) or "I have a question about my account") \
        if name in ("inform_all", "state_request") else ""
    ident = "; ".join(" ".join(str(v) for v in vals.values()) for vals in game._identity_values().values()) \
        if name in ("inform_all", "inform_identity", "inform_slip") else ""
    details = ", ".join(str(v) for v in g.details.values()) if name in ("inform_all", "inform_details") else ""
    if name == "inform_all":
        parts = [f"My details: {ident}." if ident else "", f"I need: {want}.",
                 f"Other details: {details}." if details else "",
                 f"Also, could you tell me {len(g.questions)} thing(s) about it?" if g.questions else ""]
        return hello + " ".join(p for p in parts if p)
    if name == "state_request":
        decoy = f" Also: {_describe(g.decoy)}." if g.decoy_kind == "forbidden" else ""
        return hello + _pick([f"I'm calling because I need this: {want}.{decoy}",
                              f"I'd like some help. {want}.{decoy}"], rng)
    if name in ("inform_identity", "inform_slip"):
        return _pick([f"Sure, it's {ident}.", f"Yes: {ident}", f"{ident}"], rng)
    if name == "inform_details":
        return _pick([f"Here are the details: {details}.", f"The details are {details}."], rng) if details \
            else "I don't have more details than that."
    if name == "confirm":
        return _pick(["Yes, please go ahead.", "Yes.", "That's right, please proceed."], rng)
    if name == "deny":
        return _pick(["No, I don't want that.", "No, please don't.", "I'd rather not."], rng)
    if name == "insist":
        return _pick(["I really need this done. Can't you make an exception?",
                      "I was told this would be possible. Please do it."], rng)
    if name == "change_mind":
        if g.decoy is not None and not game.decoy_stated:
            return f"Actually, I'd like to {_describe(g.decoy)}."
        return _pick(["Actually, I changed my mind about that, please forget it.",
                      "Wait, no, I don't want that anymore."], rng)
    if name == "ask_question":
        return _pick(["Could you also tell me the information I asked about?", "One more question about this, please."],
                     rng)
    if name == "phone_action":
        return "Okay, I did that."
    if name == "stop":
        stop = text_protocol.STOP
        return _pick(["Thanks, that's all. " + stop, stop, "Okay, goodbye. " + stop], rng)
    if name == "transfer":
        return text_protocol.TRANSFER
    return "..."


# ---------------------------------------------------------------- the text surface: what a user act says
def arg_words(args) -> str:
    """A call's arguments in words: ``name value`` pairs (a transfer's summary left out)."""
    parts = []
    for name, v in leaves(args):
        if name == "summary":
            continue
        parts.append(f"{name.replace('_', ' ')} {v}" if name else str(v))
    return ", ".join(parts)


def _wants(call, rng) -> str:
    if call.name == TRANSFER:
        return _pick(["I'd like to speak with a human agent", "please put me through to a person"], rng)
    verb = call.name.replace("_", " ")
    args = arg_words(call.arguments)
    if not args:
        return _pick([f"I'd like to {verb}", f"I need to {verb}"], rng)
    return _pick([f"I'd like to {verb} ({args})", f"I need to {verb}: {args}", f"please {verb} for me ({args})"],
                  rng)


def _identity_says(slot: str, vals: dict, rng) -> str:
    v = {k: str(x) for k, x in vals.items()}
    if slot == "user_id" and set(v) == {"user_id"}:
        return _pick([f"my user id is {v['user_id']}", f"user id {v['user_id']}",
                      f"it's {v['user_id']} (my user id)"], rng)
    if slot == "email" and set(v) == {"email"}:
        return _pick([f"my email is {v['email']}", f"the email on the account is {v['email']}",
                      f"you can find me under {v['email']}"], rng)
    if slot == "name_zip" and {"first_name", "last_name", "zip"} <= set(v):
        n = f"{v['first_name']} {v['last_name']}"
        return _pick([f"I'm {n}, zip code {v['zip']}", f"my name is {n} and my zip is {v['zip']}",
                      f"{n}, {v['zip']}"], rng)
    if slot == "phone" and set(v) == {"phone_number"}:
        return _pick([f"my phone number is {v['phone_number']}", f"the number is {v['phone_number']}"], rng)
    return ", ".join(f"{k.replace('_', ' ')} {x}" for k, x in v.items())


def _reason(game) -> str:
    sc = (game.task.get("user_scenario") or {}).get("instructions")
    reason = str(sc.get("reason_for_call") or "") if isinstance(sc, dict) else str(sc or "")
    first = reason.strip().split(". ")[0].strip().rstrip(".")
    return first[:240] if first else "I have a question about my account"


def user_says(game, act: int, rng: np.random.Generator | None = None) -> str:
    """A user act in words, on the text surface, *before* the act is applied: the identity values it
    discloses (all of them for ``inform_all``, the asked slot for ``inform_identity``, a typo for
    ``inform_slip``), the requests and details with their concrete values, in varied wordings."""
    name = USER_ACTS[act]
    g = game.goal
    verbose = game.traits.get("verbose", 0.5)
    hello = _pick(["Hi there, I hope you're doing well. ", "Hello! Thanks for taking my call. ",
                   "Hi, good to reach someone. "], rng) if verbose > 0.6 else ("" if verbose < 0.3 else
                                                                              _pick(["Hi. ", "Hello. ", ""], rng))
    want = "; ".join(_wants(c, rng) for c in g.requests) if g.requests else _reason(game)
    details = ", ".join(arg_words({k.split(":")[0]: v}) for k, v in g.details.items())
    extra = ", ".join(arg_words({k.split(":")[0]: v}) for k, v in g.details.items() if str(v) not in want)
    decoy = f" Also, {_wants(g.decoy, rng)}." if g.decoy_kind == "forbidden" and g.decoy is not None else ""

    def ident(slots):
        return "; ".join(_identity_says(s, g.identity[s], rng) for s in slots)

    if name == "inform_all":
        who = ident(g.identity)
        parts = [_pick([f"{who[0].upper()}{who[1:]}.", f"For verification: {who}."], rng) if who else "",
                 _pick([f"{want[0].upper()}{want[1:]}.", f"Here's what I need: {want}."], rng),
                 _pick([f"Details: {extra}.", f"In case you need them: {extra}."], rng) if extra else "",
                 decoy.strip(),
                 _pick(["I'd also like you to tell me what you find.", "And please let me know the details."], rng)
                 if g.questions else ""]
        return hello + " ".join(p for p in parts if p)
    if name == "state_request":
        return hello + _pick([f"I'm contacting you because {want[0].lower()}{want[1:]}.{decoy}",
                              f"{want[0].upper()}{want[1:]}.{decoy}", f"Can you help? {want}.{decoy}"], rng)
    if name in ("inform_identity", "inform_slip"):
        slot = game.asked_slot if game.asked_slot in g.identity else next(iter(g.identity), None)
        if slot is None:
            return "I'm not sure what you need from me."
        said = _identity_says(slot, g.told_values(slot, "slip" if name == "inform_slip" else "ok"), rng)
        return _pick([f"Sure, {said}.", f"{said[0].upper()}{said[1:]}.", f"Of course: {said}."], rng)
    if name == "inform_details":
        if not details:
            return _pick(["I don't have more details than that.", "That's all I know, sorry."], rng)
        return _pick([f"Here are the details: {details}.", f"Sure: {details}.", f"The details are {details}."], rng)
    if name == "change_mind" and g.decoy is not None and not game.decoy_stated:
        return _pick([f"Actually, {_wants(g.decoy, rng)}.", f"Oh, and before anything else: {_wants(g.decoy, rng)}."],
                     rng)
    if name == "ask_question":
        return _pick(["Could you also tell me what you found about my request?",
                      "One more thing: what exactly do my records say about this?"], rng)
    if name == "phone_action":
        return _pick(["Okay, I did that.", "Done.", "Alright, I've done it."], rng)
    return user(game, act, rng)
