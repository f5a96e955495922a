"""p4g's real reply pairs (``scope_envs.games.p4g.realism``): the folds, the committed tables, an episode's cells."""

from pathlib import Path

import numpy as np
import pytest

from scope_envs.games.p4g import dialogue_acts, grounded
from scope_envs.games.p4g.people import TRAIN, split_of
from scope_envs.games.p4g.grounded import real_pairs
from scope_envs.games.p4g.realism import FOLDS, SHAPE, fold_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "p4g"
needs_data = pytest.mark.skipif(not (DATA / "300_dialog.csv").is_file(),
                                reason=f"the Persuasion-for-Good data is not at {DATA}")


def test_the_committed_folds_hold_every_training_pair_once():
    block = grounded.params()["pairs"]
    pairs = real_pairs()
    assert pairs.fit.shape == pairs.held_back.shape == SHAPE
    assert pairs.fit.sum() + pairs.held_back.sum() == grounded.params()["source"]["n_pairs"]
    assert block["fit"]["persuadees"] + block["held_back"]["persuadees"] == \
        grounded.params()["source"]["n_annotated_persuadees"]
    assert pairs.held_back.sum() > 0.1 * pairs.fit.sum()  # a check of its own size, not a handful of pairs
    assert pairs.fit[0].sum() == pairs.held_back[0].sum() == 0  # the no-op is never answered


def test_the_fold_rule_is_a_fixed_function_of_the_id():
    ids = [f"person-{i}" for i in range(2000)]
    folds = [fold_of(i) for i in ids]
    assert folds == [fold_of(i) for i in ids] and set(folds) == set(FOLDS)
    assert 0.2 < folds.count("held_back") / len(ids) < 0.3


def test_an_episode_becomes_its_replies_cells():
    P, E = dialogue_acts.PERSUADER_INDEX, dialogue_acts.PERSUADEE_INDEX
    agent = [P["greeting"], P["emotion_appeal"], P["propose_donation"]]
    user = [E["greeting"], E["positive_reaction"], E[dialogue_acts.AMOUNT_ACTS[3]], E["closing"]]
    cells = real_pairs().cells(agent, user)
    assert cells[-1] == -1  # a reply after the persuader's last act answers nothing
    act, phase, reply = np.unravel_index(cells[:-1], SHAPE)
    assert act.tolist() == agent and phase.tolist() == [0, 1, 1]
    n_verbal = len(dialogue_acts.PERSUADEE_VERBAL)
    assert reply.tolist() == [E["greeting"] - 1, E["positive_reaction"] - 1, n_verbal]  # an amount: provide_amount


@needs_data
def test_the_tables_are_the_training_parts_pairs_and_no_held_out_persons():
    part = grounded.read_training_part(DATA)
    fitted = grounded.fit(DATA)["pairs"]
    assert fitted == grounded.params()["pairs"]  # the committed tables are what the data gives
    people = {part.person[d] for d in part.turns}
    assert all(split_of(p) == TRAIN for p in people)
    n = {fold: sum(fold_of(p) == fold for p in people) for fold in FOLDS}
    assert n == {fold: fitted[fold]["persuadees"] for fold in FOLDS}
