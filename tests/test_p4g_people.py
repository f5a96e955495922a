"""The declared split of the real P4G people (scope_envs.games.p4g.people): a rule on the id alone."""

import hashlib
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scope_envs.games.p4g import people
from scope_envs.games.p4g.fit import annotated_dialogues, persuadee_ids
from scope_envs.games.p4g.people import HELDOUT, HELDOUT_SHARE, PARTS, SALT, TRAIN, split_of, split_people

ids = st.text(alphabet=string.ascii_letters + string.digits + "_-. ", min_size=1, max_size=20)

# the sizes on the real data that the module docstring states
REAL = {"annotated": (135, 122), "annotated_regression": (127, 118), "regression_dialogues": (158, 128),
        "survey_only": (257, 247), "all": (392, 369), "dialogues": (524, 493)}


def test_the_rule_is_the_declared_hash():
    """Held out exactly when the salted SHA-256, as a fraction of 2**64, is below the share."""
    for i in range(200):
        pid = f"user_{i}"
        x = int.from_bytes(hashlib.sha256(f"{SALT}\x00{pid}".encode()).digest()[:8], "big") / 2**64
        assert split_of(pid) == (HELDOUT if x < HELDOUT_SHARE else TRAIN)
    assert HELDOUT_SHARE == 0.5


def test_deterministic_and_one_part_each():
    for pid in ("user_527", "user_1810", "x", "user_527 "):
        assert split_of(pid) in PARTS
        assert {split_of(pid) for _ in range(5)} == {split_of(pid)}
    with pytest.raises(TypeError):
        split_of(527)
    with pytest.raises(ValueError):
        split_of("")


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, max_size=40, unique=True), st.lists(ids, max_size=40), st.randoms(use_true_random=False))
def test_a_persons_part_depends_on_nothing_but_the_id(group, others, rnd):
    """The same ids get the same parts in any order and beside any other people; every id is in one part."""
    alone = {pid: split_of(pid) for pid in group}
    shuffled = list(group) + list(others)
    rnd.shuffle(shuffled)
    beside_others = {pid: split_of(pid) for pid in shuffled}
    assert all(beside_others[pid] == alone[pid] for pid in group)
    train = {pid for pid in shuffled if split_of(pid) == TRAIN}
    heldout = {pid for pid in shuffled if split_of(pid) == HELDOUT}
    assert not train & heldout and train | heldout == set(shuffled)


@pytest.mark.parametrize("make", [lambda i, rng: f"user_{i}",
                                  lambda i, rng: "".join(rng.choice(list(string.ascii_letters), 12))])
def test_held_out_share_on_random_ids(make):
    """10,000 ids: the held-out share within 0.02 of the declared share (4 binomial standard errors)."""
    rng = np.random.default_rng(0)
    sample = {make(i, rng) for i in range(10_000)}
    share = np.mean([split_of(pid) == HELDOUT for pid in sample])
    assert abs(share - HELDOUT_SHARE) <= 0.02, f"held-out share {share:.4f} of {len(sample)} ids"


def test_absent_data_is_one_clear_line(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        split_people(tmp_path / "nowhere")
    assert "\n" not in str(e.value) and "P4G" in str(e.value)


def test_the_split_of_the_real_people(p4g_data):
    split = split_people(p4g_data)
    person = persuadee_ids(p4g_data)
    regression = annotated_dialogues(p4g_data)
    reg_people = {person[d] for d in regression}
    parts = [split.train, split.heldout, split.survey_train, split.survey_heldout]
    got = {
        "annotated": (len(split.train), len(split.heldout)),
        "annotated_regression": (len(reg_people & split.train), len(reg_people & split.heldout)),
        "regression_dialogues": tuple(sum(split.dialogue_part[d] == p for d in regression) for p in PARTS),
        "survey_only": (len(split.survey_train), len(split.survey_heldout)),
        "all": (len(split.people(TRAIN)), len(split.people(HELDOUT))),
        "dialogues": (len(split.dialogues(TRAIN)), len(split.dialogues(HELDOUT))),
    }
    counts = ", ".join(f"{k} {t} train / {h} held out" for k, (t, h) in got.items())
    # disjoint, and covering every persuadee (the annotated ones first)
    assert sum(len(p) for p in parts) == len(set().union(*parts)), counts
    assert reg_people <= split.train | split.heldout, counts
    assert set().union(*parts) == set(person.values()), counts
    assert set(split.dialogue_part) == set(person), counts
    # each person and each dialogue in the part the rule gives
    assert all(split_of(p) == TRAIN for p in split.train | split.survey_train), counts
    assert all(split_of(p) == HELDOUT for p in split.heldout | split.survey_heldout), counts
    assert all(split.dialogue_part[d] == split_of(u) for d, u in person.items()), counts
    assert got == REAL, counts
    doc = " ".join(people.__doc__.split())
    for t, h in REAL.values():
        assert f"{t} in training and {h} held out" in doc, f"the docstring does not state {t} / {h} ({counts})"


def test_a_part_name_is_checked(p4g_data):
    with pytest.raises(ValueError, match="part must be one of"):
        split_people(p4g_data).dialogues("test")


def test_what_a_fit_on_a_part_must_not_read(p4g_data):
    """``outside``: the other part's dialogues (the exclusion every fit on a part passes to ``fit``), none for a fit
    on everyone."""
    split = split_people(p4g_data)
    assert people.outside(p4g_data, TRAIN) == split.dialogues(HELDOUT)
    assert people.outside(p4g_data, HELDOUT) == split.dialogues(TRAIN)
    assert people.outside(p4g_data, "everyone") == frozenset()
    assert len(split.dialogues(TRAIN)) == REAL["dialogues"][0]
    with pytest.raises(ValueError, match="part must be one of"):
        people.outside(p4g_data, "test")
