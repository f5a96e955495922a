"""Loading a user's object by name: ``path/to/file.py:NAME`` or ``package.module:NAME`` (for ``--method`` and
``--policy``). The errors say what is wrong, with the user's own exception where their file raised."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path


class PluginError(ValueError):
    """A method plug-in could not be loaded, or its training broke the protocol (the message names it)."""


def is_file_spec(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def from_file(path: str, attr: str, spec: str, flag: str = "--method"):
    """``attr`` of the Python file ``path`` (imported once per process, under a name of its own)."""
    file = Path(os.path.expanduser(path))
    if not file.exists():
        raise PluginError(f"{flag} {spec}: no such file {file}")
    if not file.is_file():
        what = "a directory, not a Python file" if file.is_dir() else "not a regular file (a Python file is read)"
        raise PluginError(f"{flag} {spec}: {file}: {what}")
    if file.suffix != ".py":  # importlib finds no loader for another suffix
        raise PluginError(f"{flag} {spec}: {file} is not a Python file: its name must end in .py")
    name = "scope_envs_plugin_" + re.sub(r"\W", "_", str(file.resolve()))
    if name in sys.modules:
        module = sys.modules[name]
    else:
        loader_spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            loader_spec.loader.exec_module(module)
        # the user's file: its error, named, without our traceback; a script's sys.exit at import too (it would
        # end the command with its message alone, naming neither the file nor the flag)
        except (Exception, SystemExit) as e:  # noqa: BLE001
            del sys.modules[name]
            raise PluginError(f"{flag} {spec}: importing {file} failed: {type(e).__name__}: {e}") from e
    return attr_of(module, attr, spec, flag)


def from_module(where: str, attr: str, spec: str, flag: str = "--method"):
    try:
        module = importlib.import_module(where)
    except (Exception, SystemExit) as e:  # noqa: BLE001  (as from_file's)
        # the console script's path has no working folder, where a module of one's own often is: its file form
        file = Path(*where.split(".")).with_suffix(".py")
        here = f"; {file} is a file here: give it as {flag} {file}:{attr}" if isinstance(e, ModuleNotFoundError) \
            and e.name == where.split(".")[0] and file.is_file() else ""
        raise PluginError(f"{flag} {spec}: cannot import {where}: {type(e).__name__}: {e}{here}") from e
    return attr_of(module, attr, spec, flag)


def attr_of(module, attr: str, spec: str, flag: str = "--method"):
    try:
        return getattr(module, attr)
    except AttributeError:
        names = sorted(n for n in vars(module) if not n.startswith("_"))
        where = getattr(module, "__file__", None) if module.__name__.startswith("scope_envs_plugin_") else None
        raise PluginError(f"{flag} {spec}: {where or module.__name__} has no {attr!r} (it defines "
                          f"{', '.join(names)})") from None


def load_object(spec: str, flag: str = "--method"):
    """The object ``FILE.py:NAME`` or ``module:NAME`` names."""
    where, _, attr = spec.rpartition(":")
    if not attr.isidentifier():
        raise PluginError(f"{flag} {spec}: {attr!r} is not a Python name")
    return from_file(where, attr, spec, flag) if is_file_spec(where) else from_module(where, attr, spec, flag)
