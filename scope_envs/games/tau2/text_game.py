"""The tau2 text surface: ``Tau2TextGame``, the agent writes messages and JSON tool calls.

The rules, the dialogue state (slots told, records revealed, calls made, what
the agent asked for) and the evaluation are the shared game's
(``game.Tau2Game``), as on the act surface (``act_game.Tau2ActGame``), so the
act-level users (``scope_envs.agents.tau2``) compute their distributions from
``view.private`` exactly as there; this class adds the text protocol. The
dialogue state is updated

* from the agent's text: a JSON tool call is executed verbatim (its result is
  revealed, a successful call counts as done, a transfer tool call makes the
  user hand over); a message goes through the light NLU (``nlu.py``) to an
  agent act (slot request, confirmation request, phone instruction, policy
  refusal, transfer, end, greeting, statement); the user's questions count as
  answered once the agent's messages contain the task's facts;
* from the user's turns: an act-level user's act updates it as on the act
  surface and is rendered in our own varied words (``realize.user_says``: the
  concrete values the act discloses); a phone action runs the user tool and the
  user says what its phone shows. A text player's (``user=``, a learnable
  user) message is kept verbatim, its tool calls run verbatim, and the state
  takes from its text only what the text says (slot values, details).
"""

from __future__ import annotations

from scope_envs.core.game import InGameError
from scope_envs.core.simulator import Simulator
from scope_envs.games.tau2 import nlu, realize, text_protocol
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, AGENT_TEXT_ACTS, AGENT_TEXT_INDEX, USER_ACTS, USER_INDEX
from scope_envs.games.tau2.game import AGENT, USER, Tau2Game, Tau2Turn
from scope_envs.games.tau2.goals import TRANSFER, Call, tokens


def _loose(call: Call) -> tuple:
    return call.name, call.requestor, tuple(sorted(str(t).lower() for t in tokens(call.arguments)))


class Tau2TextGame(Tau2Game):
    def acts(self, role):
        return AGENT_TEXT_ACTS if role == AGENT else USER_ACTS

    def reset(self, persona, rng):
        super().reset(persona, rng)
        self.unanswered: list[str] = [q.lower() for q in self.goal.questions]  # not yet in any agent message

    @property
    def act_level_user(self) -> bool:
        p = getattr(self, "user_player", None)
        return isinstance(p, Simulator) and not p.plays_text

    def understand(self, role, text):
        if not text.strip():
            raise InGameError("empty message")
        if role == AGENT:
            return self._agent_act(nlu.read_agent(self, text))
        return nlu.read_user(self, text)

    def _agent_act(self, reading) -> int:
        """The act index of a reading: a confirmation / instruction names its candidate slot (0 when the
        target is not among the act surface's candidates)."""
        if reading.act in ("confirm", "instruct"):
            keys = [c.key() for c in self.candidates()["write" if reading.act == "confirm" else "phone"]]
            j = keys.index(reading.target.key()) if reading.target.key() in keys else 0
            return AGENT_TEXT_INDEX[f"{reading.act}:{j}"]
        return AGENT_TEXT_INDEX[reading.act]

    def _turn(self, role: str, act: int, text: str) -> None:
        if role == AGENT:
            self._agent_turn(act, text)
        elif self.act_level_user and text_protocol.parse(text) is None:
            self._act_user_turn(act, text)
        else:
            self._text_user_turn(act, text)

    # ------------------------------------------------------------ bookkeeping
    def _record_call(self, role, act, call: dict, text: str) -> tuple[str, bool]:
        requestor = "assistant" if role == AGENT else "user"
        content, error = self.world.call(call["name"], call["arguments"], requestor)
        self._tool_turn(role, act, text, call, content, error, requestor)
        if not error:
            made = Call(call["name"], call["arguments"] if isinstance(call["arguments"], dict) else {}, requestor, "")
            self.done.add(made.key())
            loose = _loose(made)
            g = self.goal
            for c in [*g.calls, *([g.decoy] if g.decoy is not None else [])]:
                if c.key() not in self.done and _loose(c) == loose:
                    self.done.add(c.key())  # the same call up to argument order
            if g.decoy is not None and g.decoy.key() in self.done and role == AGENT:
                self.decoy_executed = True
            if self.instructed is not None and self.instructed.key() in self.done:
                self.instructed = None
        if requestor == "assistant" and call["name"] == TRANSFER and not error:
            self.transfer_pending = True
        return content, error

    # ------------------------------------------------------------ agent
    def _agent_turn(self, act: int, text: str) -> None:
        call = text_protocol.parse(text)
        if call is not None:
            self._record_call(AGENT, AGENT_TEXT_INDEX["tool_call"], call, text)
            return
        reading = nlu.read_agent(self, text)
        self.asked_slot = self.confirm_target = None
        self._agent_message(reading.act.partition(":")[0], reading.slot, reading.target)
        if reading.act == "transfer":
            self.transfer_pending = True
        said = text.lower().replace(",", "")  # each message read once: linear in what the agent says
        self.unanswered = [q for q in self.unanswered if q not in said]
        if self.goal.questions and not self.unanswered:
            self.answered = True
        self._agent_said(act, text, reading.act == "end" or text_protocol.STOP in text)

    # ------------------------------------------------------------ user
    def _act_user_turn(self, act: int, text: str) -> None:
        """An act-level user: the shared user-act semantics (as on the act surface); its rendered words reveal
        what they say."""
        self.revealed += " " + text.lower()
        if USER_ACTS[act] == "phone_action" and self.instructed is not None:
            self._user(act, "")  # runs the instructed phone action (a tool call turn) and passes the turn
            result = (self.history[-1].result or "").strip().splitlines()
            seen = f" My phone now says: {result[0][:200]}" if result else ""
            self.history.append(Tau2Turn(USER, act, (text or "Okay, I did that.") + seen))
            self.steps += 1
            return
        self._user(act, text)

    def _text_user_turn(self, act: int, text: str) -> None:
        """A text player's turn, verbatim; the state takes what its text says."""
        call = text_protocol.parse(text)
        if call is not None:  # a phone tool call: the caller keeps the turn, as upstream
            self._record_call(USER, USER_INDEX["phone_action"], call, text)
            return
        low = text.lower()
        self.revealed += " " + low
        self.user_msgs += 1
        g = self.goal
        for slot, vals in g.identity.items():
            if vals and all(str(v).lower() in low for v in vals.values()):
                self.told[slot] = "ok"
        if any(str(v).lower() in low for v in g.details.values()):
            self.details_given = True
        self.stated = True
        if act == USER_INDEX["confirm"] and self.confirm_target is not None:
            self.confirmed.add(self.confirming.key())
        self.asked_slot = self.confirm_target = None
        if act in (USER_INDEX["stop"], USER_INDEX["transfer"]):
            self.history.append(Tau2Turn(USER, act, text))
            self.steps += 1
            return self._end("user_stop")
        self._say(USER, act, text)

    # ------------------------------------------------------------ text
    def realize(self, role, act, rng):
        if role == USER:
            return realize.user_says(self, act, rng)
        if AGENT_TEXT_ACTS[act] == "tool_call":
            return "Let me check that for you."
        return realize.agent(self, act, rng)

    def features(self, role):
        if role == USER and self.last[AGENT] >= len(AGENT_ACTS):  # a tool call: the act features have no slot
            last, self.last[AGENT] = self.last[AGENT], 0
            try:
                return super().features(role)
            finally:
                self.last[AGENT] = last
        return super().features(role)
