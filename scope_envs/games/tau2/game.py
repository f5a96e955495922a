"""The tau^2-bench game's episode, shared by its two surfaces (see the package docstring).

``Tau2Game`` holds everything that does not depend on how the roles express
their turns: the episode's task, its world (database, tools and evaluation live
in ``world.py`` / ``evaluate.py`` and know nothing of surfaces) and its derived
goal (``goals.py``), the roles' instructions and views (chat messages,
transcripts), the dialogue state's fields that the act-level users
(``scope_envs.agents.tau2``) read (``user_state``: what the dialogue has
revealed, the calls made, what the agent asked for), and the functions over rows
of states both surfaces compute with (the masks, the features, the outcome, the
rewards; the candidates are ``goal_rows.py``'s). Two subclasses give the roles a
protocol and write the state:

* ``act_game.Tau2ActGame``: both roles play dialogue acts (``dialogue_acts.py``); a write is made only
  after the user confirmed that very call, so a user who declines or leaves blocks it. The game is a batch of
  one of ``batched.Tau2Batch``, the one definition of what an act does, and reads its fields back from it;
* ``text_game.Tau2TextGame``: the agent writes messages and JSON tool calls,
  read back into the same dialogue state by a light NLU (``nlu.py``); act-level
  users still play acts, rendered in words (``realize.py``), and a text player
  may take the user seat. Its state is open (any call, any words), so it keeps
  the fields itself; a user's act and an agent message as the NLU read it are
  played by the batch's rules on those fields (``text_game._Rules``).

Candidates
    Tool arguments are never free: they are *candidates* built from what the
    dialogue has revealed so far. A call is *grounded* when every value it needs
    (strings with a digit or an @, a calculation's numbers) was said by the user
    or returned by one of the agent's tool calls. Read candidates: the task's own
    lookups that are grounded and not yet made, then the identity / record reads
    built from what the user said (a mistyped id gives a failing lookup). Write
    candidates: the requests the user has stated (its real ones, and the decoy if
    it asked for one and has not retracted it), grounded, not yet made, in the
    order stated. What the user withholds therefore blocks every call that needs it: no identity told, no
    identity read and no write that takes its values. Phone candidates: the task's phone actions not yet done, once
    the user described its problem.

Observations (``features``)
    ``agent``: 48 floats (domain, turn and errors, identity slots and records
    revealed, candidates present and confirmed, the policy check of each write
    candidate, the user's last act). ``user``: 55 floats (domain, its card, its
    goal's shape, the agent's last act, the dialogue's progress).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from scope_envs.core.checks import MAX_EPISODE_TURNS, check_int
from scope_envs.core.game import Game, Persona, Turn
from scope_envs.core.rewards import (
    SIMULATOR_REWARDS,
    check_user_reward,
    curriculum_options,
    simulator_reward,
)
from scope_envs.core.surfaces import MAX_OBS_CHARS
from scope_envs.games.tau2 import behaviour, goal_rows, realize, text_protocol
from scope_envs.games.tau2.data import DOMAINS, load_domain
from scope_envs.games.tau2.dialogue_acts import (
    AGENT_ACTS,
    CONFIRM,
    EXECUTE,
    INSTRUCT,
    K_PHONE,
    K_READ,
    K_WRITE,
    LOOKUP,
    USER_ACTS,
    USER_INDEX,
)
from scope_envs.games.tau2.goal_rows import goal_calls
from scope_envs.games.tau2.goals import Call, goal_for
from scope_envs.games.tau2.user_state import S
from scope_envs.games.tau2.world import World

AGENT, USER = "agent", "user"
# ``zero_sum`` is v0's ``adversarial`` (minus the task reward); ``adversarial`` is now SCOPE's 1 - score.
# ``shared`` equals ``cooperative`` here (both pay the task reward, the agent's score).
USER_REWARDS = ("shared", "zero", "persona", "zero_sum", "mixed") + SIMULATOR_REWARDS
TRUNCATIONS = ("max_steps", "too_many_errors")
EYE_DOMAIN, EYE_AGENT, EYE_USER = np.eye(len(DOMAINS)), np.eye(len(AGENT_ACTS)), np.eye(len(USER_ACTS))  # one-hots
POLICY_BUDGET = 8000  # characters of policy kept at the top of the agent's observation; the full text is in infos
# act numbers of the turns replayed from a task's message history (kept as the first release recorded them)
REPLAYED_MESSAGE, REPLAYED_TOOL_CALL = 1, 2

AGENT_INSTRUCTIONS = (
    "You are a customer service agent ({domain}). Help the user according to the policy below. Each turn is either "
    "a message to the user or exactly one tool call written as JSON: {{\"name\": \"<tool>\", \"arguments\": {{...}}}}"
    " (the tools are listed in infos['tools'] in OpenAI function format). A tool result comes back to you before "
    "the user speaks again. Do not make up information or procedures not given by the user or the tools. To end "
    "the conversation yourself, include ###STOP### in a message.\n\n<policy>\n{policy}\n</policy>"
)
USER_INSTRUCTIONS = (
    "You are a customer contacting customer service ({domain}). Play the user described below; say only what "
    "your instructions give you, one message at a time, and do not invent facts. {tools}When your request is "
    "resolved, reply with ###STOP###. If you are transferred to a human agent, reply with ###TRANSFER###. If the "
    "scenario gives you no way to continue, reply with ###OUT-OF-SCOPE###.\n\n<scenario>\n{scenario}\n</scenario>"
)
USER_TOOL_NOTE = ("You can act on your phone with tool calls written as JSON {\"name\": \"<tool>\", \"arguments\": "
                  "{...}} (tools in infos['tools']); a call's result comes back to you before the agent speaks. ")


def user_rewards(mode: str, reward: np.ndarray, user_msgs: np.ndarray, inform_alls: np.ndarray,
                 disclose: np.ndarray) -> np.ndarray:
    """The user seat's reward of finished episodes (rows) under ``user_reward`` ``mode``, from each one's task
    reward (what the agent is paid), the user's messages, how many of them told everything at once and its card's
    ``disclose`` (the ``persona`` reward: the task reward less half the gap between the two shares)."""
    if mode in SIMULATOR_REWARDS:
        return np.broadcast_to(simulator_reward(mode, np.clip(reward, 0.0, 1.0)), reward.shape).astype(float)
    persona = np.where(user_msgs > 0, reward - 0.5 * np.abs(inform_alls / np.maximum(1, user_msgs) - disclose),
                       reward)
    return {"shared": reward, "zero": np.zeros(reward.shape), "persona": persona, "zero_sum": -reward,
            "mixed": 0.5 * persona - 0.5 * reward}[mode].astype(float)


def narrow_user_acts(mask: np.ndarray, identity, slip, details, insist, change_mind, question, phone,
                     transfer) -> np.ndarray:
    """Rows of the user's turn masks narrowed, in place, to the acts its goal and the dialogue allow; each flag an
    array with a row each: the goal names an identity; a slip is still possible (none yet, and the identity has a
    digit to mistype); the goal has details; a forbidden decoy was stated (something to insist on); a mind-change
    decoy not yet retracted; the goal has questions; the agent instructed a phone action; a transfer is pending."""
    for act, ok in (("inform_identity", identity), ("inform_slip", identity & slip), ("inform_details", details),
                    ("insist", insist), ("change_mind", change_mind), ("ask_question", question),
                    ("phone_action", phone), ("transfer", transfer)):
        mask[:, USER_INDEX[act]] &= ok
    return mask


def narrow_agent_acts(mask: np.ndarray, reads: np.ndarray, writes: np.ndarray, confirmed: np.ndarray,
                      phones: np.ndarray) -> np.ndarray:
    """Rows of the agent's turn masks narrowed, in place, to its candidates: an act naming candidate j is legal
    while there is one (``reads``, ``writes``, ``phones``: (rows, K) flags), and no write without the customer's
    yes to that very call (``confirmed``: (rows, K_WRITE))."""
    mask[:, LOOKUP: LOOKUP + K_READ] &= reads
    mask[:, CONFIRM: CONFIRM + K_WRITE] &= writes
    mask[:, EXECUTE: EXECUTE + K_WRITE] &= writes & confirmed
    mask[:, INSTRUCT: INSTRUCT + K_PHONE] &= phones
    return mask


def candidate_slots(candidates: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One game's ``candidates()`` as flags, a row each: read, write, phone slot j holds a candidate."""
    return tuple(np.array([[j < len(candidates[kind]) for j in range(k)]])
                 for kind, k in (("read", K_READ), ("write", K_WRITE), ("phone", K_PHONE)))


