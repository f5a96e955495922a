"""CooperBench's dataset layout: task discovery, the base repository, the test command and patch hygiene.

The layout is CooperBench's (``cooperbench`` 0.0.29, ``runner/tasks.py``)::

    <data_dir>/<repo>/task<id>/
        runner.sh              the test runner (its ``python -m pytest ...`` line is the test command)
        combined.patch         the whole pull request (every feature), optional
        feature<k>/feature.md      the feature's description (what its teammate is told)
        feature<k>/feature.patch   the gold implementation
        feature<k>/tests.patch     the feature's tests, hidden from the merge, applied to grade it
    <data_dir>/subsets/<name>.json   optional named subsets ({"tasks": [{"repo", "task_id", "pairs"?}]})

Discovery follows CooperBench: repositories and tasks in sorted order, a task
with fewer than two features skipped, and every pair ``(f1, f2)`` of its
features (``itertools.combinations`` of the sorted ids) unless a subset names
the pairs. CooperBench builds the repository at the task's base commit inside
the task's Docker image (``setup.sh`` clones it); offline, the base is read from
the task directory instead, in this order: ``repo/`` (a git repository, checked
out at ``setup.sh``'s ``BASE_COMMIT`` when it names one, or plain files) or
``repo.patch`` (a patch that creates the files from nothing: how the shipped
demo stores its repository, since a git repository cannot live inside ours).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent / "demo"
GIT_IDENTITY = ("-c", "user.name=scope-envs", "-c", "user.email=scope-envs@localhost", "-c", "commit.gpgsign=false",
                "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false", "-c", "init.defaultBranch=main")


class DatasetError(ValueError):
    """A data directory that does not hold CooperBench tasks, or a task that cannot be built."""


@dataclass(frozen=True)
class Feature:
    id: int
    dir: Path

    @property
    def description(self) -> str:
        return (self.dir / "feature.md").read_text()

    @property
    def tests_patch(self) -> str:
        return sanitize((self.dir / "tests.patch").read_text())

    @property
    def gold_patch(self) -> str:
        path = self.dir / "feature.patch"
        return sanitize(path.read_text()) if path.exists() else ""

    @property
    def title(self) -> str:
        text = self.description
        m = re.search(r"\*\*Title\*\*:\s*(.+)", text) or re.search(r"^#+\s*(.+)$", text, re.MULTILINE)
        return m.group(1).strip() if m else f"feature {self.id}"


@dataclass(frozen=True)
class Pair:
    """One CooperBench instance: two features of one task, ``features[0]`` for ``agent_0`` (CooperBench's agent1,
    whose patch is the lead's in the evaluator's fallback)."""

    repo: str
    task_id: int
    dir: Path
    features: tuple[Feature, Feature]

    @property
    def id(self) -> str:
        return f"{self.repo}/task{self.task_id}/f{self.features[0].id}-f{self.features[1].id}"

    @property
    def combined_patch(self) -> str:
        path = self.dir / "combined.patch"
        return sanitize(path.read_text()) if path.exists() else ""


def _subset(root: Path, name: str) -> tuple[set, dict]:
    path = root / "subsets" / f"{name}.json"
    if not path.exists():
        raise DatasetError(f"subset {name!r} not found at {path}")
    data = json.loads(path.read_text())
    tasks, pairs = set(), {}
    for t in data["tasks"]:
        key = (t["repo"], int(t["task_id"]))
        tasks.add(key)
        if "pairs" in t:
            pairs[key] = [tuple(int(f) for f in p) for p in t["pairs"]]
    return tasks, pairs


def discover(data_dir: str | os.PathLike, subset: str | None = None) -> list[Pair]:
    """Every feature pair under ``data_dir``, in CooperBench's order."""
    root = Path(data_dir)
    if not root.is_dir():
        raise DatasetError(f"data_dir {str(root)!r} is not a directory")
    chosen, named_pairs = _subset(root, subset) if subset else (None, {})
    out = []
    for repo_dir in sorted(root.iterdir()):
        if not repo_dir.is_dir() or repo_dir.name == "subsets":
            continue
        for task_dir in sorted(repo_dir.iterdir()):
            if not task_dir.is_dir() or not re.fullmatch(r"task\d+", task_dir.name):
                continue
            task_id = int(task_dir.name[4:])
            if chosen is not None and (repo_dir.name, task_id) not in chosen:
                continue
            features = {int(d.name[7:]): Feature(int(d.name[7:]), d) for d in task_dir.iterdir()
                        if d.is_dir() and re.fullmatch(r"feature\d+", d.name)}
            if len(features) < 2:
                continue
            pairs = named_pairs.get((repo_dir.name, task_id)) or list(combinations(sorted(features), 2))
            for f1, f2 in pairs:
                if f1 in features and f2 in features:
                    out.append(Pair(repo_dir.name, task_id, task_dir, (features[f1], features[f2])))
    if not out:
        raise DatasetError(f"no CooperBench feature pairs under {str(root)!r} (expected <repo>/task<id>/feature<k>/)")
    return out


