"""Natural-language renderings of tau2 acts, in our own varied words.

``agent(game, act, rng)`` and ``user(game, act, rng)`` render an act in the
current state (a request names the slot, an ``answer`` carries the facts the
agent found, a user's ``inform_identity`` its id, ...). With ``rng=None`` the
first wording is used (the act surface stores these in the transcript, so that
the tau^2 COMMUNICATE check reads the agent's answers).
"""

from __future__ import annotations

import numpy as np

from scope_envs.games.tau2 import text as T


def _pick(options, rng):
    return options[0] if rng is None else options[int(rng.integers(len(options)))]


SLOT_WORDS = {"user_id": "your user id", "email": "the email address on your account",
              "name_zip": "your first and last name and your zip code", "phone": "the phone number on your account",
              "record_id": "the reservation or order number", "details": "the details of what you need"}


def _describe(call) -> str:
    args = ", ".join(f"{k} {v}" for k, v in call.arguments.items() if k != "summary")
    return f"{call.name.replace('_', ' ')} ({args})" if args else call.name.replace("_", " ")


def agent(game, act: int, rng: np.random.Generator | None = None) -> str:
    from scope_envs.games.tau2.acts import AGENT_ACTS

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
    from scope_envs.games.tau2.behaviour import USER_ACTS

    name = USER_ACTS[act]
    g = game.goal
    verbose = game.traits.get("verbose", 0.5) > 0.6
    hello = _pick(["Hi there, I hope you're doing well. ", "Hello! Thanks for taking my call. "], rng) if verbose else ""
    want = "; ".join(_describe(c) for c in g.requests) or "I have a question about my account"
    ident = "; ".join(" ".join(str(v) for v in vals.values()) for vals in game._identity_values().values())
    details = ", ".join(str(v) for v in g.details.values())
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
        return _pick(["Thanks, that's all. " + T.STOP, T.STOP, "Okay, goodbye. " + T.STOP], rng)
    if name == "transfer":
        return T.TRANSFER
    return "..."