def columns(n: int, cols: list) -> np.ndarray:
    """The pieces side by side as float64 columns: a piece is (n, k), or one column ((n,), or a number)."""
    widths = [c.shape[1] if getattr(c, "ndim", 0) == 2 else 0 for c in cols]  # 0: one column
    out = np.empty((n, sum(widths) + widths.count(0)))
    j = 0
    for c, k in zip(cols, widths):
        if k:
            out[:, j: j + k] = c
            j += k
        else:
            out[:, j] = c
            j += 1
    return out


def agent_features(n: int, *, domain, steps, max_steps, tool_errors, max_tool_errors, agent_msgs, told, identified,
                   last_err, stated, details_given, asked, answered, reads, writes, confirmed, policy, phones,
                   instructed, calls, denied, transfer_pending, to_move, last_user) -> np.ndarray:
    """The agent's observation of ``n`` dialogues (the module's 48 floats; each argument an array with a row
    each): the domain, the turn and error budgets used, the identity slots told and whether a user was identified,
    the last call's error, the request, details, question and answer flags, the read / write / phone candidate
    slots filled (a write's confirmation and its policy check beside it), an instruction pending, the calls made,
    a refusal, a transfer, whose turn it is and the user's last act."""
    return columns(n, [EYE_DOMAIN[domain], steps / max_steps, tool_errors / max_tool_errors, agent_msgs / 30, told,
                       identified, last_err, stated, details_given, asked, answered, reads, writes, confirmed, policy,
                       phones, instructed, np.minimum(1.0, calls / 10), denied > 0, transfer_pending, to_move,
                       EYE_USER[last_user]]).astype(np.float32)


