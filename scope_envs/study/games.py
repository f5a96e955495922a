"""What each game puts in a study: the env's options, the person's role card, how the act-level agent's acts
become words, the outcome question and the in-chat outcome.

* ``p4g``: the person is a persuadee holding a $2 bonus; the outcome question is how much they will donate
  ($0-2), and the amount they stated in the chat is kept too (``stated_in_chat``).
* ``tau2``: the person is a customer with the scenario of a ``test``-split task (its reason for calling and
  the facts they know); the agent's tool calls run on the task's real world and are never shown to the
  person. The outcome question is whether their issue was solved (yes = 1), beside the task's own
  tau^2 evaluation (``task_success``). Domains without user tools only (``airline``, ``retail``): a person
  does not operate a simulated phone.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.surfaces import act_observation


class P4GSpec:
    name = "p4g"
    outcome_item = "donation"  # the survey's outcome question
    in_chat = ("stated_in_chat", "intended")  # (measure, outcome key): what the game recorded in the chat
    outcome_label = "Donation ($)"
    in_chat_label = "Stated in chat ($, outcome_intended)"  # the export's column it reads, named
    split = "train"  # the persuadee's card is never shown to the person; the train cards keep the game's default
    amounts = ("0.00", "0.05", "0.10", "0.25", "0.50", "0.75", "1.00", "1.50", "2.00")
    hint = "You are the person deciding whether to donate your $2 bonus. Reply to your partner below."

    def __init__(self, cfg):
        self.cfg = cfg

    def env_kwargs(self) -> dict:
        return {"max_turns": self.cfg.max_turns}

    def card(self, game) -> list[str]:
        return [
            "You are taking part in a study on charitable giving. For this task you have received a $2 bonus.",
            ("You will chat with a partner about the charity Save the Children, which helps children in developing "
            "countries. Your partner may try to convince you to donate part or all of your bonus."),
            ("Talk as you naturally would. It is entirely up to you whether you donate and how much: anything from "
            "$0 to $2. At the end of the chat you will be asked to state your decision."),
        ]

    def mask(self, game) -> np.ndarray:
        return game.legal(game.agent_role)

    def realize(self, game, act: int, rng: np.random.Generator) -> str:
        return game.realize(game.agent_role, act, rng)

    def visible(self, role: str, text: str) -> bool:
        return True

    def person_text(self, text: str, form: dict) -> str:
        """The person's message as the game reads it: the chosen amount becomes the game's donation tag."""
        amount = form.get("amount") or ""
        if amount:
            if amount not in self.amounts:
                shown = amount if len(amount) <= 20 else amount[:20] + "…"
                raise ValueError(f"The amount {shown!r} is not one of the amounts offered: please choose one of "
                                 + ", ".join(f"${a}" for a in self.amounts) + " from the list.")
            return f"{text.strip()} [DONATE ${amount}]"
        return text

    def final(self, game) -> bool:
        return bool(getattr(game, "final", False))


class Tau2Spec:
    name = "tau2"
    outcome_item = "solved"
    in_chat = ("task_success", "success")
    outcome_label = "Issue solved (share)"
    in_chat_label = "Task success (tau^2 reward 1, outcome_success)"
    split = "heldout"  # the test split's tasks: no trained agent has seen them
    amounts = ()
    hint = "You are the customer. Explain what you need; press “End the chat” when you are done."
    stop_text = "Thank you, that is all. ###STOP###"

    def __init__(self, cfg):
        self.cfg = cfg

    def env_kwargs(self) -> dict:
        out = {"domain": tuple(self.cfg.domains), "max_steps": self.cfg.max_steps}
        if self.cfg.data_dir:
            out["data_dir"] = self.cfg.data_dir
        return out

    def card(self, game) -> list[str]:
        from scope_envs.games.tau2.game import scenario_text

        lines = [f"You are a customer contacting the {game.domain} customer service by chat.",
                 *scenario_text(game.task).splitlines(),
                 ("Give the agent the facts above when it asks for them; you do not know anything else about "
                 "the account. When your issue is handled, or you want to stop, press “End the chat”.")]
        return [line for line in lines if line.strip()]

    def mask(self, game) -> np.ndarray:
        """The act surface's mask on the text game: a lookup / confirm / execute / instruct act is legal only
        where the dialogue has grounded that candidate (as ``Tau2ActGame.legal``); never the text-only
        ``tool_call``."""
        from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS
        from scope_envs.games.tau2.game import candidate_slots, narrow_agent_acts

        mask = game.legal(game.agent_role)[:len(AGENT_ACTS)].copy()
        reads, writes, phones = candidate_slots(game.candidates())
        return narrow_agent_acts(mask[None], reads, writes, writes, phones)[0]

    def realize(self, game, act: int, rng: np.random.Generator) -> str:
        """A lookup / execute act is the candidate's tool call (JSON, run on the world); others are words."""
        from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS
        from scope_envs.games.tau2.text_protocol import call_text

        kind, _, j = AGENT_ACTS[act].partition(":")
        if kind in ("lookup", "execute"):
            call = game.candidates()["read" if kind == "lookup" else "write"][int(j)]
            return call_text(call.name, call.arguments)
        return game.realize(game.agent_role, act, rng)

    def visible(self, role: str, text: str) -> bool:
        from scope_envs.games.tau2.text_protocol import parse

        try:
            return parse(text) is None
        except ValueError:
            return True

    def person_text(self, text: str, form: dict) -> str:
        if form.get("end") == "yes":
            return self.stop_text
        if text.lstrip().startswith(("{", "`")):  # the game would read it as a tool call
            raise ValueError("Please write your message in words (it cannot start with { or `).")
        return text

    def final(self, game) -> bool:
        return False


# the game's objections (``InGameError``) in the participant's words: (a fragment of the engine's message, the
# words). The engine's message, with its tag syntax and error counter, stays in the database and the exports.
PARTICIPANT_NOTES = (
    ("this is your final reply", "Please choose how much you will donate below, then send."),
    ("a donation can be at most", "A donation can be at most $2. Please write your message without square "
                                  "brackets: you choose your amount from a list at the end of the chat."),
    ("[DONATE", "Please write your message without square brackets: you choose your amount from a list at the "
                "end of the chat."),
    ("message too long", "Please write a shorter message."),
    ("not printable text", "Please type your message as plain text."),
    ("empty message", "Please type a message first."),
    ("malformed tool call", "Please write your message in words, not as code."),
)
DEFAULT_NOTE = "Your partner could not read that message. Please say it in other words and send it again."


def participant_note(error: str | None) -> str:
    """What the person is told about a message the game did not accept: never the engine's own wording (tags,
    tool-call syntax, the error counter)."""
    if not error:
        return ""
    for fragment, words in PARTICIPANT_NOTES:
        if fragment.lower() in error.lower():
            return words
    return DEFAULT_NOTE


SPECS = {"p4g": P4GSpec, "tau2": Tau2Spec}


def spec(cfg):
    return SPECS[cfg.game](cfg)


def observation(game) -> np.ndarray:
    return act_observation(game, game.agent_role)
