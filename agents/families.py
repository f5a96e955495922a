"""Seeded families of simulators: SCOPE's ensemble (training side) and its held-out panel.

A *family* is a sharpened reference user model — the game's ``Collapsed*``
simulator, a ``SharpenedReference`` — with its own parameters, drawn by one
mechanism for every game, from its ``GameSpec`` (``scope_envs.games``):

==================  =============================================================================
parameter           distribution (per family, from that family's own generator, in this order)
==================  =============================================================================
persona prior       the fixed card it plays: index ~ Uniform{0..N-1} over the game's personas of
                    the family's split (``train`` families: the TRAIN personas; ``heldout``
                    families: the HELD-OUT personas). P4G: ``personas.persona``; CooperBench:
                    ``styles.persona``; tau2: the behaviour card ``behaviour.card`` (the env still
                    deals the task).
``sharpening``      ``1 + LogNormal(mu=log 2, sigma=0.5)``: typicality exponent > 1, median 3 (the
                    frozen simulator's), 90% within about [1.9, 5.5].
``cooperation``     ``Uniform(c0 - w, c0 + w)``, the game's own over-cooperative bias:
                    P4G ``c0=1.0, w=0.5`` (added to the willingness logit; frozen: 1.0);
                    CooperBench ``c0=0.3, w=0.2`` (added to every style probability; frozen: 0.3);
                    tau2 ``c0=0.3, w=0.2`` (the fraction of the way the cooperative traits move
                    toward the modal, fully cooperative card; the frozen user *is* that card).
reply style         tau2 only (the one game whose cards carry one): ``terse`` / ``plain`` /
                    ``wordy``, uniformly, setting the card's ``verbose`` to 0.2 / 0.5 / 0.8 (the
                    text realizer's thresholds are 0.3 and 0.6). P4G's surface style follows the
                    persona's traits; CooperBench has none.
==================  =============================================================================

``calibration_noise`` (of the verbalized top-k) stays at the frozen simulator's 0.25.

Seed streams: family ``j`` of ``families(game, split, k, seed)`` is drawn from
``numpy.random.default_rng([FAMILY_KEYS[split], GAME_KEYS[game], seed, j])``.
``FAMILY_KEYS`` differ between ``train`` and ``heldout``, so the two splits are
disjoint seed streams for every ``seed``; family ``j`` does not depend on ``k``
(the first 3 of 6 families are the 3 families). The frozen simulator is not one
of them (family 0 of the train stream is not the frozen one).

docs/architecture.md §4.1: a ``train`` family reads only train personas and the
training-side reference model. ``heldout`` families (the evaluation panel,
``panel(game)``, six of them) play held-out personas — still through the
reference model, never the held-out behaviour model — and are for evaluation
only: ``panel_env`` seats one on held-out scenarios (``split="heldout"``).

SCOPE's ensemble (K = 3 families assigned by sample index) is
``scope_envs.make("<game>-rotation", families=3, schedule="index")``.

Example::

    >>> from scope_envs.agents.families import families, panel
    >>> [sim.family.persona.split for sim in families("p4g", k=3, seed=0)]
    ['train', 'train', 'train']
    >>> len(panel("tau2")), panel("tau2")[0].family.split
    (6, 'heldout')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scope_envs.core import seal
from scope_envs.core.env import DialogueParallelEnv
from scope_envs.core.game import Game, Persona
from scope_envs.core.simulator import Simulator
from scope_envs.games import game_names, game_spec, load

SPLITS = ("train", "heldout")
FAMILY_KEYS = {"train": 40_013, "heldout": 80_021}  # disjoint seed streams (docs/architecture.md §4.1)
DEFAULT_K = {"train": 3, "heldout": 6}  # SCOPE: an ensemble of 3 families; a held-out panel of 6
PANEL_SIZE = DEFAULT_K["heldout"]
SHARPENING_LOGNORMAL = (float(np.log(2.0)), 0.5)  # sharpening = 1 + LogNormal(mu, sigma)
CALIBRATION_NOISE = 0.25
# each game's family parameters are its GameSpec's (family_key, cooperation, reply_styles, card, collapsed); these
# are the registered games' at import, by name
GAMES = game_names()
GAME_KEYS = {g: game_spec(g).family_key for g in GAMES}
COOPERATION = {g: game_spec(g).cooperation for g in GAMES}  # (center, half width)
REPLY_STYLES = {g: dict(game_spec(g).reply_styles) for g in GAMES if game_spec(g).reply_styles}  # the card's verbose


def _personas(game: str):
    """``(number of personas of a split, persona(split, i))`` of a game's persona prior."""
    spec = game_spec(game)
    return load(spec.split_sizes), load(spec.card)


