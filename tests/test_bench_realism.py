"""``scope_envs.bench.realism``: a user's distance to the real pairs against the probe agent, and the collapsed
copy of a grounded simulator."""

import numpy as np

from scope_envs.agents.p4g import CollapsedPersuadee, GroundedPersuadee
from scope_envs.bench.realism import collapsed_copy, distance_to_real


def test_the_grounded_simulator_is_nearer_the_real_pairs_than_the_collapsed_one():
    """The simulator fitted to the training part's pairs is far nearer them than the collapsed simulator and than
    its own collapsed copy; the measure is a fixed function of its seed."""
    grounded = distance_to_real("p4g", GroundedPersuadee(), episodes=150, seed=1)
    assert grounded == distance_to_real("p4g", GroundedPersuadee(), episodes=150, seed=1)
    assert grounded < distance_to_real("p4g", CollapsedPersuadee(), episodes=150, seed=1) - 0.05
    assert grounded < distance_to_real("p4g", collapsed_copy("p4g"), episodes=150, seed=1) - 0.05


def test_the_collapsed_copy_always_plays_the_modal_card_sharpened():
    import dataclasses

    from scope_envs.agents.base import sharpen
    from scope_envs.games.p4g import personas

    from scope_envs.core.simulator import View
    from scope_envs.games.p4g.game import P4GGame

    game = P4GGame()
    game.reset(personas.persona("train", 2), np.random.default_rng(0))
    game.apply("persuader", int(np.flatnonzero(game.legal("persuader"))[1]))
    view = View("persuadee", game.persona, tuple(game.history), game.legal("persuadee"), game.info())
    modal = dataclasses.replace(view, persona=personas.default_persona())
    copy = collapsed_copy("p4g")
    want = sharpen(GroundedPersuadee().distribution(modal), 3.0)
    assert np.allclose(copy.distribution(view), want)
    assert not np.allclose(copy.distribution(view), GroundedPersuadee().distribution(view))
