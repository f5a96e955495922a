"""The games, and the one registry of what the package needs to know about each (``GameSpec``).

``game_spec(name)`` is a game's spec, ``game_names()`` the games in their declared order, ``register_game(spec)``
adds one. The built-in games are found, not listed: every subpackage ``scope_envs/games/<g>/`` with a
``spec.py`` holding ``SPEC``. A game kept outside the package is declared the same way in a module of its own
(``SPEC = GameSpec(...)``), named by its distribution's entry point in the group ``scope_envs.games`` or in the
environment variable ``SCOPE_ENVS_GAMES`` (module names, comma separated): every process that imports ``scope_envs`` — the benchmark's worker processes too — then finds it
(docs/adding-a-game.md). ``on_register(fn)`` calls ``fn(spec)`` for every game, those declared later included:
``scope_envs.regimes`` registers each game's ``<g>-<regime>`` ids that way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
from typing import Callable

from scope_envs.games.spec import GameSpec, build, load

__all__ = ["GameSpec", "build", "game_names", "game_spec", "load", "on_register", "register_game"]

ENV_VAR = "SCOPE_ENVS_GAMES"
ENTRY_POINTS = "scope_envs.games"
_specs: dict[str, GameSpec] = {}
_listeners: list[Callable[[GameSpec], None]] = []
_discovered = False


class UnknownGame(KeyError, ValueError):
    """A name no registered game has; the message names the known ones (a ``KeyError``, and a ``ValueError`` as
    a bad argument is)."""

    def __str__(self):
        return self.args[0]


def register_game(spec: GameSpec) -> GameSpec:
    """Declare a game: its spec is what ``game_spec(spec.name)`` returns from now on, and every listener
    (``on_register``) is told. A second spec under a registered name is a ``ValueError``."""
    if not isinstance(spec, GameSpec):
        raise TypeError(f"register_game takes a GameSpec, got {type(spec).__name__}")
    if spec.name in _specs:
        if _specs[spec.name] is spec:
            return spec
        raise ValueError(f"game {spec.name!r} is already registered")
    _specs[spec.name] = spec
    for listener in _listeners:
        listener(spec)
    return spec


def _discover() -> None:
    """Register the built-in games (each ``scope_envs/games/<g>/spec.py``) and those ``SCOPE_ENVS_GAMES`` names."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    modules = [f"{__name__}.{m.name}.spec" for m in pkgutil.iter_modules(__path__) if m.ispkg]
    # an installed distribution declares its games as setuptools entry points (``scope_envs.games``: a name =
    # its spec module), as gymnasium's and pettingzoo's plug-ins do; SCOPE_ENVS_GAMES names modules on the path
    modules += [ep.value.split(":")[0] for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)]
    modules += [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]
    found = []
    for module in modules:
        try:
            found.append(importlib.import_module(module).SPEC)
        except ModuleNotFoundError as e:
            if e.name != module:  # the module exists and failed to import: that is its own error
                raise
            if not module.startswith(__name__ + "."):  # a built-in package without a spec.py is not a game
                raise ValueError(f"{ENV_VAR}: no module {module!r} on the path") from None
        except AttributeError:
            raise ValueError(f"{module}: a game's spec module defines SPEC = GameSpec(...)") from None
    for spec in sorted(found, key=lambda s: (s.order, s.name)):
        register_game(spec)


def game_names() -> tuple[str, ...]:
    """Every registered game, in declared order (``GameSpec.order``)."""
    _discover()
    return tuple(sorted(_specs, key=lambda name: (_specs[name].order, name)))


def game_spec(name: str) -> GameSpec:
    """The spec of game ``name``; an ``UnknownGame`` (a ``KeyError``) naming the known games otherwise."""
    _discover()
    if name not in _specs:
        raise UnknownGame(f"unknown game {name!r}; the games are {', '.join(game_names())}")
    return _specs[name]


def on_register(listener: Callable[[GameSpec], None]) -> None:
    """Call ``listener(spec)`` for every registered game now and for each one registered later."""
    names = game_names()  # the built-in games found first, so that each is told once
    _listeners.append(listener)
    for name in names:
        listener(_specs[name])
