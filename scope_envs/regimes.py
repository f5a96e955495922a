"""Regime assembly: an id ``<game>-<regime>`` becomes a game, its players and wrappers.

Regimes decide who plays the user role (docs/architecture.md §2); every game supports every
regime. ``frozen`` and ``vs`` take ``user=``: any ``Simulator`` (an LLM player,
say) in place of the game's built-in frozen simulator, or ``"reference"``, the
game's reference model itself (sharpening 1, the dealt card, no cooperation bias:
a simulator without collapse, the benchmark's ``uncollapsed`` row).

The game's built-in frozen simulator is its collapsed simulator (``GameSpec.collapsed``: sharpened, over-cooperative)
on the modal card, or, where the game declares ``GameSpec.frozen_cards = k``, the same simulator on each of the first
k train cards, one dealt per episode (the calibration's ``homogeneous`` design: the homogeneous "easy mode" user,
chosen where the modal card's collapse costs nothing at the plateau, ``scope_envs.bench.calibration``). ``vs``
verbalizes whichever of them holds the seat.

``heldout`` puts the held-out human-proxy behaviour model in the user seat and
deals held-out personas/tasks (``split="heldout"``): for evaluation only. Its one
option, ``personas="train"``, keeps that behaviour model but deals the *train*
personas/tasks (the env's split is ``"train"``). It exists for one purpose: the
benchmark's ``oracle`` row, "PPO with the human proxy" trained on train
scenarios, the ceiling of docs/architecture.md §4 ("the best policy we can train against
the held-out behaviour model on *train* personas/tasks"). It is an upper bound
for measurement only and the one place where anything is trained against the
held-out behaviour model; no held-out persona or task is ever dealt to it, and
no method the benchmark compares trains on it. Its option ``behaviour="reference"``
keeps the held-out personas/tasks and seats the game's *training-side* reference
model (sharpening 1, the dealt card, no cooperation bias) instead of the proxies:
the users of the known-answer calibration (``scope_envs.bench.calibration``) and of
the evaluation side that splits a gap into collapse and misspecification
(``scope_envs.bench.protocol``); nothing of the held-out behaviour model is read
then. Its other option, ``assumptions``, switches the behaviour model's untestable
assumptions to a named variant (``VARIANTS`` of ``games.p4g.human_proxy`` and
``games.tau2.human_proxy``; the cooperbench proxy has none). ``rotation`` takes
``users=[...]``, your own simulators to rotate over, in place of the game's members.

``grounded`` is a regime only some games have (``registry.GAME_REGIMES``): the user seat is held by a frozen
simulator fitted to the *training part* of the game's real dialogues (``GameSpec.grounded``; p4g's
``GroundedPersuadee``, ``games/p4g/grounded.py``), on train personas. It takes no option. Its id,
``<game>-grounded``, is registered only for a game that declares that simulator, so the other games' ids,
and everything that loops over ``REGIMES``, stay as they were.

This module registers every id; it sits above the games, the players and the
wrappers and is imported by ``scope_envs`` itself.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable

from scope_envs.core.checks import check_int
from scope_envs.core.deprecation import sharpening_of
from scope_envs.core.env import LEARNABLE, DialogueParallelEnv
from scope_envs.core.game import Game
from scope_envs.core.simulator import Simulator
from scope_envs.core.surfaces import MAX_MESSAGE_CHARS
from scope_envs.games import GameSpec, load, on_register
from scope_envs.registry import GAME_REGIMES, REGIMES, register
from scope_envs.wrappers import CheckpointPool, SimulatorPopulation, VerbalizedSampling
from scope_envs.wrappers.verbalized import VS_OPTIONS

# the keyword arguments each regime takes beyond the game's own (scope_envs.vec.BATCHED_KWARGS reads these)
REGIME_KWARGS = {
    "frozen": {"user"},
    "vs": {"user", *VS_OPTIONS},  # verbalized sampling's options: wrappers/verbalized.py VSOptions
    "rotation": {"schedule", "families", "family_seed", "users"},
    "cotrain": set(),
    "population": {"members", "schedule", "pool_size", "snapshot_every", "pool_sample"},
    "heldout": {"personas", "assumptions", "behaviour"},
    "grounded": set(),
}
# the most simulator families (rotation's families=K) and co-trained users (population's members=K) one env builds:
# all are built in make(), so an unbounded count filled memory before make returned (families=10**9 grew past
# 3 GB in ten minutes; members=10**7 took 21 s). FAMILIES is every family anything names (diagnose's family:I,
# I < 1,000; SCOPE's ensemble is 3, the panel 6), MEMBERS train-llm's --members (SCOPE's population is 4).
MAX_FAMILIES = 1000
MAX_MEMBERS = 64
SHARPENING = 3.0  # the frozen simulator's sharpening exponent (``sharpening=``; ``gamma=`` is its deprecated name)
HELDOUT_PERSONAS = ("heldout", "train")  # the heldout regime's ``personas``: which split's cards/tasks it deals
BEHAVIOURS = ("proxy", "reference")  # the heldout regime's ``behaviour``: the held-out proxies, or the reference model


def seat_reference(reference, game, asked: str):
    """The game's reference model (``reference()``) for the option that ``asked`` for it; a ``ValueError`` where
    the game has none."""
    if reference is None:
        raise ValueError(f"this game ({game.name}) has no reference model for {asked}")
    return reference()


def frozen_members(game: Game, frozen: Callable[..., Simulator]) -> list[Simulator]:
    """The game's built-in frozen simulator(s): ``frozen()`` on its modal card, or on each of the first
    ``GameSpec.frozen_cards`` train cards (see the module docstring)."""
    from scope_envs.games import game_names, game_spec

    spec = game_spec(game.name) if game.name in game_names() else None
    if spec is None or not spec.frozen_cards:
        return [frozen()]
    card = load(spec.card)
    cards = [card("train", i) for i in range(spec.frozen_cards)]
    return [frozen(**{spec.card_keyword: c}, name=f"collapsed-{c.id}") for c in cards]


LEARNING_USER = ("cotrain", "population")  # the regimes whose user seat is trained, so is paid a user_reward


def _default_user_reward(game: Game):
    parameter = inspect.signature(type(game)).parameters.get("user_reward")
    return None if parameter is None else parameter.default


def build(
    regime: str,
    game: Game,
    *,
    frozen: Callable[[], Simulator],
    rotation: Callable[[], list[Simulator]],
    heldout: Callable[[], Simulator],
    reference: Callable[[], Simulator] | None = None,
    grounded: Callable[[], Simulator] | None = None,
    surface: str = "act",
    render_mode: str | None = None,
    max_errors: int = 3,
    max_message_chars: int = MAX_MESSAGE_CHARS,
    **options,
):
    if regime not in REGIMES + GAME_REGIMES:
        raise ValueError(f"regime must be one of {REGIMES + GAME_REGIMES}, got {regime!r}")
    unknown = set(options) - REGIME_KWARGS[regime]
    if unknown:
        raise ValueError(
            f"regime {regime!r} takes no option(s) {sorted(unknown)}; it takes {sorted(REGIME_KWARGS[regime]) or 'none'}"
        )

    paid = getattr(game, "user_reward", None)
    if regime not in LEARNING_USER and paid is not None and paid != _default_user_reward(game):
        raise ValueError(f"user_reward={paid!r} pays a user that learns: regime {regime!r} has none (the user_reward "
                         f"of {' and '.join(LEARNING_USER)} only; on {regime!r} it would change nothing)")

    user = options.pop("user", None)
    if isinstance(user, str) and user == "reference":  # the game's reference model: no defect of a simulator
        user = seat_reference(reference, game, "user='reference'")
    if user is not None and not isinstance(user, Simulator):
        raise ValueError(f"user must be a Simulator (e.g. an LLMPlayer) or 'reference', got {user!r}"
                         if isinstance(user, str) else
                         f"user must be a Simulator (e.g. an LLMPlayer) or 'reference', got {type(user).__name__}")

    def env(members, split="train"):
        return DialogueParallelEnv(game, members, surface=surface, split=split, regime=regime,
                                   render_mode=render_mode, max_errors=max_errors,
                                   max_message_chars=max_message_chars)

    def collapsed():
        """The frozen (and vs) regime's env: the user's simulator, or the game's collapsed one(s)."""
        if user is not None:
            return env([user])
        members = frozen_members(game, frozen)
        return env(members) if len(members) == 1 else SimulatorPopulation(env(members[:1]), members)

    if regime == "frozen":
        return collapsed()
    if regime == "grounded":  # the simulator fitted to the training part of the real dialogues, on train cards
        if grounded is None:
            raise ValueError(f"this game ({game.name}) has no user simulator fitted to real dialogues "
                             "(GameSpec.grounded), so no grounded regime")
        return env([grounded()])
    if regime == "vs":
        # selection="random"|"prob": SCOPE's verbalized-sampling draw (k=5 candidates, uniform or by stated
        # probability floored at 1e-6), in place of weight_mode; None (default): weight_mode decides
        return VerbalizedSampling(collapsed(), **options)
    if regime == "rotation":
        # families=K: the first K train-stream families of scope_envs.agents.families (seed family_seed);
        # None (default): the game's rotation_members. SCOPE's ensemble: families=3, schedule="index"
        # (member = episode index mod K).
        k, users = options.get("families"), options.get("users")
        if users is not None:  # users=[Simulator, ...]: rotation over the caller's own simulators
            if k is not None or "family_seed" in options:
                raise ValueError("rotation takes either users=[...] (your simulators) or families=K, not both")
            if isinstance(users, (str, bytes)) or not hasattr(users, "__iter__"):
                raise ValueError(f"users must be a list of Simulators, got {type(users).__name__}")
            members = list(users)
            bad = [type(m).__name__ for m in members if not isinstance(m, Simulator)]
            if not members or bad:
                raise ValueError(f"users must be a non-empty list of Simulators, got {bad or 'an empty list'}")
        elif k is None:
            if "family_seed" in options:
                raise ValueError("family_seed needs families=K (a positive int)")
            members = rotation()
        else:
            k = int(check_int("families", k, 1, MAX_FAMILIES, wanted=f"an int in [1, {MAX_FAMILIES}] (the number "
                                                                    "of simulator families)"))
            seed = int(check_int("family_seed", options.get("family_seed", 0), 0, wanted="a non-negative int"))
            from scope_envs.agents.families import families

            members = families(game.name, "train", k, seed=seed)
        return SimulatorPopulation(env([frozen()]), members, schedule=options.get("schedule", "uniform"))
    if regime == "cotrain":
        return env([LEARNABLE])
    if regime == "population" and {"pool_size", "snapshot_every", "pool_sample"} & set(options):
        if {"members", "schedule"} & set(options):
            raise ValueError("population takes either members/schedule (K co-trained users) or "
                             "pool_size/snapshot_every/pool_sample (a checkpoint pool), not both")
        return CheckpointPool(env([LEARNABLE]), options.get("pool_size", 5), options.get("snapshot_every", 4),
                              options.get("pool_sample", "uniform"))
    if regime == "population":
        k = check_int("members", options.get("members", 4), 1, MAX_MEMBERS)  # (a bool too is refused)
        return SimulatorPopulation(env([LEARNABLE]), [LEARNABLE] * k, schedule=options.get("schedule", "uniform"))
    # heldout: the human proxies on held-out scenarios (evaluation only); personas="train": the same behaviour
    # model on train scenarios, only for the benchmark's oracle ceiling (see the module docstring)
    personas = options.get("personas", "heldout")
    if personas not in HELDOUT_PERSONAS:
        raise ValueError(f"personas must be one of {HELDOUT_PERSONAS}, got {personas!r}")
    behaviour = options.get("behaviour", "proxy")
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"behaviour must be one of {BEHAVIOURS}, got {behaviour!r}")
    if behaviour == "reference":  # the training-side reference model on held-out scenarios (see the docstring)
        model = seat_reference(reference, game, "behaviour='reference'")
        if "assumptions" in options:
            raise ValueError("assumptions are the held-out proxies' variants: not with behaviour='reference'")
        return env([model], split=personas)
    # assumptions: a named variant of the behaviour model's untestable assumptions (the benchmark's --sensitivity)
    variant = options.get("assumptions")
    return env([heldout() if variant is None else heldout(assumptions=variant)], split=personas)


