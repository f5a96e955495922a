"""The p4g training-side world: what moves a persuadee depends on their card (persona x act interactions)."""

from pathlib import Path

import numpy as np
import pytest

from scope_envs.agents.p4g import ReferencePersuadee
from scope_envs.core.env import DialogueParallelEnv
from scope_envs.core.simulator import Simulator
from scope_envs.games.p4g import batched, dialogue_acts, personas, reference
from scope_envs.games.p4g.game import P4GGame

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "p4g"
needs_data = pytest.mark.skipif(not (DATA / "full_info.csv").exists(), reason=f"P4G data not found at {DATA}")


def _best_act(card) -> str:
    effects = reference.act_effects(card)
    return max(effects, key=effects.get)


def _cards(split, lean_at_most=None):
    cards = [personas.persona(split, i) for i in range(personas.SPLIT_SIZES[split])]
    if lean_at_most is None:
        return cards
    return [c for c in cards if personas.decision_lean(c.traits) <= lean_at_most]


def test_the_best_act_differs_between_a_rational_and_an_intuitive_card():
    cards = _cards("train")
    rational = max(cards, key=lambda c: personas.decision_lean(c.traits))
    intuitive = min(cards, key=lambda c: personas.decision_lean(c.traits))
    assert personas.decision_lean(rational.traits) == 1.0 and personas.decision_lean(intuitive.traits) == -1.0
    assert _best_act(rational) != _best_act(intuitive)
    # the same act moves the two cards by different amounts wherever its interaction is not zero
    inter = personas.params("train")["strategy_interactions"]["coef"]
    a = max(inter, key=lambda k: abs(inter[k]))
    assert reference.act_effects(rational)[a] != pytest.approx(reference.act_effects(intuitive)[a], abs=0.5)


def test_willingness_sums_the_cards_own_act_effects_and_the_engine_uses_the_same_floats():
    card = _cards("heldout", lean_at_most=-0.5)[0]
    effects = reference.act_effects(card)
    p = personas.params("train")
    dev = personas.decision_lean(card.traits) - p["strategy_interactions"]["centre"]
    for a, e in effects.items():
        assert e == p["strategy_effects"]["coef"][a] + p["strategy_interactions"]["coef"][a] * dev
    row = batched.card_terms(card)["ref_effects"]
    assert [row[dialogue_acts.PERSUADER_INDEX[a]] for a in effects] == list(effects.values())
    base = reference.willingness(card, ())
    from scope_envs.core.game import Turn

    history = [Turn("persuader", dialogue_acts.PERSUADER_INDEX[a]) for a in ("donation_information", "greeting")]
    assert reference.willingness(card, history) == pytest.approx(
        base + effects["donation_information"] + effects["greeting"], abs=1e-12)


@needs_data
@pytest.mark.parametrize("key", ["strategy_interactions", "reply_disclosure"])
def test_the_shipped_card_terms_are_what_fit_derives(key):
    from scope_envs.games.p4g.fit import fit
    from scope_envs.games.p4g.people import outside

    fitted = fit(DATA, holdout=outside(DATA, "train"))[key]
    shipped = personas.params("train")[key]
    assert set(fitted) == set(shipped) and fitted["supported"] == shipped["supported"]
    for a, g in fitted["coef"].items():
        assert g == pytest.approx(shipped["coef"][a], abs=2e-6)
        lo, hi = fitted["ci95"][a]
        assert lo <= g <= hi
        assert (a in fitted["supported"]) == (lo > 0 or hi < 0)
    assert fitted["centre"] == pytest.approx(shipped["centre"], abs=1e-6)
    assert shipped["centre"] == personas.params("train")["strategy_interactions"]["centre"]  # one lean centre


