"""Which simulator to diagnose: a ``--simulator`` spec turned into a ``Simulator``, and each game's built-ins.

A spec is one of

* a built-in name (``names(game)`` lists them; ``scope-envs diagnose --list`` prints them):
  ``frozen`` (the game's collapsed simulator, the ``<game>-frozen`` user), ``reference`` (the
  training-side reference model playing the dealt card, sharpening 1), ``sharpened:S`` (that reference
  sharpened by ``S``), ``cooperative:C`` (that reference with the game's cooperation bias ``C`` and
  nothing else), ``rotation:I`` (member ``I`` of the ``<game>-rotation`` default roster),
  ``family:I`` (train-stream family ``I`` of ``scope_envs.agents.families``, SCOPE's ensemble),
  ``panel:I`` (held-out panel family ``I``; evaluation only) and ``human_proxy`` (the held-out
  behaviour model; evaluation only); for a game that declares one (``GameSpec.grounded``: p4g),
  ``grounded``, the frozen simulator fitted to the training part of the real dialogues (the
  ``<game>-grounded`` user), listed beside ``frozen``;
* ``path/to/file.py:ClassName``: a ``Simulator`` subclass defined in that file, built with no arguments;
* ``openai:BASE_URL#MODEL``: an LLM behind an OpenAI-compatible chat endpoint, as an ``LLMPlayer`` on the
  text surface (its messages are read with the game's NLU);
* ``hf:DIR``: a local transformers model directory, likewise an ``LLMPlayer``.

``SpecError`` (a ``ValueError``) says in one line what is wrong with a spec.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from scope_envs.core.simulator import Simulator
from scope_envs.games import game_names, game_spec, load
from scope_envs.regimes import MAX_FAMILIES

GAMES = game_names()
MAX_SHARPENING = 100.0
FAMILIES = MAX_FAMILIES  # family:I takes I in 0..FAMILIES-1 (names() lists the default ensemble's, 0..DEFAULT_K-1)


class SpecError(ValueError):
    """A simulator spec that names nothing that can be built; the message is one line."""


@dataclass(frozen=True)
class Players:
    """A game's built-in players, imported only when the game is diagnosed."""

    reference: type  # ReferenceX(sharpening=, <GameSpec.card_keyword>=, name=, cooperation=)
    frozen: type
    human_proxy: type
    rotation: object  # () -> list of frozen members


def players(game: str) -> Players:
    if game not in game_names():
        raise SpecError(f"unknown game {game!r}; the games are {', '.join(game_names())}")
    spec = game_spec(game)
    return Players(load(spec.reference), load(spec.collapsed), load(spec.human_proxy), load(spec.rotation))


def reference(game: str, sharpening: float = 1.0, cooperation: float = 0.0) -> Simulator:
    """The training-side reference model on the dealt card, ``sharpening`` and ``cooperation`` applied."""
    return players(game).reference(sharpening=sharpening, cooperation=cooperation)


def on_card(game: str, card, name: str = "reference-own-card") -> Simulator:
    """The reference model (sharpening 1) always playing ``card`` (tau2: its fixed behaviour card, ``style``)."""
    return players(game).reference(sharpening=1.0, name=name, **{game_spec(game).card_keyword: card})


def names(game: str) -> list[str]:
    """Every built-in spec of ``game`` (the parametrised ones with their default parameter)."""
    from scope_envs.agents.families import DEFAULT_K, PANEL_SIZE

    rotation = len(players(game).rotation())
    grounded = ["grounded"] if game_spec(game).grounded else []
    return (["frozen", *grounded, "reference", "sharpened:3", f"cooperative:{game_spec(game).cooperation[0]:g}",
             "human_proxy"]
            + [f"rotation:{i}" for i in range(rotation)] + [f"family:{i}" for i in range(DEFAULT_K["train"])]
            + [f"panel:{i}" for i in range(PANEL_SIZE)])


def ranges(game: str) -> list[tuple[str, str]]:
    """The parametrised specs and the values each accepts (``--list`` prints them below the names)."""
    from scope_envs.agents.families import DEFAULT_K, PANEL_SIZE

    low, high = cooperation_range(game)
    return [("sharpened:S", f"S from 1 to {MAX_SHARPENING:g}"),
            ("cooperative:C", f"C from {low:g} to {high:g}"),
            ("rotation:I", f"I from 0 to {len(players(game).rotation()) - 1}"),
            ("family:I", f"I from 0 to {FAMILIES - 1} (listed above: SCOPE's default ensemble, 0 to "
                         f"{DEFAULT_K['train'] - 1})"),
            ("panel:I", f"I from 0 to {PANEL_SIZE - 1} (evaluation only)")]


EVALUATION_ONLY = ("panel", "human_proxy")  # they read held-out personas or the held-out behaviour model


def _number(text: str, spec: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"{spec!r}: {text!r} is not a number") from None
    if not low <= value <= high:
        raise SpecError(f"{spec!r}: the parameter must be in [{low:g}, {high:g}], got {value:g}")
    return value


def _index(text: str, spec: str, n: int) -> int:
    if not re.fullmatch(r"\d{1,6}", text) or int(text) >= n:
        raise SpecError(f"{spec!r}: the index must be an integer in 0..{n - 1}, got {text!r}")
    return int(text)


