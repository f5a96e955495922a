"""``GameSpec``: what the rest of the package needs to know about a game, declared once beside its rules.

The env core plays any ``Game``; the tools around it (the benchmark, its calibration and report, diagnose,
the server, the command line, the simulator families) also need a game's players, its metric, its budgets and
its dials. Each game declares them in one ``GameSpec`` (``scope_envs/games/<g>/spec.py``, registered in
``scope_envs.games``), and those tools read the spec instead of branching on the game's name.

Players and functions are named by import path (``"module:attribute"``), not imported: a games module
imports only ``core`` and its own package (docs/architecture.md §3), while the players live in ``agents/``
and some tools' per-game pieces in the tools themselves. ``load`` imports one when it is needed. A path may
end in ``(game)`` or ``(env)``: the object is then built with the game (or the env) it plays in (``build``).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

_BUILT_WITH = re.compile(r"^(?P<path>[\w.]+:[\w.]+)(?:\((?P<arg>game|env)\))?$")


@dataclass(frozen=True)
class GameSpec:
    """One game, as the tools see it. Paths are ``"module:attribute"`` (see the module docstring)."""

    name: str  # the ids' prefix: "<name>-frozen" ... "<name>-heldout"
    factory: str  # make(regime, surface="act", **kwargs) -> the env: scope_envs.regimes.build with the players
    order: int  # the game's place in every list of games (the benchmark's default --games, its report)

    # -- the players (agents/<g>.py): the training-side reference model, its collapsed (frozen) simulator, the
    # held-out behaviour model, and rotation_members() -> the rotation regime's default roster
    reference: str  # Reference(sharpening=, <card_keyword>=, calibration_noise=, name=, cooperation=)
    collapsed: str  # the same keywords; the game's modal card, sharpening 3, its cooperation bias by default
    human_proxy: str  # HumanProxy(assumptions=None); evaluation only
    rotation: str

    # -- the cards a simulator can be fixed to (persona or behaviour card): card(split, i), SPLIT_SIZES, the modal
    # card; the keyword the reference takes one by: "persona" (the card is the dealt persona) or "style" (a
    # behaviour card laid over the dealt task's persona, as tau2's)
    card: str
    split_sizes: str
    modal_card: str
    card_keyword: str = "persona"

    # -- a frozen user simulator fitted to the training part of the game's real dialogues, built with no argument
    # (None: the game has none). It holds the user seat of ``<game>-grounded`` (train cards; registered only for a
    # game that declares one), the benchmark's ``grounded`` row trains against it, and diagnose names it
    # ``grounded``
    grounded: str | None = None
    # -- the training part's real reply pairs a realism-paid user is told apart from (``user_reward="realism"``,
    # ``scope_envs.train.realism``), built with no argument: an object with ``fit`` and ``held_back`` (count
    # tables of one shape), ``shape`` and ``cells(agent_acts, user_acts)`` -> an episode's flat cell indices (None:
    # the game has no real dialogues, and no realism reward)
    realism: str | None = None

    # -- the metric: what agent_0 is (the report's "agent_0 = the ...") and the success metric's label
    role_label: str = "agent"
    metric_label: str = "success"
    success_note: str = ""  # the report's sentence on what success is ("" : the metric_label)

    # -- the benchmark: the plateau rule's ladder base (the default budget before the rule) and its answers, the
    # methods' budget and the ceiling's at the default preset (bench.budgets, benchmarks/plateau_budget.py); the
    # frozen regime's simulator: 0, the collapsed simulator on its modal card (the calibration's ``combined``), or
    # k, its defects on the first k train cards, one dealt per episode (``homogeneous``: the calibration's rule);
    # the held-out side's episode floor and the default run's
    # seed floor (bench.protocol, bench.methods: derived by their rules before the run that uses them); the held-out
    # proxies' assumption variants (an ordered mapping with "default"; bench --sensitivity); the report's section of
    # the game's own figures, report(results, runs, game) -> lines; the data the game plays, data() -> the
    # fingerprint's {"source", "detail", "sha256"} (None: the package's own files, in the code hash)
    ladder_base: int = 20_000
    budget: int = 20_000
    ceiling_budget: int = 100_000
    frozen_cards: int = 0
    eval_episodes_min: int = 0
    seeds_min: int = 0
    variants: str | None = None
    # the training-side world's own untestable assumptions as named variants: a mapping from a name to the function
    # that puts that world in place in this process, "fitted" (as shipped) among them; None: the game declares none
    # (the calibration's sensitivity of its known answers, ``benchmarks/collapse_design.py --world``)
    worlds: str | None = None
    report: str | None = None
    data: str | None = None

    # -- the simulator families (agents.families): the game's seed stream, its cooperation bias (center, half width)
    # and the range a diagnosed bias may take, and the reply styles a family draws ((name, the card's verbose), ...)
    family_key: int = 0
    cooperation: tuple[float, float] = (0.0, 0.0)
    cooperation_range: tuple[float, float] = (-5.0, 5.0)
    reply_styles: tuple[tuple[str, float], ...] = ()

    # -- diagnose: the fixed agent of the probes (on the text surface, probe_text_agent where there is one: built
    # with the env, called with no argument for its message), whether it explores (EXPLORE of its acts uniform),
    # the user's conceding acts, the episode's cooperation outcome (key, threshold, label), and the command that
    # checks a folder of real dialogues (diagnose --data; None: the game has none)
    probe_agent: str = ""
    probe_text_agent: str | None = None
    probe_explores: bool = True
    concede: tuple[str, ...] = ()
    cooperation_outcome: tuple[str, float, str] = ("success", 0.0, "success")
    real_dialogues: str | None = None

    # -- serve: the agent seat's scripted player (the user seat gets the collapsed simulator) and, where only one of
    # the game's classes is served with them, its module
    served_agent: str | None = None
    served_game_module: str | None = None

    # -- validate: real versus simulated statistics, validate(data, ...) (None: no such command), whether it
    # simulates episodes (validate(data, episodes=, seed=)) or replays the data once, and its out-of-sample check
    validate: str | None = None
    validate_simulates: bool = True
    out_of_sample: str | None = None

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"a game's name is lowercase letters, digits and _, got {self.name!r}")
        if self.card_keyword not in ("persona", "style"):
            raise ValueError(f"card_keyword must be 'persona' or 'style', got {self.card_keyword!r}")


PATH_FIELDS = ("factory", "reference", "collapsed", "human_proxy", "rotation", "grounded", "realism", "card",
               "split_sizes", "modal_card", "variants", "worlds", "report", "data", "probe_agent", "probe_text_agent",
               "real_dialogues", "served_agent", "validate", "out_of_sample")  # the fields naming "module:attribute"


def unloadable(spec: GameSpec) -> str | None:
    """The first path of ``spec`` that does not load, and why (None: every one loads)."""
    for name in PATH_FIELDS:
        path = getattr(spec, name)
        if path:
            try:
                load(path)
            except Exception as e:  # noqa: BLE001  (the game's own modules: any error of theirs)
                return f"GameSpec.{name} {path!r} does not load: {type(e).__name__}: {str(e)[:200]}"
    return None


def load(path: str):
    """The object ``"module:attribute"`` names (a trailing ``(game)``/``(env)`` is ignored: see ``build``)."""
    match = _BUILT_WITH.match(path)
    if not match:
        raise ValueError(f"expected 'module:attribute', optionally followed by (game) or (env), got {path!r}")
    module, _, attribute = match["path"].partition(":")
    obj = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def build(path: str, game=None, env=None):
    """``load(path)`` called: with the game for ``...(game)``, the env for ``...(env)``, else with no argument."""
    arg = _BUILT_WITH.match(path)["arg"] if _BUILT_WITH.match(path) else None
    made = load(path)
    return made(game) if arg == "game" else made(env) if arg == "env" else made()
