"""argparse types for the command line: each checks one kind of value and says what it wanted.

argparse adds the argument's name and exits 2, so a mistyped value never reaches
a traceback or starts anything slow.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import scope_envs
from scope_envs.registry import training_refusal
from scope_envs.regimes import MAX_MEMBERS  # the most co-trained users a population keeps (train-llm --members)
from scope_envs.wrappers.pool import MAX_POOL_SIZE, MAX_SNAPSHOT_EVERY  # noqa: F401  (the pool's bounds, for the CLI)


def _number(cast, low: float, strict: bool, wanted: str):
    """An argparse type: a finite ``cast`` number above ``low`` (or at least it, unless ``strict``)."""

    def check(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if not (value > low if strict else value >= low) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {value}")
        return value

    check.__name__ = wanted.replace(" ", "_")
    return check


def number_in(low: float, high: float, low_open: bool = True, high_open: bool = False):
    """An argparse type: a number from ``low`` to ``high``, each end excluded where it is open."""
    wanted = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text[:40]!r}") from None
        above = low < value if low_open else low <= value
        below = value < high if high_open else value <= high
        if not (above and below):  # NaN fails too
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {value}")
        return value

    check.__name__ = wanted
    return check


learning_rate = number_in(0.0, 1.0)  # Adam above 1 only diverges (1e300 overflowed into NaN weights, saved)
positive_int = _number(int, 0, True, "a positive integer")
nonnegative_int = _number(int, 0, False, "an integer >= 0")
positive_float = _number(float, 0.0, True, "a positive finite number")
nonnegative_float = _number(float, 0.0, False, "a finite number >= 0")


def _is_dir(text: str) -> bool:
    """``Path(text).is_dir()``, False for a name the system cannot even look up (too long, a NUL byte)."""
    try:
        return Path(text).is_dir()
    except (OSError, ValueError):
        return False


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def nonempty(text: str) -> str:
    """A name or a path, refused when empty: ``--against "$REF"`` with ``REF`` unset would read as not given."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value; leave the option out, or give one")
    return text


def existing_dir(text: str) -> str:
    if not text:  # Path("") is the working folder: an unset shell variable would read it
        raise argparse.ArgumentTypeError('an empty folder name; give a folder ("." for the working folder)')
    if not _is_dir(text):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is a file, not a directory" if _is_file(text)
                                         else f"no such directory: {_shown(text)}")
    return text


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg} at character {e.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"max_turns\": 4}}', got {text!r}")
    return value


def game_name(text: str) -> str:
    known = sorted({spec.game for spec in scope_envs.registry.values()})
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown game {text!r}; known games: {', '.join(known)}")
    return text


def env_id(text: str) -> str:
    """An id of ``scope_envs.registry``."""
    if text not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {text!r}; `scope-envs list` prints them")
    return text


def llm_env_id(text: str) -> str:
    """An id of ``scope_envs.registry``, or ``llm-toy`` (train-llm's toy game)."""
    if text != "llm-toy" and text not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {text!r}; `scope-envs list` prints them "
                                         "(or 'llm-toy')")
    return text


GROUP_SIZE = 8  # SCOPE's episodes per scenario: the group size where --advantage grpo or the curriculum needs groups


def resolve_group_size(given: int | None, advantage: str, user_reward: str | None) -> int:
    """``--group-size`` as given, else 1, or ``GROUP_SIZE`` where GRPO or the curriculum reward needs groups."""
    if given is not None:
        return given
    return GROUP_SIZE if advantage == "grpo" or user_reward == "curriculum" else 1


def held_out_refusal(text: str) -> str | None:
    """Why a training command refuses ``--env text`` (``registry.training_refusal``, with the commands to use)."""
    reason = training_refusal(text)
    return reason and (f"{reason} with scope-envs score (the benchmark's ceiling: scope-envs bench --methods "
                       "oracle)")


def model_source(text: str) -> str:
    """A saved model's directory, or ``tiny`` (a random tiny model built here): nothing is ever downloaded."""
    if text != "tiny" and not _is_dir(text):
        raise argparse.ArgumentTypeError(f"no model directory {_shown(text)} (scope-envs never downloads models; "
                                         "pass a directory written by save_pretrained, or 'tiny')")
    return text