@dataclass(frozen=True)
class Family:
    """One drawn family: its parameters, and ``simulator()`` to build it."""

    game: str
    split: str
    index: int
    seed: int
    sharpening: float
    cooperation: float
    persona: Persona
    reply_style: str | None = None

    @property
    def gamma(self) -> float:
        """Deprecated name of ``sharpening`` (removed in the next release)."""
        return self.sharpening

    @property
    def entropy(self) -> tuple[int, int, int, int]:
        """The seed of this family's generator (its place in its stream)."""
        return FAMILY_KEYS[self.split], game_spec(self.game).family_key, self.seed, self.index

    @property
    def name(self) -> str:
        style = f"-{self.reply_style}" if self.reply_style else ""
        return (f"{self.split}-family{self.index}-s{self.seed}-{self.persona.id}-g{self.sharpening:.2f}"
                f"-c{self.cooperation:.2f}{style}")

    def simulator(self) -> Simulator:
        """The game's collapsed simulator with this family's parameters (``.family`` is this record)."""
        spec = game_spec(self.game)
        sim = load(spec.collapsed)(sharpening=self.sharpening, **{spec.card_keyword: self.persona},
                                   cooperation=self.cooperation, calibration_noise=CALIBRATION_NOISE, name=self.name)
        sim.family = self
        return sim


def _check(game, split, k, seed) -> int:
    if game not in game_names():
        raise ValueError(f"game must be one of {game_names()}, got {game!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    k = DEFAULT_K[split] if k is None else k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (the number of families) must be a positive int, got {k!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(k)


def draw(game: str, split: str, index: int, seed: int = 0) -> Family:
    """Family ``index`` of the ``(game, split, seed)`` stream."""
    _check(game, split, 1, seed)
    spec = game_spec(game)
    rng = np.random.default_rng([FAMILY_KEYS[split], spec.family_key, int(seed), int(index)])
    sizes, persona = _personas(game)
    card = persona(split, int(rng.integers(sizes[split])))
    sharpening = 1.0 + float(rng.lognormal(*SHARPENING_LOGNORMAL))
    center, width = spec.cooperation
    cooperation = float(rng.uniform(center - width, center + width))
    style = None
    if spec.reply_styles:
        styles = dict(spec.reply_styles)
        names = list(styles)
        style = names[int(rng.integers(len(names)))]
        card = Persona(card.id, card.split, {**card.traits, "verbose": styles[style]},
                       {**card.attributes, "reply_style": style})
    return Family(game, split, int(index), int(seed), sharpening, cooperation, card, style)


def family_specs(game: str, split: str = "train", k: int | None = None, seed: int = 0) -> list[Family]:
    """The first ``k`` families of a stream (default: 3 for ``train``, 6 for ``heldout``)."""
    k = _check(game, split, k, seed)
    return [draw(game, split, j, seed) for j in range(k)]


def families(game: str, split: str = "train", k: int | None = None, seed: int = 0) -> list[Simulator]:
    """The first ``k`` families of a stream, as simulators (each with its ``Family`` as ``.family``)."""
    if split == "heldout":
        seal.check(f"the held-out simulator families of {game} (the panel)")
    return [f.simulator() for f in family_specs(game, split, k, seed)]


def panel(game: str, seed: int = 0) -> list[Simulator]:
    """The held-out evaluation panel: six held-out families. Evaluation only (docs/architecture.md §4.1)."""
    return families(game, "heldout", PANEL_SIZE, seed)


def panel_env(game: Game | DialogueParallelEnv, member: Simulator, **env_kwargs) -> DialogueParallelEnv:
    """One panel member in the user seat, on held-out scenarios (``split="heldout"``). Evaluation only.

    ``game`` is a game, or an env whose game and surface the panel env takes (``panel_env(scope_envs.make(
    "p4g-heldout", surface="text"), member)`` seats the member on the text surface); ``surface=`` overrides."""
    if isinstance(getattr(game, "unwrapped", None), DialogueParallelEnv):
        env_kwargs.setdefault("surface", game.unwrapped.surface.name)
        game = game.unwrapped.game
    return DialogueParallelEnv(game, [member], split="heldout", regime="panel", **env_kwargs)
