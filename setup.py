"""The package list, found by setuptools: ``scope_envs`` and its subpackages, and the two top-level folders the
project maps into it (``agents/`` as ``scope_envs.agents``, ``wrappers/`` as ``scope_envs.wrappers``:
``package-dir`` in pyproject.toml). Everything else is in pyproject.toml; this file exists because
``[tool.setuptools.packages.find]`` names a package by its folder and cannot find ``agents/llm`` as
``scope_envs.agents.llm``, and because a wheel carries the committed references (``BuildPy``), which live outside
the package, in ``benchmarks/results/``.
"""

from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

MAPPED = ("agents", "wrappers")  # folder -> scope_envs.<folder>
# the named references --against reads (scope_envs.bench.reference.REFERENCES): their records and report
SHIPPED = {"benchmarks/results/default": ("runs.jsonl.gz", "report.md"),
           "benchmarks/results/reference-sb3": ("runs.jsonl.gz", "report.md")}


class BuildPy(build_py):
    """Copies the committed references' records and reports into the wheel (``scope_envs/bench/references/``), so
    that ``scope-envs bench --against reference`` works from an installed wheel as from the checkout (an editable
    install reads the checkout's)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder, names in SHIPPED.items():
            for name in names:
                source = Path(folder) / name
                if source.is_file():
                    target = Path(self.build_lib) / "scope_envs" / "bench" / "references" / Path(folder).name / name
                    self.mkpath(str(target.parent))
                    self.copy_file(str(source), str(target))


setup(packages=find_packages(include=["scope_envs", "scope_envs.*"])
      + [f"scope_envs.{name}" for name in find_packages(include=[f"{m}{s}" for m in MAPPED for s in ("", ".*")])],
      cmdclass={"build_py": BuildPy})
