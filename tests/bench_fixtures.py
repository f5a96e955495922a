"""A tiny benchmark reference, built once per test session, for the --against tests (tests/test_bench_reference.py,
tests/test_examples.py): p4g, 2 seeds, 400 decisions, the band and frozen (plus rotation, a second method, so
that "the best built-in row" is a real choice); and ``load_script``, a ``benchmarks/`` script as a module."""

import importlib.util
import sys
from pathlib import Path

import pytest

REFERENCE_ARGS = ["--games", "p4g", "--seeds", "2", "--steps", "400", "--eval-episodes", "24"]
REFERENCE_METHODS = ["random", "oracle", "untrained", "frozen", "rotation"]


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory):
    from scope_envs.cli import main

    out = tmp_path_factory.mktemp("reference") / "ref"
    main(["bench", *REFERENCE_ARGS, "--methods", *REFERENCE_METHODS, "--out", str(out)])
    return out


def load_script(name: str):
    """``benchmarks/<name>.py`` imported as the module ``name`` (the scripts are not a package; as when one is run,
    its folder is on the path, so that it can import its neighbours)."""
    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    path = folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