RAY_ADDRESS_FORM = r"(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}"  # ray://HOST:PORT or HOST:PORT (an IPv6 host in [])


def ray_address(text: str) -> str:
    """A Ray cluster to join: ``auto``, ``ray://HOST:PORT`` (Ray Client) or ``HOST:PORT`` (a head node's GCS)."""
    import re

    if text == "auto":
        return text
    if re.fullmatch(RAY_ADDRESS_FORM, text):
        # a port past 65535 is wrapped by the resolver and 0 connects nowhere useful: said here, not as a refused
        # connection to some other port or a Ray that waits minutes
        port = int(text.rpartition(":")[2])
        if not 1 <= port <= 65535:
            raise argparse.ArgumentTypeError(f"the port of {text!r} must be from 1 to 65535, got {port}")
        return text
    raise argparse.ArgumentTypeError(f"expected auto, ray://HOST:PORT or HOST:PORT, got {text!r}")


def count(high: int, low: int = 1):
    """An argparse type: an integer from ``low`` to ``high``. Every count on the command line has such a
    maximum, so that a mistyped 30-digit value is an error at once, never a run that goes on until killed."""
    wanted = f"an integer from {low} to {high:,}".replace(",", "_")

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text[:40]!r}") from None
        if not low <= value <= high:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:12]}... ({len(str(value))} digits)"
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {shown}")
        return value

    check.__name__ = wanted.replace(" ", "_")
    check.maximum = high
    return check


SEED_MAX = 2**32 - 1  # numpy's legacy seeds and most libraries' accept this range
MAX_DECISIONS = 100_000_000  # the most decisions a command line may ask one run to train
MAX_SEEDS = 1000  # the most seeds (0..N-1) a command line may ask to train or score
MAX_SIMULATED_EPISODES = 1_000_000  # the most episodes validate p4g (and its fit) or demo may simulate
seed = count(SEED_MAX, low=0)