# -- the games' factories ------------------------------------------------------------------
def make_p4g(regime: str, surface: str = "act", *, max_turns: int = 10, user_reward: str = "mixed",
             sharpening: float | None = None, gamma: float | None = None, render_mode=None, max_errors: int = 3,
             target_var=None, width=None, **options):
    """Persuasion for Good (arguments: ``scope_envs.games.p4g``)."""
    sharpening = sharpening_of(sharpening, gamma, SHARPENING)
    from scope_envs.agents import p4g as players
    from scope_envs.games.p4g.game import P4GGame

    return build(regime, P4GGame(max_turns=max_turns, user_reward=user_reward, target_var=target_var, width=width),
                 frozen=lambda **card: players.CollapsedPersuadee(sharpening, **card),
                 rotation=players.rotation_members,
                 heldout=players.HumanProxyPersuadee, reference=players.ReferencePersuadee,
                 grounded=players.GroundedPersuadee, surface=surface, render_mode=render_mode, max_errors=max_errors,
                 **options)


def make_cooperbench(regime: str, surface: str = "act", *, max_turns: int | None = None,
                     user_reward: str = "persona", sharpening: float | None = None, gamma: float | None = None,
                     render_mode=None, max_errors: int = 3, target_var=None, width=None, tasks=None, data_dir=None,
                     **options):
    """CooperBench (arguments: ``scope_envs.games.cooperbench``); with ``tasks="demo"`` or ``data_dir=PATH``, the
    real-task game on the text surface (``scope_envs.games.cooperbench.code``)."""
    sharpening = sharpening_of(sharpening, gamma, SHARPENING)
    if tasks is not None or data_dir is not None:
        from scope_envs.games.cooperbench.code import game as code
        from scope_envs.games.cooperbench.code import partners

        if surface != "text":
            raise ValueError("the real-task cooperbench game (tasks=/data_dir=) plays the text surface only: "
                             "pass surface='text'")
        game = code.CodeGame(tasks, data_dir, max_turns=code.MAX_TURNS if max_turns is None else max_turns,
                             user_reward=user_reward, target_var=target_var, width=width,
                             **{k: options.pop(k) for k in code.GAME_OPTIONS if k in options})
        options.setdefault("max_message_chars", code.MAX_MESSAGE_CHARS)
        return build(regime, game, frozen=lambda: partners.collapsed(sharpening), rotation=partners.rotation_members,
                     heldout=partners.human_proxy, reference=lambda: partners.ScriptedCoder(None, name="reference"),
                     surface=surface, render_mode=render_mode, max_errors=max_errors, **options)
    from scope_envs.agents import cooperbench as players
    from scope_envs.games.cooperbench.game import CooperBenchGame

    game = CooperBenchGame(max_turns=12 if max_turns is None else max_turns, user_reward=user_reward, target_var=target_var, width=width)
    return build(regime, game,
                 frozen=lambda **card: players.CollapsedPartner(sharpening, **card),
                 rotation=players.rotation_members,
                 heldout=players.HumanProxyPartner, reference=players.ReferencePartner, surface=surface,
                 render_mode=render_mode, max_errors=max_errors, **options)


