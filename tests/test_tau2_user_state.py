"""tau2's users' reply models as array rules (``behaviour.reference_policy``, ``human_proxy.proxy_policy``) over
rows of ``user_state`` columns: each row is a distribution on its legal acts, a row does not depend on the rows
beside it (a scalar user asks a batch of one), and the branches say what the cards mean."""

import numpy as np
import pytest

from scope_envs.games.tau2 import behaviour, human_proxy
from scope_envs.games.tau2.dialogue_acts import USER_ACTS, USER_INDEX
from scope_envs.games.tau2.user_state import STATE, TRAITS, one_row, state_row, trait_row

U = USER_INDEX


def random_states(rng, rows):
    """Dialogue states that reach every branch of the reply models (and their fallbacks)."""
    out = []
    for _ in range(rows):
        st = {"first_turn": rng.random() < 0.15, "transfer_pending": rng.random() < 0.05,
              "satisfied": rng.random() < 0.1, "agent_msgs": int(rng.integers(0, 40)),
              "instructed": rng.random() < 0.1,
              "confirm_target": rng.choice([None, None, None, "decoy", "real"]),
              "decoy_kind": rng.choice([None, "forbidden", "mind_change"]),
              "asked_slot": rng.choice([None, None, "user_id", "email", "record_id", "details"]),
              "tool_errors": int(rng.integers(0, 6)), "episode_seed": int(rng.integers(2**31)),
              "denied": int(rng.integers(0, 3)), "insisted": int(rng.integers(0, 5))}
        for k in ("slipped", "stated", "details_given", "identity_given", "asked", "has_question", "decoy_open"):
            st[k] = float(rng.random() < 0.5)
        st["real_pending"] = bool(rng.random() < 0.5)
        out.append(st)
    return out


def quiet(**changes):
    """A mid-dialogue state where no branch before the last ``else`` holds."""
    st = dict(first_turn=False, transfer_pending=False, satisfied=False, agent_msgs=2, instructed=False,
              confirm_target=None, decoy_kind=None, asked_slot=None, tool_errors=0, episode_seed=1, denied=0,
              insisted=0, slipped=0.0, stated=1.0, details_given=0.0, identity_given=0.0, asked=0.0,
              has_question=0.0, decoy_open=0.0, real_pending=True)
    return {**st, **changes}


ALL = np.ones(len(USER_ACTS), bool)
ALL[0] = False
CARD = dict(behaviour.card("train", 3).traits)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    rows = 2000
    states = random_states(rng, rows)
    cards = [behaviour.card(rng.choice(["train", "heldout"]), int(rng.integers(500))).traits for _ in range(rows)]
    legal = rng.random((rows, len(USER_ACTS))) < 0.5
    legal[:, 0] = False
    legal[rng.random(rows) < 0.05] = False
    legal[:, 1] |= ~legal.any(1)  # at least one legal act a row
    t = np.array([trait_row(c) for c in cards])
    st = np.array([state_row(s) for s in states], float)
    return states, cards, legal, t, st


def test_each_row_is_a_distribution_on_its_legal_acts(batch):
    states, cards, legal, t, st = batch
    for p in (behaviour.reference_policy(t, st, legal),
              human_proxy.proxy_policy(t, st, human_proxy.coins([s["episode_seed"] for s in states], t), legal)):
        assert p.shape == legal.shape
        np.testing.assert_allclose(p.sum(1), 1.0)
        assert (p[~legal] == 0).all() and (p >= 0).all()


def test_a_row_does_not_depend_on_the_rows_beside_it(batch):
    states, cards, legal, t, st = batch
    ref = behaviour.reference_policy(t, st, legal)
    proxy = human_proxy.proxy_policy(t, st, human_proxy.coins([s["episode_seed"] for s in states], t), legal)
    for i in range(0, len(states), 97):  # a scalar user's batch of one gives its row, bit for bit
        np.testing.assert_array_equal(behaviour.reference_distribution(cards[i], states[i], legal[i]), ref[i])
        np.testing.assert_array_equal(human_proxy.distribution(cards[i], states[i], legal[i]), proxy[i])
    assert len(STATE) == st.shape[1] and len(TRAITS) == t.shape[1]


