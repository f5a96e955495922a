"""The tau2 act surface: dialogue acts for both roles, argument candidates, masks and features.

``Tau2ActGame`` is the tau2 game (same world, tools, protocol and evaluation as
``Tau2Game``) with act-level roles. Tool arguments are never free: they are
*candidates* built from what the dialogue has revealed so far.

Agent acts (22, ``AGENT_ACTS``)
    ``greet``; ``request:<slot>`` for ``user_id``, ``email``, ``name_zip``,
    ``phone``, ``record_id`` (a reservation / order number), ``details`` (items,
    dates, addresses, payment, reason); ``lookup:0..3`` (a read call among the
    read candidates); ``confirm:0..1`` (ask explicit confirmation of a write
    candidate); ``execute:0..1`` (make that write call); ``instruct:0..1``
    (telecom: ask the user to do a phone action); ``answer`` (tell the user the
    facts it asked for; available once every lookup the task needs was made);
    ``deny`` (refuse: inform the policy rule); ``transfer`` (to a human agent);
    ``end`` (``###STOP###``). A tool call keeps the agent's turn, as upstream.

Candidates
    A call is *grounded* when every value it needs (strings with a digit or an
    @, a calculation's numbers) was said by the user or returned by one of the
    agent's tool calls. Read candidates: the task's own lookups that are grounded
    and not yet made, then the identity / record reads built from what the user
    said (a mistyped id gives a failing lookup). Write candidates: the requests
    the user has stated (its real ones, and the decoy if it asked for one and has
    not retracted it), grounded, not yet made, in the order stated. Phone
    candidates: the task's phone actions not yet done, once the user described
    its problem.

User acts (14, ``behaviour.USER_ACTS``)
    ``inform_all`` (identity, ids, details, request and question at once),
    ``state_request``, ``inform_identity`` (the slot asked for, or the first it
    knows), ``inform_slip`` (the same with a typo), ``inform_details``,
    ``confirm``, ``deny`` (declines what was asked; denying the confirmation of a
    decoy retracts it), ``insist`` (on a refused request), ``change_mind`` (asks
    for the decoy, or retracts it), ``ask_question``, ``phone_action`` (does the
    instructed phone action with the user tools), ``stop``, ``transfer``.

Observations
    ``agent``: 48 floats (domain, turn and errors, identity slots and records
    revealed, candidates present and confirmed, the policy check of each write
    candidate, the user's last act). ``user``: 55 floats (domain, its card, its
    goal's shape, the agent's last act, the dialogue's progress).
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import InGameError, Persona
from scope_envs.games.tau2 import behaviour
from scope_envs.games.tau2 import text as T
from scope_envs.games.tau2.behaviour import U, USER_ACTS
from scope_envs.games.tau2.data import DOMAINS
from scope_envs.games.tau2.game import AGENT, USER, Tau2Game, Tau2Turn
from scope_envs.games.tau2.goals import (IDENTITY_READS, IDENTITY_SLOTS, RECORD_READS, TRANSFER, Call, goal_for,
                                         tokens)

K_READ, K_WRITE, K_PHONE = 4, 2, 2
REQUEST_SLOTS = (*IDENTITY_SLOTS, "record_id", "details")
AGENT_ACTS = ("noop", "greet", *(f"request:{s}" for s in REQUEST_SLOTS), *(f"lookup:{j}" for j in range(K_READ)),
              *(f"confirm:{j}" for j in range(K_WRITE)), *(f"execute:{j}" for j in range(K_WRITE)),
              *(f"instruct:{j}" for j in range(K_PHONE)), "answer", "deny", "transfer", "end")
A = {a: i for i, a in enumerate(AGENT_ACTS)}
USER_REWARDS = ("shared", "zero", "persona", "adversarial", "mixed")


def typo(value: str) -> str:
    """A plausible slip: the last digit one off (or the last letter changed)."""
    for i in range(len(value) - 1, -1, -1):
        c = value[i]
        if c.isdigit():
            return value[:i] + str((int(c) + 1) % 10) + value[i + 1:]
    return value[:-1] + ("x" if value[-1:] != "x" else "y")


class Tau2ActGame(Tau2Game):
    success_metric = "success"  # the tau^2 reward is 1 (pass^1)
    success_label = "task success rate (tau^2 reward 1)"

    def __init__(self, *args, user_reward: str = "shared", **kwargs):
        if user_reward not in USER_REWARDS:
            raise ValueError(f"user_reward must be one of {USER_REWARDS}, got {user_reward!r}")
        self._act_user_reward = user_reward
        super().__init__(*args, user_reward="shared", **kwargs)
        self.user_reward = user_reward

    # ------------------------------------------------------------ scenario
    def acts(self, role):
        return AGENT_ACTS if role == AGENT else USER_ACTS

    def sample_persona(self, rng, split):
        """A task of the split (as the text game) and a behaviour card of the same split."""
        task = super().sample_persona(rng, split)
        c = behaviour.sample_card(rng, "heldout" if split == "heldout" else "train")
        return Persona(f"{task.id}|{c.id}", split, dict(c.traits), {**task.attributes, "card": c.id})

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        super().reset(persona, rng)
        self.goal = goal_for(self.data[self.domain], self.task)
        self.traits = persona.traits if persona.traits else dict(behaviour.default_card().traits)
        self.episode_seed = int(rng.integers(2**31))
        self.revealed = " "  # lower-case text of what the user said and the agent's tool results
        self.told: dict[str, str] = {}  # identity slot -> "ok" | "slip"
        self.stated = False
        self.details_given = False
        self.asked = False
        self.answered = False
        self.decoy_stated = self.decoy_retracted = False
        self.confirmed: set[str] = set()
        self.done: set[str] = set()  # keys of the calls made (either side)
        self.denied = self.insisted = self.inform_alls = self.user_msgs = 0
        self.agent_msgs = 0
        self.instructed: Call | None = None
        self.transfer_pending = False
        self.last = {AGENT: 0, USER: 0}
        self.asked_slot: str | None = None
        self.confirm_target: str | None = None
        self.decoy_executed = False
        self.slips = 0
        self._cands = None

    # ------------------------------------------------------------ candidates
    def grounded(self, call: Call) -> bool:
        return all(str(v).lower() in self.revealed for v in tokens(call.arguments))

    def _identity_values(self) -> dict[str, dict]:
        out = {}
        for slot, how in self.told.items():
            vals = dict(self.goal.identity.get(slot, {}))
            if how == "slip":
                vals = {k: typo(v) if any(ch.isdigit() for ch in v) else v for k, v in vals.items()}
            out[slot] = vals
        return out

    def candidates(self) -> dict[str, list[Call]]:
        if self._cands is not None:
            return self._cands
        tools = self.world.module.TOOLS
        reads, keys = [], set(self.done)
        for c in self.goal.lookups:
            if c.key() not in keys and self.grounded(c):
                reads.append(c)
                keys.add(c.key())
        for slot, vals in self._identity_values().items():
            tool, build = IDENTITY_READS[slot]
            if tool in tools:
                try:
                    c = Call(tool, build(vals), "assistant", "read")
                except KeyError:
                    continue
                if c.key() not in keys:
                    reads.append(c)
                    keys.add(c.key())
        if self.details_given:
            for value, arg in self.goal.record_ids.items():
                tool = RECORD_READS.get(arg)
                if tool in tools:
                    c = Call(tool, {arg: value}, "assistant", "read")
                    if c.key() not in keys:
                        reads.append(c)
                        keys.add(c.key())
        writes = []
        if self.decoy_stated and not self.decoy_retracted and self.goal.decoy is not None:
            writes.append(self.goal.decoy)
        if self.stated:
            writes += [c for c in self.goal.requests if c.name != TRANSFER]
        seen, w2 = set(), []
        for c in writes:
            if c.key() not in self.done and c.key() not in seen and self.grounded(c):
                w2.append(c)
                seen.add(c.key())
        phones = []
        if self.stated:
            seen = set()
            for c in self.goal.phone_actions:
                if c.key() not in self.done and c.key() not in seen:
                    phones.append(c)
                    seen.add(c.key())
        self._cands = {"read": reads[:K_READ], "write": w2[:K_WRITE], "phone": phones[:K_PHONE]}
        return self._cands

    def _real_pending(self) -> bool:
        return any(c.key() not in self.done for c in self.goal.requests if c.name != TRANSFER)

    def satisfied(self) -> bool:
        g = self.goal
        requests = [c for c in g.requests if c.name != TRANSFER]
        if not (requests or g.phone_actions or g.questions):
            return self.stated and (g.decoy_kind != "forbidden" or self.denied > 0)
        return (all(c.key() in self.done for c in requests) and all(c.key() in self.done for c in g.phone_actions)
                and (self.answered or not g.questions))

    # ------------------------------------------------------------ protocol
    def legal(self, role):
        n = len(self.acts(role))
        mask = np.zeros(n, dtype=bool)
        if role != self.active_role():
            mask[0] = True
            return mask
        if role == AGENT:
            c = self.candidates()
            mask[1:] = True
            for kind, names in (("read", ("lookup",)), ("write", ("confirm", "execute")), ("phone", ("instruct",))):
                k = len(c[kind])
                for name in names:
                    for j in range({"read": K_READ, "write": K_WRITE, "phone": K_PHONE}[kind]):
                        mask[A[f"{name}:{j}"]] = j < k
            return mask
        g = self.goal
        mask[1:] = True
        mask[U["inform_identity"]] = mask[U["inform_slip"]] = bool(g.identity)
        mask[U["inform_slip"]] &= not self.slips and any(
            any(ch.isdigit() for ch in v) for vals in g.identity.values() for v in vals.values())
        mask[U["inform_details"]] = bool(g.details)
        mask[U["insist"]] = g.decoy_kind == "forbidden" and self.decoy_stated
        mask[U["change_mind"]] = g.decoy_kind == "mind_change" and not self.decoy_retracted
        mask[U["ask_question"]] = bool(g.questions)
        mask[U["phone_action"]] = self.instructed is not None
        mask[U["transfer"]] = self.transfer_pending
        return mask

    def understand(self, role, text):
        raise InGameError("the tau2 act game reads acts, not text")

    def apply(self, role: str, act: int, text: str = "") -> None:
        if self.termination is not None:
            raise ValueError("tau2: the episode is over")
        if role != self._next:
            raise ValueError(f"tau2: it is the {self._next}'s turn, not the {role}'s")
        self.last[role] = act
        self._cands = None
        self._turn(role, act, text)
        self._cands = None
        if self.termination is None:
            if self.tool_errors >= self.max_tool_errors:
                self._end("too_many_errors")
            elif self.steps >= self.max_steps:
                self._end("max_steps")

    def _turn(self, role: str, act: int, text: str) -> None:
        (self._agent if role == AGENT else self._user)(act, text)

    def _say(self, role, act, text):
        self.history.append(Tau2Turn(role, act, text))
        self.steps += 1
        self._next = USER if role == AGENT else AGENT

    def _call(self, role, act, call: Call):
        content, error = self.world.call(call.name, call.arguments, call.requestor)
        self.history.append(Tau2Turn(role, act, T.call_text(call.name, call.arguments),
                                     {"name": call.name, "arguments": call.arguments}, content, error))
        self.steps += 2
        self.tool_errors += error
        self.done.add(call.key())
        if call.requestor == "assistant":
            self.revealed += " " + content.lower()
        return content, error

    def _agent(self, act: int, text: str) -> None:
        name = AGENT_ACTS[act]
        kind, _, j = name.partition(":")
        c = self.candidates()
        self.asked_slot = self.confirm_target = None
        if kind == "lookup":
            self._call(AGENT, act, c["read"][int(j)])
            return
        if kind == "execute":
            call = c["write"][int(j)]
            self.decoy_executed |= self.goal.decoy is not None and call.key() == self.goal.decoy.key()
            self._call(AGENT, act, call)
            return
        self.agent_msgs += 1
        if kind == "request":
            self.asked_slot = j
        elif kind == "confirm":
            call = c["write"][int(j)]
            self.confirm_target = "decoy" if self.goal.decoy is not None and call.key() == self.goal.decoy.key() \
                else "real"
            self.confirming = call
        elif kind == "instruct":
            self.instructed = c["phone"][int(j)]
        elif kind == "answer":
            if self.goal.questions and all(l.key() in self.done for l in self.goal.lookups):
                self.answered = True
        elif kind == "deny":
            self.denied += 1
        elif kind == "transfer":
            transfer = next((r for r in self.goal.requests if r.name == TRANSFER), None)
            args = transfer.arguments if transfer else {"summary": "The customer needs further help."}
            self._call(AGENT, act, Call(TRANSFER, args, "assistant", "generic"))
            self.transfer_pending = True
        text = text or self.agent_text(act)
        self.history.append(Tau2Turn(AGENT, act, text))
        self.steps += 1
        if kind == "end":
            return self._end("agent_stop")
        self._next = USER

    def _user(self, act: int, text: str) -> None:
        name = USER_ACTS[act]
        g = self.goal
        self.user_msgs += 1
        target = self.confirm_target
        self.confirm_target = None
        if name == "phone_action" and self.instructed is not None:
            self._call(USER, act, self.instructed)
            self.instructed = None
        elif name in ("deny", "stop"):
            self.instructed = None
        if name == "inform_all":
            self.inform_alls += 1
            for slot in g.identity:
                self._tell(slot, "ok")
            self._details()
            self.stated = True
            self.asked = self.asked or bool(g.questions)
            if g.decoy_kind == "forbidden":
                self.decoy_stated = True
        elif name == "state_request":
            self.stated = True
            if g.decoy_kind == "forbidden":
                self.decoy_stated = True
        elif name in ("inform_identity", "inform_slip"):
            slot = self.asked_slot if self.asked_slot in g.identity else next(iter(g.identity), None)
            if slot is not None:
                bad = name == "inform_slip" and any(ch.isdigit() for v in g.identity[slot].values() for ch in v)
                self.slips += bad
                self._tell(slot, "slip" if bad else "ok")
        elif name == "inform_details":
            self._details()
        elif name == "confirm" and target is not None:
            self.confirmed.add(self.confirming.key())
        elif name == "deny" and target == "decoy":
            self.decoy_retracted = True
        elif name == "insist":
            self.insisted += 1
        elif name == "change_mind":
            if not self.decoy_stated:
                self.decoy_stated = True
            else:
                self.decoy_retracted = True
                self.stated = True
        elif name == "ask_question":
            self.asked = True
        self.asked_slot = None
        if name in ("stop", "transfer"):
            self.history.append(Tau2Turn(USER, act, text or self.user_text(act)))
            self.steps += 1
            return self._end("user_stop")
        if name == "phone_action":
            self._next = AGENT
            return
        self._say(USER, act, text or self.user_text(act))

    def _tell(self, slot: str, how: str) -> None:
        self.told[slot] = how
        vals = self._identity_values()[slot]
        self.revealed += " " + " ".join(str(v).lower() for v in vals.values())

    def _details(self) -> None:
        self.details_given = True
        self.revealed += " " + " ".join(str(v).lower() for v in self.goal.details.values())

    # ------------------------------------------------------------ outcome
    def outcome(self):
        r = self.reward_info["reward"] if self.reward_info else 0.0
        out = {"reward": r, "success": float(r >= 1.0), "steps": self.steps, "tool_errors": self.tool_errors,
               "policy_violations": len(self.world.violations), "done": float(self.termination is not None),
               "decoy_executed": float(self.decoy_executed), "slips": float(self.slips)}
        for d in DOMAINS[:3]:
            out[d] = float(self.domain == d)
            out[f"{d}_success"] = float(self.domain == d and r >= 1.0)
        return out

    def rewards(self):
        r = self.reward_info["reward"] if self.reward_info else 0.0
        persona = r - 0.5 * abs(self.inform_alls / max(1, self.user_msgs) - self.traits.get("disclose", 1.0)) \
            if self.user_msgs else r
        user = {"shared": r, "zero": 0.0, "persona": persona, "adversarial": -r,
                "mixed": 0.5 * persona - 0.5 * r}[self.user_reward]
        return {AGENT: r, USER: user}

    # ------------------------------------------------------------ features
    def user_state(self) -> dict:
        """What the user knows of the dialogue (its simulators read this; numbers and a few labels)."""
        g = self.goal
        return {
            "first_turn": self.user_msgs == 0, "transfer_pending": self.transfer_pending,
            "satisfied": self.satisfied(), "agent_msgs": self.agent_msgs, "instructed": self.instructed is not None,
            "confirm_target": self.confirm_target, "decoy_kind": g.decoy_kind, "asked_slot": self.asked_slot,
            "slipped": float(self.slips > 0), "stated": float(self.stated), "details_given": float(self.details_given),
            "identity_given": float(bool(self.told)), "asked": float(self.asked),
            "has_question": float(bool(g.questions)), "denied": self.denied, "insisted": self.insisted,
            "decoy_open": float(self.decoy_stated and not self.decoy_retracted), "real_pending": self._real_pending(),
            "tool_errors": self.tool_errors, "episode_seed": self.episode_seed,
        }

    def features(self, role):
        dom = [float(self.domain == d) for d in DOMAINS]
        if role == AGENT:
            c = self.candidates()
            last_user = np.zeros(len(USER_ACTS), np.float32)
            last_user[self.last[USER]] = 1.0
            pol = []
            for j in range(K_WRITE):
                flag = 0.0
                if j < len(c["write"]):
                    call = c["write"][j]
                    try:
                        flag = float(bool(self.world.module.violations(
                            self.world.state, call.name, call.arguments, {"__none__"} | self.world.identified)))
                    except Exception:
                        flag = 1.0
                pol.append(flag)
            last_err = float(bool(self.history) and self.history[-1].error)
            f = [*dom, self.steps / self.max_steps, self.tool_errors / self.max_tool_errors, self.agent_msgs / 30,
                 *(float(s in self.told) for s in IDENTITY_SLOTS), float(bool(self.world.identified)), last_err,
                 float(self.stated), float(self.details_given), float(self.asked), float(self.answered),
                 *(float(j < len(c["read"])) for j in range(K_READ)),
                 *(float(j < len(c["write"])) for j in range(K_WRITE)),
                 *(float(j < len(c["write"]) and c["write"][j].key() in self.confirmed) for j in range(K_WRITE)),
                 *pol, *(float(j < len(c["phone"])) for j in range(K_PHONE)), float(self.instructed is not None),
                 min(1.0, len([k for k in self.done]) / 10), float(self.denied > 0), float(self.transfer_pending),
                 float(self._next == AGENT), *last_user]
            return np.array(f, np.float32)
        st = self.user_state()
        g = self.goal
        last_agent = np.zeros(len(AGENT_ACTS), np.float32)
        last_agent[self.last[AGENT]] = 1.0
        f = [*dom, *(self.traits.get(t, 0.0) for t in behaviour.TRAITS),
             min(1.0, len(g.requests) / 5), min(1.0, len(g.phone_actions) / 5), float(bool(g.questions)),
             float(g.decoy_kind == "forbidden"), float(g.decoy_kind == "mind_change"), float(bool(g.identity)),
             float(st["first_turn"]), float(st["satisfied"]), min(1.0, self.agent_msgs / 30),
             float(st["instructed"]), float(st["confirm_target"] == "decoy"), float(st["confirm_target"] == "real"),
             float(self.asked_slot in IDENTITY_SLOTS), float(self.asked_slot in ("record_id", "details")),
             st["slipped"], st["stated"], st["details_given"], st["identity_given"], st["asked"],
             float(self.answered), min(1.0, self.denied / 3), min(1.0, self.insisted / 3), st["decoy_open"],
             float(self.decoy_retracted), float(st["real_pending"]), float(self.transfer_pending),
             float(self._next == USER), *last_agent]
        return np.array(f, np.float32)

    def private(self, role):
        out = super().private(role)
        if role == USER:
            out.update(goal=self.goal, state=self.user_state())
        return out

    # ------------------------------------------------------------ text
    def agent_text(self, act: int, rng: np.random.Generator | None = None) -> str:
        from scope_envs.games.tau2 import realize

        return realize.agent(self, act, rng)

    def user_text(self, act: int, rng: np.random.Generator | None = None) -> str:
        from scope_envs.games.tau2 import realize

        return realize.user(self, act, rng)

    def realize(self, role, act, rng):
        return self.agent_text(act, rng) if role == AGENT else self.user_text(act, rng)
