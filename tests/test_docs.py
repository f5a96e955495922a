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
    """A relative link in the README, docs/, tests/README.md or the benchmarks' pages names a file that exists."""
    missing = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tests" / "README.md",
             ROOT / "benchmarks" / "README.md", ROOT / "benchmarks" / "scripts.md",
             *sorted((ROOT / "benchmarks" / "log").glob("*.md"))]
    for page in pages:
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
    from scope_envs.bench.presets import SMOKE_EVAL_EPISODES, SMOKE_STEPS

    text = " ".join((ROOT / "docs" / "benchmark-your-algorithm.md").read_text().split())
    assert (f"`--steps` below {SMOKE_STEPS:,} without `--eval-episodes`, caps the evaluation and held-out episodes "
            f"at {SMOKE_EVAL_EPISODES} a side") in text
    assert "`score` only warns" in text and "exits 0" in text


def table_cells(page: Path, header: str) -> list[str]:
    """The first cells of the Markdown table under the header row that starts with ``header``."""
    lines = page.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_tests_readme_lists_every_test_file_once():
    """tests/README.md's table names each test file exactly once, and names no file that is not there."""
    here = ROOT / "tests"
    files = {p.relative_to(here).as_posix() for p in here.rglob("test_*.py")}
    listed = re.findall(r"`((?:[\w/]+/)?test_\w+\.py)`", "\n".join(table_cells(here / "README.md", "| module")))
    twice = sorted({name for name in listed if listed.count(name) > 1})
    assert not twice, f"listed more than once: {twice}"
    assert sorted(files - set(listed)) == [], "test files missing from tests/README.md's table"
    assert sorted(set(listed) - files) == [], "tests/README.md's table names files that do not exist"


def test_the_benchmarks_page_is_a_results_page_with_an_index_of_every_script():
    """benchmarks/README.md stays short (the dated history lives in benchmarks/log/, the index of the scripts in
    benchmarks/scripts.md, both linked from it), and the index has one line for each script in benchmarks/."""
    page = ROOT / "benchmarks" / "README.md"
    assert len(page.read_text().splitlines()) <= 420
    assert "(log/README.md)" in page.read_text() and "(scripts.md)" in page.read_text()
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    index = ROOT / "benchmarks" / "scripts.md"
    indexed = [re.match(r"\| `(\w+\.py)` \|", row).group(1) for row in table_cells(index, "| script |")]
    assert indexed == sorted(indexed) and sorted(set(indexed)) == indexed, "one line per script, by name"
    assert indexed == scripts


def test_every_scope_envs_command_in_a_shell_block_parses(capsys, monkeypatch, tmp_path):
    """A `scope-envs ...` line in a README or docs/ shell block is a command a user pastes: it names arguments and
    choices the command line has (a path it names may be the user's own, so a missing folder is let pass)."""
    import shlex

    from scope_envs.cli import build_parser

    lines = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "benchmarks" / "README.md"]:
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("scope-envs "):
                    lines.append((page.relative_to(ROOT), line.split(" #")[0]))
    assert len(lines) >= 15
    monkeypatch.chdir(tmp_path)  # (an --out is only probed, but not in the checkout)
    wrong = []
    for page, line in lines:
        try:
            build_parser().parse_args(shlex.split(line)[1:])
        except SystemExit as e:
            said = capsys.readouterr().err.strip().splitlines()
            if e.code and not re.search(r"no such (directory|file)|no model directory", said[-1] if said else ""):
                wrong.append(f"{page}: {line}: {said[-1] if said else e.code}")
    assert not wrong, wrong
