"""A past revision of this checkout, laid out as the installed package, for paired speed runs.

``git archive REV`` gives the source tree, but the package maps ``scope_envs.agents`` and
``scope_envs.wrappers`` to top-level folders (``package-dir`` in pyproject.toml). With only the tree on
``PYTHONPATH`` those two would still come from the editable install, i.e. from the working tree. This moves
each mapped folder to where its import name puts it, as the revision's own pyproject.toml says, so that
``PYTHONPATH=DIR`` imports the whole revision.

    python benchmarks/baseline_tree.py HEAD /tmp/base     # then, e.g.
    python benchmarks/tau2_act_speed.py --baseline /tmp/base
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class ExportError(Exception):
    """``git archive`` could not export the revision (its message says why)."""


def export(rev: str, into: str | Path) -> Path:
    """Extract ``rev`` into the (existing, empty) folder ``into`` and lay out its mapped packages."""
    into = Path(into)
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    except subprocess.CalledProcessError as e:
        raise ExportError(f"cannot export {rev!r} from {REPO}: {e.stderr.decode().strip() or e}") from None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    setuptools = tomllib.loads((into / "pyproject.toml").read_text())["tool"]["setuptools"]
    for name, folder in setuptools.get("package-dir", {}).items():
        target = into.joinpath(*name.split("."))
        if (into / folder).resolve() != target.resolve():
            (into / folder).rename(target)
    return into


def child_output(cmd: list[str], env: dict, what: str, cwd=None) -> str:
    """The standard output of the child process ``cmd``; one that fails ends the calling script with ``what``
    failed, its exit status and the end of its standard error (never a bare ``CalledProcessError``, which
    would lose the child's own error)."""
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        tail = "\n".join((done.stderr.strip() or done.stdout.strip()).splitlines()[-15:])
        raise SystemExit(f"{Path(sys.argv[0]).name}: {what} failed with exit {done.returncode}:\n{tail}")
    return done.stdout


def output_path(text: str) -> Path:
    """``scope_envs.arguments.output_path``, imported here: vec_speed.py imports this module under a baseline
    revision's ``PYTHONPATH``, whose scope_envs may not have it."""
    from scope_envs.arguments import output_path as check

    return check(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="a git revision of this checkout")
    ap.add_argument("into", type=output_path, help="an empty folder (created if missing)")
    args = ap.parse_args(argv)
    if args.into.exists() and any(args.into.iterdir()):
        ap.error(f"into: {args.into} is not empty")
    args.into.mkdir(parents=True, exist_ok=True)
    try:
        export(args.rev, args.into)
    except ExportError as e:
        ap.error(f"rev: {e}")
    print(args.into)


if __name__ == "__main__":
    main()
