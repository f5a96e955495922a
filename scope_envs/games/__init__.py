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

from scope_envs.games.spec import GameSpec, build, load, unloadable

__all__ = ["GameDeclarationError", "GameSpec", "build", "game_names", "game_spec", "load", "on_register",
           "register_game"]

ENV_VAR = "SCOPE_ENVS_GAMES"
ENTRY_POINTS = "scope_envs.games"
_specs: dict[str, GameSpec] = {}
_listeners: list[Callable[[GameSpec], None]] = []
_discovered = False
_declaration_errors: list[str] = []


class GameDeclarationError(ValueError):
    """A game declared outside the package (``SCOPE_ENVS_GAMES``, an entry point) that cannot be loaded: a module
    not on the path, one that fails to import, or one without ``SPEC = GameSpec(...)``. Importing ``scope_envs``
    still works (the other games are registered); listing the games, or looking one up, raises it."""


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
    built_in = [f"{__name__}.{m.name}.spec" for m in pkgutil.iter_modules(__path__) if m.ispkg]
    # an installed distribution declares its games as setuptools entry points (``scope_envs.games``: a name =
    # its spec module), as gymnasium's and pettingzoo's plug-ins do; SCOPE_ENVS_GAMES names modules on the path
    declared = [(f"entry point {ep.name!r} of group {ENTRY_POINTS}", ep.value.split(":")[0])
                for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)]
    declared += [(ENV_VAR, m.strip()) for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]
    found = []
    for module in built_in:
        try:
            found.append(importlib.import_module(module).SPEC)
        except ModuleNotFoundError as e:  # a built-in package without a spec.py is not a game
            if e.name != module:  # the module exists and failed to import: that is its own error
                raise
    for source, module in declared:
        # a game of the user's that does not load must not stop `import scope_envs` (nor every command's --help):
        # the fault is kept, and said in one line where the games are listed or looked up
        try:
            spec = importlib.import_module(module).SPEC
        except ModuleNotFoundError as e:
            missing = e.name == module or module.startswith(f"{e.name}.")  # the module, or a package above it
            problem = (f"no module {module!r} on the path" if missing else
                       f"importing {module!r} failed: {type(e).__name__}: {e}")
        except AttributeError:
            problem = f"{module!r} has no SPEC: a game's spec module defines SPEC = GameSpec(...)"
        except Exception as e:  # noqa: BLE001  (the user's module: any error of its own)
            problem = f"importing {module!r} failed: {type(e).__name__}: {str(e)[:200]}"
        else:
            # a misspelt path would register the ids and fail later, far from the spec (a bench run's "lost worker")
            if not isinstance(spec, GameSpec):
                problem = f"{module}.SPEC is a {type(spec).__name__}, not a GameSpec"
            else:
                problem = unloadable(spec)
                problem = problem and f"{module}: {problem}"
            if not problem:
                found.append(spec)
                continue
        _declaration_errors.append(f"{source}: {problem}")
    for spec in sorted(found, key=lambda s: (s.order, s.name)):
        register_game(spec)


def _check_declarations() -> None:
    if _declaration_errors:
        raise GameDeclarationError("; ".join(_declaration_errors))


def game_names() -> tuple[str, ...]:
    """Every registered game, in declared order (``GameSpec.order``); a ``GameDeclarationError`` where a game
    declared outside the package did not load."""
    _discover()
    _check_declarations()
    return tuple(sorted(_specs, key=lambda name: (_specs[name].order, name)))


def game_spec(name: str) -> GameSpec:
    """The spec of game ``name``; an ``UnknownGame`` (a ``KeyError``) naming the known games otherwise."""
    _discover()
    _check_declarations()
    if name not in _specs:
        raise UnknownGame(f"unknown game {name!r}; the games are {', '.join(game_names())}")
    return _specs[name]


def on_register(listener: Callable[[GameSpec], None]) -> None:
    """Call ``listener(spec)`` for every registered game now and for each one registered later."""
    _discover()  # the games found first, so that each is told once (a declaration's fault waits for game_names)
    names = sorted(_specs, key=lambda name: (_specs[name].order, name))
    _listeners.append(listener)
    for name in names:
        listener(_specs[name])
