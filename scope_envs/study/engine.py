"""The study's logic, apart from the web: assignment, the chat, the survey, exports.

The chat is a ``<game>-cotrain`` episode on the text surface (``scope_envs.make(..., surface="text")``):
the person is the learnable user ``user_0`` and the condition's act-level policy is ``agent_0``, speaking
through the game's realizer. The database is the only state that matters: an episode is rebuilt from
the session's seed and its stored messages (the game is deterministic given both), so after a restart
the next request replays the dialogue and the person continues where they were. Every message is
committed, with the act the game read in it, before the reply to it is generated; a reply owed when the
server stopped is generated on the next request, with the same per-turn seed, hence the same words. At
start-up any person's message that was committed but never read by the game (a database written by an
earlier version, stopped between the two) is replayed into its episode and marked, so that every
committed message is in the exports.

Places: the study has ``per_condition`` x conditions slots (the blocked randomisation's indices). A slot
is taken at consent, not at arrival, by the session that consented (the lowest free slot, so a freed one
is filled first and the blocks stay balanced), and freed when that session is found idle
(``abandon_after_s``) before finishing its chat; declining never takes one. A person who comes back
after being found idle may still finish (their data is kept), without a slot.

Participant ids (``participant_id``): NFKC-normalised, then 1 to 64 ASCII letters, digits, ``-`` and ``_``
starting with a letter or digit, compared without case (Prolific issues 24 lowercase hexadecimal
characters). Anything else (other scripts, NUL or control characters) is refused.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa

import scope_envs
from scope_envs.study.agents import AGENT, ActSpeaker
from scope_envs.study.config import StudyConfig
from scope_envs.study.games import spec
from scope_envs.study.store import Store, outcome_of, secret_hash

USER = "user_0"
ERROR_PREFIX = "[error] "
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
ID_RULE = ("1 to 64 letters (A-Z), digits, - and _, starting with a letter or digit (Prolific's ids are 24 "
           "hexadecimal characters)")


def participant_id(text: str | None) -> str | None:
    """The canonical form of a Prolific id (or study / session id): NFKC, stripped, lower case; None when
    it is not of the accepted form (``ID_RULE``)."""
    if not isinstance(text, str) or len(text) > 256:
        return None
    canonical = unicodedata.normalize("NFKC", text).strip().lower()
    return canonical if canonical.isascii() and ID_PATTERN.fullmatch(canonical) else None


class StudyFull(Exception):
    """Every slot of the study is taken."""


class DuplicateParticipant(Exception):
    """This participant id already has a session (opened elsewhere: without its cookie)."""


class NotYourTurn(Exception):
    pass


class Refused(Exception):
    """A message the study does not accept (too long, too fast, empty): the person is told why.
    ``retry_after``: the seconds to wait (a message sent too fast; None otherwise)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Live:
    """A session's episode in memory and how many of its stored messages it has applied."""
    env: object
    applied: int