def user_features(n: int, *, domain, card, requests, phone_actions, has_identity, st, answered, decoy_retracted,
                  to_move, last_agent) -> np.ndarray:
    """The user's observation of ``n`` dialogues (the module's 55 floats): the domain, its card
    (``behaviour.TRAITS``), its goal's shape (requests and phone actions, counted), what it knows of the dialogue
    (``st``: rows of ``user_state.STATE``), whose turn it is and the agent's last act."""
    s = lambda *keys: st[:, [S[k] for k in keys]] if len(keys) > 1 else st[:, S[keys[0]]]  # noqa: E731
    return columns(n, [EYE_DOMAIN[domain], card, np.minimum(1.0, requests / 5), np.minimum(1.0, phone_actions / 5),
                       s("has_question", "decoy_forbidden", "decoy_mind"), has_identity, s("first_turn", "satisfied"),
                       np.minimum(1.0, s("agent_msgs") / 30),
                       s("instructed", "confirm_decoy", "confirm_real", "ask_identity", "ask_record", "slipped",
                         "stated", "details_given", "identity_given", "asked"), answered,
                       np.minimum(1.0, s("denied", "insisted") / 3), s("decoy_open"), decoy_retracted,
                       s("real_pending", "transfer_pending"), to_move, EYE_AGENT[last_agent]]).astype(np.float32)


