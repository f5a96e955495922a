"""A tiny benchmark reference, built once per test session, for the --against tests (tests/test_bench_reference.py,
tests/test_examples.py): p4g, 2 seeds, 400 decisions, the band and frozen (plus rotation, a second method, so
that "the best built-in row" is a real choice)."""

import pytest

REFERENCE_ARGS = ["--games", "p4g", "--seeds", "2", "--steps", "400", "--eval-episodes", "24"]
REFERENCE_METHODS = ["random", "oracle", "untrained", "frozen", "rotation"]


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory):
    from scope_envs.cli import main

    out = tmp_path_factory.mktemp("reference") / "ref"
    main(["bench", *REFERENCE_ARGS, "--methods", *REFERENCE_METHODS, "--out", str(out)])
    return out
