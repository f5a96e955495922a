"""A cheap fresh database per episode: copy-on-write tables over the shared, read-only load.

tau^2-bench builds its pydantic database from disk for every evaluation (hundreds of
milliseconds for airline). Here the loaded JSON is shared by every episode and each
episode sees it through ``Table`` overlays: reading a record returns the shared
record, ``mut`` copies one record into the overlay the first time it is written.
A fresh state is a handful of empty overlays (microseconds); comparing two states
built on the same base only looks at the records either of them touched.

Rules for tool code: read with ``table[key]`` / ``table.get``, and call
``table.mut(key)`` before changing anything inside a record. Small databases
(telecom's lists, the user's phone) are plain JSON values copied whole per episode.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any


def clone(obj: Any) -> Any:
    """Deep copy of JSON data: a pickle round trip runs in C, several times faster than copy.deepcopy
    or a Python recursion over the records."""
    if isinstance(obj, (dict, list)):
        return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
    return obj


# (id of a base table, index name) -> (the base, {indexed value: [keys in base order]} or None, {key: position})
_INDEXES: dict[tuple[int, str], tuple[dict, dict | None, dict]] = {}


def _base_index(base: dict, name: str, key_of: Callable[[Any], Any]) -> tuple[dict, dict | None, dict]:
    """The index ``name`` of a shared base table, built on first use (the base is never written); None in place of
    the index where ``key_of`` fails on some record: a scan then meets that record as the tool code does."""
    entry = _INDEXES.get((id(base), name))
    if entry is None or entry[0] is not base:
        index: dict | None = {}
        try:
            for k, rec in base.items():
                index.setdefault(key_of(rec), []).append(k)
        except (KeyError, TypeError, AttributeError, IndexError):  # what reading a malformed JSON record raises
            index = None
        entry = _INDEXES[(id(base), name)] = (base, index, {k: i for i, k in enumerate(base)})
    return entry


class Table:
    """A dict of records keyed by id: a shared base plus this episode's overlay."""

    __slots__ = ("base", "over")

    def __init__(self, base: dict):
        self.base = base
        self.over: dict = {}

    def __getitem__(self, key):
        over = self.over
        return over[key] if key in over else self.base[key]

    def get(self, key, default=None):
        if key in self.over:
            return self.over[key]
        return self.base.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self.over or key in self.base

    def mut(self, key) -> Any:
        """The record, writable: copied into the overlay on first write."""
        rec = self.over.get(key)
        if rec is None:
            rec = self.over[key] = clone(self.base[key])
        return rec

    def __setitem__(self, key, value) -> None:
        self.over[key] = value

    def keys(self) -> Iterator:
        yield from self.base
        for k in self.over:
            if k not in self.base:
                yield k

    __iter__ = keys

    def values(self) -> Iterator:
        for k in self.keys():
            yield self[k]

    def items(self) -> Iterator:
        for k in self.keys():
            yield k, self[k]

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.over if k not in self.base)

    def dump(self) -> dict:
        return {k: self[k] for k in self.keys()}

    def find(self, name: str, key_of: Callable[[Any], Any], value) -> list | None:
        """The keys of the records with ``key_of(record) == value``, in ``keys()`` order: what a scan of ``items()``
        finds, from an index of the base (``name`` names ``key_of``; one function per name) and a scan of the
        overlay only. None where the index cannot answer as the scan would (``key_of`` fails on a record): scan.
        ``value`` must be hashable and compare as the records' values do (strings)."""
        _, index, pos = _base_index(self.base, name, key_of)
        if index is None:
            return None
        over = self.over
        hits = [(pos[k], k) for k in index.get(value, ()) if k not in over]
        end = len(pos)
        for j, (k, rec) in enumerate(over.items()):
            try:
                found = key_of(rec) == value
            except (KeyError, TypeError, AttributeError, IndexError):
                return None
            if found:
                hits.append((pos.get(k, end + j), k))
        hits.sort()
        return [k for _, k in hits]