def make_tau2(regime: str, surface: str = "act", *, domain=("airline", "retail", "telecom"), data_dir=None,
              max_steps: int = 100, max_tool_errors: int = 10, judge=None, user_reward: str = "shared",
              sharpening: float | None = None, gamma: float | None = None, render_mode=None, max_errors: int = 3,
              target_var=None, width=None, **options):
    """tau^2-bench (arguments: ``scope_envs.games.tau2``)."""
    sharpening = sharpening_of(sharpening, gamma, SHARPENING)
    from scope_envs.agents import tau2 as players

    if surface == "act":
        from scope_envs.games.tau2.act_game import Tau2ActGame as GameClass
    else:  # the same act-level users; a realizer and a light NLU carry them onto text (text_game.py, nlu.py)
        from scope_envs.games.tau2.text_game import Tau2TextGame as GameClass
    game = GameClass(domain, data_dir, max_steps=max_steps, max_tool_errors=max_tool_errors, judge=judge,
                     user_reward=user_reward, target_var=target_var, width=width)
    return build(regime, game, frozen=lambda **card: players.CollapsedUser(sharpening, **card),
                 rotation=players.rotation_members,
                 heldout=players.HumanProxyUser, reference=players.ReferenceUser, surface=surface, render_mode=render_mode,
                 max_errors=max_errors, **options)


def _make(factory: str, regime: str, **kwargs):
    return load(factory)(regime, **kwargs)


def register_ids(spec: GameSpec) -> None:
    """Register ``<game>-<regime>`` for every regime of a declared game, and ``<game>-grounded`` when the game declares
    a grounded simulator; its factory is imported when one is made."""
    regimes = REGIMES + (("grounded",) if spec.grounded else ())
    for regime in regimes:
        register(f"{spec.name}-{regime}", functools.partial(_make, spec.factory, regime), game=spec.name, regime=regime)


on_register(register_ids)  # every game of scope_envs.games, and each one registered later