def cooperation_range(game: str) -> tuple[float, float]:
    return game_spec(game).cooperation_range


def builtin(game: str, spec: str) -> Simulator | None:
    """The built-in simulator ``spec`` names, or None when it is not a built-in name."""
    from scope_envs.agents.families import PANEL_SIZE, families, panel

    kind, _, arg = spec.partition(":")
    p = players(game)
    if kind in ("frozen", "collapsed") and not arg:
        return p.frozen()
    if kind == "grounded" and not arg and game_spec(game).grounded:
        return load(game_spec(game).grounded)()
    if kind == "reference" and not arg:
        return reference(game)
    if kind == "sharpened" and arg:
        return reference(game, _number(arg, spec, 1.0, MAX_SHARPENING))
    if kind == "cooperative" and arg:
        return reference(game, 1.0, _number(arg, spec, *cooperation_range(game)))
    if kind in ("human_proxy", "heldout") and not arg:
        return p.human_proxy()
    if kind == "rotation" and arg:
        members = p.rotation()
        return members[_index(arg, spec, len(members))]
    if kind == "family" and arg:
        i = _index(arg, spec, FAMILIES)
        return families(game, "train", i + 1)[i]
    if kind == "panel" and arg:
        return panel(game)[_index(arg, spec, PANEL_SIZE)]
    return None


def from_file(spec: str) -> Simulator:
    """``path/file.py:ClassName`` — the file is imported as a module and the class built with no arguments."""
    path, _, cls = spec.rpartition(":")
    file = Path(path)
    if not file.is_file():
        raise SpecError(f"{spec!r}: no such file {path!r}")
    if not cls.isidentifier():
        raise SpecError(f"{spec!r}: {cls!r} is not a class name")
    name = f"_scope_diagnose_{abs(hash(str(file.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, file)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"{spec!r}: {path!r} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:  # the user's file: its error, in one line
        raise SpecError(f"{spec!r}: importing {path} raised {type(e).__name__}: {e}") from None
    obj = getattr(module, cls, None)
    if not (isinstance(obj, type) and issubclass(obj, Simulator)):
        raise SpecError(f"{spec!r}: {path} has no Simulator subclass named {cls!r} "
                        "(scope_envs.core.simulator.Simulator)")
    if all(getattr(obj, m) is getattr(Simulator, m) for m in ("distribution", "act", "reply")):
        raise SpecError(f"{spec!r}: {cls} implements none of distribution(view), act(view, rng) and reply(view, "
                        "rng): a simulator answers with one of them (scope_envs.core.simulator.Simulator)")
    try:
        return obj()
    except Exception as e:
        raise SpecError(f"{spec!r}: {cls}() raised {type(e).__name__}: {e}") from None


def llm(spec: str, *, max_new_tokens: int = 64, timeout: float = 60.0, connect_timeout: float = 5.0) -> Simulator:
    """An ``LLMPlayer`` for ``openai:URL#MODEL`` (checked reachable first) or ``hf:DIR``."""
    from scope_envs.agents.llm import LLMPlayer
    from scope_envs.agents.llm.backends import BackendError, OpenAIBackend, TransformersBackend

    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        if not url or not model:
            raise SpecError(f"{spec!r}: an endpoint is openai:BASE_URL#MODEL, e.g. openai:http://127.0.0.1:8000/v1#qwen")
        from scope_envs.train.llm.panel import PanelError, Simulator as PanelEntry, check_reachable

        try:
            check_reachable(PanelEntry("diagnosed", "openai", base_url=url, model=model), timeout=connect_timeout)
        except PanelError as e:
            raise SpecError(str(e).replace("simulator 'diagnosed': ", "")) from None
        backend = OpenAIBackend(url, model, timeout=timeout, retries=1, backoff=0.2)
        return LLMPlayer(backend, name=f"openai:{model}", max_new_tokens=max_new_tokens)
    directory = spec[len("hf:"):]
    from scope_envs.train.llm.panel import PanelError, check_model_dir

    try:
        path = check_model_dir(directory)
        backend = TransformersBackend.from_path(path)
    except (PanelError, BackendError, OSError, ValueError) as e:
        raise SpecError(f"{spec!r}: {e}") from None
    return LLMPlayer(backend, name=f"hf:{Path(path).name}", max_new_tokens=max_new_tokens)


def resolve(game: str, spec: str, **llm_options) -> tuple[Simulator, str]:
    """``(simulator, kind)`` for a spec; kind is ``builtin``, ``file`` or ``llm``. ``SpecError`` otherwise."""
    players(game)  # an unknown game is an error first
    if spec.startswith(("openai:", "hf:")):
        return llm(spec, **llm_options), "llm"
    sim = builtin(game, spec)
    if sim is not None:
        return sim, "builtin"
    if ":" in spec and spec.rpartition(":")[0].endswith(".py"):
        return from_file(spec), "file"
    raise SpecError(f"unknown simulator {spec!r}: a built-in name ({', '.join(names(game))}), "
                    "path/file.py:ClassName, openai:BASE_URL#MODEL or hf:DIR")


def evaluation_only(spec: str) -> bool:
    return spec.partition(":")[0] in (*EVALUATION_ONLY, "heldout")
