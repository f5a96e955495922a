"""The gap split into collapse and misspecification (scope_envs.bench.split), the reference evaluation side it
reads (scope_envs.bench.protocol) and the ``uncollapsed`` row (scope_envs.bench.methods)."""

import numpy as np
import pytest

import scope_envs
from scope_envs.bench import split
from scope_envs.bench.methods import METHODS, method_setup
from scope_envs.bench.protocol import evaluate_policy
from scope_envs.bench.stats import claims, confirmatory_family, judged_methods
from scope_envs.train.policy import UniformPolicy

GAMES = ("p4g", "cooperbench", "tau2")


def test_the_reference_side_splits_every_gap_exactly():
    """train − held-out = (train − reference) + (reference − held-out), and the reference side plays the held-out
    side's own scenarios with the training-side reference model."""
    record = evaluate_policy(UniformPolicy(), "p4g", seed=3, eval_episodes=24, heldout_episodes=24)
    m = record["metrics"]
    assert m["collapse_gap"] == pytest.approx(m["train_success"] - m["reference_success"])
    assert m["misspecification_gap"] == pytest.approx(m["reference_success"] - m["heldout_success"])
    assert m["collapse_gap"] + m["misspecification_gap"] == pytest.approx(m["gap"])
    assert m["reference_success"] != m["heldout_success"]  # two behaviour models, not one side read twice
    assert set(record["outcomes"]) == {"train", "heldout", "reference"}


@pytest.mark.parametrize("game", GAMES)
def test_heldout_behaviour_reference_seats_the_reference_model_on_heldout_scenarios(game):
    from scope_envs.agents import cooperbench, p4g, tau2

    reference = {"p4g": p4g.ReferencePersuadee, "cooperbench": cooperbench.ReferencePartner,
                 "tau2": tau2.ReferenceUser}[game]
    env = scope_envs.make(f"{game}-heldout", behaviour="reference").unwrapped
    assert env.split == "heldout" and type(env.members[0]) is reference
    assert env.members[0].sharpening == 1.0 and env.members[0].cooperation == 0.0
    assert type(scope_envs.make(f"{game}-heldout").unwrapped.members[0]) is not reference
    with pytest.raises(ValueError, match="behaviour"):
        scope_envs.make(f"{game}-heldout", behaviour="human")
    with pytest.raises(ValueError, match="assumptions"):
        scope_envs.make(f"{game}-heldout", behaviour="reference", assumptions="default")


def test_user_reference_and_rotation_users():
    from scope_envs.agents.p4g import ReferencePersuadee

    env = scope_envs.make("p4g-frozen", user="reference").unwrapped
    assert type(env.members[0]) is ReferencePersuadee and env.split == "train"
    with pytest.raises(ValueError, match="'reference'"):
        scope_envs.make("p4g-frozen", user="nobody")
    mine = [ReferencePersuadee(2.0), ReferencePersuadee(5.0)]
    rot = scope_envs.make("p4g-rotation", users=mine)
    assert rot.members == mine
    for bad in ([], "abc", [object()]):
        with pytest.raises(ValueError, match="users"):
            scope_envs.make("p4g-rotation", users=bad)
    with pytest.raises(ValueError, match="not both"):
        scope_envs.make("p4g-rotation", users=mine, families=2)


@pytest.mark.parametrize("game", GAMES)
def test_uncollapsed_is_a_measurement_row_trained_on_the_users_own_model(game):
    assert "uncollapsed" in METHODS
    assert method_setup(game, "uncollapsed") == (f"{game}-frozen", {"user": "reference"},
                                                 method_setup(game, "frozen")[2])
    table = {m: {"per_seed": {"0": {"heldout_success": 0.1}, "1": {"heldout_success": 0.2}}}
             for m in ("random", "oracle", "uncollapsed", "frozen", "vs")}
    assert "uncollapsed" not in judged_methods(table) and confirmatory_family(table) == ["vs"]
    assert claims({game: table})  # the claims read a table with the row without judging it


def _table(ref: dict, gap: float = 0.3) -> dict:
    """A game's table with per-seed reference success ``ref[method]`` (a list) and a fixed split."""
    table = {}
    for m, values in ref.items():
        table[m] = {"per_seed": {str(i): {"heldout_success": v - 0.1, "reference_success": v, "gap": gap,
                                          "collapse_gap": gap - 0.1, "misspecification_gap": 0.1}
                                 for i, v in enumerate(values)}}
    return table


def test_the_collapse_cost_and_each_remedys_recovery_of_it():
    rng = np.random.default_rng(0)
    noise = lambda: list(0.01 * rng.standard_normal(8))  # noqa: E731
    ref = {"uncollapsed": [1.0 + e for e in noise()], "frozen": [0.6 + e for e in noise()],
           "vs": [0.9 + e for e in noise()], "rotation": [0.62 + e for e in noise()],
           "cotrain": [0.5 + e for e in noise()]}
    sp = split.split(_table(ref))
    assert sp["cost"]["hurts"] and sp["cost"]["mean"] == pytest.approx(0.4, abs=0.02)
    by = {r["method"]: r for r in sp["recovery"]}
    assert set(by) == {"vs", "rotation", "cotrain"}  # the confirmatory family; never the measurement rows
    assert by["vs"]["share"] == pytest.approx(0.75, abs=0.05) and by["vs"]["recovers_most"]
    assert not by["rotation"]["recovers_most"] and by["rotation"]["share"] < 0.5
    assert not by["cotrain"]["recovers"] and by["cotrain"]["share"] < 0  # worse than frozen: never a recovery
    md = split.markdown({"p4g": sp})
    assert "Collapse cost" in md and "| vs |" in md and "collapse hurts: yes" in md


def test_no_collapse_cost_means_no_recovery_is_judged():
    ref = {"uncollapsed": [0.6, 0.61, 0.59], "frozen": [0.6, 0.62, 0.58], "vs": [0.9, 0.91, 0.92]}
    sp = split.split(_table(ref))
    assert not sp["cost"]["hurts"]
    assert all(r["share"] is None and not r["recovers"] for r in sp["recovery"])
    assert split.split(_table({"frozen": [0.1, 0.2], "vs": [0.3, 0.4]}))["cost"] is None  # no uncollapsed row


def test_an_entrant_leaves_the_built_in_recovery_tests_as_they_are():
    """A ``--method`` row is tested against frozen on its own (a family of one); the built-in rows' Holm family,
    and so their p_Holm, is what it was without it."""
    rng = np.random.default_rng(1)
    noise = lambda: list(0.02 * rng.standard_normal(6))  # noqa: E731
    ref = {"uncollapsed": [1.0 + e for e in noise()], "frozen": [0.6 + e for e in noise()],
           "vs": [0.65 + e for e in noise()], "rotation": [0.62 + e for e in noise()]}
    alone = split.split(_table(ref))
    both = split.split(_table({**ref, "my-method": [0.63 + e for e in noise()]}))
    assert both["recovery"][: len(alone["recovery"])] == alone["recovery"]
    mine = both["recovery"][-1]
    assert mine["method"] == "my-method" and mine["entrant"] and mine["p_holm"] == mine["p"]
    assert "my-method (entrant: its own test)" in split.markdown({"p4g": both})
    no_cost = split.markdown({"p4g": split.split(_table({"frozen": [0.1, 0.2], "vs": [0.3, 0.4]}))})
    assert "the run has no `uncollapsed` row " in no_cost
