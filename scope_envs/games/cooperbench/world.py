"""The code world: a small repository of named regions, paired-feature tasks, and the merge.

A repository is three text files made of named regions (functions, config
blocks), each region separated from the next by unchanged context lines, so a
line-based three-way merge (``git merge-file``) sees each region on its own.
A task is a pair of features; each needs an edit in a set of regions, and
regions wanted by both are where conflicts arise. Editing a region *for its own
feature* adds that feature's line; a *combined* edit adds both features' lines,
the writer's own first (``edited_region``). Two teammates who each integrate
both features into one region write different text, as two people would, and
``git merge-file`` conflicts on it: a shared region needs exactly one owner,
who makes the combined edit while the other leaves the region alone. (Until
v0.3 combined edits were written in one fixed order, so that two of them were
identical and merged cleanly, and "both integrate everything" was a safe
strategy against every partner; see the package docstring's version history.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

FILES = {
    "config.py": ("parse_args", "defaults", "validate"),
    "data.py": ("load_data", "save_results", "cache"),
    "model.py": ("train_step", "evaluate", "metrics", "routes", "auth", "main"),
}
REGIONS = tuple(f"{path[:-3]}.{name}" for path, names in FILES.items() for name in names)
N_REGIONS = len(REGIONS)
FEATURES = ("A", "B")
SPLIT_KEYS = {"train": 4_411, "heldout": 8_837}
SPLIT_SIZES = {"train": 400, "heldout": 200}


@dataclass(frozen=True)
class Task:
    id: str
    split: str
    needs: tuple[frozenset[int], frozenset[int]]  # regions each feature must edit

    @property
    def overlap(self) -> frozenset[int]:
        return self.needs[0] & self.needs[1]


def _draw(rng: np.random.Generator) -> tuple[frozenset[int], frozenset[int]]:
    n_a, n_b = rng.integers(2, 5, size=2)
    n_overlap = int(rng.integers(0, 3))
    regions = rng.permutation(N_REGIONS)
    overlap = regions[:n_overlap]
    rest = regions[n_overlap:]
    a = set(overlap) | set(rest[: max(0, n_a - n_overlap)])
    b = set(overlap) | set(rest[max(0, n_a - n_overlap) : max(0, n_a - n_overlap) + max(1, n_b - n_overlap)])
    return frozenset(int(x) for x in a), frozenset(int(x) for x in b)


@functools.lru_cache(maxsize=None)
def tasks(split: str) -> tuple[Task, ...]:
    """The embedded task set of a split; held-out tasks share no region pattern with train ones."""
    if split not in SPLIT_KEYS:
        raise ValueError(f"split must be one of {sorted(SPLIT_KEYS)}, got {split!r}")
    seen = set() if split == "train" else {t.needs for t in tasks("train")}
    out, i = [], 0
    rng = np.random.default_rng(SPLIT_KEYS[split])
    while len(out) < SPLIT_SIZES[split]:
        needs = _draw(rng)
        if needs in seen:
            continue
        seen.add(needs)
        out.append(Task(f"{split}-{i:04d}", split, needs))
        i += 1
    return tuple(out)


def base_region(r: int) -> list[str]:
    name = REGIONS[r].split(".", 1)[1]
    return [f"def {name}():", f"    return '{name}'"]


def feature_line(r: int, feature: str) -> str:
    return f"    # feature {feature}: change in {REGIONS[r]}"


def edited_region(r: int, features: tuple[str, ...]) -> list[str]:
    """Region ``r`` with the lines of ``features`` inserted in the order given: a combined edit is
    ``(own feature, partner's)``, so the two teammates' combined edits of one region differ."""
    lines = base_region(r)
    return lines[:1] + [feature_line(r, f) for f in features] + lines[1:]


def branch_regions(edits: dict[int, tuple[str, ...]]) -> list[list[str]]:
    return [edited_region(r, edits[r]) if r in edits else base_region(r) for r in range(N_REGIONS)]


def render(regions: list[list[str]]) -> dict[str, str]:
    """File texts; three context lines between regions keep their hunks apart."""
    out, r = {}, 0
    for path, names in FILES.items():
        chunks = []
        for _ in names:
            chunks.append("\n".join(regions[r]))
            r += 1
        out[path] = ("\n#\n#\n#\n").join(chunks) + "\n"
    return out


def merge(edits_a: dict[int, tuple[str, ...]], edits_b: dict[int, tuple[str, ...]]):
    """Three-way merge of two branches off the base, region by region.

    Returns (merged regions, conflicted region ids). Same result as
    ``git merge-file`` on the rendered files (tested).
    """
    a, b = branch_regions(edits_a), branch_regions(edits_b)
    merged, conflicts = [], set()
    for r in range(N_REGIONS):
        base = base_region(r)
        if a[r] == b[r] or b[r] == base:
            merged.append(a[r])
        elif a[r] == base:
            merged.append(b[r])
        else:
            merged.append(base)
            conflicts.add(r)
    return merged, conflicts


def feature_done(merged: list[list[str]], conflicts: set[int], needs: frozenset[int], feature: str) -> bool:
    return all(r not in conflicts and feature_line(r, feature) in merged[r] for r in needs)


def solo_success(task: Task, max_turns: int) -> bool:
    """The solo baseline: one agent that knows both features makes every edit itself
    (combined where both need a region) and submits, within one teammate's turns."""
    return len(task.needs[0] | task.needs[1]) + 1 <= max_turns
