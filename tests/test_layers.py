"""The house's layers run one way (docs/architecture.md §3) and no module imports itself back.

core ← games ← players (agents) and wrappers ← regime assembly ← trainers ← bench / cli.
Every import counts, module-level or inside a function: a deferred import that
points upward is still an upward arrow.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {"scope_envs": ROOT / "scope_envs", "scope_envs.agents": ROOT / "agents",
                "scope_envs.wrappers": ROOT / "wrappers"}
LAYERS = [  # (module prefix, rank): the longest matching prefix wins
    ("scope_envs.registry", 0), ("scope_envs.core", 1), ("scope_envs.games", 2),
    ("scope_envs.agents", 3), ("scope_envs.wrappers", 3), ("scope_envs.regimes", 4), ("scope_envs", 4),
    ("scope_envs.train", 5), ("scope_envs.integrations", 5),
    # SCOPE's group math depends only on core, so that the vec engines (layer 4) can import it too
    ("scope_envs.train.groups", 1),
    # the held-out seal imports nothing, so that the registry (layer 0) can check it when an id is made
    ("scope_envs.core.seal", 0),
    ("scope_envs.bench", 6), ("scope_envs.validate", 6), ("scope_envs.cli", 6),
    ("scope_envs.arguments", 6), ("scope_envs.train_command", 6), ("scope_envs.study", 6), ("scope_envs.serve", 6), ("scope_envs.remote", 6), ("scope_envs.diagnose", 6),
]


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((package, *parts))
            if name.startswith("scope_envs.") and name.split(".")[1] in ("agents", "wrappers") \
                    and package == "scope_envs":
                continue  # only reached through the package-dir mapping
            found[name] = path
    return found


def deprecated_alias(path: Path) -> bool:
    text = path.read_text()
    return "DeprecationWarning" in text and "sys.modules[__name__]" in text


def script_guard(node) -> bool:
    """``if __name__ == "__main__":`` — a module run as a command, not imported."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    out = set()
    tree = ast.parse(path.read_text())
    tree.body = [node for node in tree.body if not script_guard(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                       for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in known and t != name}
    return out


def rank(name: str) -> int:
    return next(r for prefix, r in sorted(LAYERS, key=lambda layer: -len(layer[0]))
                if name == prefix or name.startswith(prefix + "."))


@pytest.fixture(scope="module")
def graph():
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items() if not deprecated_alias(path)}


def test_the_walk_finds_the_house(graph):
    for name in ("scope_envs.core.env", "scope_envs.regimes", "scope_envs.agents.p4g", "scope_envs.wrappers.verbalized",
                 "scope_envs.train.act_ppo", "scope_envs.bench"):
        assert name in graph
    assert "scope_envs.core.simulator" in graph["scope_envs.core.env"]


def test_no_upward_import(graph):
    upward = sorted(f"{a} (layer {rank(a)}) imports {b} (layer {rank(b)})"
                    for a, targets in graph.items() for b in targets if rank(b) > rank(a))
    assert not upward, "\n".join(upward)


def test_no_import_cycle(graph):
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "\n".join(cycles)


def test_game_modules_import_their_siblings_at_module_level(graph):
    """Inside a game's package a sibling imported in a function is a cycle being dodged: none is."""
    found = modules()
    hidden = []
    for name, path in found.items():
        parts = name.split(".")
        if parts[:2] != ["scope_envs", "games"] or len(parts) < 4:
            continue
        package = ".".join(parts[:3])
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if id(node) in top or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            hidden += [f"{name}: {ast.unparse(node)}" for t in targets if t == package or t.startswith(package + ".")]
    assert not hidden, "\n".join(hidden)


@pytest.mark.parametrize("old, new, name", [
    ("scope_envs.agents.ppo", "scope_envs.train.act_ppo", "PPOTrainer"),
    ("scope_envs.agents.llm.ppo", "scope_envs.train.llm.ppo", "train"),
    ("scope_envs.agents.llm.trl_adapter", "scope_envs.train.llm.trl", "environment_factory"),
    ("scope_envs.tau2", "scope_envs.games.tau2.replay", "replay"),
])
def test_old_import_paths_still_work_with_a_deprecation_warning(old, new, name):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_games_never_import_the_tools_even_as_scripts():
    """A games module imports nothing from ``validate/`` (nor bench, study, train, cli), not even in its
    ``if __name__ == "__main__":`` block: the command that plays players lives with the tools
    (``python -m scope_envs.validate.p4g``), so no circle closes through a script."""
    found = modules()
    known = set(found)
    tools = ("scope_envs.validate", "scope_envs.bench", "scope_envs.study", "scope_envs.train", "scope_envs.cli")
    bad = []
    for name, path in found.items():
        if not name.startswith("scope_envs.games."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):  # the whole module, __main__ blocks included
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            bad += [f"{name} imports {t}" for t in targets if t.startswith(tools) and (t in known or "." in t)]
    assert not bad, "\n".join(bad)


def test_no_games_module_mirrors_a_tools_module():
    """``games/<g>/X.py`` is never named after a tools module of the same game (``validate/<g>.py``): the
    two halves of a pair that import each other are how the last circle formed (games/p4g/validate.py)."""
    found = modules()
    tools = {name.rsplit(".", 1)[-1] for name in found if name.startswith("scope_envs.validate.")}
    mirrored = [name for name in found if name.startswith("scope_envs.games.") and name.count(".") == 3
                and name.rsplit(".", 1)[-1] in tools | {"validate"}]
    assert not mirrored, mirrored


def test_the_code_cites_sections_of_docs_architecture_that_exist():
    """Every ``docs/architecture.md §N`` in the code names a numbered section of that page, and the code cites
    no design file outside the repository."""
    import re

    page = (ROOT / "docs" / "architecture.md").read_text()
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", page, re.M))
    cited, outside = set(), []
    for folder in ("scope_envs", "agents", "wrappers", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            cited |= set(re.findall(r"docs/architecture\.md §(\d+(?:\.\d+)?)", text))
            if "DESIGN" + ".md" in text:
                outside.append(str(path.relative_to(ROOT)))
    assert cited and not cited - sections, sorted(cited - sections)
    assert not outside, outside


def test_no_module_outside_games_branches_on_a_game_name():
    """A game is declared once (``scope_envs/games/<g>/spec.py``): no module outside ``scope_envs/games/``
    compares anything with a game's name (a name as data, a default argument say, is fine)."""
    import re

    from scope_envs.games import game_names

    names = "|".join(game_names())
    branch = re.compile(rf"""(==|!=|\bin) *\(?["']({names})["']""")
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
             for name, path in modules().items() if not name.startswith("scope_envs.games")
             for i, line in enumerate(path.read_text().splitlines(), 1) if branch.search(line)]
    assert not found, "\n".join(found)
