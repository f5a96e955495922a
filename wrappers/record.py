"""Append every finished episode to a JSON-lines file, one line per episode.

A line holds ``id``, ``seed`` and ``episode`` (the seed of the last seeded
reset and the episode's index since it, which together reproduce it),
``regime``, ``persona``, ``simulator`` (the user-seat member's name, or the
live user agent), ``surface``, ``turns`` (role, act, act name and text of each
turn; act-surface turns get a rendering of their act), ``outcome``,
``returns`` (per agent), and ``finished`` (False only for an episode cut off
by ``close()``). Each line is flushed and synced when its episode ends, so an
interrupted process loses at most the episode in flight.

A process killed while it writes can leave a torn last line. A writer opening
an existing file cuts such a tail back to the last complete line before it
appends (one writer per file), and ``read_transcripts`` skips a torn line with
a ``TornTranscriptWarning`` instead of failing, so a reader never sees half a
record and no complete record is ever lost.

Example::

    >>> import json, tempfile, numpy as np, scope_envs
    >>> from scope_envs.wrappers import RecordTranscripts
    >>> path = tempfile.mktemp(suffix=".jsonl")
    >>> env = RecordTranscripts(scope_envs.make("p4g-frozen"), path)
    >>> obs, infos = env.reset(seed=0)
    >>> while env.agents:
    ...     obs, *_ = env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[-1])})
    >>> line = json.loads(open(path).readline())
    >>> line["seed"], line["regime"], line["turns"][0]["role"], line["finished"]
    (0, 'frozen', 'persuader', True)
"""

from __future__ import annotations

import json
import os
import uuid
import warnings

import numpy as np
from pettingzoo.utils import BaseParallelWrapper

from scope_envs.core.checks import check_scalar_env, check_seed
from scope_envs.core.checks import short_repr


class RecordTranscripts(BaseParallelWrapper):
    """``env`` with every finished episode appended to the JSON-lines file ``path``, one line each (the module's
    docstring: the line's fields, torn lines, an example); ``read_transcripts(path)`` reads them back."""

    def __init__(self, env, path: str | os.PathLike):
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise ValueError(f"path must be a file name (a str or os.PathLike), got {short_repr(path)}")
        super().__init__(check_scalar_env("RecordTranscripts", env))
        self.path = os.fspath(path)
        # refused now, not when the first episode ends (an IsADirectoryError after an episode's, or a training
        # run's, worth of work)
        if not self.path or os.path.isdir(self.path):
            raise ValueError(f"path {short_repr(path)} must name a file to append to (such as runs/x.jsonl), "
                             + ("got an empty path" if not self.path else "got a folder"))
        # the file's folder is made now (``runs/x.jsonl`` without ``runs/``), not found missing when the first
        # episode ends; a folder that cannot be made is an error naming path, here
        folder = os.path.dirname(self.path)
        if folder:
            try:
                os.makedirs(folder, exist_ok=True)
            except (OSError, ValueError) as e:
                why = ("a file of that name is in the way" if isinstance(e, FileExistsError)
                       else getattr(e, "strerror", None) or e)
                raise ValueError(f"path {short_repr(path)}: cannot create its folder {short_repr(folder)}: "
                                 f"{why}") from None
        self._repaired = False
        self._seed: int | None = None
        self._episode = -1
        self._returns: dict[str, float] | None = None

    def reset(self, seed=None, options=None):
        check_seed("seed", seed)  # refused before it is recorded
        if seed is not None:
            self._seed, self._episode = seed, -1
        self._episode += 1
        obs, infos = self.env.reset(seed=seed, options=options)
        self._returns = {a: 0.0 for a in self.env.agents}
        return obs, infos

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        for a, r in rew.items():
            self._returns[a] = self._returns.get(a, 0.0) + float(r)
        if not self.env.agents:
            self._write(finished=True)
        return obs, rew, term, trunc, infos

    def close(self):
        if self._returns is not None and self.env.agents:
            self._write(finished=False)
        self.env.close()

    def _write(self, finished: bool):
        base = self.env.unwrapped
        game = base.game
        sim = base.simulator
        turns = []
        for i, t in enumerate(game.history):
            # the same rendering as render(): its own generator, so the env's randomness is untouched
            text = t.text or game.realize(t.role, t.act, np.random.default_rng(i))
            turns.append({"role": t.role, "act": int(t.act), "act_name": game.acts(t.role)[t.act], "text": text})
        record = {
            "id": uuid.uuid4().hex,
            "seed": self._seed,
            "episode": self._episode,
            "game": game.name,
            "regime": base.regime,
            "surface": base.surface.name,
            "persona": game.persona.id if game.persona else None,
            "simulator": sim.name if sim is not None else base.member_agent[base.member],
            "member": int(base.member),
            "turns": turns,
            "outcome": {k: float(v) for k, v in game.outcome().items()},
            "returns": self._returns,
            "finished": finished,
        }
        if not self._repaired:
            cut_torn_tail(self.path)
            self._repaired = True
        # one write per line, then fsync: a crash can cut only the line being written, never an earlier one
        line = (json.dumps(record) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._returns = None


class TornTranscriptWarning(UserWarning):
    """A transcript line cut short by a crash was skipped or removed."""


def cut_torn_tail(path: str | os.PathLike) -> int:
    """Cut a file back to its last complete line; returns the number of bytes removed (0: nothing torn)."""
    try:
        f = open(path, "r+b")
    except FileNotFoundError:
        return 0
    with f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:  # scan back in blocks for the last newline
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            i = block.rfind(b"\n")
            if i >= 0:
                end = start + i + 1
                break
            end = start
        if end == size:
            return 0
        f.truncate(end)
        f.flush()
        os.fsync(f.fileno())
    warnings.warn(f"{os.fspath(path)}: removed a torn last line ({size - end} bytes) left by an interrupted writer",
                  TornTranscriptWarning, stacklevel=3)
    return size - end


def read_transcripts(path: str | os.PathLike) -> list[dict]:
    """The recorded episodes. A line cut short by a crash is skipped with a ``TornTranscriptWarning``;
    a complete record that an older writer appended onto a torn line is recovered."""
    out, torn = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            try:
                out.append(json.loads(line))
                continue
            except json.JSONDecodeError:
                pass
            start = line.rfind('{"id": ')
            try:
                record = json.loads(line[start:]) if start > 0 else None
            except json.JSONDecodeError:
                record = None
            if record is not None:
                out.append(record)
            torn.append(number)
    if torn:
        warnings.warn(f"{os.fspath(path)}: skipped the torn part of line(s) {torn} (a writer was interrupted)",
                      TornTranscriptWarning, stacklevel=2)
    return out
