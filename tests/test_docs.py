"""The README's and docs/' python blocks run as written (pages with a test of their own are left to it).

A block fenced ```python is a promise that it runs; an illustration that needs what a test cannot have (a
dataset folder, a GPU, a server) is fenced ```py and is not run."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# docs/trainers.md: tests/test_integrations.py; docs/llm.md: tests/test_llm.py (each needs its extras and fixtures);
# docs/serving.md: tests/test_remote.py against real servers (its verifiers block: tests/test_verifiers_env.py)
OWN_TEST = {"trainers.md", "llm.md", "serving.md"}
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in OWN_TEST)


def blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


def test_every_docs_link_resolves():
    """A relative link in the README or docs/ names a file that exists."""
    missing = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not missing, missing


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(page, capsys):
    for code in blocks(page):
        exec(compile(code, str(page.relative_to(ROOT)), "exec"), {"__name__": "docs"})


def test_benchmark_your_algorithm_states_the_smoke_cap_and_what_score_does_with_a_stale_reference():
    """A smoke run's evaluation cap (bench.runner's constants) and score's warn-only fingerprint check are said."""
    from scope_envs.bench.runner import SMOKE_EVAL_EPISODES, SMOKE_STEPS

    text = " ".join((ROOT / "docs" / "benchmark-your-algorithm.md").read_text().split())
    assert (f"`--steps` below {SMOKE_STEPS:,} without `--eval-episodes`, caps the evaluation and held-out episodes "
            f"at {SMOKE_EVAL_EPISODES} a side") in text
    assert "`score` only warns" in text and "exits 0" in text
