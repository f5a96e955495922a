"""The package list, found by setuptools: ``scope_envs`` and its subpackages, and the two top-level folders the
project maps into it (``agents/`` as ``scope_envs.agents``, ``wrappers/`` as ``scope_envs.wrappers``:
``package-dir`` in pyproject.toml). Everything else is in pyproject.toml; this file exists because
``[tool.setuptools.packages.find]`` names a package by its folder and cannot find ``agents/llm`` as
``scope_envs.agents.llm``, and because a wheel carries the committed references (``BuildPy``), which live outside
the package, in ``benchmarks/results/``.
"""

import ast
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

MAPPED = ("agents", "wrappers")  # folder -> scope_envs.<folder>
SHIPPED_FILES = ("runs.jsonl.gz", "report.md")  # what --against reads of a reference: its records, its machine


def named_references() -> list[str]:
    """The folders of the named references ``--against`` reads: ``REFERENCES`` in scope_envs/bench/reference.py,
    read without importing the package (a build environment need not hold its dependencies)."""
    tree = ast.parse(Path("scope_envs/bench/reference.py").read_text())
    value = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and [getattr(t, "id", None) for t in node.targets] == ["REFERENCES"])
    return sorted({folder for folders in ast.literal_eval(value).values() for folder in folders})


class BuildPy(build_py):
    """Copies the committed references' records and reports into the wheel (``scope_envs/bench/references/``), so
    that ``scope-envs bench --against reference`` works from an installed wheel as from the checkout (an editable
    install reads the checkout's)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder in named_references():
            for name in SHIPPED_FILES:
                source = Path(folder) / name
                if source.is_file():
                    target = Path(self.build_lib) / "scope_envs" / "bench" / "references" / Path(folder).name / name
                    self.mkpath(str(target.parent))
                    self.copy_file(str(source), str(target))


setup(packages=find_packages(include=["scope_envs", "scope_envs.*"])
      + [f"scope_envs.{name}" for name in find_packages(include=[f"{m}{s}" for m in MAPPED for s in ("", ".*")])],
      cmdclass={"build_py": BuildPy})
