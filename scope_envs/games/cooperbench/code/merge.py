"""The end of an episode: the two branches merged with git and graded by both features' tests.

The procedure is CooperBench's evaluator (``cooperbench`` 0.0.29,
``eval/sandbox.py::test_merged``), step by step:

1. test files are dropped from both patches (``dataset.drop_test_files``);
2. two branches off the base: ``agent1`` with ``patch1`` (``agent_0``'s),
   ``agent2`` with ``patch2``, each applied by ``git apply``, then
   ``git apply --3way``; a patch that does neither is ``failed``, an empty one
   ``skipped``;
3. byte-identical non-empty patches skip the merge (``identical``; the patch is
   normalised by applying and re-diffing it);
4. otherwise a naive merge: on ``agent2``, ``git merge agent1 --no-commit
   --no-ff``. No union fallback (0.0.29 removed it). Status ``clean``,
   ``conflicts`` (the conflicting files are kept) or, when a patch failed to
   apply, ``missing_input``;
5. ``clean``/``identical``: each feature's tests patch and the merged diff go
   onto a fresh base and its tests run: those results are final.
   Otherwise the lead's fallback: ``patch1`` alone is tested against
   feature 1's tests, and only if they pass against feature 2's; if both
   pass, both features count as passed (strategy ``solo-agent1``).

Success is both features passing. Test runs are cached per (tests patch,
patch) digest: the same inputs give the same verdict (the tests are
deterministic programs over the same files), and repeated episodes with
unchanged branches do not pay for them again.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from scope_envs.games.cooperbench.code.dataset import (
    digest,
    drop_test_files,
    git,
    sanitize,
)
from scope_envs.games.cooperbench.code.sandbox import TestRun

CACHE_SIZE = 256


@dataclass
class MergeResult:
    status: str  # clean | identical | conflicts | missing_input
    strategy: str  # naive | skip-merge-identical | solo-agent1
    apply_status: dict[str, str]
    conflicting_files: list[str]
    feature_passed: tuple[bool, bool]
    runs: list[TestRun] = field(default_factory=list)
    merged_diff: str = ""

    @property
    def success(self) -> bool:
        return all(self.feature_passed)


# verdicts shared by every game in the process, keyed by the task, the backend and its limits and the inputs
_VERDICTS: OrderedDict[tuple, TestRun] = OrderedDict()


class Grader:
    """Runs test patches on the base through a sandbox, with a bounded cache of verdicts."""

    def __init__(self, sandbox, base: Path, command, cache: bool = True, task: str = ""):
        self.sandbox, self.base, self.command, self.cache, self.task = sandbox, base, command, cache, task
        self.runs = 0  # test runs actually executed

    def test(self, tests_patch: str, patch: str) -> TestRun:
        key = (self.task, self.sandbox.name, repr(getattr(self.sandbox, "limits", None)),
               getattr(self.sandbox, "network", ""), digest(tests_patch, patch))
        if self.cache and key in _VERDICTS:
            _VERDICTS.move_to_end(key)
            return _VERDICTS[key]
        run = self.sandbox.run(self.base, self.command, tests_patch, patch)
        self.runs += 1
        if self.cache and not run.timed_out:  # a timeout may be the machine's load: not a verdict
            _VERDICTS[key] = run
            if len(_VERDICTS) > CACHE_SIZE:
                _VERDICTS.popitem(last=False)
        return run


def _apply(repo: Path, patch: str) -> str:
    if not patch:
        return "skipped"
    for extra in ((), ("--3way",)):
        if git("apply", "--whitespace=nowarn", *extra, "-", cwd=repo, input=patch, check=False).returncode == 0:
            return "applied"
        git("reset", "-q", "--hard", cwd=repo, check=False)
    return "failed"


def merge_and_grade(grader: Grader, patch1: str, patch2: str, tests1: str, tests2: str) -> MergeResult:
    patch1, patch2 = (drop_test_files(sanitize(p)) if p.strip() else "" for p in (patch1, patch2))
    with tempfile.TemporaryDirectory(prefix="scope-cb-merge-") as tmp:
        repo = Path(tmp) / "repo"
        git("clone", "-q", "--shared", str(grader.base), str(repo), cwd=Path(tmp))
        base_sha = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
        status = {}
        for n, patch in (("agent1", patch1), ("agent2", patch2)):
            git("checkout", "-q", "--detach", base_sha, cwd=repo)
            git("checkout", "-q", "-b", n, cwd=repo)
            status[n] = _apply(repo, patch)
            git("add", "-A", cwd=repo)
            git("commit", "-q", "--allow-empty", "-m", f"{n} changes", cwd=repo)

        if patch1 and patch1 == patch2:
            git("checkout", "-q", "agent1", cwd=repo)
            merged = git("diff", "--binary", base_sha, "HEAD", cwd=repo).stdout or patch1
            runs = [grader.test(tests1, merged), grader.test(tests2, merged)]
            return MergeResult("identical", "skip-merge-identical", {"agent1": "applied", "agent2": "applied"}, [],
                               (runs[0].passed, runs[1].passed), runs, merged)

        git("checkout", "-q", "agent2", cwd=repo)
        merge = git("merge", "agent1", "--no-commit", "--no-ff", cwd=repo, check=False)
        conflicting: list[str] = []
        if merge.returncode:
            conflicting = git("diff", "--name-only", "--diff-filter=U", cwd=repo).stdout.split()
            git("merge", "--abort", cwd=repo, check=False)
        if "failed" in status.values():
            verdict = "missing_input"
        elif merge.returncode:
            verdict = "conflicts"
        else:
            verdict = "clean"
        if verdict == "clean":
            git("commit", "-q", "--allow-empty", "-m", "merge", cwd=repo)
            merged = git("diff", "--binary", base_sha, "HEAD", cwd=repo).stdout
            runs = [grader.test(tests1, merged), grader.test(tests2, merged)]
            return MergeResult(verdict, "naive", status, [], (runs[0].passed, runs[1].passed), runs, merged)

    # no merged tree: the lead's (agent1's) patch alone may still carry both features
    runs = []
    if status["agent1"] == "applied":
        runs.append(grader.test(tests1, patch1))
        if runs[0].passed:
            runs.append(grader.test(tests2, patch1))
            if runs[1].passed:
                return MergeResult(verdict, "solo-agent1", status, conflicting, (True, True), runs, patch1)
    return MergeResult(verdict, "naive", status, conflicting, (False, False), runs, "")
