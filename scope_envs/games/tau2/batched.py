"""tau^2-bench's act game for N episodes at once, as arrays: the one definition of its rules, played by the act
game (``act_game.Tau2ActGame``, a batch of one) and the vec engine (``scope_envs.vec.games.Tau2VecEnv``).

``Tau2Batch`` holds every slot's dialogue state as arrays (the calls made, what was revealed, the confirmations
as bits; the counters and flags as numbers) over its task compiled into tables (``compiled.py``). Every act's
effect, the candidates (``goal_rows.candidates``), the legal masks, the features and the users' state are numpy
over the slots; what a table cannot say (a tool call's answer, the policy check of a write, the evaluation) the
compiled task asks the world once per state and keeps. In the vec engine each slot keeps its own
``Tau2ActGame`` as its configuration: ``game(i)`` brings it to the slot's state by replaying the slot's acts (the
views of users asked slot by slot read its transcript). ``tests/test_vec_tau2.py`` holds the engine to the scalar
envs bit for bit on every regime, the panel and the real tau^2-bench tasks.

The built-in users reply through the same array rules as a scalar user, for all slots at once
(``user_states``): ``reference_reply`` is ``behaviour.reference_policy`` (the collapsed user, the rotation members
and the panel's families: each slot's card, or its simulator's style card, moved toward the modal card by its
cooperation), ``human_proxy_reply`` is ``human_proxy.proxy_policy`` at its default assumptions.
"""

from __future__ import annotations

import functools

import numpy as np

from scope_envs.core.game import Drawn
from scope_envs.games.tau2 import goal_rows, human_proxy
from scope_envs.games.tau2.behaviour import TRAITS as CARD_TRAITS
from scope_envs.games.tau2.behaviour import SPLIT_SIZES, card, default_card, reference_policy
from scope_envs.games.tau2.compiled import TASKS
from scope_envs.games.tau2.dialogue_acts import (
    AGENT_ACTS,
    AGENT_INDEX,
    CONFIRM,
    EXECUTE,
    IDENTITY_SLOTS,
    INSTRUCT,
    K_PHONE,
    K_READ,
    K_WRITE,
    LOOKUP,
    REQUEST,
    REQUEST_SLOTS,
    USER_ACTS,
    USER_INDEX,
)
from scope_envs.games.tau2.game import (
    AGENT,
    USER,
    Tau2Game,
    agent_features,
    columns,
    narrow_agent_acts,
    narrow_user_acts,
    outcomes,
    user_features,
    user_rewards,
)
from scope_envs.games.tau2.goal_rows import BITS, bit, told_items
from scope_envs.games.tau2.human_proxy import proxy_policy
from scope_envs.games.tau2.user_state import TRAITS, state_fields

N_AGENT = len(AGENT_ACTS)
A = AGENT_INDEX
ENDS = (None, "agent_stop", "user_stop", "max_steps", "too_many_errors")  # ``termination`` codes
TARGETS = (None, "decoy", "real")  # ``target``: what the agent asked the user to confirm

ROLES = (AGENT, USER)
N_USER = len(USER_ACTS)
U = USER_INDEX


def card_rows(personas) -> tuple[np.ndarray, list]:
    """The scenarios' behaviour cards as rows of ``behaviour.TRAITS`` (a missing trait 0; no traits: the modal
    card's), and the ``disclose`` of each (missing: 1) that the ``persona`` user reward reads."""
    rows, disclose = [], []
    for persona in personas:
        traits = persona.traits or default_card().traits
        rows.append([traits.get(name, 0.0) for name in CARD_TRAITS])
        disclose.append(traits.get("disclose", 1.0))
    return np.array(rows).reshape(len(rows), len(CARD_TRAITS)), disclose


@functools.lru_cache(maxsize=4)
def card_table(split: str) -> np.ndarray:
    """``card_rows`` of every behaviour card of ``split`` (row ``i``: ``behaviour.card(split, i)``), read-only."""
    table = card_rows([card(split, i) for i in range(SPLIT_SIZES[split])])[0]
    table.flags.writeable = False
    return table