def test_the_card_shows_in_its_replies():
    """An intuitive-lean card disagrees more often than a rational-lean one at the same willingness, so a
    persuader that never sees the card can still tell them apart."""
    rational = max(_cards("train"), key=lambda c: personas.decision_lean(c.traits))
    intuitive = min(_cards("train"), key=lambda c: personas.decision_lean(c.traits))
    legal = np.ones(len(dialogue_acts.PERSUADEE_ACTS), bool)
    legal[0] = False
    from scope_envs.core.game import Turn

    history = [Turn("persuader", dialogue_acts.PERSUADER_INDEX["propose_donation"])]
    args = (0.0, history, legal, reference.gift_distribution(), reference.neutral())
    disagree = dialogue_acts.PERSUADEE_INDEX["disagree_donation"]
    p_rational = reference.reply_distribution(*args, tilt=reference.disclosure(rational))
    p_intuitive = reference.reply_distribution(*args, tilt=reference.disclosure(intuitive))
    assert p_intuitive[disagree] > 1.5 * p_rational[disagree]
    assert np.allclose(reference.reply_distribution(*args, tilt=np.zeros(len(reference.disclosure(rational)))),
                       reference.reply_distribution(*args))


@pytest.mark.parametrize("gamma", [1.0, 3.0])
def test_fast_mode_weights_carry_the_cards_reply_tilt(gamma):
    from scope_envs.agents.base import normalize, sharpen

    rng = np.random.default_rng(4)
    n = 300
    b = batched.P4GBatch(n)
    b.ref_base[:], b.ref_sum[:], b.lean_dev[:] = rng.normal(0, 2, n), rng.normal(0, 1, n), rng.uniform(-1.6, 0.5, n)
    b.last_persuader[:] = rng.integers(0, len(dialogue_acts.PERSUADER_ACTS), n)
    b.final[:] = rng.random(n) < 0.3
    legal = b.legal(1, np.ones(n, np.int64))
    idx = np.arange(n)
    exact = normalize(sharpen(b.reference_reply(idx, legal, 0.0), gamma), legal)
    w = b.reference_weights(idx, legal, 0.0, gamma)
    np.testing.assert_allclose(w / w.sum(1, keepdims=True), exact, rtol=0, atol=1e-12)
    b.lean_dev[:] = 0.0  # not vacuous: the tilt changes the distribution
    untilted = b.reference_weights(idx, legal, 0.0, gamma)
    assert np.abs(untilted / untilted.sum(1, keepdims=True) - exact).max() > 1e-3


class _RepeatAct(Simulator):
    """A persuader that plays one act every turn (one arm of the bandit below)."""

    name = "repeat"

    def __init__(self, act: str):
        self.index = dialogue_acts.PERSUADER_INDEX[act]

    def distribution(self, view):
        p = np.zeros(len(dialogue_acts.PERSUADER_ACTS))
        p[self.index] = 1.0
        return p


def _mean_gift(user, act, split, episodes, seed):
    env = DialogueParallelEnv(P4GGame(), [user], split=split)
    persuader, rng, gifts = _RepeatAct(act), np.random.default_rng(seed), []
    for ep in range(episodes):
        env.reset(seed=seed * 7919 + ep)
        while env.agents:
            _, _, _, _, infos = env.step({"agent_0": persuader.act(env.view("persuader"), rng)})
        gifts.append(infos["agent_0"]["actual"])
    return float(np.mean(gifts))


def _train(users, split, episodes, seed=3):
    """The learner: the best one-act persuader by Monte Carlo against ``users`` (a greedy bandit over every real
    persuader act, each arm tried ``episodes`` times per user)."""
    arms = dialogue_acts.PERSUADER_ACTS[1:]
    return max(arms, key=lambda a: np.mean([_mean_gift(u, a, split, episodes, seed) for u in users]))


def test_a_best_response_to_the_modal_card_does_not_transfer_to_intuitive_cards():
    """Trained against the modal card, the learner's policy gives less on intuitive-lean reference users (held-out
    cards) than the one trained against intuitive-lean reference users of the train split."""
    modal_policy = _train([ReferencePersuadee(persona=personas.default_persona())], "train", 30)
    own_policy = _train([ReferencePersuadee(persona=c) for c in _cards("train", lean_at_most=-0.5)[:3]], "train", 12)
    assert modal_policy != own_policy
    users = [ReferencePersuadee(persona=c) for c in _cards("heldout", lean_at_most=-0.5)[:4]]
    score = {pol: np.mean([_mean_gift(u, pol, "heldout", 25, 11) for u in users]) for pol in (modal_policy, own_policy)}
    assert score[modal_policy] < score[own_policy] - 0.1