def outcomes(reward, steps, tool_errors, violations, done, decoy_executed, slips, domain) -> dict[str, np.ndarray]:
    """The outcome metrics of episodes (rows; ``domain`` an index of ``DOMAINS``): the task reward and success
    (a reward of 1), the turns and tool errors spent, the policy violations, whether it is over, whether the decoy
    was written, the user's slips, and each domain's share and successes."""
    success = reward >= 1.0
    out = {"reward": reward.astype(float), "success": success.astype(float), "steps": steps.astype(float),
           "tool_errors": tool_errors.astype(float), "policy_violations": violations.astype(float),
           "done": done.astype(float), "decoy_executed": decoy_executed.astype(float), "slips": slips.astype(float)}
    for j, d in enumerate(DOMAINS[:3]):
        out[d] = (domain == j).astype(float)
        out[f"{d}_success"] = ((domain == j) & success).astype(float)
    return out


def scenario(domain: str, task_id: str, card: Persona, split: str) -> Persona:
    """The scenario of ``task_id`` in ``domain`` played with behaviour ``card`` (``sample_persona``'s draw)."""
    return Persona(scenario_id(domain, task_id, card.id), split, dict(card.traits),
                   {"domain": domain, "task_id": task_id, "card": card.id})


def scenario_id(domain: str, task_id: str, card_id: str) -> str:
    """A scenario's id: its task's, then its card's (last, so ``Tau2Game.scenario_ids`` can join the two)."""
    return f"{domain}/{task_id}|{card_id}"


@dataclass
class Tau2Turn(Turn):
    """A turn; a tool call keeps its ``call`` and its ``result`` (the tool message the caller saw)."""

    call: dict | None = None
    result: str | None = None
    error: bool = False

    @classmethod
    def of_call(cls, role: str, act: int, name: str, arguments, result: str, error: bool) -> Tau2Turn:
        """The turn of a call that the game made (not written by a text player): its JSON text, the call, the
        result."""
        return cls(role, act, text_protocol.call_text(name, arguments), {"name": name, "arguments": arguments},
                   result, error)


def scenario_text(task: dict) -> str:
    """The user's card from a task's ``user_scenario`` (persona and instructions), as readable text."""
    sc = task.get("user_scenario") or {}
    parts = []
    if sc.get("persona"):
        parts.append(f"Persona: {sc['persona'].strip()}")
    ins = sc.get("instructions")
    if isinstance(ins, dict):
        for key, label in (("reason_for_call", "Reason for call"), ("known_info", "Known info"),
                           ("unknown_info", "Unknown info"), ("task_instructions", "Task instructions")):
            if ins.get(key):
                parts.append(f"{label}: {str(ins[key]).strip()}")
    elif ins:
        parts.append(f"Instructions: {str(ins).strip()}")
    return "\n".join(parts)


