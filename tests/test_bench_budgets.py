"""scope_envs.bench.budgets: the plateau rule's ladder and its judgement."""

import pytest

from scope_envs.bench import budgets as b


def test_the_ladder_puts_five_times_a_rung_two_rungs_up():
    ladder = [b.rung_budget(20_000, k) for k in range(8)]
    assert ladder == [20_000, 45_000, 100_000, 224_000, 500_000, 1_118_000, 2_500_000, 5_590_000]
    assert all(ladder[k + b.RUNG_OFFSET] == pytest.approx(b.PLATEAU_FACTOR * ladder[k], rel=0.01) for k in range(6))
    with pytest.raises(ValueError, match="rung must be >= 0"):
        b.rung_budget(20_000, -1)


def test_a_rung_is_at_its_plateau_at_nine_tenths_of_five_times_it_above_the_floor():
    assert b.at_plateau(score=0.91, score_at_factor=1.0, floor=0.0)
    assert not b.at_plateau(score=0.89, score_at_factor=1.0, floor=0.0)
    assert not b.at_plateau(score=0.9, score_at_factor=1.0, floor=0.5)  # 0.4 of the 0.5 above the floor
    assert b.at_plateau(score=0.2, score_at_factor=0.1, floor=0.3)  # no gain above the floor by the larger budget


def test_the_search_climbs_until_a_rung_holds_and_names_what_it_still_needs():
    floor = 0.1
    scores = {0: 0.3, 1: 0.5, 2: 0.7}
    assert b.next_rungs(scores, floor) == [3]  # rung 0 against rung 2 fails (0.2 < 0.9 x 0.6): rung 1 needs rung 3
    assert b.plateau_rung(scores, floor) is None
    scores[3] = 0.52  # rung 1 (0.5) holds against rung 3 (0.52): 0.4 >= 0.9 x 0.42
    assert b.next_rungs(scores, floor) == []
    assert b.plateau_rung(scores, floor) == 1
    rising = {k: 0.1 * k for k in range(b.MAX_RUNG + b.RUNG_OFFSET + 1)}  # never flattens
    assert b.plateau_rung(rising, 0.0) is None and b.next_rungs(rising, 0.0) == []
    assert b.next_rungs({}, 0.0, max_rung=0) == [0, 2]


def test_the_ceiling_never_trains_less_than_the_methods():
    assert b.ceiling_budget(own=20_000, methods=1_118_000) == 1_118_000
    assert b.ceiling_budget(own=500_000, methods=20_000) == 500_000