# -- the test command ------------------------------------------------------------------------
def test_command(task_dir: Path) -> list[str] | None:
    """The task's ``python -m pytest ...`` command from its ``runner.sh`` (variables resolved, a ``timeout``
    prefix dropped), as CooperBench reads it for its prompts; None when there is none (not a Python task)."""
    runner = task_dir / "runner.sh"
    if not runner.exists():
        return None
    lines = [ln.strip() for ln in runner.read_text().splitlines()]
    variables = {}
    for ln in lines:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", ln)
        if m:
            variables[m.group(1)] = m.group(2).strip().strip("\"'")
    for ln in lines:
        if ln.startswith("#") or "python -m pytest" not in ln:
            continue
        for name, value in variables.items():
            ln = ln.replace("${" + name + "}", value).replace("$" + name, value)
        words = shlex.split(ln[ln.index("python -m pytest"):])[3:]
        ends = [i for i, w in enumerate(words) if w in ("|", "||", "&&", ";") or w.lstrip("012&").startswith(">")]
        return words[:ends[0]] if ends else words  # the command alone, without what the shell does after it
    return None


# -- patches -----------------------------------------------------------------------------------
def sanitize(patch: str) -> str:
    """As CooperBench's evaluator: shell-escaped quotes undone, a final newline ensured."""
    if not patch:
        return patch
    patch = patch.replace("'\\''", "'")
    return patch if patch.endswith("\n") else patch + "\n"


# What CooperBench's evaluator counts as a test file (any language) and drops from an agent's patch, so that
# an agent's own test file cannot collide with the hidden tests patch.
_TEST_DIR = re.compile(r"/(tests?|__tests__|spec|testdata)/")
_TEST_FILE = re.compile(r"(^|/)(test_[^/]+|[^/]+_test\.[A-Za-z0-9]+|[^/]+\.(test|spec)\.[A-Za-z0-9]+"
                        r"|[^/]*Tests?\.(java|kt|cs|scala)|tests?\.py)$")


def is_test_path(path: str) -> bool:
    return bool(_TEST_DIR.search("/" + path) or _TEST_FILE.search(path))


def drop_test_files(patch: str) -> str:
    """``patch`` without the file sections that touch test files."""
    if not patch:
        return patch
    kept, skip = [], False
    for line in patch.split("\n"):
        if line.startswith("diff --git"):
            skip = any(is_test_path(p) for p in re.findall(r"[ab]/(\S+)", line))
        if not skip:
            kept.append(line)
    out = "\n".join(kept)
    return out if not out or out.endswith("\n") else out + "\n"


def digest(*texts: str) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()