def condition_for_slot(cfg: StudyConfig, slot: int) -> str:
    """Blocked randomisation: block b (slots b*B .. b*B+B-1, B = conditions x block_repeats) is a random
    order, drawn from (seed, b), of every condition ``block_repeats`` times."""
    n = len(cfg.conditions)
    size = n * cfg.block_repeats
    order = np.random.default_rng([cfg.seed, slot // size]).permutation(np.repeat(np.arange(n), cfg.block_repeats))
    return cfg.conditions[int(order[slot % size])].name


def session_seed(cfg: StudyConfig, slot: int) -> int:
    return int(np.random.SeedSequence([cfg.seed, slot]).generate_state(1)[0])


class AssignmentChanged(ValueError):
    """The database's sessions were assigned by another randomisation than study.yaml's (a condition renamed,
    the conditions reordered, the seed or block_repeats changed after people took slots)."""


def check_assignment(cfg: StudyConfig, store: Store, slots: bool = True) -> None:
    """``AssignmentChanged`` when a stored session's condition is not one of ``cfg``'s, or (``slots``) its slot
    belongs to another condition under ``cfg``."""
    names = [c.name for c in cfg.conditions]
    for row in store.all_sessions():
        if row.condition is not None and row.condition not in names:
            raise AssignmentChanged(
                f"the database's slot {row.slot} is condition {row.condition!r}, which study.yaml does not name "
                f"({', '.join(names)}): a condition was renamed or removed after people took slots; restore it, "
                "or start a new study folder")
        if slots and row.slot is not None and row.condition != (wanted := condition_for_slot(cfg, row.slot)):
            raise AssignmentChanged(
                f"the database's slot {row.slot} is condition {row.condition!r}, study.yaml deals it to {wanted!r}: "
                "the conditions, their order, seed or block_repeats changed after people took slots; restore them, "
                "or start a new study folder")


class Study:
    def __init__(self, cfg: StudyConfig, speakers: dict[str, ActSpeaker], store: Store | None = None):
        self.cfg = cfg
        self.spec = spec(cfg)
        self.speakers = speakers
        self.store = store or Store(cfg.database_url)
        self._assign = threading.Lock()
        self._locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._live: dict[int, Live] = {}
        check_assignment(cfg, self.store)
        probe = self.new_env()
        for s in speakers.values():
            s.check(probe.unwrapped.game)
        self.recover()

    @property
    def capacity(self) -> int:
        return self.cfg.per_condition * len(self.cfg.conditions)

    def recover(self) -> list[int]:
        """Replay into the game every committed message it never read (marking each with its act), and
        generate the replies then owed: the sessions recovered."""
        sids = self.store.unread_sessions()
        for sid in sids:
            if self.store.session(sid).stage == "chat":
                self.advance(sid)
            else:
                with self.lock(sid):
                    self._episode(self.store.session(sid))
                    self._live.pop(sid, None)
        return sids

    def free_places(self) -> None:
        """Record idle sessions as left and free the slots they held."""
        self.store.mark_left(self.cfg.abandon_after_s)
        self.store.release_left()

    # -- arrival -------------------------------------------------------------------------------
    def arrive(self, pid: str, study_id: str | None, prolific_session: str | None) -> tuple[int, str]:
        """A new session for ``pid``, at its consent page and without a slot: (session id, its secret).
        Raises ``ValueError`` for an id not of the accepted form (``ID_RULE``), ``DuplicateParticipant``,
        ``StudyFull`` (every slot held now)."""
        canonical = participant_id(pid)
        if canonical is None:
            raise ValueError(f"participant id: expected {ID_RULE}")
        ids = []
        for name, value in (("study id", study_id), ("session id", prolific_session)):
            ids.append(None if value in (None, "") else participant_id(value))
            if value not in (None, "") and ids[-1] is None:
                raise ValueError(f"{name}: expected {ID_RULE}")
        with self._assign:
            if self.store.session_by_pid(canonical) is not None:
                raise DuplicateParticipant(canonical)
            self.free_places()
            if len(self.store.held_slots()) >= self.capacity:
                raise StudyFull()
            secret = secrets.token_urlsafe(32)
            try:
                sid = self.store.create_session(prolific_pid=canonical, study_id=ids[0], prolific_session_id=ids[1],
                                                secret_hash=secret_hash(secret), stage="consent")
            except sa.exc.IntegrityError:  # the same id, at the same moment, from another process
                raise DuplicateParticipant(canonical) from None
            return sid, secret

    def consent(self, sid: int, agree: bool) -> None:
        """The person's answer on the consent page: declining ends the session (it never held a slot);
        agreeing takes the lowest free slot, and with it the condition and the seed. ``StudyFull`` when
        every slot is held."""
        with self._assign:
            if self.store.session(sid).stage != "consent":  # answered already (a double click, a resent form)
                return
            if not agree:
                self.store.update_session(sid, stage="declined")
                return
            self.free_places()
            for _ in range(5):  # another process may take a slot first: the held slot's key says so
                held = self.store.held_slots()
                slot = next((i for i in range(self.capacity) if i not in held), None)
                if slot is None:
                    raise StudyFull()
                if self.store.hold(sid, slot, condition=condition_for_slot(self.cfg, slot),
                                   seed=session_seed(self.cfg, slot), stage="role"):
                    return
            raise RuntimeError("could not assign a slot")

    # -- the chat ------------------------------------------------------------------------------
    def new_env(self):
        env = scope_envs.make(f"{self.cfg.game}-cotrain", surface="text", max_errors=1_000_000,
                              max_message_chars=self.cfg.max_message_chars + 32, **self.spec.env_kwargs())
        # the cards (tau2: tasks) the person is dealt: tau2 takes the test split, which no trained agent has seen
        env.unwrapped.split = self.spec.split
        return env

    def lock(self, sid: int) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(sid, threading.Lock())

    def _apply(self, env, role: str, text: str) -> tuple[int | None, str | None]:
        """Step the episode with one stored message; (the act the game read, the error it gave)."""
        game = env.unwrapped.game
        before = len(game.history)
        obs, *_ = env.step({AGENT if role == "agent" else USER: text})
        if len(game.history) > before:
            return int(game.history[before].act), None
        agent = AGENT if role == "agent" else USER
        lines = str(obs.get(agent, "")).splitlines()
        errors = [line[len(ERROR_PREFIX):] for line in lines if line.startswith(ERROR_PREFIX)]
        return None, (errors[-1] if errors else "the message was not accepted")

    def _episode(self, row) -> Live:
        """The session's episode with every stored message applied (rebuilt from the database if needed)."""
        stored = self.store.messages(row.id)
        live = self._live.get(row.id)
        if live is None or live.applied > len(stored):
            env = self.new_env()
            env.reset(seed=int(row.seed))
            live = self._live[row.id] = Live(env, 0)
        for m in stored[live.applied:]:
            act, error = self._apply(live.env, m.role, m.text)
            if m.role == "user" and m.act is None and m.error is None:  # committed, never read: read it now
                self.store.mark_message(row.id, m.seq, act, error)
            live.applied += 1
        return live

    def _finish_if_over(self, row, live: Live) -> bool:
        if live.env.agents:
            return False
        game = live.env.unwrapped.game
        self.store.update_session(row.id, stage="survey", chat_end="truncated" if game.truncated() else "terminated",
                                  outcome=json.dumps({k: float(v) for k, v in game.outcome().items()}),
                                  persona=game.persona.id if game.persona else None)
        self._live.pop(row.id, None)
        return True

    def advance(self, sid: int) -> None:
        """Generate every agent turn now owed (the first one, or a reply lost to a restart)."""
        with self.lock(sid):
            row = self.store.session(sid)
            if row.stage != "chat":
                return
            self._advance(row)

    def _advance(self, row) -> Live:
        live = self._episode(row)
        speaker = self.speakers[row.condition]
        while live.env.agents:
            game = live.env.unwrapped.game
            if game.active_role() != game.agent_role:
                break
            seq = live.applied
            act, text = speaker.reply(game, [self.cfg.seed, int(row.seed), seq])
            self.store.add_message(row.id, seq, "agent", text, act=act,  # committed before it is shown
                                   visible=self.spec.visible("agent", text))
            self._apply(live.env, "agent", text)
            live.applied += 1
        self._finish_if_over(row, live)
        return live

    def say(self, sid: int, text: str, form: dict | None = None) -> str | None:
        """The person's message: stored (committed) first, then read by the game, then answered.
        ``form``: the chat form's other fields (p4g: the amount; tau2: the end button).
        Returns the game's objection when it did not accept the message (the person is told)."""
        text = text.replace("\r\n", "\n").strip()
        if len(text) > self.cfg.max_message_chars:
            raise Refused(f"Please keep each message under {self.cfg.max_message_chars} characters.")
        if any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000 for c in text):
            raise Refused("Please type your message as plain text: it holds a control character.")
        try:
            text = self.spec.person_text(text, form or {})
        except ValueError as e:
            raise Refused(str(e)) from None
        if not text.strip():
            raise Refused("Please type a message first.")
        with self.lock(sid):
            row = self.store.session(sid)
            if row.stage != "chat":
                raise NotYourTurn()
            if self.store.recent_user_messages(sid, time.time() - self.cfg.rate_window_s) >= self.cfg.rate_limit:
                raise Refused("You are sending messages very quickly; please wait a moment and try again.",
                              retry_after=self.cfg.rate_window_s)
            live = self._advance(row)  # a reply owed from before a restart comes first
            game = live.env.unwrapped.game
            if not live.env.agents or game.active_role() != game.user_role:
                raise NotYourTurn()
            seq = live.applied
            act, error = self._apply(live.env, "user", text)  # the game reads it in memory ...
            try:
                self.store.add_message(sid, seq, "user", text, act=act, error=error)  # ... committed with its act
            except Exception:
                self._live.pop(sid, None)  # not stored: the episode in memory read a message that is not there
                raise
            live.applied += 1
            if error is None:
                self._advance(self.store.session(sid))
            return error

    def state(self, sid: int) -> dict:
        """What the chat page shows: the messages, whose turn, and what the game expects next."""
        with self.lock(sid):
            row = self.store.session(sid)
            stored = self.store.messages(sid)
            live = self._episode(row) if row.stage == "chat" else None
            game = live.env.unwrapped.game if live else None
            return {
                "messages": [m for m in stored if m.visible], "stage": row.stage,
                "your_turn": bool(live and live.env.agents and game.active_role() == game.user_role),
                "final": bool(game and self.spec.final(game)),
            }

    def card(self, sid: int) -> list[str]:
        """The person's role card (tau2: their task's scenario)."""
        with self.lock(sid):
            row = self.store.session(sid)
            live = self._episode(row)
            return self.spec.card(live.env.unwrapped.game)

    # -- the survey ----------------------------------------------------------------------------
    def finish(self, sid: int, values: dict[str, float]) -> bool:
        """Save the survey once: False (nothing written) for a second submit."""
        return self.store.save_answers(sid, values)

    # -- exports -------------------------------------------------------------------------------
    def rows(self) -> list[dict]:
        """One flat record per session (CSV)."""
        self.free_places()
        answers = self.store.answers()
        msgs = self.store.all_messages()
        items = [self.spec.outcome_item, *[s["id"] for s in self.cfg.survey]]
        out = []
        for r in self.store.all_sessions():
            outcome = outcome_of(r)
            m = msgs.get(r.id, [])
            rec = {"slot": r.slot, "prolific_pid": r.prolific_pid, "study_id": r.study_id,
                   "prolific_session_id": r.prolific_session_id, "condition": r.condition, "stage": r.stage,
                   "left": r.left_at is not None, "chat_end": r.chat_end or "",
                   "user_messages": sum(x.role == "user" for x in m), "agent_messages": sum(x.role == "agent" for x in m),
                   "rejected_messages": sum(x.error is not None for x in m),
                   "created_at": r.created_at, "updated_at": r.updated_at}
            rec.update({f"outcome_{k}": v for k, v in outcome.items()})
            rec.update({k: answers.get(r.id, {}).get(k, "") for k in items})
            out.append(rec)
        return out

    def transcripts(self) -> list[dict]:
        """One record per session, in ``RecordTranscripts``' format (``scope_envs.wrappers.record``), plus the
        study's fields (condition, participant, answers, the messages the game did not accept)."""
        game = self.new_env().unwrapped.game
        role = {"agent": game.agent_role, "user": game.user_role}
        answers = self.store.answers()
        msgs = self.store.all_messages()
        out = []
        for r in self.store.all_sessions():
            m = msgs.get(r.id, [])
            turns = [{"role": role[x.role], "act": x.act, "act_name": game.acts(role[x.role])[x.act], "text": x.text}
                     for x in m if x.error is None and x.act is not None]
            unread = [{"seq": x.seq, "text": x.text} for x in m if x.error is None and x.act is None]
            outcome = outcome_of(r)
            out.append({
                "id": f"session-{r.id}", "seed": None if r.seed is None else int(r.seed), "episode": 0, "game": self.cfg.game, "regime": "human",
                "surface": "text", "persona": r.persona, "simulator": "human", "member": 0, "turns": turns,
                "outcome": outcome, "returns": {AGENT: outcome.get(game.success_metric, 0.0)} if outcome else {},
                "finished": r.chat_end is not None,
                "condition": r.condition, "prolific_pid": r.prolific_pid, "stage": r.stage,
                "left": r.left_at is not None, "answers": answers.get(r.id, {}),
                "rejected": [{"seq": x.seq, "text": x.text, "error": x.error} for x in m if x.error is not None],
                **({"unread": unread} if unread else {}),  # committed, not (yet) read by the game: never dropped
            })
        return out

    def progress(self) -> dict[str, dict[str, int]]:
        """Per condition: sessions assigned (consented), in progress, complete, left. People who declined have
        no condition: they are counted under ``declined`` of the baseline's row."""
        self.free_places()
        table = {c.name: {"assigned": 0, "chatting": 0, "complete": 0, "left": 0, "declined": 0}
                 for c in self.cfg.conditions}
        for r in self.store.all_sessions():
            if r.condition is None:  # arrived and not (yet) consented, or declined
                table[self.cfg.baseline]["declined"] += r.stage == "declined"
                continue
            t = table.setdefault(r.condition, {"assigned": 0, "chatting": 0, "complete": 0, "left": 0, "declined": 0})
            t["assigned"] += 1
            t["complete"] += r.stage == "complete"
            t["declined"] += r.stage == "declined"
            t["left"] += r.left_at is not None and r.stage not in ("complete", "survey")
            t["chatting"] += r.stage in ("role", "chat", "survey") and r.left_at is None
        return table
