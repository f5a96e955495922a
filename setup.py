"""The package list, found by setuptools: ``scope_envs`` and its subpackages, and the two top-level folders the
project maps into it (``agents/`` as ``scope_envs.agents``, ``wrappers/`` as ``scope_envs.wrappers``:
``package-dir`` in pyproject.toml). Everything else is in pyproject.toml; this file exists because
``[tool.setuptools.packages.find]`` names a package by its folder and cannot find ``agents/llm`` as
``scope_envs.agents.llm``.
"""

from setuptools import find_packages, setup

MAPPED = ("agents", "wrappers")  # folder -> scope_envs.<folder>

setup(packages=find_packages(include=["scope_envs", "scope_envs.*"])
      + [f"scope_envs.{name}" for name in find_packages(include=[f"{m}{s}" for m in MAPPED for s in ("", ".*")])])
