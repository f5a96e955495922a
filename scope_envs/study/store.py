"""The study database (SQLAlchemy Core; SQLite by default, PostgreSQL through a URL).

Tables: ``sessions`` (one per participant id: its slot in the randomisation, condition, seed, stage,
the hash of its secret, outcome and completion), ``holds`` (the slots held now: one row per slot, held
by a session that consented and neither finished nor was found idle; the slot is the primary key, so two
sessions can never hold one), ``messages`` (every turn, numbered per session; the pair (session, seq) is
unique, so a message can never be stored twice) and ``answers`` (one row per survey item, written once,
in the transaction that completes the session). Every write is its own committed transaction.

A session that arrived but has not consented has no slot, condition or seed yet (they are assigned at
consent). Databases written before ``holds`` existed (a unique ``slot`` on every arrival) are not read.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import sqlalchemy as sa

STAGES = ("consent", "role", "chat", "survey", "complete", "declined")

meta = sa.MetaData()
sessions = sa.Table(
    "sessions", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("slot", sa.Integer),  # the randomisation's index, taken at consent (None before)
    sa.Column("prolific_pid", sa.String(128), nullable=False, unique=True),
    sa.Column("study_id", sa.String(128)),
    sa.Column("prolific_session_id", sa.String(128)),
    sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("condition", sa.String(64)),
    sa.Column("seed", sa.BigInteger),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("left_at", sa.Float),  # set when the session was found idle before its survey
    sa.Column("chat_end", sa.String(32)),  # terminated | truncated
    sa.Column("outcome", sa.Text),  # the game's outcome, JSON
    sa.Column("persona", sa.String(64)),
)
holds = sa.Table(
    "holds", meta,
    sa.Column("slot", sa.Integer, primary_key=True),
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False, unique=True),
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


def engine(url: str, create: bool = True) -> sa.Engine:
    """The database's engine; ``create``: the study's tables made where missing, an SQLite file put in WAL mode
    (the server's). Without it nothing is written (``analyze`` reads the database as it is)."""
    if url.startswith("sqlite"):
        eng = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn, _):  # WAL: readers never block the writer; FULL: a commit is on disk
            cur = conn.cursor()
            if create:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()
    else:
        eng = sa.create_engine(url, pool_pre_ping=True)
    if create:
        meta.create_all(eng)
    return eng


class StoreError(RuntimeError):
    """The database cannot be opened: a malformed URL, a driver that is not installed, a server that does not
    answer, a file that is not a database (the message says which, with the password hidden)."""


def shown(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return repr(url[:200])


def in_memory(url: str) -> bool:
    """An SQLite URL without a file (``sqlite://``, ``:memory:``, ``mode=memory``): it keeps nothing, and every
    connection sees its own empty database."""
    try:
        u = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return False
    return u.get_backend_name() == "sqlite" and (u.database in (None, "", ":memory:") or
                                                  u.query.get("mode") == "memory" or "mode=memory" in u.database)


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL (``sqlite:///PATH``); None for another database, one in memory, or a ``file:``
    URI (SQLite reads its path)."""
    try:
        u = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return None
    if u.get_backend_name() != "sqlite" or in_memory(url) or (u.database or "").startswith("file:"):
        return None
    return Path(u.database)


class Store:
    """The study's database. ``create=False`` opens an existing one without writing to it, and refuses a database
    that lacks the study's tables (an empty file, another program's database)."""

    def __init__(self, url: str, create: bool = True):
        if in_memory(url):
            raise StoreError(f"database {shown(url)}: an SQLite database in memory keeps nothing (and each connection "
                             "has its own); give a file, sqlite:///PATH, or leave database out (STUDY_DIR/study.db)")
        try:
            self.engine = engine(url, create)
            if not create:
                with self.engine.connect() as c:
                    missing = sorted(set(meta.tables) - set(sa.inspect(c).get_table_names()))
                if missing:
                    raise StoreError(f"database {shown(url)} is not a study's database: it has no "
                                     f"{', '.join(missing)} table{'s' * (len(missing) > 1)}")
        except sa.exc.NoSuchModuleError as e:
            raise StoreError(f"database {shown(url)}: no SQLAlchemy dialect for it ({e})") from None
        except ImportError as e:
            raise StoreError(f"database {shown(url)}: its driver is not installed ({e.name or e}); "
                             "pip install it, or use sqlite:///PATH") from None
        except sa.exc.ArgumentError as e:
            raise StoreError(f"database {shown(url)}: not a database URL ({e})") from None
        except sa.exc.SQLAlchemyError as e:
            reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0][:200]
            raise StoreError(f"database {shown(url)}: cannot be opened ({reason})") from None
        with self.engine.connect() as c:  # a database of the version before slots were held at consent
            columns = {col["name"]: col for col in sa.inspect(c).get_columns("sessions")}
        if not columns["slot"]["nullable"]:
            raise StoreError(f"database {shown(url)} was written by an earlier version of the study server "
                             "(slots taken at arrival); export it with that version and start a new study folder")

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

    def held_slots(self) -> set[int]:
        with self.engine.connect() as c:
            return set(c.execute(sa.select(holds.c.slot)).scalars())

    def hold(self, sid: int, slot: int, **values) -> bool:
        """``sid`` takes ``slot`` (and ``values``: condition, seed, stage) in one transaction; False when
        another session holds that slot already."""
        try:
            with self.engine.begin() as c:
                c.execute(sa.insert(holds).values(slot=slot, session_id=sid))
                c.execute(sa.update(sessions).where(sessions.c.id == sid)
                          .values(slot=slot, updated_at=time.time(), **values))
            return True
        except sa.exc.IntegrityError:
            return False

    def release_left(self) -> int:
        """Free the slots of sessions found idle (``left_at`` set) before finishing their chat."""
        with self.engine.begin() as c:
            left = sa.select(sessions.c.id).where(sessions.c.left_at.is_not(None),
                                                  sessions.c.stage.in_(("consent", "role", "chat")))
            return c.execute(sa.delete(holds).where(holds.c.session_id.in_(left))).rowcount

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

    def unread_sessions(self) -> list[int]:
        """Sessions with a person's message that the game never marked as read (a stop between the commit
        and the game's reading of it, in a version that committed first): recovered at start-up."""
        with self.engine.connect() as c:
            return list(c.execute(sa.select(messages.c.session_id).distinct().where(
                messages.c.role == "user", messages.c.act.is_(None), messages.c.error.is_(None))).scalars())

    def recent_user_messages(self, sid: int, since: float) -> int:
        with self.engine.connect() as c:
            return c.execute(sa.select(sa.func.count()).select_from(messages).where(
                messages.c.session_id == sid, messages.c.role == "user", messages.c.created_at >= since)).scalar()

    # -- answers -------------------------------------------------------------------------------
    def save_answers(self, sid: int, values: dict[str, float]) -> bool:
        """The survey's answers and the session's completion, in one transaction, once: False (nothing
        written) when the session is not at its survey any more (a second submit, a replayed request)."""
        with self.engine.begin() as c:
            moved = c.execute(sa.update(sessions).where(sessions.c.id == sid, sessions.c.stage == "survey")
                              .values(stage="complete", updated_at=time.time())).rowcount
            if moved != 1:
                return False
            c.execute(sa.insert(answers), [{"session_id": sid, "item": k, "value": float(v)} for k, v in values.items()])
        return True

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