def output_dir(text: str) -> str:
    """An output folder that can be created and written: not a file, not under a file, no name longer than the
    file system allows, not on a read-only file system, not where the file system takes no new names (``/proc``).
    Nothing is left here (``scope_envs.files.check_output_dir`` creates it when the work starts): the one probe,
    the folder's first missing part or a file in it, is removed at once. An empty string is refused (an unset
    shell variable, ``--out "$OUT"``, would otherwise write into the working folder): ``.`` names that one."""
    import os

    if not text:
        raise argparse.ArgumentTypeError('an empty folder name; give a folder ("." for the working folder)')
    if "\0" in text:
        raise argparse.ArgumentTypeError("a folder name cannot hold a NUL character")
    path = Path(text or ".")
    try:
        limit = os.pathconf(".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(os.fsencode(text)) >= 4096:
        raise argparse.ArgumentTypeError(f"the path {_shown(text)} is longer than the system allows")
    long = next((part for part in path.parts if len(os.fsencode(part)) > limit), None)
    if long is not None:
        raise argparse.ArgumentTypeError(f"the name {long[:24]!r}... is {len(os.fsencode(long))} bytes long; "
                                         f"the file system allows {limit}")
    existing = path
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "is a file" if existing == path else f"is under {str(existing)!r}, a file"
        raise argparse.ArgumentTypeError(f"{_shown(text)} {where}, not a folder")
    if not existing.exists():
        raise argparse.ArgumentTypeError(f"cannot create {_shown(text)}")
    if not os.access(existing, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        why = "on a read-only file system" if read_only else "not writable"
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {str(existing)!r} is {why}")
    # os.access says yes to root everywhere, and some file systems (/proc, /sys) refuse every new name: only
    # trying tells, so the first missing part is made and removed (or, for a folder that exists, a probe file)
    try:
        if existing == path:
            import tempfile

            fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=existing)
            os.close(fd)
            os.unlink(probe)
        else:
            first = existing / path.relative_to(existing).parts[0]
            first.mkdir()
            first.rmdir()
    except FileExistsError:  # made meanwhile by someone else: it exists, which is all the probe asks
        pass
    except OSError as e:
        what = "write in" if existing == path else "create"
        raise argparse.ArgumentTypeError(f"cannot {what} {_shown(text or '.')}: {e.strerror or e}") from None
    return text or "."


def output_path(text: str) -> Path:
    """``output_dir`` as a ``Path`` (for scripts that join names to it)."""
    return Path(output_dir(text))


def output_file(text: str) -> Path:
    """A file to write: not a folder, and its folder one that ``output_dir`` accepts (the caller creates it)."""
    if _is_dir(text):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is a folder, not a file name (name a file in it)")
    path = Path(text)
    output_dir(str(path.parent))
    return path


def saved_trainer(text: str) -> str:
    """A folder written by ``PPOTrainer.save``: ``config.json`` (a JSON object) and ``model.pt``."""
    path = Path(os.path.expanduser(text))
    if not _is_dir(str(path)):
        raise argparse.ArgumentTypeError(f"no such directory: {_shown(text)} (a saved trainer folder: "
                                         "PPOTrainer.save's config.json and model.pt)")
    missing = [name for name in ("config.json", "model.pt") if not (path / name).is_file()]
    if missing:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a saved trainer folder: it has no "
                                         f"{' and no '.join(missing)} (PPOTrainer.save writes both)")
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise argparse.ArgumentTypeError(f"{path / 'config.json'} is not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise argparse.ArgumentTypeError(f"{path / 'config.json'} is not a trainer's settings (a JSON object)")
    from dataclasses import fields

    from scope_envs.train.act_ppo import PPOConfig

    unknown = sorted(set(config) - {f.name for f in fields(PPOConfig)})
    if unknown:
        raise argparse.ArgumentTypeError(f"{path / 'config.json'} has keys PPOConfig does not know: "
                                         f"{', '.join(unknown)} (written by another version?)")
    return text


def torch_device(text: str) -> str:
    """A device the LLM trainer can use here: ``cpu``, ``cuda`` / ``cuda:N`` where torch sees that GPU, ``mps``
    where torch has it. Checked now, so a missing GPU is not a traceback once a model has loaded."""
    if text == "cpu":  # the default: no torch import to parse it
        return text
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"not a torch device: {text[:40]!r} "
                                         "(expected cpu, cuda, cuda:N or mps)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise argparse.ArgumentTypeError(f"{text!r}: torch sees no CUDA device here (torch {torch.__version__}, "
                                             f"{build}); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(f"{text!r}: torch sees {torch.cuda.device_count()} CUDA device(s), "
                                             f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    elif device.type == "mps":
        if not torch.backends.mps.is_available():
            raise argparse.ArgumentTypeError(f"{text!r}: torch has no MPS device here; use --device cpu")
    elif device.type != "cpu":
        raise argparse.ArgumentTypeError(f"{text!r}: the trainer runs on cpu, cuda or mps, not {device.type}")
    return text


def registered_id(text: str) -> str:
    """A registered environment id (``scope-envs list``); unlike ``env_id``, not ``llm-toy``."""
    if text not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {text[:60]!r}; `scope-envs list` prints them")
    return text


def listen_problem(host: str, port: int) -> tuple[str, str] | None:
    """Why a server cannot listen on ``host:port`` now, as ``(argument, message)``: the port in use, a host that is
    not this machine's, a privileged port; None when it can. Tried with a socket bound and closed at once, with
    ``SO_REUSEADDR`` as uvicorn binds (a port whose old connections linger in TIME_WAIT is free to it)."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as e:
        return "--host", f"cannot resolve {host!r}: {getattr(e, 'strerror', None) or e}"
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return "--port", f"{host}:{port} is in use"
            if e.errno == errno.EADDRNOTAVAIL:
                return "--host", f"{host} is not an address of this machine"
            if e.errno == errno.EACCES:
                return "--port", f"{host}:{port}: permission denied (ports below 1024 need privileges)"
            return "--port", f"cannot listen on {host}:{port}: {e.strerror or e}"
    return None


def float_below(high: float, low: float = 0.0):
    """An argparse type: a number from ``low`` (included) up to ``high`` (excluded), e.g. PPO's ``--clip-low``,
    whose ratio floor ``1 - x`` must stay above 0."""
    return number_in(low, high, low_open=False, high_open=True)
