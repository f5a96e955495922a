"""The tau2 text surface: ``Tau2TextGame``, the agent writes messages and JSON tool calls.

The episode (task, world, goal, views) is the shared game's (``game.Tau2Game``), and the dialogue state's fields
are those the act surface's game reads back from its batch (``act_game.Tau2ActGame``), so the act-level users
(``scope_envs.agents.tau2``) compute their distributions from ``view.private`` exactly as there. The state is open
here (any tool call, any words), so this game keeps the fields itself, as sets and text, and adds the text
protocol. The dialogue state is updated

* from the agent's text: a JSON tool call is executed verbatim (its result is revealed, a successful call counts
  as done, matched to the goal's calls up to argument order, a transfer tool call makes the user hand over); a
  message goes through the light NLU (``nlu.py``) to an agent act (slot request, confirmation request, phone
  instruction, policy refusal, transfer, end, greeting, statement), whose effect is the act surface's rule
  (``Tau2Batch._message``, with the call the words name); the user's questions count as answered once the
  agent's messages contain the task's facts;
* from the user's turns: an act-level user's act updates it by the act surface's rule (``Tau2Batch._user``,
  played on this game's fields by ``_Rules``) and is rendered in our own varied words (``realize.user_says``: the
  concrete values the act discloses); a phone action runs the user tool and the user says what its phone shows. A
  text player's (``user=``, a learnable user) message is kept verbatim, its tool calls run verbatim, and the state
  takes from its text only what the text says (slot values, details).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from scope_envs.core.game import ONE, InGameError
from scope_envs.core.simulator import Simulator
from scope_envs.games.tau2 import behaviour, nlu, realize, text_protocol
from scope_envs.games.tau2.data import DOMAINS
from scope_envs.games.tau2.dialogue_acts import (
    AGENT_ACTS,
    AGENT_INDEX,
    AGENT_TEXT_ACTS,
    AGENT_TEXT_INDEX,
    IDENTITY_SLOTS,
    K_WRITE,
    REQUEST_SLOTS,
    USER_ACTS,
    USER_INDEX,
)
from scope_envs.games.tau2.batched import TARGETS, Tau2Batch
from scope_envs.games.tau2.compiled import TASKS
from scope_envs.games.tau2.evaluate import evaluate
from scope_envs.games.tau2.game import (
    AGENT,
    USER,
    Tau2Game,
    Tau2Turn,
    agent_features,
    candidate_slots,
    narrow_user_acts,
    outcomes,
    user_features,
    user_rewards,
)
from scope_envs.games.tau2.goal_rows import told_rows
from scope_envs.games.tau2.goals import TRANSFER, Call, tokens
from scope_envs.games.tau2.user_state import state_row


def _loose(call: Call) -> tuple:
    return call.name, call.requestor, tuple(sorted(str(t).lower() for t in tokens(call.arguments)))


class _Rules(Tau2Batch):
    """The act surface's rules (``Tau2Batch``) played on the text game's dialogue state: the game's fields are
    written into this batch of one, a user act (``Tau2Batch._user``) or an agent message as the NLU read it
    (``Tau2Batch._message``) played, the fields read back. Its calls (the phone action the agent instructed) run on
    the game's world, and what a user tells joins the game's revealed text."""

    def __init__(self, game):
        super().__init__([game])
        self.owner = game
        self.extra: list[Call] = []  # calls the game holds that its task does not (a phone tool the NLU read)

    def index(self, call: Call | None) -> int:
        if call is None:
            return -1
        calls = self.owner.goal_calls
        j = calls.index.get(call.key())
        if j is None:
            if call not in self.extra:
                self.extra.append(call)
            j = len(calls.calls) + self.extra.index(call)
        return j

    def call(self, u: int) -> Call:
        calls = self.owner.goal_calls.calls
        return calls[u] if u < len(calls) else self.extra[u - len(calls)]

    def user_act(self, act: int) -> None:
        self._load()
        self._user(ONE, np.array([act]))
        self._store()

    def message(self, act: int, target: Call | None) -> None:
        self._load()
        self._message(ONE, np.array([act]), np.array([self.index(target)]))
        self._store()

    def _load(self) -> None:
        g = self.owner
        self.extra.clear()
        self.task[0] = g.task_row
        for name in ("user_msgs", "slips", "inform_alls", "insisted", "agent_msgs", "denied", "stated",
                     "details_given", "asked", "decoy_stated", "decoy_retracted"):
            getattr(self, name)[0] = getattr(g, name)
        self.told[0], self.told_order[0] = told_rows(g.told.items())
        self.n_told[0] = len(g.told)
        self.confirmed[0] = g.goal_calls.called(g.confirmed)
        self.target[0] = TARGETS.index(g.confirm_target)
        self.confirming[0] = self.index(g.confirming) if g.confirm_target is not None else -1
        self.instructed[0] = self.index(g.instructed)
        self.asked_slot[0] = REQUEST_SLOTS.index(g.asked_slot) + 1 if g.asked_slot else 0

    def _store(self) -> None:
        g = self.owner
        vars(g).update(self.user_fields(0, g.goal_calls.calls))
        g.agent_msgs, g.denied = int(self.agent_msgs[0]), int(self.denied[0])
        g.instructed = self.call(int(self.instructed[0])) if self.instructed[0] >= 0 else None
        if self.confirming[0] >= 0:
            g.confirming = self.call(int(self.confirming[0]))

    def _calls(self, idx, us) -> None:
        for u in us.tolist():
            self.owner._call(USER, USER_INDEX["phone_action"], self.call(u))

    def _reveal(self, idx, inside, pieces) -> None:
        self.owner.revealed += " " + (pieces(0) if callable(pieces) else pieces[0])


class Tau2TextGame(Tau2Game):
    def acts(self, role):
        return AGENT_TEXT_ACTS if role == AGENT else USER_ACTS

    def reset(self, persona, rng):
        super().reset(persona, rng)
        self.unanswered: list[str] = [q.lower() for q in self.goal.questions]  # not yet in any agent message
        self.revealed = " "  # lower-case text of what the user said and the agent's tool results
        self._cands = None  # this turn's candidates (``apply`` clears it)
        self._legal: dict[str, np.ndarray] = {}  # this turn's legal masks per role (``apply`` clears them)
        self._outcome: dict | None = None  # this turn's outcome (``apply`` clears it)
        self._cands_last = None  # (inputs, candidates) of the last computation, reused while the inputs hold
        self._policy = None  # (the world's stamp, {call key: policy flag}) of ``_policy_flag``
        # its task compiled in the rules' ``Tasks`` (``TASKS`` unless this game was copied or unpickled: then the
        # copy that came with the rules), whose row the user acts' rule reads
        rules = getattr(self, "_rules", None)
        self.task_row = (TASKS if rules is None else rules.tasks).of(self)
        if rules is None:
            self._rules = _Rules(self)

    def _cands_inputs(self) -> tuple:
        # everything ``candidates`` reads that a turn can change: ``done`` and ``revealed`` only ever grow (their
        # sizes tell them apart), the goal, the tools and the world's module are fixed for the episode
        return (len(self.done), len(self.revealed), tuple(self.told.items()), self.details_given, self.stated,
                self.decoy_stated, self.decoy_retracted)

    def candidates(self) -> dict[str, list[Call]]:
        """The agent's read, write and phone candidates (``goal_rows.candidates``, a row of one)."""
        if self._cands is not None:
            return self._cands
        inputs = self._cands_inputs()
        if self._cands_last is not None and self._cands_last[0] == inputs:
            # the turn changed nothing the candidates depend on (a message, a confirmation): the same lists
            self._cands = self._cands_last[1]
            return self._cands
        gc = self.goal_calls
        rows = gc.candidates(int(self._called()), gc.tokens_in(self.revealed), tuple(self.told.items()),
                             self.details_given, self.stated, self.decoy_stated and not self.decoy_retracted)
        self._cands = {kind: [gc.calls[u] for u in row] for kind, row in zip(("read", "write", "phone"), rows)}
        self._cands_last = (inputs, self._cands)
        return self._cands

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
        self._tool_turn(Tau2Turn(role, act, text, call, content, error), requestor)
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
        kind = reading.act.partition(":")[0]  # a confirmation or an instruction names its call, not a candidate
        self._rules.message(AGENT_INDEX[f"{kind}:0" if kind in ("confirm", "instruct") else reading.act],
                            reading.target)
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
                return self._state_features(role)
            finally:
                self.last[AGENT] = last
        return self._state_features(role)

    # ------------------------------------------------------------ the scalar state's protocol
    # legal masks by ``_legal_key``: a mask is a function of a few flags, shared by every game of a class
    _masks: ClassVar[dict[tuple, np.ndarray]] = {}

    def legal(self, role):
        return self.shared_legal(role).copy()

    def shared_legal(self, role) -> np.ndarray:
        """``legal(role)`` itself, shared by every game in that state: read it, never write it (the batched
        engine copies it into its own array)."""
        # asked several times per turn (the surface's check of an act, the observation, a simulator's view) and
        # fixed between turns: looked up once per turn and role (``apply`` and ``reset`` clear it), copied out
        mask = self._legal.get(role)
        if mask is None:
            key = self._legal_key(role)
            mask = self._masks.get(key)
            if mask is None:
                mask = self._masks[key] = self._legal_mask(role)
            self._legal[role] = mask
        return mask

    def _legal_key(self, role) -> tuple:
        """Everything ``_legal_mask(role)`` reads, as a tuple (subclasses that narrow a mask further extend it)."""
        if role != self.active_role():
            return type(self), role, False
        if role != USER:
            return type(self), role, True
        return (type(self), role, True, *self._user_allows())

    def _user_allows(self) -> tuple:
        """``narrow_user_acts``'s flags for this episode's user, now."""
        g = self.goal
        return (bool(g.identity), bool(not self.slips and g.slippable), bool(g.details),
                g.decoy_kind == "forbidden" and self.decoy_stated,
                g.decoy_kind == "mind_change" and not self.decoy_retracted, bool(g.questions),
                self.instructed is not None, bool(self.transfer_pending))

    def _legal_mask(self, role):
        """The legal mask computed from the state (``legal`` looks it up by ``_legal_key``)."""
        mask = super().legal(role)  # the turn-taking mask; the user's acts are narrowed to what its goal allows
        if role != USER or role != self.active_role():
            return mask
        return narrow_user_acts(mask[None], *(np.array([flag]) for flag in self._user_allows()))[0]

    def apply(self, role: str, act: int, text: str = "") -> None:
        self._check_turn(role)
        self.last[role] = act
        self._forget_turn()
        self._turn(role, act, text)
        self._forget_turn()
        if self.termination is None:
            if self.tool_errors >= self.max_tool_errors:
                self._end("too_many_errors")
            elif self.steps >= self.max_steps:
                self._end("max_steps")

    def _say(self, role, act, text):
        self.history.append(Tau2Turn(role, act, text))
        self.steps += 1
        self._next = USER if role == AGENT else AGENT

    def _call(self, role, act, call: Call):
        content, error = self.world.call(call.name, call.arguments, call.requestor, call.key())
        self._tool_turn(Tau2Turn.of_call(role, act, call.name, call.arguments, content, error), call.requestor)
        self.done.add(call.key())
        return content, error

    def _tool_turn(self, turn: Tau2Turn, requestor: str) -> None:
        """A tool call's ``turn``, once the world ran it: the call and its result, two steps, an error counted, and
        what the agent's own calls return revealed (the user's phone keeps its screen)."""
        self.history.append(turn)
        self.steps += 2
        self.tool_errors += turn.error
        if requestor == "assistant":
            self.revealed += " " + turn.result.lower()

    def _agent_said(self, act: int, text: str, end: bool) -> None:
        """The agent's message ``text`` is said: the user's turn, or the end the agent chose."""
        self.history.append(Tau2Turn(AGENT, act, text))
        self.steps += 1
        if end:
            return self._end("agent_stop")
        self._next = USER

    def _user(self, act: int, text: str) -> None:
        """An act-level user's act: its effect on the dialogue state is the act surface's rule (``_Rules``), then
        the turn (words, a stop)."""
        self._rules.user_act(act)
        name = USER_ACTS[act]
        if name in ("stop", "transfer"):
            self.history.append(Tau2Turn(USER, act, text or self.user_text(act)))
            self.steps += 1
            return self._end("user_stop")
        if name == "phone_action":
            self._next = AGENT
            return
        self._say(USER, act, text or self.user_text(act))

    def _forget_turn(self) -> None:
        """Drop what is computed once per turn (candidates, legal masks, outcome): the state it read changed."""
        self._cands, self._legal, self._outcome = None, {}, None

    def _end(self, why: str) -> None:
        self.termination = why
        agent_texts = [t.text for t in self.history if t.role == AGENT and t.call is None]
        # the transcript is for the judge alone: without one it is not built
        transcript = self.chat(AGENT) if self.judge is not None else None
        self.reward_info = evaluate(self.world, agent_texts, why, self.judge, transcript)
        self._forget_turn()

    # ------------------------------------------------------------ outcome
    def outcome(self):
        # read at every step (the env's infos) and fixed between turns: built once per turn, copied out
        if self._outcome is None:
            one = lambda v: np.array([v])  # noqa: E731
            rows = outcomes(one(self.reward_info["reward"] if self.reward_info else 0.0), one(self.steps),
                            one(self.tool_errors), one(len(self.world.violations)),
                            one(self.termination is not None), one(self.decoy_executed), one(self.slips),
                            one(DOMAINS.index(self.domain)))
            self._outcome = {k: float(v[0]) for k, v in rows.items()}
        return dict(self._outcome)

    def agent_score(self) -> float:
        """The task reward (0 or 1; 0 when truncated or before the end), as ``agent_0`` is paid."""
        return min(max(float(self.reward_info["reward"]) if self.reward_info else 0.0, 0.0), 1.0)

    def rewards(self):
        r = self.reward_info["reward"] if self.reward_info else 0.0
        user = user_rewards(self.user_reward, np.array([r]), np.array([self.user_msgs]),
                            np.array([self.inform_alls]), np.array([self.traits.get("disclose", 1.0)]))
        return {AGENT: r, USER: float(user[0])}

    def _state_features(self, role):
        # a batch of one: numbers for the one-column pieces, rows of one for the others
        domain = [DOMAINS.index(self.domain)]
        if role == AGENT:
            c = self.candidates()
            reads, writes, phones = candidate_slots(c)
            policy = np.zeros((1, K_WRITE))
            policy[0, :len(c["write"])] = [self._policy_flag(call) for call in c["write"]]
            confirmed = self.confirmed_slots(c["write"])
            return agent_features(
                1, domain=domain, steps=self.steps, max_steps=self.max_steps, tool_errors=self.tool_errors,
                max_tool_errors=self.max_tool_errors, agent_msgs=self.agent_msgs,
                told=np.array([[s in self.told for s in IDENTITY_SLOTS]]), identified=bool(self.world.identified),
                last_err=bool(self.history) and self.history[-1].error, stated=self.stated,
                details_given=self.details_given, asked=self.asked, answered=self.answered, reads=reads,
                writes=writes, confirmed=confirmed, policy=policy, phones=phones,
                instructed=self.instructed is not None, calls=len(self.done), denied=self.denied,
                transfer_pending=self.transfer_pending, to_move=self._next == AGENT, last_user=[self.last[USER]])[0]
        g = self.goal
        return user_features(
            1, domain=domain, card=np.array([[self.traits.get(t, 0.0) for t in behaviour.TRAITS]]),
            requests=len(g.requests), phone_actions=len(g.phone_actions), has_identity=bool(g.identity),
            st=np.array([state_row(self.user_state())], float), answered=self.answered,
            decoy_retracted=self.decoy_retracted, to_move=self._next == USER, last_agent=[self.last[AGENT]])[0]

    def confirmed_slots(self, writes: list[Call]) -> np.ndarray:
        """Which write candidate slots (``writes``, this turn's) the user confirmed: a row of ``K_WRITE`` flags."""
        row = np.zeros((1, K_WRITE), bool)
        row[0, :len(writes)] = [call.key() in self.confirmed for call in writes]
        return row

    def _policy_flag(self, call: Call) -> float:
        """1.0 when ``call`` would break the domain's checkable policy now (or the check fails), else 0.0.

        The check reads the database and the identified users, which change only by a tool call (``world.call``
        records each in ``calls``; ``identified`` only grows) or by the evaluation's functions at the end: the
        flags are kept while those stand still, so the agent's features of a turn without a tool call (a
        message, the user's answer) do not check each write candidate again."""
        world = self.world
        stamp = (len(world.calls), len(world.identified), self.termination)
        memo = self._policy
        if memo is None or memo[0] != stamp:
            memo = self._policy = (stamp, {})
        flags = memo[1]
        key = call.key()
        flag = flags.get(key)
        if flag is None:
            flag = flags[key] = world.policy_flag(call.name, call.arguments, world.identified)
        return flag
