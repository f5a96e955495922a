"""The variants of a game's training-side world (``GameSpec.worlds``), put in place in this process.

A game may declare variants of the world its training side plays in, for the assumptions its data supports
least (p4g: ``no-interactions``, its persona x act interactions set to zero; ``scope_envs.games.p4g.reference``).
The calibration's cells (``benchmarks/collapse_design.py --world``) and the benchmark's runs (``scope-envs bench
--world``) train and judge in one of them; each puts the shipped world back afterwards.
"""

from __future__ import annotations

from scope_envs.games import game_spec, load


def world_names(game: str) -> tuple[str, ...]:
    """The variants of the game's training-side world (``GameSpec.worlds``; () where it declares none)."""
    spec = game_spec(game)
    return () if spec.worlds is None else tuple(load(spec.worlds))


def use_world(game: str, world: str | None) -> None:
    """Put the game's training-side world ``world`` in place in this process; None: as shipped (its "fitted"
    world, where it declares worlds), so that no cell inherits the world of the one before it."""
    spec = game_spec(game)
    if spec.worlds is None:
        if world is not None:
            raise ValueError(f"{game} declares no variants of its training-side world (GameSpec.worlds)")
        return
    worlds = load(spec.worlds)
    if (world or "fitted") not in worlds:
        raise ValueError(f"{game} world must be one of {tuple(worlds)}, got {world!r}")
    worlds[world or "fitted"]()
