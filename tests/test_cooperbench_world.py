"""CooperBench's world (v0.3): one owner per shared region, and reference partners whose needs depend on the card.

Training side only: every partner here is the reference model (``styles.decide`` in expected mode) on a card;
nothing of the held-out human proxy is played or read.
"""

import numpy as np

from scope_envs.agents.cooperbench import CollapsedPartner, ReferencePartner
from scope_envs.core.game import Persona
from scope_envs.core.simulator import View, sample
from scope_envs.games.cooperbench import styles, world
from scope_envs.games.cooperbench.dialogue_acts import CLAIM, COMBINED, EDIT, INDEX
from scope_envs.games.cooperbench.game import PARTNER, TEAMMATE, CooperBenchGame


def card(name, **traits):
    return Persona(name, "train", {**dict.fromkeys(styles.TRAITS, 0.9), **traits}, {"style": name})


def teammate(shared_regions: str, ask: bool):
    """A scripted teammate: answers, announces, asks (``ask``) while it does not know the partner's plan; then its
    unshared regions with its own change, and the regions both need: ``claim`` them and integrate them,
    ``direct``ly integrate them (no claim), or ``yield`` them to the partner (wait until the partner is done).
    It leaves alone a shared region the partner claimed."""
    def act(pv, legal):
        if pv["asked"] and legal[INDEX["answer"]]:
            return INDEX["answer"]
        if legal[INDEX["announce_plan"]]:
            return INDEX["announce_plan"]
        if ask and not pv["known"] and legal[INDEX["ask"]]:
            return INDEX["ask"]
        shared = pv["needs"] & pv["known"]
        for r in sorted(pv["needs"]):
            if r in pv["edits"] or (r in shared and (shared_regions == "yield" or r in pv["partner_claims"])):
                continue
            if r in shared and shared_regions == "claim" and r not in pv["own_claims"]:
                return CLAIM + r
            return (COMBINED if r in shared else EDIT) + r
        if shared_regions == "yield" and shared and not pv["partner_done"]:
            return INDEX["wait"]
        return INDEX["submit"]
    return act


STRATEGIES = {f"{s}{'+ask' if a else ''}": teammate(s, a) for s in ("claim", "direct", "yield") for a in (False, True)}


def success(strategy, partner, episodes, seed, split="train"):
    """Mean team success of a scripted teammate against ``partner`` (a built-in simulator) playing its own card
    or, without one, a card dealt from ``split`` each episode (a card's split picks the tasks; the modal card,
    of no split, plays train tasks)."""
    game, rng = CooperBenchGame(), np.random.default_rng(seed)
    wins = 0.0
    for _ in range(episodes):
        game.reset(partner.persona or styles.sample(rng, split), rng)
        while game.active_role():
            role = game.active_role()
            legal = game.legal(role)
            if role == TEAMMATE:
                a = strategy(game.private(role), legal)
            else:
                view = View(role, game.persona, tuple(game.history), legal, game.info(), private=game.private(role))
                a = sample(partner.distribution(view), rng)
            game.apply(role, a)
        wins += game.outcome()["success"]
    return wins / episodes


def test_two_teammates_integrating_one_region_conflict():
    """A combined edit carries the writer's own line first, so the teammate's and the partner's differ."""
    r = 4
    merged, conflicts = world.merge({r: ("A", "B")}, {r: ("B", "A")})
    assert conflicts == {r}
    merged, conflicts = world.merge({r: ("A", "B")}, {})
    assert not conflicts and world.feature_done(merged, conflicts, frozenset({r}), "B")
    game = CooperBenchGame()
    for seed in range(50):
        game.reset(styles.persona("train", 0), np.random.default_rng(seed))
        if game.task.overlap:
            break
    shared = min(game.task.overlap)
    game.apply(TEAMMATE, INDEX["announce_plan"])
    game.apply(PARTNER, INDEX["announce_plan"])
    game.apply(TEAMMATE, COMBINED + shared)
    game.apply(PARTNER, COMBINED + shared)
    while game.active_role():
        game.apply(game.active_role(), INDEX["submit"])
    assert game.outcome()["conflicts"] >= 1 and game.outcome()["success"] == 0


def test_a_leader_that_ignores_claims_and_a_quiet_card_need_opposite_teammates():
    """The best response depends on the card: a leader that ignores claims integrates the shared regions itself,
    so its teammate must yield them; a quiet card leaves them to its teammate and is derailed by a claim, so its
    teammate must integrate them without claiming."""
    leader = card("leader-ignorer", respect=0.1, talk=0.8)
    quiet = card("quiet", talk=0.2)
    on = {name: {s: success(f, ReferencePartner(persona=c), 150, seed=1) for s, f in STRATEGIES.items()}
          for name, c in (("leader", leader), ("quiet", quiet))}
    assert max(on["leader"], key=on["leader"].get).startswith("yield")
    assert max(on["quiet"], key=on["quiet"].get).startswith("direct")
    assert on["leader"]["yield+ask"] > on["leader"]["direct+ask"] + 0.2
    assert on["quiet"]["direct+ask"] > on["quiet"]["yield+ask"] + 0.2
    assert on["quiet"]["direct+ask"] > on["quiet"]["claim+ask"] + 0.2


def test_the_held_out_proxys_sampled_rules_are_unchanged_by_the_reference_needs():
    """The quiet cards' needs are the reference's (expected mode); sampled mode has none of them."""
    quiet = card("quiet", talk=0.2)
    talk = quiet.traits["talk"]
    assert styles.leaves_shared(talk, sampled=False) and not styles.leaves_shared(talk, sampled=True)


def best_response(partner):
    """The teammate strategy a learner settles on against a training partner: the best by success."""
    return max(STRATEGIES, key=lambda s: success(STRATEGIES[s], partner, 200, seed=2))


def test_a_best_response_to_the_collapsed_partner_loses_against_the_dealt_cards():
    """Trained against the collapsed simulator (the modal card, over-cooperative, sharpened), the learner scores
    lower against reference partners on held-out cards than trained against the dealt-card reference itself:
    the collapsed partner leads and respects claims, so yielding or claiming the shared regions serves it, and
    both fail the quiet cards, which wait for their teammate to integrate them and are derailed by claims."""
    collapsed, own = best_response(CollapsedPartner()), best_response(ReferencePartner())
    held = {s: success(STRATEGIES[s], ReferencePartner(), 400, seed=3, split="heldout") for s in {collapsed, own}}
    assert held[collapsed] < held[own] - 0.05, (collapsed, own, held)