# -- git -----------------------------------------------------------------------------------------
def git(*args: str, cwd: Path, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    # no user or system config: HOME must never be a directory an agent can write (a .gitconfig there could
    # name commands for git to run on the host)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(Path(cwd).resolve().parent),
           "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    result = subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, input=input, capture_output=True, text=True,
                            env=env, check=False)
    if check and result.returncode != 0:
        raise DatasetError(f"git {' '.join(args)} failed in {cwd}: {(result.stderr or result.stdout).strip()}")
    return result


def _base_commit(task_dir: Path) -> str | None:
    setup = task_dir / "setup.sh"
    if setup.exists():
        m = re.search(r"^BASE_COMMIT=[\"']?([0-9a-fA-F]{7,40})", setup.read_text(), re.MULTILINE)
        if m:
            return m.group(1)
    return None


def build_base(task_dir: Path, dest: Path) -> str:
    """A git repository at ``dest`` holding the task's base commit checked out; returns the commit id."""
    if shutil.which("git") is None:
        raise DatasetError("the real-task cooperbench game needs git on PATH")
    source = task_dir / "repo"
    dest.mkdir(parents=True)
    if (source / ".git").exists():
        git("clone", "-q", "--shared", str(source.resolve()), str(dest), cwd=dest.parent)
        commit = _base_commit(task_dir)
        if commit:
            git("checkout", "-q", "--detach", commit, cwd=dest)
    else:
        git("init", "-q", cwd=dest)
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True, symlinks=True)
        elif (task_dir / "repo.patch").exists():
            git("apply", "--whitespace=nowarn", "-", cwd=dest, input=(task_dir / "repo.patch").read_text())
        else:
            raise DatasetError(
                f"task {task_dir} has no base repository: CooperBench builds it in the task's Docker image "
                f"(setup.sh clones it at BASE_COMMIT); put a clone at {task_dir / 'repo'} to run it offline")
        git("add", "-A", cwd=dest)
        git("commit", "-q", "-m", "base", cwd=dest)
    return git("rev-parse", "HEAD", cwd=dest).stdout.strip()


@functools.lru_cache(maxsize=64)
def _versions(task_dir: str, patch: str) -> dict[str, str]:
    """The text of each file ``patch`` touches, after applying it to the base (cached per task and patch)."""
    import tempfile

    if not patch:
        return {}
    with tempfile.TemporaryDirectory(prefix="scope-cb-ref-") as tmp:
        repo = Path(tmp) / "repo"
        build_base(Path(task_dir), repo)
        paths = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", patch, re.MULTILINE)))
        if git("apply", "--whitespace=nowarn", "-", cwd=repo, input=patch, check=False).returncode:
            return {}
        return {p: (repo / p).read_text() for p in paths if (repo / p).is_file()}


def reference_versions(pair: Pair) -> dict[str, dict[str, str]]:
    """For scripted players only: file texts after each gold patch and after the combined patch (the base
    of the same files under ``base``)."""
    own = [_versions(str(pair.dir), f.gold_patch) for f in pair.features]
    combined = _versions(str(pair.dir), pair.combined_patch)
    paths = set(combined).union(*own)
    base = _base_files(str(pair.dir), tuple(sorted(paths)))
    return {"base": base, "feature1": own[0], "feature2": own[1], "combined": combined}


@functools.lru_cache(maxsize=64)
def _base_files(task_dir: str, paths: tuple[str, ...]) -> dict[str, str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="scope-cb-ref-") as tmp:
        repo = Path(tmp) / "repo"
        build_base(Path(task_dir), repo)
        return {p: (repo / p).read_text() if (repo / p).is_file() else "" for p in paths}


def parse_counts(output: str) -> tuple[int, int]:
    """(passed, failed) from pytest's summary, errors counted as failures (as CooperBench's evaluator)."""
    passed = re.search(r"(\d+) passed", output)
    failed = re.search(r"(\d+) failed", output)
    errors = re.search(r"(\d+) error", output)
    return (int(passed.group(1)) if passed else 0,
            (int(failed.group(1)) if failed else 0) + (int(errors.group(1)) if errors else 0))
