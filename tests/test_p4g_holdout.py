"""The out-of-sample check of the p4g proxies (scope_envs.validate.p4g_holdout) on the real data."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from scope_envs.cli import main
from scope_envs.games.p4g import personas
from scope_envs.games.p4g.fit import NUMERIC, annotated_dialogues, fit, persuadee_ids
from scope_envs.validate import p4g_holdout

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "p4g"

pytestmark = pytest.mark.skipif(not (DATA / "full_info.csv").exists(),
                                reason=f"real P4G data not found at {DATA} (the check replays real dialogues)")


@pytest.fixture(scope="module")
def dialogues():
    return annotated_dialogues(DATA)


@pytest.fixture(scope="module")
def full():
    return fit(DATA)


@pytest.fixture(scope="module")
def heldout_part(dialogues):
    """The annotated dialogues of the held-out part of the people split: the ones the check reads."""
    from scope_envs.games.p4g.people import TRAIN, split_people

    training = split_people(DATA).dialogues(TRAIN)
    return {d: r for d, r in dialogues.items() if d not in training}


@pytest.fixture(scope="module")
def report():
    return p4g_holdout.out_of_sample(DATA, replications=1, simulators=("human_proxy",))


def test_eligible_dialogues_are_those_of_the_strategy_regression(dialogues, full):
    assert len(dialogues) == full["strategy_effects"]["n_dialogues"]
    for rec in dialogues.values():
        assert rec["persuader"] and 0 <= rec["donation"] <= 2
        assert not any(np.isnan(v) for v in rec["traits"].values())


@pytest.fixture(scope="module")
def person():
    return persuadee_ids(DATA)


def _complete_rows(dialogue_ids) -> int:
    """Persuadee rows of ``dialogue_ids`` that the persona model uses (typo-free donation, complete survey)."""
    with open(DATA / "full_info.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["B4"] == "1" and r["B2"] in dialogue_ids]
    return sum(float(r["B6"]) <= 2 and all(r[k + ".x"].strip() for k in NUMERIC) for r in rows)


def test_folds_are_disjoint_cover_every_dialogue_and_keep_people_together(dialogues, person):
    parts = p4g_holdout.folds(dialogues, person=person)
    assert len(parts) == p4g_holdout.K
    seen = [d for part in parts for d in part]
    assert len(seen) == len(set(seen)) == len(dialogues)
    assert set(seen) == set(dialogues)
    assert max(map(len, parts)) - min(map(len, parts)) <= 3
    people = [{person[d] for d in part} for part in parts]
    assert not (people[0] & people[1] or people[0] & people[2] or people[1] & people[2])
    assert len({person[d] for d in dialogues}) < len(dialogues)  # some people are in several dialogues
    assert parts == p4g_holdout.folds(dialogues, person=person)  # the seed is fixed
    assert parts != p4g_holdout.folds(dialogues, seed=p4g_holdout.SEED + 1, person=person)


def test_holdout_drops_the_test_people_from_every_table(dialogues, person, full):
    test = frozenset(p4g_holdout.folds(dialogues, person=person)[0])
    holdout = p4g_holdout.holdout_of(test, person)
    assert holdout > test  # test people's other, unannotated dialogues go too
    refit = fit(DATA, holdout=holdout)
    assert refit["strategy_effects"]["n_dialogues"] == full["strategy_effects"]["n_dialogues"] - len(test)
    assert refit["real"]["n_annotated"] == full["real"]["n_annotated"] - len(test)
    # every row of a test person leaves the persona model and the propensity regression
    assert refit["persona_model"]["n"] == full["persona_model"]["n"] - _complete_rows(holdout)
    assert refit["propensity"]["coef"] != full["propensity"]["coef"]
    # one person who is the persuadee of several dialogues: holding out one dialogue would leave the others in
    d = next(d for d in sorted(test) if sum(u == person[d] for u in person.values()) > 1)
    one = fit(DATA, holdout=p4g_holdout.holdout_of([d], person))
    n_rows = _complete_rows({e for e, u in person.items() if u == person[d]})
    assert n_rows > 1 and one["persona_model"]["n"] == full["persona_model"]["n"] - n_rows
    assert one["propensity"]["intercept"] != full["propensity"]["intercept"]
    assert fit(DATA, holdout=frozenset(["no such dialogue"])) == full


def test_report_shape_and_refit_sizes(report, heldout_part, dialogues):
    """The check reads the held-out part alone: its folds cover that part, and each refit holds the fold's other
    dialogues of that part, none of the training part's."""
    assert len(heldout_part) == 128 < len(dialogues)
    dialogues = heldout_part
    assert report["design"]["n_dialogues"] == len(dialogues)
    assert sum(report["design"]["fold_sizes"]) == len(dialogues)
    for f in report["folds"]:
        assert f["n_test"] + f["n_fit"] == len(dialogues)
        assert f["refit_n_dialogues"] == f["n_fit"]
        assert f["acts"], "no act is used on both sides by 10 dialogues"
        sim = f["human_proxy"]
        assert set(sim["contrasts"]) <= set(f["acts"])
        assert 0 <= sim["reply_tv"] <= 1 and sum(sim["reply_frequencies"].values()) == pytest.approx(1, abs=1e-3)
        assert 0 <= sim["give_rate"] <= 1 and 0 <= sim["mean_donation"] <= 2