class Tau2Game(Game):
    """The episode both surfaces share; ``act_game.Tau2ActGame`` and ``text_game.Tau2TextGame`` add the protocol
    of the roles' turns (``acts``, ``apply``, ``understand``, ``realize``) and write the dialogue state."""

    name = "tau2"
    agent_role = AGENT
    user_role = USER
    success_metric = "success"  # the tau^2 reward is 1 (pass^1)
    success_label = "task success rate (tau^2 reward 1)"

    def __init__(self, domains: Sequence[str] = ("airline", "retail", "telecom"), data_dir=None,
                 max_steps: int = 100, max_tool_errors: int = 10, judge: Callable | None = None,
                 user_reward: str = "shared", target_var: float | None = None, width: float | None = None):
        check_user_reward(user_reward, USER_REWARDS)
        target_var, width = curriculum_options(user_reward, target_var, width)
        super().__init__()
        given = domains
        try:
            domains = (domains,) if isinstance(domains, str) else tuple(domains)
        except TypeError:  # not a name nor a sequence of names (an int, None, ...): refused below
            domains = ()
        if not domains or any(d not in DOMAINS for d in domains):
            raise ValueError(f"domain must be a tau2 domain name or a sequence of names from {DOMAINS}, "
                             f"got {given!r}")
        check_int("max_steps", max_steps, 2, MAX_EPISODE_TURNS)
        check_int("max_tool_errors", max_tool_errors, 1)
        if judge is not None and not callable(judge):
            raise ValueError("judge must be a callable judge(assertions, messages) -> list[bool]")
        self.domains = domains
        self.data = {d: load_domain(d, None if data_dir is None else str(data_dir)) for d in domains}
        for d, data in self.data.items():
            if not data.tasks:
                raise ValueError(f"tau2 {d}: the task file in {data.root} holds no tasks")
        self.max_steps = self.max_turns = max_steps
        self.max_tool_errors = max_tool_errors
        self.judge = judge
        self.user_reward = user_reward
        self.target_var, self.width = target_var, width
        self._scenario_ids: dict[str, tuple] = {}  # ``scenario_ids``' tables, per split
        first = self.data[domains[0]]
        self.reset(Persona(f"{domains[0]}/{first.tasks[0]['id']}", "train", {},
                           {"domain": domains[0], "task_id": first.tasks[0]["id"]}), np.random.default_rng(0))

    # ------------------------------------------------------------ scenario
    def sample_persona(self, rng, split):
        """A task: the domain uniformly, then a task of its ``train`` (or, for ``heldout``, ``test``) split; and a
        behaviour card of the same split."""
        return self.scenario_at(split, *self.sample_scenario_index(rng, split))

    def sample_scenario_index(self, rng, split) -> tuple[int, int, int]:
        """``sample_persona``'s draws: the scenario it deals as ``scenario_at``'s indices."""
        domain = int(rng.integers(len(self.domains)))
        task = int(rng.integers(len(self._split_ids(self.domains[domain], split))))
        return domain, task, int(rng.integers(behaviour.SPLIT_SIZES[behaviour.card_split(split)]))

    def sample_scenarios(self, rng, split, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``k`` draws of ``sample_persona``'s distribution at once (the batched engine's dealing; not the same
        draws), as indices: each scenario's domain (into ``domains``), task (into the domain's tasks of the split)
        and behaviour card (``behaviour.card(card_split(split), index)``); the scenario itself is
        ``scenario_at``."""
        ids = [self._tasks(d, split) for d in self.domains]
        domain = rng.integers(len(ids), size=k)
        for d in np.unique(domain).tolist():
            self._split_ids(self.domains[d], split)  # (a domain without tasks in the split raises once drawn)
        task = rng.integers(np.array([max(1, len(t)) for t in ids])[domain])
        cards = rng.integers(behaviour.SPLIT_SIZES[behaviour.card_split(split)], size=k)
        return domain, task, cards

    def scenario_at(self, split: str, domain: int, task: int, card: int) -> Persona:
        """The scenario that ``sample_scenarios`` names by indices."""
        d = self.domains[domain]
        return scenario(d, self._tasks(d, split)[task], behaviour.card(behaviour.card_split(split), card), split)

    def scenario_ids(self, split: str, domain: np.ndarray, task: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """The ids of the scenarios ``scenario_at`` would give, as an object array, without building them (the
        fast engine deals hundreds a step and builds a scenario only where one is read)."""
        tables = self._scenario_ids.get(split)
        if tables is None:
            side = behaviour.card_split(split)
            ids = [self._tasks(d, split) for d in self.domains]
            prefix = np.full((len(ids), max(1, *map(len, ids))), "", object)
            for j, d in enumerate(self.domains):
                prefix[j, : len(ids[j])] = [scenario_id(d, t, "") for t in ids[j]]
            cards_ = np.array([behaviour.card(side, c).id for c in range(behaviour.SPLIT_SIZES[side])], object)
            tables = self._scenario_ids[split] = (prefix, cards_)
        prefix, card_ids = tables
        return prefix[domain, task] + card_ids[cards]

    def _tasks(self, domain: str, split: str) -> tuple[str, ...]:
        """The task ids a scenario split draws from in ``domain``: ``test``'s for ``heldout``, else ``train``'s."""
        return self.data[domain].split_tuple("test" if split == "heldout" else "train")

    def _split_ids(self, domain: str, split: str) -> tuple[str, ...]:
        """``_tasks``, or a ``ValueError`` when there are none."""
        ids = self._tasks(domain, split)
        if not ids:
            raise ValueError(f"tau2 {domain}: no tasks in the {'test' if split == 'heldout' else 'train'} split")
        return ids

    def reset(self, persona: Persona, rng: np.random.Generator) -> None:
        domain = persona.attributes.get("domain")
        if domain not in self.data:
            raise ValueError(f"tau2: persona {persona.id!r} names domain {domain!r}, not one of {self.domains}")
        self.persona = persona
        self.domain = domain
        self._instructions: dict[str, str] = {}  # role -> its instructions for this episode's task
        self.task = self.data[domain].task(persona.attributes["task_id"])
        self.world = World.for_episode(self.data[domain], self.task)
        self.history: list[Tau2Turn] = []
        self.steps = 0
        self.tool_errors = 0
        self.termination: str | None = None
        self.reward_info: dict | None = None
        self._next = AGENT
        for msg in self.world.initial_messages:  # a task may start mid-conversation
            self._replay_message(msg)
        self.goal = goal_for(self.data[self.domain], self.task)
        self.goal_calls = goal_calls(self.goal, self.world.module.TOOLS)
        self.traits = persona.traits if persona.traits else dict(behaviour.default_card().traits)
        self.episode_seed = int(rng.integers(2**31))
        # the dialogue state's fields, which the users' views, the words and scripted agents read (the act game
        # reads them back from its batch; the text game writes them)
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
        self._called_memo = (0, np.uint64(0))  # (size of ``done``, ``_called()``)

    def _replay_message(self, msg: dict) -> None:
        role = {"assistant": AGENT, "user": USER}.get(msg.get("role"))
        if role is None:
            return  # tool messages: their results were recomputed by World.for_task
        calls = msg.get("tool_calls") or []
        if calls:
            done = [c for c in self.world.calls if c.name in {tc["name"] for tc in calls}]
            for tc in calls:
                res = next((c for c in done if c.name == tc["name"]), None)
                self.history.append(Tau2Turn.of_call(role, REPLAYED_TOOL_CALL, tc["name"], tc.get("arguments") or {},
                                                     res.content if res else "", bool(res and res.error)))
                self.steps += 2
        elif msg.get("content"):
            self.history.append(Tau2Turn(role, REPLAYED_MESSAGE, msg["content"]))
            self.steps += 1
            self._next = USER if role == AGENT else AGENT

    def _check_turn(self, role: str) -> None:
        """A ``ValueError`` unless the episode goes on and it is ``role``'s turn (either surface's ``apply``)."""
        if self.termination is not None:
            raise ValueError("tau2: the episode is over")
        if role != self._next:
            raise ValueError(f"tau2: it is the {self._next}'s turn, not the {role}'s")

    # ------------------------------------------------------------ the dialogue state
    def _identity_values(self) -> dict[str, dict]:
        return {slot: self.goal.told_values(slot, how) for slot, how in self.told.items()}

    def _called(self) -> np.uint64:
        """The goal's calls made, as ``GoalCalls`` bits (``done`` only grows: kept while its size stands)."""
        memo = self._called_memo
        if memo[0] != len(self.done):
            memo = self._called_memo = (len(self.done), np.uint64(self.goal_calls.called(self.done)))
        return memo[1]

    def _real_pending(self) -> bool:
        return bool(goal_rows.requests_pending(np.uint64(self.goal_calls.request_bits), self._called()))

    def satisfied(self) -> bool:
        gc = self.goal_calls
        return bool(goal_rows.satisfied(
            np.bool_(gc.needs_none), np.uint64(gc.request_bits), np.uint64(gc.phone_bits), np.bool_(gc.has_questions),
            np.bool_(gc.forbidden), called=self._called(), stated=np.bool_(self.stated), denied=self.denied,
            answered=np.bool_(self.answered)))

    # ------------------------------------------------------------ protocol
    def active_role(self):
        return None if self.termination is not None else self._next

    def truncated(self) -> bool:
        return self.termination in TRUNCATIONS

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

    def private(self, role):
        if role == USER:
            return {"domain": self.domain, "task_id": self.task["id"],
                    "user_scenario": self.task.get("user_scenario") or {},
                    "goal": self.goal, "state": self.user_state()}
        return {"domain": self.domain}

    # ------------------------------------------------------------ text
    def user_text(self, act: int, rng: np.random.Generator | None = None) -> str:
        return realize.user(self, act, rng)

    def instructions(self, role):
        # asked at every simulator turn (its view) and fixed for the episode: formatted once per episode and role
        text = self._instructions.get(role)
        if text is None:
            data = self.data[self.domain]
            if role == AGENT:
                text = AGENT_INSTRUCTIONS.format(domain=self.domain, policy=data.policy)
            else:
                tools = USER_TOOL_NOTE if self.world.module.USER_TOOLS else ""
                text = USER_INSTRUCTIONS.format(domain=self.domain, tools=tools, scenario=scenario_text(self.task))
            self._instructions[role] = text
        return text

    def info(self):
        return {"domain": self.domain, "steps": self.steps}

    def _sees(self, turn: Tau2Turn, role: str) -> bool:
        # tool calls stay with their caller: the agent never sees the user's phone, nor the user the agent's tools
        return turn.call is None or turn.role == role

    def chat(self, role: str) -> list[dict]:
        """The role's chat-format messages (OpenAI style, tool calls and tool messages included)."""
        msgs = [{"role": "system", "content": self.instructions(role)}]
        for i, t in enumerate(self.history):
            if not self._sees(t, role):
                continue
            if t.call is not None:
                cid = f"call_{i}"
                msgs.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": cid, "type": "function", "function": {
                        "name": t.call["name"], "arguments": json.dumps(t.call["arguments"])}}]})
                msgs.append({"role": "tool", "tool_call_id": cid, "content": t.result})
            else:
                msgs.append({"role": "assistant" if t.role == role else "user", "content": t.text})
        return msgs

    def transcript(self, role: str) -> str:
        other = "User" if role == AGENT else "Agent"
        lines = []
        for t in self.history:
            if not self._sees(t, role):
                continue
            if t.call is not None:
                lines.append(f"You (tool call): {t.text}")
                lines.append(f"Tool{' error' if t.error else ''}: {t.result}")
            else:
                lines.append(f"{'You' if t.role == role else other}: {t.text}")
        body = "\n".join(lines)
        if role == AGENT:
            policy = self.data[self.domain].policy
            if len(policy) > POLICY_BUDGET:
                policy = policy[:POLICY_BUDGET] + "\n[... policy continues: full text in infos['messages'][0]]"
            head = f"[policy]\n{policy}\n[conversation]\n"
        else:
            head = f"[your scenario]\n{scenario_text(self.task)}\n[conversation]\n"
        room = MAX_OBS_CHARS - len(head) - 1024  # leaves room for the surface's [error] lines
        return head + (body if len(body) <= room else body[-room:])  # the head stays, the oldest turns go

    def text_infos(self, role: str) -> dict:
        requestor = "assistant" if role == AGENT else "user"
        info = {"messages": self.chat(role), "tools": [t.schema for t in self.world.tools(requestor).values()],
                "domain": self.domain, "task_id": self.task["id"], "termination": self.termination or ""}
        if role == AGENT:
            info["policy_violations"] = list(self.world.violations)
        if self.reward_info is not None:
            info["reward_info"] = self.reward_info
        return info