def merge(target: dict, update: dict) -> None:
    """Nested update as tau^2-bench's ``update_pydantic_model_with_dict``: dicts merge, other values replace."""
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(target.get(k), dict):
            merge(target[k], v)
        else:
            target[k] = clone(v)


class State:
    """One episode's world: ``db`` (agent side) and ``user_db`` (telecom's phone, else None).

    ``db`` maps a collection name to a ``Table`` (dict-shaped collections) or to a
    plain JSON value copied for this episode (list-shaped collections).
    """

    __slots__ = ("db", "user_db", "ids", "owned")

    def __init__(self, db: dict, user_db: dict | None):
        self.db = db
        self.user_db = user_db
        self.ids: dict[str, int] = {}  # deterministic id counters (telecom draft bills)
        self.owned: set[str] = set()  # list collections this episode has copied (``own``)

    @classmethod
    def fresh(cls, base_db: dict, base_user_db: dict | None, cow: bool) -> "State":
        """Dict collections become ``Table`` overlays; list collections stay shared until ``own``."""
        db = {k: Table(v) if cow and isinstance(v, dict) else v for k, v in base_db.items()}
        return cls(db, clone(base_user_db) if base_user_db is not None else None)

    def own(self, *names: str) -> None:
        """Copy list collections before writing into them (copy-on-write at collection level)."""
        for name in names:
            if name not in self.owned:
                self.db[name] = clone(self.db[name])
                self.owned.add(name)

    def update_db(self, update: dict) -> None:
        """Apply a task's ``initialization_data.agent_data``."""
        for name, value in update.items():
            table = self.db.get(name)
            if isinstance(table, Table) and isinstance(value, dict):
                for key, rec in value.items():
                    if key in table and isinstance(rec, dict):
                        merge(table.mut(key), rec)
                    else:
                        table[key] = clone(rec)
            elif isinstance(table, dict) and isinstance(value, dict):
                self.own(name)
                merge(self.db[name], value)
            else:
                self.db[name] = clone(value)
                self.owned.add(name)

    def copy(self) -> State:
        """An independent state equal to this one: the shared base stays shared (it is never written), this
        state's own data (table overlays, owned collections, the user database) is cloned in one pass, so that
        whatever it shares within itself stays shared in the copy."""
        tables = {k: v for k, v in self.db.items() if isinstance(v, Table)}
        owned = {k: self.db[k] for k in self.owned if k not in tables}
        overs, owned, user_db = clone([{k: t.over for k, t in tables.items()}, owned, self.user_db])
        db = {}
        for k, v in self.db.items():
            if k in tables:
                v = Table(v.base)
                v.over = overs[k]
            elif k in owned:
                v = owned[k]
            db[k] = v
        out = State(db, user_db)
        out.ids, out.owned = dict(self.ids), set(self.owned)
        return out

    def dump(self) -> dict:
        """The full state as plain JSON-able data: ``{"db": ..., "user_db": ...}``."""
        db = {k: v.dump() if isinstance(v, Table) else clone(v) for k, v in self.db.items()}
        return {"db": db, "user_db": clone(self.user_db)}

    def same_db(self, other: "State") -> bool:
        return _same_db(self.db, other.db)

    def same_user_db(self, other: "State") -> bool:
        return self.user_db == other.user_db


def _same_db(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for name, ta in a.items():
        tb = b[name]
        if isinstance(ta, Table) and isinstance(tb, Table) and ta.base is tb.base:
            # only records one of the two episodes wrote can differ
            for key in ta.over.keys() | tb.over.keys():
                if ta.get(key) != tb.get(key):
                    return False
        else:
            da = ta.dump() if isinstance(ta, Table) else ta
            db_ = tb.dump() if isinstance(tb, Table) else tb
            if da != db_:
                return False
    return True


def canonical(obj: Any) -> str:
    """A canonical JSON string (sorted keys), as tau^2-bench hashes databases."""
    return json.dumps(obj, sort_keys=True, default=str)
