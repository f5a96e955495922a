"""The study database (SQLAlchemy Core; SQLite by default, PostgreSQL through a URL).

Tables: ``sessions`` (one per participant id: its slot in the randomisation, condition, seed, stage,
the hash of its secret, outcome and completion), ``messages`` (every turn, numbered per session; the
pair (session, seq) is unique, so a message can never be stored twice) and ``answers`` (one row per
survey item). Every write is its own committed transaction.
"""

from __future__ import annotations

import hashlib
import json
import time

import sqlalchemy as sa

STAGES = ("consent", "role", "chat", "survey", "complete", "declined")

meta = sa.MetaData()
sessions = sa.Table(
    "sessions", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("slot", sa.Integer, nullable=False, unique=True),  # arrival order: the randomisation's index
    sa.Column("prolific_pid", sa.String(128), nullable=False, unique=True),
    sa.Column("study_id", sa.String(128)),
    sa.Column("prolific_session_id", sa.String(128)),
    sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("condition", sa.String(64), nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("left_at", sa.Float),  # set when the session was found idle before its survey
    sa.Column("chat_end", sa.String(32)),  # terminated | truncated
    sa.Column("outcome", sa.Text),  # the game's outcome, JSON
    sa.Column("persona", sa.String(64)),
)
messages = sa.Table(
    "messages", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("role", sa.String(16), nullable=False),  # "user" (the person) | "agent"
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("act", sa.Integer),  # the agent's act; the person's act as the game read it
    sa.Column("error", sa.Text),  # the game did not accept the person's message (shown to them)
    sa.Column("visible", sa.Boolean, nullable=False, default=True),  # False: an agent's tool call, never shown
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("session_id", "seq"),
)
answers = sa.Table(
    "answers", meta,
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), primary_key=True),
    sa.Column("item", sa.String(64), primary_key=True),
    sa.Column("value", sa.Float, nullable=False),
)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def engine(url: str) -> sa.Engine:
    if url.startswith("sqlite"):
        eng = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn, _):  # WAL: readers never block the writer; FULL: a commit is on disk
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()
    else:
        eng = sa.create_engine(url, pool_pre_ping=True)
    meta.create_all(eng)
    return eng


class Store:
    def __init__(self, url: str):
        self.engine = engine(url)

    # -- sessions ------------------------------------------------------------------------------
    def session_by_secret(self, secret: str | None):
        if not secret:
            return None
        with self.engine.connect() as c:
            return c.execute(sa.select(sessions).where(sessions.c.secret_hash == secret_hash(secret))).first()

    def session_by_pid(self, pid: str):
        with self.engine.connect() as c:
            return c.execute(sa.select(sessions).where(sessions.c.prolific_pid == pid)).first()

    def session(self, sid: int):
        with self.engine.connect() as c:
            return c.execute(sa.select(sessions).where(sessions.c.id == sid)).first()

    def next_slot(self) -> int:
        with self.engine.connect() as c:
            top = c.execute(sa.select(sa.func.max(sessions.c.slot))).scalar()
        return 0 if top is None else top + 1

    def create_session(self, **values) -> int:
        now = time.time()
        with self.engine.begin() as c:
            return c.execute(sa.insert(sessions).values(created_at=now, updated_at=now, **values)).inserted_primary_key[0]

    def update_session(self, sid: int, **values) -> None:
        with self.engine.begin() as c:
            c.execute(sa.update(sessions).where(sessions.c.id == sid).values(updated_at=time.time(), **values))

    def all_sessions(self) -> list:
        with self.engine.connect() as c:
            return c.execute(sa.select(sessions).order_by(sessions.c.slot)).fetchall()

    def mark_left(self, idle_s: float) -> int:
        """Record sessions idle for ``idle_s`` before finishing their chat as left; returns how many."""
        cut = time.time() - idle_s
        with self.engine.begin() as c:
            return c.execute(sa.update(sessions).where(
                sessions.c.stage.in_(("consent", "role", "chat")), sessions.c.updated_at < cut,
                sessions.c.left_at.is_(None)).values(left_at=time.time())).rowcount

    # -- messages ------------------------------------------------------------------------------
    def messages(self, sid: int) -> list:
        with self.engine.connect() as c:
            return c.execute(sa.select(messages).where(messages.c.session_id == sid)
                             .order_by(messages.c.seq)).fetchall()

    def add_message(self, sid: int, seq: int, role: str, text: str, act: int | None = None,
                    error: str | None = None, visible: bool = True) -> None:
        now = time.time()
        with self.engine.begin() as c:
            c.execute(sa.insert(messages).values(session_id=sid, seq=seq, role=role, text=text, act=act, error=error,
                                                 visible=visible, created_at=now))
            c.execute(sa.update(sessions).where(sessions.c.id == sid).values(updated_at=now))

    def mark_message(self, sid: int, seq: int, act: int | None, error: str | None) -> None:
        with self.engine.begin() as c:
            c.execute(sa.update(messages).where(messages.c.session_id == sid, messages.c.seq == seq)
                      .values(act=act, error=error))

    def recent_user_messages(self, sid: int, since: float) -> int:
        with self.engine.connect() as c:
            return c.execute(sa.select(sa.func.count()).select_from(messages).where(
                messages.c.session_id == sid, messages.c.role == "user", messages.c.created_at >= since)).scalar()

    # -- answers -------------------------------------------------------------------------------
    def save_answers(self, sid: int, values: dict[str, float]) -> None:
        with self.engine.begin() as c:
            c.execute(sa.delete(answers).where(answers.c.session_id == sid))
            c.execute(sa.insert(answers), [{"session_id": sid, "item": k, "value": float(v)} for k, v in values.items()])
            c.execute(sa.update(sessions).where(sessions.c.id == sid).values(stage="complete", updated_at=time.time()))

    def answers(self) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        with self.engine.connect() as c:
            for row in c.execute(sa.select(answers)):
                out.setdefault(row.session_id, {})[row.item] = row.value
        return out

    def all_messages(self) -> dict[int, list]:
        out: dict[int, list] = {}
        with self.engine.connect() as c:
            for row in c.execute(sa.select(messages).order_by(messages.c.session_id, messages.c.seq)):
                out.setdefault(row.session_id, []).append(row)
        return out


def outcome_of(row) -> dict:
    return json.loads(row.outcome) if row.outcome else {}