def test_the_reference_user_follows_its_card():
    t, _ = one_row(CARD, quiet())
    # the first message: the more open the card, the more it tells at once
    opens = [behaviour.reference_distribution({**CARD, "disclose": d}, quiet(first_turn=True), ALL)[U["inform_all"]]
             for d in (0.1, 0.5, 0.9)]
    assert opens[0] < opens[1] < opens[2]
    np.testing.assert_allclose(opens[2], (0.05 + 0.9) / (0.05 + 0.9 + 1.05 - 0.9 + 0.5 * CARD["mind_change"]))
    # past its patience it leaves; just within it, it does not
    patience = int(4 + 26 * CARD["patience"])
    assert behaviour.reference_distribution(CARD, quiet(agent_msgs=patience + 1), ALL)[U["stop"]] == 1.0
    assert behaviour.reference_distribution(CARD, quiet(agent_msgs=patience), ALL)[U["stop"]] < 1.0
    # a pending transfer is followed, whatever the card
    assert behaviour.reference_distribution(CARD, quiet(transfer_pending=True), ALL)[U["transfer"]] == 1.0
    # nothing legal has weight: uniform over the legal acts, stop at 0.1 beside them
    legal = np.zeros(len(USER_ACTS), bool)
    legal[[U["stop"], U["insist"]]] = True
    p = behaviour.reference_distribution(CARD, quiet(transfer_pending=True), legal)
    np.testing.assert_allclose(p[[U["stop"], U["insist"]]], [0.1 / 1.1, 1 / 1.1])


def test_the_held_out_user_flips_its_coins_once_and_heeds_its_assumptions():
    asked = quiet(asked_slot="user_id")
    slipper = {**CARD, "slip": 1.0}
    assert human_proxy.distribution(slipper, asked, ALL)[U["inform_slip"]] == 1.0
    assert human_proxy.distribution(slipper, asked, ALL, human_proxy.VARIANTS["no_slips"])[U["inform_slip"]] == 0.0
    assert human_proxy.distribution(slipper, {**asked, "slipped": 1.0}, ALL)[U["inform_slip"]] == 0.0
    # the coin is the episode's: the same seed, the same answer at every turn
    half = {**CARD, "slip": 0.5}
    seeds = range(200)
    flips = [human_proxy.distribution(half, {**asked, "episode_seed": s}, ALL)[U["inform_slip"]] for s in seeds]
    assert flips == [human_proxy.distribution(half, {**asked, "episode_seed": s}, ALL)[U["inform_slip"]]
                     for s in seeds]
    assert 60 < sum(flips) < 140
    # patience: tool errors wear it down, and the assumption scales it
    patience = int(4 + 26 * CARD["patience"])
    st = quiet(agent_msgs=patience - 1)
    assert human_proxy.distribution(CARD, st, ALL)[U["stop"]] < 1.0
    assert human_proxy.distribution(CARD, {**st, "tool_errors": 1}, ALL)[U["stop"]] == 1.0
    assert human_proxy.distribution(CARD, st, ALL, human_proxy.VARIANTS["patience_half"])[U["stop"]] == 1.0


def test_a_state_row_puts_each_field_in_its_named_column():
    """``state_row`` writes each field of a user's state where ``STATE`` names it (the order both engines read,
    written once in ``state_fields``), and a state that misses a field or adds one is refused by name."""
    from scope_envs.games.tau2.user_state import S, state_fields

    st = quiet(agent_msgs=7, denied=2, insisted=3, tool_errors=4, confirm_target="real", asked_slot="details",
               decoy_kind="forbidden", stated=0.0, identity_given=1.0)
    row = state_row(st)
    assert len(row) == len(STATE)
    for name, value in (("agent_msgs", 7), ("denied", 2), ("insisted", 3), ("tool_errors", 4), ("stated", 0.0),
                        ("identity_given", 1.0), ("confirm_real", True), ("confirm_decoy", False),
                        ("ask_record", True), ("ask_identity", False), ("decoy_forbidden", True),
                        ("decoy_mind", False)):
        assert row[S[name]] == value, name
    fields = dict(zip(STATE, row))
    del fields["satisfied"]
    with pytest.raises(ValueError, match=r"lacks \[.satisfied.\]"):
        state_fields(fields)
    with pytest.raises(ValueError, match=r"unknown \[.extra.\]"):
        state_fields({**dict(zip(STATE, row)), "extra": 1})
