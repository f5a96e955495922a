"""How a game is exposed: dialogue acts (``act``) or strings (``text``).

``act``: ``Discrete(n)`` actions with ``Dict(observation=Box, action_mask=Box(int8))``
observations — what SB3, RLlib, TorchRL and SuperSuit consume.
``text``: the transcript from the role's point of view in, a string out; the
chat-format message list rides in ``infos[agent]["messages"]``.
"""

from __future__ import annotations

import re
import string

import numpy as np
from gymnasium import spaces

from scope_envs.core.checks import check_int, short_repr
from scope_envs.core.game import Game, InGameError

CHARSET = frozenset(string.printable)
MAX_OBS_CHARS = 16384
MAX_MESSAGE_CHARS = 4000
# the largest max_message_chars an env takes: it is the Text action space's max_length, whose sample() (PettingZoo's
# api_test, any random agent) draws a length up to it and allocates that much (10**12 asked numpy for 853 GiB); a
# million is 30x cooperbench's whole-file writes (32,000) and the server's bound on every count it is sent
MAX_MESSAGE_CHARS_LIMIT = 1_000_000
# control characters (whitespace aside), surrogates and non-characters: binary, not text. U+FFFD stays
# readable: a model's output cut inside a multi-byte character decodes to it.
NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def check_message(text: str, max_chars: int) -> str:
    """A message as the game may read it (stripped), or an ``InGameError`` saying why not.

    Runs before any parsing, so no parser ever sees more than ``max_chars`` characters.
    """
    if len(text) > max_chars:
        raise InGameError(f"message too long: {len(text)} characters, the limit is {max_chars}")
    bad = NOT_TEXT.search(text)
    if bad:
        raise InGameError(f"message is not printable text (character U+{ord(bad.group()):04X} at {bad.start()})")
    text = text.strip()
    if not text:
        raise InGameError("empty message")
    return text


FEATURE_BOUND = 5.0  # act observations are the game's features clipped to [-5, 5]


def act_observation(game: Game, role: str) -> np.ndarray:
    """The act surface's observation vector of ``role``: what a trained act-level network reads."""
    return np.clip(game.features(role), -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)


class ActSurface:
    name = "act"

    def __init__(self, game: Game):
        self.game = game
        # the gymnasium spaces are built on first use (and the features' size read then): building them took
        # a good part of an env's construction, and an evaluation builds hundreds of envs whose spaces the
        # batched engine never reads
        self._obs_space = {}
        self._act_space = {}

    def observation_space(self, role):
        space = self._obs_space.get(role)
        if space is None:
            if role not in self.game.roles:
                raise KeyError(role)
            dim, n = self.game.features(role).shape[0], len(self.game.acts(role))
            space = self._obs_space[role] = spaces.Dict(
                {
                    "observation": spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, (dim,), np.float32),
                    "action_mask": spaces.Box(0, 1, (n,), np.int8),
                }
            )
        return space

    def action_space(self, role):
        space = self._act_space.get(role)
        if space is None:
            if role not in self.game.roles:
                raise KeyError(role)
            space = self._act_space[role] = spaces.Discrete(len(self.game.acts(role)))
        return space

    def observe(self, role, active: bool, errors: list[str]):
        mask = self.game.legal(role) if active else self._noop_mask(role)
        return {
            "observation": act_observation(self.game, role),
            "action_mask": mask.astype(np.int8),
        }

    def _noop_mask(self, role):
        m = np.zeros(len(self.game.acts(role)), dtype=bool)
        m[0] = True
        return m

    def parse(self, agent: str, role: str, action, active: bool) -> tuple[int, str]:
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"{agent}: action must be an int act index on the act surface, got "
                             f"{type(action).__name__} {short_repr(action)}")
        n = len(self.game.acts(role))
        if not 0 <= int(action) < n:
            raise ValueError(f"{agent}: act {short_repr(int(action))} is out of range [0, {n})")
        mask = self.game.legal(role) if active else self._noop_mask(role)
        if not mask[int(action)]:
            why = "it is not this agent's turn, only the no-op 0 is legal" if not active else "masked in action_mask"
            raise ValueError(f"{agent}: act {int(action)} ({self.game.acts(role)[int(action)]}) is illegal: {why}")
        return int(action), ""

    def infos(self, role: str) -> dict:
        return {}


class _UnicodeKind:
    """Equal to every numpy unicode dtype: numpy sizes ``<U`` by length, a transcript has none."""

    def __eq__(self, other):
        try:
            return np.dtype(other).kind == "U"
        except TypeError:
            return False

    def __hash__(self):
        return hash("U")

    def __repr__(self):
        return "dtype('<U*')"


class Transcript(spaces.Text):
    """A ``Text`` space of transcripts. Observations are ``np.str_`` (a ``str``), so
    PettingZoo's ``api_test`` can compare their dtype with the space's."""

    dtype = _UnicodeKind()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__.pop("dtype", None)


class TextSurface:
    name = "text"

    def __init__(self, game: Game, max_message_chars: int = MAX_MESSAGE_CHARS):
        max_message_chars = int(check_int("max_message_chars", max_message_chars, 1))
        self.game = game
        self.max_message_chars = max_message_chars
        self._obs_space = Transcript(MAX_OBS_CHARS, min_length=0, charset=CHARSET)
        self._act_space = spaces.Text(max_message_chars, min_length=1, charset=CHARSET)

    def observation_space(self, role):
        return self._obs_space

    def action_space(self, role):
        return self._act_space

    def observe(self, role, active: bool, errors: list[str]) -> np.str_:
        custom = self.game.transcript(role)  # a game may render its own transcript (tau2: tools, policy)
        lines = [] if custom is None else [custom]
        for turn in self.game.history if custom is None else ():
            who = "You" if turn.role == role else turn.role.capitalize()
            lines.append(f"{who}: {turn.text}")
        lines += [f"[error] {e}" for e in errors]
        text = "".join(c if c in CHARSET else "?" for c in "\n".join(lines))
        # The transcript keeps its most recent part; the full one is in infos["messages"].
        return np.str_(text[-MAX_OBS_CHARS:])

    def parse(self, agent: str, role: str, action, active: bool) -> tuple[int, str]:
        if not isinstance(action, str):  # also off turn: a wrong type is a programmer's error either way
            raise ValueError(f"{agent}: action must be a str on the text surface, got {type(action).__name__}")
        if not active:
            return 0, ""
        text = check_message(action, self.max_message_chars)
        return self.game.understand(role, text), text

    def infos(self, role: str) -> dict:
        custom = self.game.text_infos(role)
        if custom is not None:
            return custom
        messages = [{"role": "system", "content": self.game.instructions(role)}]
        for turn in self.game.history:
            messages.append({"role": "assistant" if turn.role == role else "user", "content": turn.text})
        return {"messages": messages}


SURFACES = {"act": ActSurface, "text": TextSurface}