def test_noise_floor_is_real_fit_part_against_real_test_part(report, heldout_part, person):
    dialogues = heldout_part
    parts = p4g_holdout.folds(dialogues, person=person)
    for f, test_ids in zip(report["folds"], parts):
        test = {d: dialogues[d] for d in test_ids}
        rest = {d: r for d, r in dialogues.items() if d not in test}
        floor = f[p4g_holdout.NOISE_FLOOR]
        assert floor["give_rate"] == pytest.approx(np.mean([r["donation"] > 0 for r in rest.values()]), abs=1e-4)
        assert floor["mean_donation"] == pytest.approx(np.mean([r["donation"] for r in rest.values()]), abs=1e-4)
        assert f["real_test"]["give_rate"] == pytest.approx(np.mean([r["donation"] > 0 for r in test.values()]),
                                                             abs=1e-4)
        for act, value in floor["contrasts"].items():
            used = np.array([act in r["persuader"] for r in rest.values()])
            give = np.array([r["donation"] > 0 for r in rest.values()])
            assert value == pytest.approx(give[used].mean() - give[~used].mean(), abs=1e-4)
        assert floor["contrasts"]


def test_params_are_the_refit_ones_during_the_run_and_restored_after(dialogues, monkeypatch):
    shipped = personas.params("heldout")
    test = {d: dialogues[d] for d in p4g_holdout.folds(dialogues)[1][:3]}
    seen = []
    real_replay = p4g_holdout.replay

    def spy(record, persona, user, rng):
        seen.append(personas.params("heldout")["strategy_effects"]["n_dialogues"])
        assert personas.params("heldout")["calibration"] == shipped["calibration"]
        return real_replay(record, persona, user, rng)

    monkeypatch.setattr(p4g_holdout, "replay", spy)
    f = p4g_holdout.run_fold(DATA, {**dialogues}, list(test), 1, ("human_proxy",), 2, p4g_holdout.SEED)
    assert personas.params("heldout") is shipped
    assert seen and set(seen) == {len(dialogues) - len(test)}
    assert f["n_test"] == 3

    def boom(*args):
        raise RuntimeError("simulator failed")

    monkeypatch.setattr(p4g_holdout, "replay", boom)
    with pytest.raises(RuntimeError, match="simulator failed"):
        p4g_holdout.run_fold(DATA, dialogues, list(test), 1, ("human_proxy",), 1, p4g_holdout.SEED)
    assert personas.params("heldout") is shipped


def test_replay_follows_the_real_persuader_and_ends_by_the_rules(dialogues):
    from scope_envs.agents.p4g import HumanProxyPersuadee

    d, rec = next(iter(dialogues.items()))
    persona = p4g_holdout.persona_of(d, rec)
    for r in range(5):
        actual, replies = p4g_holdout.replay(rec, persona, HumanProxyPersuadee(), np.random.default_rng(r))
        assert 1 <= len(replies) <= len(rec["persuader"])
        assert 0 <= actual <= 2
        # the persuadee only leaves early by closing after stating an amount, or after a persuader's closing
        if len(replies) < len(rec["persuader"]):
            assert replies[-1] == "closing" or rec["persuader"][len(replies) - 1] == "close"


def test_cli_out_of_sample_needs_data(capsys):
    with pytest.raises(SystemExit) as e:
        main(["validate", "p4g", "--out-of-sample"])
    assert e.value.code == 2
    assert "argument --out-of-sample" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["validate", "p4g", "--out-of-sample", "--data", str(DATA), "--episodes", "5"])
    assert e.value.code == 2 and "argument --episodes" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["validate", "p4g", "--replications", "2"])
    assert e.value.code == 2 and "argument --replications" in capsys.readouterr().err


def test_cli_out_of_sample_prints_the_report(report, capsys, monkeypatch):
    calls = {}

    def small(data, replications):  # the full run is the benchmark's; this one is the module's small report
        calls.update(data=data, replications=replications)
        return report

    monkeypatch.setattr(p4g_holdout, "out_of_sample", small)
    main(["validate", "p4g", "--out-of-sample", "--data", str(DATA), "--replications", "3"])
    assert json.loads(capsys.readouterr().out) == report
    assert calls == {"data": str(DATA), "replications": 3}
