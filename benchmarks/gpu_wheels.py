"""The wheels the GPU check needs that its machine lacks, downloaded here for Python 3.12.

The GPU machine (one H200; Python 3.12, torch, transformers, peft and accelerate installed; no network)
gets this project's code and its small pure-Python dependencies as wheels, at most 64 MiB in all. This
script puts exactly those in ``benchmarks/wheels/`` (git-ignored):

* ``scope_envs-*.whl``, this checkout built as a wheel (pure Python) from a copy of its files (those git tracks,
  and the new ones it does not ignore): a build in the checkout itself reuses its ``build/`` folder, which can
  carry a module deleted since into the wheel;
* the pure-Python packages ``import scope_envs`` and the LLM trainer need beyond that image:
  ``WHEELS`` below (gymnasium and its two small dependencies, pettingzoo, tqdm, threadpoolctl),
  pinned to the versions this checkout's tests run with.

On the GPU machine, with the folder carried along::

    pip install --no-index --no-deps benchmarks/wheels/*.whl
    python benchmarks/llm_gpu.py --out benchmarks/results/llm_gpu.json

``pip download`` runs once per package with ``--only-binary=:all: --python-version 3.12 --no-deps``, so
nothing but those wheels is fetched and a package without a pure-Python wheel is an error, not a
source download. The folder's wheels are deleted first (a folder holding anything else is refused); the
total size is printed (it must stay under 64 MiB).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ("gymnasium==1.4.0", "farama-notifications==0.0.6", "cloudpickle==3.1.3", "pettingzoo==1.27.0",
          "tqdm==4.70.1", "threadpoolctl==3.8.0")
LIMIT = 64 * 2**20


def output_dir(text: str) -> str:
    """``scope_envs.arguments.output_dir`` where scope_envs imports (this script needs nothing else of it)."""
    try:
        from scope_envs.arguments import output_dir as check
    except ImportError:
        return text
    return check(text)


def wheels_dir(text: str) -> str:
    """``--dest``: a folder that holds nothing but wheels, or none yet: emptying it must never delete anything
    else (``--dest .`` in the checkout would delete the checkout)."""
    text = output_dir(text)
    path = Path(text)
    others = sorted(p.name for p in path.iterdir() if not (p.is_file() and p.suffix == ".whl")) \
        if path.is_dir() else []
    if others:
        raise argparse.ArgumentTypeError(f"{text!r} holds more than wheels ({', '.join(others[:3])}"
                                         f"{', ...' if len(others) > 3 else ''}), which emptying it would delete; "
                                         "give a new folder or one this script filled")
    return text


def copy_checkout(root: Path, to: Path) -> list[str]:
    """The checkout's files (git's tracked files that exist, and the untracked ones it does not ignore) copied
    under ``to``: what a clean clone with this working tree's changes holds; their paths."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    files = sorted({f for f in listed if f and (root / f).is_file()})
    for f in files:
        (to / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, to / f)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=wheels_dir, default=str(ROOT / "benchmarks" / "wheels"),
                    help="the folder (default benchmarks/wheels), new or holding only wheels: its wheels are "
                         "deleted first")
    args = ap.parse_args()
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    pip = [sys.executable, "-m", "pip"]
    for spec in WHEELS:
        subprocess.run(pip + ["download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                              "--dest", str(dest), spec], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy_checkout(ROOT, Path(tmp))
        subprocess.run(pip + ["wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(dest),
                              tmp], check=True)
    files = sorted(dest.glob("*.whl"))
    not_pure = [f.name for f in files if not f.name.endswith("-none-any.whl")]
    if not_pure:
        raise SystemExit(f"not pure-Python wheels: {not_pure}")
    total = sum(f.stat().st_size for f in files)
    for f in files:
        print(f"{f.stat().st_size / 2**20:7.2f} MiB  {f.name}")
    print(f"{total / 2**20:7.2f} MiB in all (limit {LIMIT / 2**20:.0f} MiB): {dest}")
    if total > LIMIT:
        raise SystemExit("over the 64 MiB a GPU job can carry")


if __name__ == "__main__":
    main()