def _popcount(x: np.ndarray) -> np.ndarray:
    """The bits set in each entry (numpy >= 2 counts them in C; numpy 1.x, which the requirements allow, in
    Python)."""
    return np.bitwise_count(x) if hasattr(np, "bitwise_count") else \
        np.array([bin(v).count("1") for v in x.tolist()], np.int64)


class Tau2Batch:
    """N tau2 act games as arrays (see the module); roles are 0 (agent) and 1 (user)."""

    roles = ROLES
    n_acts = (N_AGENT, N_USER)
    # a task may open mid-conversation with the user to speak (``Tau2Game._replay_message``); after a user turn
    # the agent always moves next (or the episode is over)
    user_opens, user_replies_once = True, True

    def __init__(self, games: list):
        self.games = list(games)
        n = self.n = len(self.games)
        first = self.games[0]
        self.max_steps, self.max_tool_errors = first.max_steps, first.max_tool_errors
        self.user_reward = first.user_reward
        self.feature_max = max(1.0, self.max_steps / 30)
        self.tasks = TASKS
        self._noop = [np.eye(k, dtype=bool)[0] for k in self.n_acts]
        self.traits = np.zeros((n, len(TRAITS)))  # the reply models' traits (the vec env sets them as it deals)
        self.seat = np.full(n, -1, np.int64)
        self.track_proxy = False
        z = lambda dtype=np.int64: np.zeros(n, dtype)  # noqa: E731
        self.task, self.length, self.done = z(), z(), z(bool)
        self.cut = z(bool)  # whether the slot's last finished episode was truncated (steps, tool errors)
        self.steps, self.tool_errors, self.agent_msgs, self.user_msgs = z(), z(), z(), z()
        self.denied, self.insisted, self.inform_alls, self.slips = z(), z(), z(), z()
        self.next, self.end = z(), z()  # 0 agent, 1 user; ``ENDS`` code
        self.made = np.full(n, -1, np.int64)  # the call each slot's last act made (-1: none)
        self.called, self.revealed_bits, self.confirmed = z(np.uint64), z(np.uint64), z(np.uint64)
        # the sentences said, and what the evaluation reads: the gold actions met, the required strings said
        self.said, self.gold, self.comm = z(np.uint64), z(np.uint64), z(np.uint64)
        self.stated, self.details_given, self.asked, self.answered = z(bool), z(bool), z(bool), z(bool)
        self.decoy_stated, self.decoy_retracted, self.transfer_pending = z(bool), z(bool), z(bool)
        self.decoy_executed, self.last_err, self.ident_any = z(bool), z(bool), z(bool)
        self.reward = np.zeros(n)  # the task reward, once over
        self.instructed, self.confirming = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        self.asked_slot, self.target = z(), z()
        self.told = np.zeros((n, len(IDENTITY_SLOTS)), np.int64)  # 0, or 1 + HOWS index
        self.told_order = np.full((n, len(IDENTITY_SLOTS)), -1, np.int64)  # the slots in the order first told
        self.n_told = z()
        self.trail, self.ident, self.violations = z(), z(), z()
        self.last = np.zeros((n, 2), np.int64)
        self.episode_seed = z()
        self.disclose = np.ones(n)
        self.card = np.zeros((n, len(CARD_TRAITS)))
        self.revealed = np.full(n, " ", object)
        # each slot's scenario, or None where it was dealt by indices (``drawn_split``, and ``drawn``: its domain,
        # task and card, as ``Tau2Game.scenario_at`` takes them), built when the slot's scalar game is asked for
        self.persona = np.full(n, None, object)
        self.drawn, self.drawn_split = np.zeros((n, 3), np.int64), np.full(n, None, object)
        # each slot's acts this episode (``game(i)`` replays them on the slot's scalar game)
        self.log = np.zeros((n, 2 * self.max_steps + 8, 2), np.int64)
        self.log_n = z()
        self._synced = np.full(n, -1, np.int64)  # acts replayed on the slot's scalar game; -1: not reset
        # what a new episode starts at zero (or False)
        self._zeroed = [getattr(self, name) for name in (
            "tool_errors", "agent_msgs", "user_msgs", "denied", "insisted", "inform_alls", "slips", "end", "called",
            "revealed_bits", "confirmed", "said", "stated", "details_given", "asked", "answered", "decoy_stated",
            "decoy_retracted", "transfer_pending", "decoy_executed", "asked_slot", "target", "n_told", "trail",
            "ident", "log_n")]
        self._stale = np.ones(n, bool)  # the slots whose candidates must be recomputed
        self._reads = np.full((n, K_READ), -1, np.int64)
        self._writes = np.full((n, K_WRITE), -1, np.int64)
        self._phones = np.full((n, K_PHONE), -1, np.int64)
        self._pending: list[tuple] = []

    # -- episodes ------------------------------------------------------------------------------------------
    def begin(self, i: int, persona, seed: int) -> None:
        """Slot ``i``'s new episode on ``persona``'s task with episode seed ``seed`` (drawn by the caller from the
        generator the scalar game's ``reset`` draws it from); it starts at the next ``reset``."""
        self._pending.append((i, persona, seed))

    def reset(self, idx: np.ndarray, cards=None) -> None:
        """Start the episodes ``begin`` was given (the vec env calls it once it dealt slots ``idx``)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        slots, personas, seeds = zip(*pending)
        self.start(np.array(slots, np.int64), personas, seeds, *card_rows(personas))

    def start(self, i: np.ndarray, personas, seeds, cards: np.ndarray, disclose, rows=None) -> None:
        """New episodes in slots ``i`` at once: their scenarios, episode seeds, behaviour cards (the
        ``behaviour.TRAITS`` of each, a row per slot) and the ``disclose`` the user reward reads; ``rows``: the
        scenarios' task rows in ``tasks``, when the caller knows them (else looked up slot by slot)."""
        t = self.tasks
        if rows is None:
            games = self.games
            rows = [t.row_for(games[k], p, seed) for k, p, seed in zip(i.tolist(), personas, seeds)]
        r = np.asarray(rows, np.int64)
        self.persona[i] = personas
        self.revealed[i] = " "
        self.disclose[i] = disclose
        self.task[i], self.episode_seed[i] = r, seeds
        self.steps[i], self.length[i], self.next[i] = t.steps0[r], t.length0[r], t.next0[r]
        self.last_err[i], self.violations[i] = t.last_err0[r], t.violations0[r]
        self.gold[i], self.comm[i], self.ident_any[i] = t.gold0[r], t.comm0[r], t.ident_any0[r]
        for a in self._zeroed:
            a[i] = 0
        self.instructed[i] = self.confirming[i] = -1
        self.told[i], self.told_order[i], self.last[i] = 0, -1, 0
        self.card[i] = cards
        # (``cut`` stays: it is the last finished episode's, read after the slot restarted in the same step)
        self.done[i], self.reward[i], self._synced[i], self._stale[i] = False, 0.0, -1, True

    def game(self, i: int) -> Tau2Game:
        """Slot ``i``'s scalar game brought to the slot's state (its acts replayed; kept in step from then on)."""
        game = self.games[i]
        if self._synced[i] < 0:
            if self.persona[i] is None:
                self.persona[i] = game.scenario_at(self.drawn_split[i], *self.drawn[i].tolist())
            game.reset(self.persona[i], Drawn(int(self.episode_seed[i])))
            self._synced[i] = 0
        for role, act in self.log[i, self._synced[i]: self.log_n[i]].tolist():
            game.apply(self.roles[role], act, "")
        self._synced[i] = self.log_n[i]
        return game

    def active(self) -> np.ndarray:
        return np.where(self.done, -1, self.next)

    # -- the candidates --------------------------------------------------------------------------------------
    def candidates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every slot's read, write and phone candidates as call indices, (N, K) each, -1 past the last
        (``goal_rows.candidates``); read them, never write them. Recomputed only in the slots where something they
        depend on changed (``_stale``: a call, a tell, the details, a request stated or retracted, a new
        episode)."""
        rows = np.flatnonzero(self._stale)
        if len(rows):
            self._stale[rows] = False
            reads, writes, phones = self._candidates(rows)
            self._reads[rows], self._writes[rows], self._phones[rows] = reads, writes, phones
        return self._reads, self._writes, self._phones

    def _candidates(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t, r, w = self.tasks, self.task[rows], self.tasks.width
        if len(rows) == 1:  # one state: its task's kept answer (a row of one pays numpy's cost per call)
            i = int(rows[0])
            got = t.tables[r[0]].goal_calls.candidates(
                int(self.called[i]), int(self.revealed_bits[i]), told_items(self.told[i], self.told_order[i]),
                bool(self.details_given[i]), bool(self.stated[i]),
                bool(self.decoy_stated[i] and not self.decoy_retracted[i]))
            return tuple(np.array([[*c, *(-1,) * (k - len(c))]], np.int64)
                         for c, k in zip(got, (K_READ, K_WRITE, K_PHONE)))
        return goal_rows.candidates(
            t.lookups[r, : w["lookups"]], t.identity_reads[r], t.records[r, : w["records"]],
            t.requests[r, : w["requests"]], t.decoy[r], t.phones[r, : w["phones"]], t.need[r],
            called=self.called[rows], revealed=self.revealed_bits[rows], told=self.told[rows],
            told_order=self.told_order[rows], details_given=self.details_given[rows], stated=self.stated[rows],
            decoy_open=self.decoy_stated[rows] & ~self.decoy_retracted[rows], k_read=K_READ, k_write=K_WRITE,
            k_phone=K_PHONE)

    # -- what the roles see --------------------------------------------------------------------------------
    def legal(self, role: int, active: np.ndarray) -> np.ndarray:
        """Each slot's legal acts of ``role`` (``narrow_agent_acts``, ``narrow_user_acts``); the no-op only where
        ``role`` is not to move."""
        on = active == role
        out = np.tile(self._noop[role], (self.n, 1))
        if not on.any():
            return out
        out[on] = ~self._noop[role]
        t, r = self.tasks, self.task
        if role == 0:
            reads, writes, phones = self.candidates()
            return narrow_agent_acts(out, reads >= 0, writes >= 0, (self.confirmed[:, None] & bit(writes)) != 0,
                                     phones >= 0)
        kind = t.decoy_kind[r]
        return narrow_user_acts(out, t.has_identity[r], (self.slips == 0) & t.slippable[r], t.has_details[r],
                                (kind == 1) & self.decoy_stated, (kind == 2) & ~self.decoy_retracted,
                                t.has_questions[r], self.instructed >= 0, self.transfer_pending)

    def _satisfied(self) -> np.ndarray:
        """Whether each slot's user goal is met (``goal_rows.satisfied``)."""
        t, r = self.tasks, self.task
        return goal_rows.satisfied(t.needs_none[r], t.request_bits[r], t.phone_bits[r], t.has_questions[r],
                                   t.decoy_kind[r] == 1, called=self.called, stated=self.stated, denied=self.denied,
                                   answered=self.answered)

    def _real_pending(self) -> np.ndarray:
        return goal_rows.requests_pending(self.tasks.request_bits[self.task], self.called)

    def features(self, role: int) -> np.ndarray:
        """Every slot's features of ``role`` (``agent_features``, ``user_features``)."""
        t, r, n = self.tasks, self.task, self.n
        if role == 0:
            reads, writes, phones = self.candidates()
            pol = np.zeros((n, K_WRITE))
            i, j = np.nonzero(writes >= 0)
            if len(i):
                pol[i, j] = t.policy_flags(r[i], self.trail[i], self.ident[i], writes[i, j])
            return agent_features(
                n, domain=t.domain[r], steps=self.steps, max_steps=self.max_steps, tool_errors=self.tool_errors,
                max_tool_errors=self.max_tool_errors, agent_msgs=self.agent_msgs, told=self.told > 0,
                identified=self.ident_any, last_err=self.last_err, stated=self.stated,
                details_given=self.details_given, asked=self.asked, answered=self.answered, reads=reads >= 0,
                writes=writes >= 0, confirmed=(self.confirmed[:, None] & bit(writes)) != 0, policy=pol,
                phones=phones >= 0, instructed=self.instructed >= 0, calls=_popcount(self.called),
                denied=self.denied, transfer_pending=self.transfer_pending, to_move=self.next == 0,
                last_user=self.last[:, 1])
        return user_features(
            n, domain=t.domain[r], card=self.card, requests=t.n_requests[r], phone_actions=t.n_phones[r],
            has_identity=t.has_identity[r], st=self.user_states(np.arange(n)), answered=self.answered,
            decoy_retracted=self.decoy_retracted, to_move=self.next == 1, last_agent=self.last[:, 0])

    def user_states(self, idx: np.ndarray) -> np.ndarray:
        """``user_state.state_row`` of slots ``idx``, (rows, ``user_state.STATE``)."""
        t, r = self.tasks, self.task[idx]
        slot = self.asked_slot[idx]
        kind = t.decoy_kind[r]
        cols = state_fields({
            "transfer_pending": self.transfer_pending[idx], "first_turn": self.user_msgs[idx] == 0,
            "satisfied": self._satisfied()[idx], "agent_msgs": self.agent_msgs[idx],
            "instructed": self.instructed[idx] >= 0, "confirm_decoy": self.target[idx] == 1,
            "confirm_real": self.target[idx] == 2, "decoy_mind": kind == 2, "decoy_forbidden": kind == 1,
            "ask_identity": (slot >= 1) & (slot <= len(IDENTITY_SLOTS)), "ask_record": slot > len(IDENTITY_SLOTS),
            "slipped": self.slips[idx] > 0, "stated": self.stated[idx], "details_given": self.details_given[idx],
            "identity_given": self.n_told[idx] > 0, "asked": self.asked[idx], "has_question": t.has_questions[r],
            "denied": self.denied[idx], "insisted": self.insisted[idx],
            "decoy_open": self.decoy_stated[idx] & ~self.decoy_retracted[idx],
            "real_pending": self._real_pending()[idx], "tool_errors": self.tool_errors[idx]})
        return columns(len(idx), cols)

    def reference_reply(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        return reference_policy(self.traits[idx], self.user_states(idx), legal)

    def human_proxy_reply(self, idx: np.ndarray, legal: np.ndarray) -> np.ndarray:
        t = self.traits[idx]
        return proxy_policy(t, self.user_states(idx), human_proxy.coins(self.episode_seed[idx], t), legal)

    # -- the turns -----------------------------------------------------------------------------------------
    def _calls(self, idx: np.ndarray, us: np.ndarray) -> None:
        """Slots ``idx`` make calls ``us``: their answers, the turns, the counters and what the agent's calls
        revealed."""
        if not len(idx):
            return
        tasks, r = self.tasks, self.task[idx]
        trail, ident = self.trail[idx], self.ident[idx]
        got = tasks.answers(r, trail, ident, us)
        error = got[:, 0].astype(bool)
        self.length[idx] += 1
        self.steps[idx] += 2
        self.tool_errors[idx] += error
        self.called[idx] |= BITS[us]
        self.made[idx] = us
        self._stale[idx] = True
        self.gold[idx] |= tasks.gold_of[r, us]
        self.last_err[idx] = error
        self.ident[idx], self.trail[idx], self.ident_any[idx] = got[:, 1], got[:, 3], got[:, 5].astype(bool)
        self.violations[idx] += got[:, 2].astype(np.int64)
        mine = tasks.assistant[r, us]  # the agent's calls reveal their results; the user's phone ones do not
        if mine.any():
            j = np.flatnonzero(mine)

            def text(k):  # the text itself only where a token may run across a join (``_reveal``): asked again
                row = j[k]
                return tasks.tables[r[row]].answer(int(trail[row]), int(ident[row]), int(us[row]))[0]

            self._reveal(idx[j], got[j, 4], text)

    def _reveal(self, idx: np.ndarray, inside: np.ndarray, pieces) -> None:
        """What slots ``idx`` revealed gains ``pieces`` (each joined with a space, as the text game's ``revealed``
        grows): the tokens ``inside`` each; a token with a space may also run across the join, so on the tasks that
        have one (``Tasks.tails``) the text is kept and the join searched as the text game searches it.
        ``pieces``: a list, or a function of the row giving its piece."""
        self.revealed_bits[idx] |= inside
        self._stale[idx] = True
        tails = self.tasks.tails[self.task[idx]]
        for j in np.flatnonzero(tails).tolist():
            i = int(idx[j])
            tab = self.tasks.tables[self.task[i]]
            piece = pieces(j) if callable(pieces) else pieces[j]
            before = self.revealed[i]
            self.revealed_bits[i] |= np.uint64(tab.reveal(before[len(before) - tab.longest + 1:], piece))
            self.revealed[i] = before + " " + piece

    def _tell(self, idx: np.ndarray, slots: np.ndarray, how: np.ndarray) -> None:
        """Slots ``idx`` tell identity slot ``slots`` (``how``: 1 as it is, 2 mistyped)."""
        new = self.told[idx, slots] == 0
        fresh = idx[new]
        self.told_order[fresh, self.n_told[fresh]] = slots[new]
        self.n_told[fresh] += 1
        self.told[idx, slots] = how
        r = self.task[idx]
        tables = self.tasks.tables
        self._reveal(idx, self.tasks.told_bits[r, slots, how - 1],
                     lambda j: tables[r[j]].told_piece[slots[j]][how[j] - 1])

    def _details(self, idx: np.ndarray) -> None:
        self.details_given[idx] = True
        r = self.task[idx]
        tables = self.tasks.tables
        self._reveal(idx, self.tasks.details_bits[r], lambda j: tables[r[j]].details_piece)

    def apply(self, role: int, idx: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Play ``acts`` (legal, checked by the caller) in slots ``idx``; returns the slots that finished."""
        pos = self.log_n[idx]
        self.log[idx, pos, 0], self.log[idx, pos, 1] = role, acts
        self.log_n[idx] += 1
        self.made[idx] = -1
        (self._agent if role == 0 else self._user)(idx, acts)
        live = idx[self.end[idx] == 0]
        self.end[live[self.tool_errors[live] >= self.max_tool_errors]] = ENDS.index("too_many_errors")
        live = live[self.end[live] == 0]
        self.end[live[self.steps[live] >= self.max_steps]] = ENDS.index("max_steps")
        ended = idx[self.end[idx] != 0]
        if len(ended):
            self.done[ended] = True
            self.cut[ended] = self.end[ended] >= ENDS.index("max_steps")
            i = ended[self.end[ended] <= ENDS.index("user_stop")]  # truncated episodes score 0
            if len(i):
                self.reward[i] = self.tasks.rewards(self.task[i], self.trail[i], self.gold[i], self.comm[i],
                                                    self.called[i], self.said[i])
        return ended

    def _agent(self, idx: np.ndarray, acts: np.ndarray) -> None:
        reads, writes, phones = (c[idx] for c in self.candidates())
        t, r = self.tasks, self.task[idx]
        self.last[idx, 0] = acts
        self.asked_slot[idx] = 0
        self.target[idx] = 0
        lookup = (acts >= LOOKUP) & (acts < LOOKUP + K_READ)
        execute = (acts >= EXECUTE) & (acts < EXECUTE + K_WRITE)
        if lookup.any():
            self._calls(idx[lookup], reads[lookup, acts[lookup] - LOOKUP])
        if execute.any():
            u = writes[execute, acts[execute] - EXECUTE]
            self.decoy_executed[idx[execute]] |= u == t.decoy[r[execute]]
            self._calls(idx[execute], u)
        say = ~(lookup | execute)
        if not say.any():
            return
        idx, acts, r, writes, phones = idx[say], acts[say], r[say], writes[say], phones[say]
        confirm = (acts >= CONFIRM) & (acts < CONFIRM + K_WRITE)
        instruct = (acts >= INSTRUCT) & (acts < INSTRUCT + K_PHONE)
        targets = np.full(len(idx), -1, np.int64)  # the call a confirmation or an instruction names: its candidate
        targets[confirm] = writes[confirm, acts[confirm] - CONFIRM]
        targets[instruct] = phones[instruct, acts[instruct] - INSTRUCT]
        self._message(idx, acts, targets)
        answer = acts == A["answer"]
        facts = answer & t.has_questions[r] & ((t.lookup_bits[r] & ~self.called[idx]) == 0)
        self.answered[idx[facts]] = True
        transfer = acts == A["transfer"]
        if transfer.any():
            self._calls(idx[transfer], t.transfer[r[transfer]])
            self.transfer_pending[idx[transfer]] = True
        # the sentence said: by act, by the call confirmed or instructed, by whether an answer carries facts
        text = t.said_act[r, acts]
        text[confirm] = t.said_confirm[r[confirm], self.confirming[idx[confirm]]]
        text[instruct] = t.said_instruct[r[instruct], self.instructed[idx[instruct]]]
        text[answer] = t.said_answer[r[answer], facts[answer].astype(np.int64)]
        self.comm[idx] |= t.comm_of[r, text]
        self.said[idx] |= BITS[text]
        self.length[idx] += 1
        self.steps[idx] += 1
        self.last_err[idx] = False
        end = acts == A["end"]
        self.end[idx[end]] = ENDS.index("agent_stop")
        self.next[idx[~end]] = 1

    def _message(self, idx: np.ndarray, acts: np.ndarray, targets: np.ndarray) -> None:
        """What an agent's message does to the dialogue state of slots ``idx``: ``acts`` its acts, ``targets`` the
        call each confirmation or instruction names (-1 elsewhere). A request marks the slot asked for, a
        confirmation whether it asks about the decoy or a real request, an instruction the phone action pending, a
        refusal counts. The text game's messages, as its NLU reads them, come here too."""
        self.agent_msgs[idx] += 1
        request = (acts >= REQUEST) & (acts < REQUEST + len(REQUEST_SLOTS))
        self.asked_slot[idx[request]] = acts[request] - REQUEST + 1
        confirm = (acts >= CONFIRM) & (acts < CONFIRM + K_WRITE)
        if confirm.any():
            u = targets[confirm]
            self.target[idx[confirm]] = np.where(u == self.tasks.decoy[self.task[idx[confirm]]], 1, 2)
            self.confirming[idx[confirm]] = u
        instruct = (acts >= INSTRUCT) & (acts < INSTRUCT + K_PHONE)
        self.instructed[idx[instruct]] = targets[instruct]
        self.denied[idx[acts == A["deny"]]] += 1

    def _user(self, idx: np.ndarray, acts: np.ndarray) -> None:
        t, r = self.tasks, self.task[idx]
        self.user_msgs[idx] += 1
        self.last[idx, 1] = acts
        target = self.target[idx].copy()
        self.target[idx] = 0
        phone = (acts == U["phone_action"]) & (self.instructed[idx] >= 0)
        if phone.any():
            self._calls(idx[phone], self.instructed[idx[phone]])
        self.instructed[idx[phone | (acts == U["deny"]) | (acts == U["stop"])]] = -1
        forbidden = t.decoy_kind[r] == 1
        # everything at once: each identity slot in the goal's order, then the details
        every = acts == U["inform_all"]
        if every.any():
            self.inform_alls[idx[every]] += 1
            for k in range(len(IDENTITY_SLOTS)):
                slot = t.identity_order[r, k]
                go = every & (slot >= 0)
                if go.any():
                    self._tell(idx[go], slot[go], np.ones(np.count_nonzero(go), np.int64))
            self._details(idx[every])
        # one identity slot: the one asked for if the goal has it, else the goal's first; a slip mistypes it
        one = (acts == U["inform_identity"]) | (acts == U["inform_slip"])
        if one.any():
            asked = self.asked_slot[idx] - 1
            has = (asked >= 0) & (asked < len(IDENTITY_SLOTS))
            has[has] = t.in_identity[r[has], asked[has]]
            slot = np.where(has, asked, t.first_identity[r])
            go = one & (slot >= 0)
            bad = go & (acts == U["inform_slip"])
            bad[bad] = t.slot_digit[r[bad], slot[bad]]
            self.slips[idx[bad]] += 1
            if go.any():
                self._tell(idx[go], slot[go], np.where(bad[go], 2, 1))
        details = acts == U["inform_details"]
        if details.any():
            self._details(idx[details])
        self.asked[idx[every & t.has_questions[r]]] = True
        states = every | (acts == U["state_request"])
        self.stated[idx[states]] = True
        self.decoy_stated[idx[states & forbidden]] = True
        yes = (acts == U["confirm"]) & (target != 0)
        self.confirmed[idx[yes]] |= bit(self.confirming[idx[yes]])
        self.decoy_retracted[idx[(acts == U["deny"]) & (target == 1)]] = True
        self.insisted[idx[acts == U["insist"]]] += 1
        mind = acts == U["change_mind"]
        first = mind & ~self.decoy_stated[idx]
        again = mind & ~first
        self.decoy_stated[idx[first]] = True
        self.decoy_retracted[idx[again]] = True
        self.stated[idx[again]] = True
        self.asked[idx[acts == U["ask_question"]]] = True
        self.asked_slot[idx] = 0
        self._stale[idx[states | (acts == U["deny"]) | mind]] = True  # a request stated, or the decoy's changed
        leave = (acts == U["stop"]) | (acts == U["transfer"])
        talk = ~leave & (acts != U["phone_action"])
        words = leave | talk
        self.length[idx[words]] += 1
        self.steps[idx[words]] += 1
        self.last_err[idx[words]] = False
        self.end[idx[leave]] = ENDS.index("user_stop")
        self.next[idx[~leave]] = 0

    # -- a row as the scalar game's fields ---------------------------------------------------------------------
    def user_fields(self, i: int, calls: list) -> dict:
        """What slot ``i``'s user acts write, as the scalar game's fields (``calls``: its task's calls by index; the
        instructed call stays the game's own, only its clearing is read)."""
        told = dict(told_items(self.told[i], self.told_order[i]))
        confirmed = int(self.confirmed[i])
        out = {name: bool(getattr(self, name)[i]) for name in
               ("stated", "details_given", "asked", "decoy_stated", "decoy_retracted")}
        out.update({name: int(getattr(self, name)[i]) for name in ("inform_alls", "user_msgs", "slips", "insisted")})
        out.update(told=told, confirmed={c.key() for u, c in enumerate(calls) if confirmed >> u & 1},
                   confirm_target=TARGETS[int(self.target[i])],
                   asked_slot=REQUEST_SLOTS[self.asked_slot[i] - 1] if self.asked_slot[i] > 0 else None)
        return out

    def fields(self, i: int, calls: list) -> dict:
        """Slot ``i``'s whole dialogue state as the scalar game's fields (``user_fields`` and the rest)."""
        out = self.user_fields(i, calls)
        called = int(self.called[i])
        out.update({name: bool(getattr(self, name)[i]) for name in ("answered", "transfer_pending", "decoy_executed")})
        out.update({name: int(getattr(self, name)[i]) for name in ("steps", "tool_errors", "denied", "agent_msgs")})
        out.update(termination=ENDS[int(self.end[i])], _next=ROLES[int(self.next[i])],
                   done={c.key() for u, c in enumerate(calls) if called >> u & 1},
                   instructed=calls[self.instructed[i]] if self.instructed[i] >= 0 else None,
                   confirming=calls[self.confirming[i]] if self.confirming[i] >= 0 else None,
                   last={AGENT: int(self.last[i, 0]), USER: int(self.last[i, 1])})
        return out

    # -- the ends -----------------------------------------------------------------------------------------
    def outcome(self, idx) -> dict[str, np.ndarray]:
        """The outcome metrics (``outcomes``) of the slots ``idx``, key by key."""
        idx = np.asarray(idx)
        return outcomes(self.reward[idx], self.steps[idx], self.tool_errors[idx], self.violations[idx],
                        self.done[idx], self.decoy_executed[idx], self.slips[idx], self.tasks.domain[self.task[idx]])

    def agent_score(self, idx) -> np.ndarray:
        return np.clip(self.reward[np.asarray(idx)], 0.0, 1.0)

    def rewards(self, idx, users: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The finished slots' (agent, user) rewards (the user's by ``user_rewards``); ``users=False``: the
        agent's only."""
        idx = np.asarray(idx)
        agent = self.reward[idx].copy()
        if not users:
            return agent, None
        return agent, user_rewards(self.user_reward, agent, self.user_msgs[idx], self.inform_alls[idx],
                                   self.disclose[idx])

    def user_acts(self, i: int) -> list[int]:
        """The user's acts of slot ``i``'s episode, its opening's included (``final_info``)."""
        log = self.log[i, : self.log_n[i]]
        return self.tasks.tables[self.task[i]].user_acts0 + log[log[:, 0] == 1, 1].tolist()


__all__ = ["Tau2Batch", "card_rows", "card_table"]
