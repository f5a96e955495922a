"""The benchmark's pre-declared statistics and claims, on hand-made per-seed numbers (no training)."""

import itertools
import json

import numpy as np
import pytest

from scope_envs.bench import methods, runner, stats

FROZEN = [0.40, 0.42, 0.44]


def table(**per_method) -> dict:
    """A game's results table from per-seed held-out success (train success: ``<method>_train``)."""
    train = {k[:-6]: v for k, v in per_method.items() if k.endswith("_train")}
    out = {}
    for method, xs in per_method.items():
        if method.endswith("_train"):
            continue
        tr = train.get(method, [0.5] * len(xs))
        out[method] = {"per_seed": {str(i): {"heldout_success": float(x), "train_success": float(t),
                                             "gap": float(t - x)} for i, (x, t) in enumerate(zip(xs, tr))}}
        out[method]["heldout_success"] = float(np.mean(xs))
    return out


def by_label(claims: list[dict]) -> dict:
    return {c["claim"].split(".")[0]: c for c in claims}


# -------------------------------------------------------------------------------------------- normalized/recovered

def test_normalized_and_recovered_arithmetic():
    t = stats.normalize({"g": table(random=[0.1, 0.2, 0.3], oracle=[0.8, 0.8, 0.8], frozen=[0.4, 0.4, 0.4],
                                    vs=[0.5, 0.6, 0.7])})["g"]
    # headroom 0.8 - 0.2 = 0.6; gap to recover 0.8 - 0.4 = 0.4
    assert t["vs"]["normalized"] == pytest.approx((0.6 - 0.2) / 0.6)
    assert t["vs"]["recovered"] == pytest.approx((0.6 - 0.4) / 0.4)
    assert [s["normalized"] for s in t["vs"]["per_seed"].values()] == pytest.approx([0.5, 4 / 6, 5 / 6])
    assert [s["recovered"] for s in t["vs"]["per_seed"].values()] == pytest.approx([0.25, 0.5, 0.75])
    for method, e in t.items():  # the mean of the per-seed values is the value of the means
        for key in ("normalized", "recovered"):
            assert e[key] == pytest.approx(np.mean([s[key] for s in e["per_seed"].values()])), (method, key)
    assert t["random"]["normalized"] == pytest.approx(0) and t["oracle"]["normalized"] == pytest.approx(1)
    assert t["frozen"]["recovered"] == pytest.approx(0) and t["oracle"]["recovered"] == pytest.approx(1)


def test_normalized_absent_without_rows_or_headroom():
    t = stats.normalize({"g": table(frozen=FROZEN, vs=FROZEN)})["g"]
    assert t["vs"]["normalized"] is None and t["vs"]["recovered"] is None
    # the ceiling under the floor / under frozen: no sign-flipped scores are written, the keys stay (null)
    t = stats.normalize({"g": table(random=[0.5] * 3, oracle=[0.3] * 3, frozen=[0.6] * 3, vs=[0.4] * 3)})["g"]
    for e in t.values():
        assert e["normalized"] is None and e["recovered"] is None
        assert all(s["normalized"] is None and s["recovered"] is None for s in e["per_seed"].values())
    json.loads(json.dumps(t, allow_nan=False))


def test_recovered_is_not_read_against_a_gap_within_noise():
    """results.json, the claims and ``scope-envs score`` read one gap: oracle − frozen, only where its CI is above 0."""
    from scope_envs.bench.score import band_position

    noisy = table(random=[0.10, 0.11, 0.09], oracle=[0.262, 0.30, 0.22], frozen=[0.26, 0.28, 0.224],
                  vs=[0.5, 0.6, 0.7])
    t = stats.normalize({"g": noisy})["g"]
    assert t["vs"]["recovered"] is None and all(s["recovered"] is None for s in t["vs"]["per_seed"].values())
    assert t["vs"]["normalized"] == pytest.approx((0.6 - 0.1) / (0.782 / 3 - 0.1))  # the band is read
    assert "recovered" not in band_position(0.6, noisy) and "95% CI" in band_position(0.6, noisy)["recovered_not"]
    assert "no gap to recover" in by_label(stats.claims({"g": t}))["2a"]["evidence"]
    clear = table(random=[0.10, 0.11, 0.09], oracle=[0.50, 0.52, 0.48], frozen=[0.20, 0.21, 0.19], vs=[0.3] * 3)
    t = stats.normalize({"g": clear})["g"]
    assert t["vs"]["recovered"] == pytest.approx(band_position(0.3, clear)["recovered"]) == pytest.approx(1 / 3)


def test_summarize_means_panel_success_and_keeps_per_family_per_seed():
    def run(method, seed, x, fams):
        return {"game": "g", "method": method, "seed": seed,
                "metrics": {"train_success": x, "heldout_success": x, "gap": 0.0, "panel_success": float(np.mean(fams)),
                            "panel_per_family": fams}}

    runs = [run("oracle", 1, 0.9, [1.0, 0.0]), run("frozen", 0, 0.4, [0.2, 0.4]), run("oracle", 0, 0.7, [0.0, 1.0]),
            run("frozen", 1, 0.6, [0.4, 0.6]), run("random", 0, 0.1, [0.0, 0.0]), run("random", 1, 0.1, [0.0, 0.0])]
    res = stats.summarize(runs)["g"]
    assert list(res) == ["random", "oracle", "frozen"]  # METHODS order
    assert res["oracle"]["panel_success"] == pytest.approx(0.5)
    assert "panel_per_family" not in res["oracle"] and res["oracle"]["per_seed"]["0"]["panel_per_family"] == [0, 1]
    assert res["frozen"]["normalized"] == pytest.approx((0.5 - 0.1) / (0.8 - 0.1))
    json.dumps(res, allow_nan=False)


# ------------------------------------------------------------------------------------------------- tests and Holm

def seven_methods() -> dict:
    """frozen + 6 methods; only ``vs`` differs (Welch p ~ 0.005: inside 0.05/6, outside 0.05/21)."""
    return table(frozen=FROZEN, untrained=FROZEN, vs=[x + 0.09 for x in FROZEN], rotation=FROZEN,
                 cotrain=FROZEN, population=FROZEN, selfplay=FROZEN)


def test_holm_within_the_confirmatory_family_only():
    t = seven_methods()
    st = stats.game_stats(t)
    assert len(st["family"]) == 6 and len(st["exploratory"]) == 15
    assert {(r["a"], r["b"]) for r in st["confirmatory"]} == {(m, "frozen") for m in st["family"]}
    assert all("frozen" not in (r["a"], r["b"]) for r in st["exploratory"])
    vs = next(r for r in st["confirmatory"] if r["a"] == "vs")
    assert 0.05 / 21 < vs["p"] < 0.05 / 6
    assert vs["p_holm"] == pytest.approx(6 * vs["p"]) and vs["p_holm"] < 0.05
    # the same comparison fails when corrected over all 21 pairs
    every = stats.pairwise_tests({m: [s["heldout_success"] for s in e["per_seed"].values()] for m, e in t.items()})
    assert len(every) == 21
    assert next(r for r in every if {r["a"], r["b"]} == {"vs", "frozen"})["p_holm"] > 0.05


def test_floor_and_ceiling_rows_are_in_no_family():
    t = {**seven_methods(), **table(random=[0.0, 0.1, 0.05], oracle=[0.9, 0.95, 1.0])}
    st = stats.game_stats(t)
    assert len(st["family"]) == 6 and len(st["exploratory"]) == 15
    assert all({"random", "oracle"}.isdisjoint((r["a"], r["b"])) for r in st["confirmatory"] + st["exploratory"])


def test_holm_keeps_a_declared_family_size():
    assert stats.holm([0.01], m=6) == pytest.approx([0.06])
    with pytest.raises(ValueError):
        stats.holm([0.01, 0.02], m=1)


# -------------------------------------------------------------------------------------------------- CIs and power

def test_bootstrap_ci_deterministic_and_contains_the_mean():
    x = [0.31, 0.35, 0.29, 0.40, 0.33]
    ci = stats.bootstrap_ci(x)
    assert ci == stats.bootstrap_ci(x)
    assert ci[0] < np.mean(x) < ci[1]
    y = [0.1, 0.15, 0.12]
    d = stats.bootstrap_diff_ci(x, y)
    assert d == stats.bootstrap_diff_ci(x, y)
    assert d[0] < np.mean(x) - np.mean(y) < d[1]
    assert stats.bootstrap_ci(x, seed=1) != ci  # the seed is what fixes it
    assert all(np.isnan(stats.bootstrap_ci([0.3])))


def test_mde_decreases_with_more_seeds():
    ds = [stats.mde(n, family=6) for n in (2, 3, 5, 8, 20)]
    assert all(a > b for a, b in itertools.pairwise(ds))
    assert stats.mde(3, family=1) < stats.mde(3, family=6)  # Holm's first step over a larger family is stricter
    assert stats.mde(64) == pytest.approx(0.5, abs=0.01)  # the textbook 64 per arm for d = 0.5
    assert stats.power_two_sample(stats.mde(5, family=6), 5, 0.05 / 6) == pytest.approx(0.8, abs=1e-6)
    assert np.isnan(stats.mde(1))


def test_game_mde_absolute_and_fraction_of_headroom():
    t = {**seven_methods(), **table(random=[0.0, 0.0, 0.0], oracle=[1.0, 1.0, 1.0])}
    st = stats.game_stats(t)
    assert st["n"] == 3 and st["sd"] == pytest.approx(0.02)  # every method's per-seed sd is 0.02
    assert st["mde"] == pytest.approx(stats.mde(3, family=6) * 0.02)
    assert st["mde_frac"] == pytest.approx(st["mde"] / 1.0)
    assert 0 < st["mde_welch_power"] < 0.8


# --------------------------------------------------------------------------------------------------------- claims

def test_claims_schema_is_a_json_list():
    t = {**seven_methods(), **table(random=[0.0, 0.05, 0.1], oracle=[0.9, 0.95, 1.0])}
    cl = stats.claims({"g": t, "h": seven_methods()})
    back = json.loads(json.dumps(cl, allow_nan=False))
    assert back == cl and isinstance(back, list) and len(back) == 2 * len(stats.CLAIMS)
    for c in back:
        assert set(c) == {"game", "claim", "held", "evidence"}
        assert c["game"] in ("g", "h") and c["held"] in (True, False, None)
        assert isinstance(c["claim"], str) and isinstance(c["evidence"], str) and c["evidence"]
    assert [c["claim"] for c in back[:len(stats.CLAIMS)]] == list(stats.CLAIMS.values())


def test_claims_without_floor_and_ceiling_are_not_judged():
    c = by_label(stats.claims({"g": seven_methods()}))
    for label in ("0", "1", "2a", "2b"):
        assert c[label]["held"] is None and "not judged (no floor/ceiling rows)" in c[label]["evidence"], label
    assert c["3"]["held"] is False  # population is not best; claim 3 needs no band
    assert c["0"]["evidence"].endswith("methods 'random' and 'oracle' were not run")
    with_floor = {**seven_methods(), "random": seven_methods()["frozen"]}
    assert by_label(stats.claims({"g": with_floor}))["0"]["evidence"].endswith("method 'oracle' was not run")


def test_a_game_whose_oracle_does_not_clear_random_is_flagged():
    for oracle in ([0.1, 0.2, 0.3], [0.05, 0.2, 0.15], [0.0, 0.1, 0.05]):  # above but CI includes 0; equal; below
        t = {**seven_methods(), **table(random=[0.05, 0.15, 0.2], oracle=oracle)}
        c = by_label(stats.claims({"g": t}))
        assert c["0"]["held"] is False and "cannot judge methods" in c["0"]["evidence"], oracle
        for label in ("1", "2a", "2b", "3"):
            assert c[label]["held"] is None and "cannot judge methods" in c[label]["evidence"], (oracle, label)
    assert stats.band(table(random=[0.05, 0.15, 0.2], oracle=[0.1, 0.2, 0.3]))["headroom"] > 0  # yet flagged


def test_one_seed_leaves_the_band_unjudged_not_failed():
    """One seed of the floor and ceiling has no CI: claim 0 is not judged (and says how to judge it), the game still
    judges no method, and the report says why in those words."""
    from scope_envs.bench.report import game_section

    t = stats.normalize({"g": table(random=[0.1], oracle=[0.9], frozen=[0.5], untrained=[0.2], vs=[0.6],
                                    cotrain=[0.4])})["g"]
    c = by_label(stats.claims({"g": t}))
    assert c["0"]["held"] is None and "--seeds 2" in c["0"]["evidence"]
    assert all(c[k]["held"] is None and "cannot judge methods" in c[k]["evidence"] for k in ("1", "2a", "2b"))
    text = "\n".join(game_section("g", t, {"g": t}, [], stats.game_stats(t), stats.game_claims("g", t)))
    assert "one seed cannot show its ceiling clearing its floor" in text


def test_negative_gap_is_never_a_recovery():
    band = table(random=[0.0, 0.02, 0.04], oracle=[0.95, 0.97, 0.99])
    worse = [x - 0.2 for x in FROZEN]
    c = by_label(stats.claims({"g": {**table(frozen=FROZEN, vs=worse, cotrain=FROZEN), **band}}))
    assert c["2a"]["held"] is False and "recovered -" in c["2a"]["evidence"]
    # frozen above the ceiling: (vs - frozen) / (oracle - frozen) would be positive, and must not count
    high = table(random=[0.0, 0.02, 0.04], oracle=[0.30, 0.31, 0.32])
    t = stats.normalize({"g": {**table(frozen=FROZEN, vs=worse, cotrain=FROZEN), **high}})["g"]
    assert t["vs"]["recovered"] is None
    c = by_label(stats.claims({"g": t}))
    assert c["2a"]["held"] is None and "no gap to recover" in c["2a"]["evidence"]


def test_a_gap_within_noise_is_no_gap_to_recover():
    # oracle above frozen by 0.01 on average, its seeds spread wider: a vs 0.1 above frozen would "recover" 10 gaps
    band = table(random=[0.0, 0.02, 0.04], oracle=[0.33, 0.43, 0.53])
    c = by_label(stats.claims({"g": {**table(frozen=FROZEN, vs=[x + 0.1 for x in FROZEN], cotrain=FROZEN), **band}}))
    for label in ("2a", "2b"):
        assert c[label]["held"] is None and "within noise" in c[label]["evidence"], label
    clear = table(random=[0.0, 0.02, 0.04], oracle=[0.60, 0.62, 0.64])  # the same vs, a gap whose CI is above 0
    c = by_label(stats.claims({"g": {**table(frozen=FROZEN, vs=[x + 0.1 for x in FROZEN], cotrain=FROZEN), **clear}}))
    assert c["2a"]["held"] is True and "recovered +0.500" in c["2a"]["evidence"]


def test_recovery_held_when_most_of_the_gap_is_closed_and_the_ci_excludes_0():
    band = table(random=[0.0, 0.02, 0.04], oracle=[0.80, 0.82, 0.84])  # gap to recover 0.4
    c = by_label(stats.claims({"g": {**table(frozen=FROZEN, vs=[x + 0.3 for x in FROZEN],
                                              cotrain=[x + 0.1 for x in FROZEN]), **band}}))
    assert c["2a"]["held"] is True and "recovered +0.750" in c["2a"]["evidence"]
    assert c["2b"]["held"] is False and "recovered +0.250" in c["2b"]["evidence"]  # significant, but too little


def near_case(untrained_heldout, oracle=(0.9, 1.0, 1.1)):
    band = table(random=[0.0, 0.05, 0.1], oracle=list(oracle))
    t = table(frozen=FROZEN, frozen_train=[0.9, 0.92, 0.94], untrained=untrained_heldout,
              untrained_train=[0.2, 0.22, 0.24])
    return by_label(stats.claims({"g": {**t, **band}}))["1"]


def test_near_per_the_definition():
    # the CI of frozen - untrained includes 0: near
    c = near_case([0.39, 0.43, 0.45])
    assert c["held"] is True and "CI includes 0: yes" in c["evidence"]
    # excludes 0 but lies within 25% of the headroom (0.95 -> 0.2375): near
    c = near_case([x - 0.1 for x in FROZEN])
    assert c["held"] is True and "CI includes 0: no" in c["evidence"] and "within ±0.237: yes" in c["evidence"]
    # excludes 0 and reaches past 25% of the headroom: not near
    c = near_case([x - 0.3 for x in FROZEN])
    assert c["held"] is False and "(near: no)" in c["evidence"]
    # the same difference is near on a game with more headroom
    assert near_case([x - 0.3 for x in FROZEN], oracle=(1.9, 2.0, 2.1))["held"] is True


def test_claim1_needs_frozen_high_on_its_simulator():
    band = table(random=[0.0, 0.05, 0.1], oracle=[0.9, 1.0, 1.1])
    t = table(frozen=FROZEN, frozen_train=[0.2, 0.25, 0.3], untrained=FROZEN, untrained_train=[0.2, 0.22, 0.24])
    c = by_label(stats.claims({"g": {**t, **band}}))["1"]
    assert c["held"] is False and "(above 0: no)" in c["evidence"]


def test_population_best_needs_holm_significance():
    band = table(random=[0.0, 0.05, 0.1], oracle=[0.9, 1.0, 1.1])
    t = seven_methods()
    t.update(table(population=[x + 0.2 for x in FROZEN]))
    c = by_label(stats.claims({"g": {**t, **band}}))["3"]
    assert c["held"] is True and "p_Holm" in c["evidence"]
    t.update(table(population=[x + 0.06 for x in FROZEN], vs=[0.41, 0.43, 0.45]))  # best, p < 0.05, not after Holm
    st = stats.game_stats(t)
    row = next(r for r in st["confirmatory"] if r["a"] == "population")
    assert row["p"] < 0.05 < row["p_holm"]
    c = by_label(stats.claims({"g": {**t, **band}}))["3"]
    assert c["held"] is False and "significant: no" in c["evidence"]


# --------------------------------------------------------------------------------------------------------- runner

@pytest.mark.parametrize("kwargs", [{}, {"eval_episodes": 40}, {"steps": 100}])
def test_runner_sizes_each_games_evaluation(tmp_path, monkeypatch, kwargs):
    """The preset's held-out evaluation is raised per game to ``EVAL_EPISODES_MIN`` (p4g's per-episode spread is
    large against its band), the train side keeps the preset's; an explicit ``eval_episodes`` is used as given for
    both, and a smoke run stays small."""
    seen = {}

    class Stop(Exception):
        pass

    def fake_execute(tasks, out, **_):
        seen.update({t["game"]: (t["eval_episodes"], t["heldout_episodes"]) for t in tasks})
        raise Stop

    monkeypatch.setattr(runner, "execute", fake_execute)
    with pytest.raises(Stop):
        runner.run(games=["p4g", "tau2"], methods=["frozen"], seeds=1, out=tmp_path, progress=False, **kwargs)
    preset = methods.PRESETS["default"]["eval_episodes"]
    expected = {"p4g": (preset, methods.EVAL_EPISODES_MIN["p4g"]), "tau2": (preset, preset)} if not kwargs else \
        {g: (kwargs.get("eval_episodes", min(preset, 200)),) * 2 for g in ("p4g", "tau2")}
    assert methods.EVAL_EPISODES_MIN["p4g"] > preset >= methods.EVAL_EPISODES_MIN["tau2"]
    assert seen == expected


def test_runner_writes_claims_json_and_report(tmp_path, monkeypatch):
    per = {"untrained": 0.1, "frozen": 0.3, "vs": 0.6, "rotation": 0.3, "cotrain": 0.35, "population": 0.65,
           "selfplay": 0.2, "random": 0.05, "oracle": 0.8}

    def fake_run_one(game, method, seed, **_):
        x = per[method] + 0.01 * seed
        return {"game": game, "method": method, "seed": seed, "curve": [], "training": [], "env_steps": 0,
                "env_steps_per_s": 0.0, "wall_s": 0.0, "outcomes": {"train": {}, "heldout": {}},
                "metrics": {"train_success": 0.9 if method not in ("untrained", "random") else 0.2,
                            "heldout_success": x, "gap": 0.0, "policy_entropy": 1.0, "sim_entropy": 1.0,
                            "train_zero_score_frac": 0.0, "panel_success": x - 0.02,
                            "panel_per_family": [x, x - 0.04]},
                "panel": {"families": ["fam_a", "fam_b"], "episodes_per_family": 2, "seeds": [0, 50]}}

    monkeypatch.setattr(methods, "run_one", fake_run_one)  # the executors call methods.run_one
    monkeypatch.setattr(runner, "plot", lambda out, runs: None)
    out = tmp_path / "res"
    runner.run(games=["p4g"], methods=list(per), seeds=3, steps=100, eval_episodes=10, out=out, jobs=1,
               progress=False, seed_block=1)  # one run_one per seed (a block would train for real)
    results = json.loads((out / "results.json").read_text())
    assert set(results["p4g"]) == set(per)  # game -> method -> metrics
    assert results["p4g"]["vs"]["normalized"] == pytest.approx((0.61 - 0.06) / 0.75)
    cl = json.loads((out / "claims.json").read_text())
    assert {c["game"] for c in cl} == {"p4g"} and all(set(c) == {"game", "claim", "held", "evidence"} for c in cl)
    assert by_label(cl)["0"]["held"] is True and by_label(cl)["2a"]["held"] is True
    report = (out / "report.md").read_text()
    assert report.index("### Confirmatory") < report.index("### Exploratory")
    for text in ("| method | train | held-out | panel |", "normalized", "recovered", "Minimum detectable effect",
                 "Pre-declared analysis", "Holm", "Welch", "fam_a", "**held**"):
        assert text in report, text


# ------------------------------------------------------------- the field's aggregates (Agarwal et al. 2021, rliable)

def test_iqm_is_the_mean_of_the_middle_half_of_all_runs():
    assert stats.iqm(np.arange(1, 9)) == 4.5  # 1..8: drop 1, 2 and 7, 8
    assert stats.iqm([[1, 10], [2, 20], [3, 30], [4, 40]]) == 9.25  # runs x tasks, pooled: mean(3, 4, 10, 20)
    assert stats.iqm([np.array([1.0, 2.0, 3.0, 4.0]), np.array([100.0, -100.0, 5.0, 6.0])]) == 3.5
    assert stats.iqm([0.0, 0.0, 0.0, 100.0]) == 0.0  # an outlying run does not move it (the mean is 25)


def test_probability_of_improvement_counts_pairs_and_ties():
    # pairs x > y: (1,0) (2,0) (3,0) (3,2); the tie (2,2) counts a half: 4.5 of 9
    assert stats.probability_of_improvement([1, 2, 3], [0, 2, 4]) == pytest.approx(4.5 / 9)
    assert stats.probability_of_improvement([5, 6], [1, 2, 3]) == 1.0
    assert stats.probability_of_improvement([1, 2, 3], [5, 6]) == 0.0
    assert stats.probability_of_improvement([0.3, 0.3], [0.3, 0.3]) == 0.5
    # averaged over tasks: 1.0 on the first, 0.0 on the second
    assert stats.probability_of_improvement([[2, 0], [3, 0]], [[1, 1], [1, 1]]) == 0.5
    with pytest.raises(ValueError, match="tasks"):
        stats.probability_of_improvement([[1, 2], [3, 4]], [1, 2])


def test_stratified_bootstrap_keeps_each_tasks_runs_in_that_task():
    """Two tasks whose runs do not vary within the task: a stratified resample is always the same pooled set, so
    the IQM's interval collapses onto the IQM; resampling the pooled runs would move it."""
    scores = [np.full(4, 1.0), np.full(4, 5.0)]
    assert stats.iqm(scores) == 3.0
    assert stats.iqm_ci(scores) == (3.0, 3.0)
    lo, hi = stats.iqm_ci(np.array([1.0] * 4 + [5.0] * 4))  # one task of the same eight runs
    assert lo < 3.0 < hi
    ci = stats.iqm_ci(np.arange(1, 9))
    assert ci == stats.iqm_ci(np.arange(1, 9)) and ci[0] < 4.5 < ci[1]  # deterministic, around the estimate
    assert all(np.isnan(stats.iqm_ci([1.0])))


def test_performance_profile_is_the_fraction_of_runs_above_each_threshold():
    profile, lo, hi = stats.performance_profile([[0.1, 1.0], [0.2, 2.0], [0.3, 3.0]], [0.0, 0.15, 1.5, 3.0])
    np.testing.assert_allclose(profile, [1.0, 5 / 6, 2 / 6, 0.0])  # "above": a run at the threshold is not
    assert (lo <= profile).all() and (profile <= hi).all() and lo[0] == hi[0] == 1.0 and lo[-1] == hi[-1] == 0.0


# Computed by rliable 1.2.0 itself (a separate virtualenv: its arch < 8 pin does not import beside pandas 3, so
# it has pandas 2.2) on X = default_rng(3).random((10, 3)), Y = the next draws (12, 3) * 0.9, X[0, 0] = Y[0, 0]:
# aggregate_iqm(X), probability_of_improvement(X, Y) and get_interval_estimates' percentile CIs (20,000 and 5,000
# resamples: our resamples differ, so the CIs agree to the bootstrap's own noise).
RLIABLE = {"iqm": 0.4856164730052304, "poi": 0.5180555555555556, "iqm_ci": (0.3836799083745186, 0.5875701789093537),
           "poi_ci": (0.38472222222222224, 0.6472222222222221)}


def test_the_definitions_agree_with_rliable():
    rng = np.random.default_rng(3)
    x, y = rng.random((10, 3)), rng.random((12, 3)) * 0.9
    x[0, 0] = y[0, 0]
    assert stats.iqm(x) == pytest.approx(RLIABLE["iqm"], rel=1e-12)
    assert stats.probability_of_improvement(x, y) == pytest.approx(RLIABLE["poi"], rel=1e-12)
    assert np.allclose(stats.iqm_ci(x, resamples=20_000), RLIABLE["iqm_ci"], atol=0.01)
    assert np.allclose(stats.probability_of_improvement_ci(x, y, resamples=5000), RLIABLE["poi_ci"], atol=0.01)


def test_results_carry_the_iqm_and_the_probability_of_improvement_over_frozen():
    t = table(random=[0.0, 0.1, 0.2, 0.1], oracle=[0.9, 1.0, 0.8, 0.9], frozen=[0.4, 0.5, 0.45, 0.5],
              vs=[0.45, 0.7, 0.65, 0.5])
    stats.add_aggregates(t)
    assert t["vs"]["heldout_iqm"] == pytest.approx(0.575)  # mean(0.5, 0.65)
    # 0.45: beats 0.4, ties 0.45 (1.5); 0.7 and 0.65 beat all four (8); 0.5: beats two, ties two (3)
    assert t["vs"]["p_improvement"] == pytest.approx(12.5 / 16)
    assert "p_improvement" not in t["frozen"] and t["random"]["p_improvement"] == 0.0
    lo, hi = t["vs"]["p_improvement_ci"]
    assert lo <= t["vs"]["p_improvement"] <= hi
    json.dumps(t)  # plain floats and lists
    other = table(random=[0.0, 0.0, 0.0], oracle=[1.0, 1.0, 1.0], frozen=[0.5, 0.5, 0.5], vs=[0.9, 0.9, 0.9])
    results = stats.normalize({"a": {**t}, "b": other})
    agg = stats.aggregate(results)
    assert agg["games"] == ["a", "b"] and agg["runs_per_game"] == 3  # every game gives its first 3 seeds
    # game a's first three seeds: 0.45 beats 0.4 and ties 0.45 (1.5), 0.7 and 0.65 beat all three (6): 7.5 / 9;
    # game b: 1.0
    assert agg["methods"]["vs"]["p_improvement"] == pytest.approx((7.5 / 9 + 1.0) / 2)


# ------------------------------------------------------------------------------------------------------ seeds rule

def test_the_default_run_raises_each_games_seeds_to_the_rule(tmp_path, monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_execute(tasks, out, **_):
        for t in tasks:
            seen.setdefault(t["game"], set()).add(t["seed"])
        raise Stop

    monkeypatch.setattr(runner, "execute", fake_execute)
    preset = methods.PRESETS["default"]["seeds"]
    for kwargs, want in (({}, {g: max(preset, methods.SEEDS_MIN[g]) for g in ("p4g", "tau2")}),
                         ({"seeds": 3}, {"p4g": 3, "tau2": 3}), ({"steps": 100}, {"p4g": preset, "tau2": preset})):
        seen.clear()
        with pytest.raises(Stop):
            runner.run(games=["p4g", "tau2"], methods=["frozen"], out=tmp_path, progress=False, **kwargs)
        assert {g: len(s) for g, s in seen.items()} == want, kwargs
        assert all(s == set(range(len(s))) for s in seen.values())


def test_seeds_min_is_the_rules_output_on_the_committed_runs():
    """``SEEDS_MIN`` is what ``benchmarks/seeds_rule.py`` derives from the committed default runs (git history)."""
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("seeds_rule", root / "benchmarks" / "seeds_rule.py")
    seeds_rule = importlib.util.module_from_spec(spec)
    sys.modules["seeds_rule"] = seeds_rule
    spec.loader.exec_module(seeds_rule)
    if subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{seeds_rule.RUNS[0]}^{{commit}}"],
                      capture_output=True).returncode:
        pytest.skip("the committed runs' revisions are not in this checkout's git history")
    runs = {rev: json.loads(seeds_rule.git_show(rev, f"{seeds_rule.RESULTS}/results.json")) for rev in seeds_rule.RUNS}
    for rev in seeds_rule.RUNS:
        seeds_rule.check_settings(rev)
    out = seeds_rule.rule(runs)
    assert {g: r["seeds"] for g, r in out.items()} == methods.SEEDS_MIN
    for g, r in out.items():  # the smallest such n: one seed fewer misses the target
        assert r["mde_frac_at_seeds"] <= methods.SEEDS_MDE_FRACTION
        assert stats.mde(r["seeds"] - 1, r["family"]) * r["sd"] > r["target_mde"]


# ------------------------------------------------------------------------------------ edge cases of the tests' inputs

def test_welch_is_undefined_with_one_seed_or_a_nan_and_never_significant():
    nan = float("nan")
    for x, y in (([0.9], [0.0, 0.1, 0.2]),  # one seed: no variance, no test
                 ([0.3, nan, 0.5], [0.3, 0.4, 0.5]),  # a missing value: no test, not p = 0
                 ([], [0.1, 0.2])):
        row = stats.welch(x, y)
        assert np.isnan(row["p"]) and np.isnan(row["t"]) and np.isnan(row["d"]), (x, y, row)
        assert row["degenerate"]
    # both arms constant and different: t is infinite, p 0 (as before); equal: p 1
    assert stats.welch([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])["p"] == 0.0
    assert stats.welch([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])["p"] == 1.0


def test_holm_leaves_an_undefined_p_undefined_and_the_others_as_they_were():
    nan = float("nan")
    adj = stats.holm([0.01, nan, 0.04])
    assert adj[0] == pytest.approx(0.03) and adj[2] == pytest.approx(0.08) and np.isnan(adj[1])
    rows = stats.pairwise_tests({"a": [0.3, nan, 0.5], "b": [0.1, 0.2, 0.15], "c": [0.5, 0.6, 0.55]},
                                [("a", "b"), ("c", "b")])
    by = {r["a"]: r for r in rows}
    assert np.isnan(by["a"]["p_holm"]) and not by["a"]["p_holm"] < 0.05
    assert by["c"]["p_holm"] == pytest.approx(2 * by["c"]["p"])


def test_iqm_of_no_runs_is_nan():
    assert np.isnan(stats.iqm([])) and np.isnan(stats.iqm(np.array([])))


def test_welch_on_an_arm_of_nearly_equal_values_warns_nothing():
    """scipy's "Precision loss ... catastrophic cancellation" warning reached a user's terminal between the
    bench's progress and its verdict (two seeds of a row that scored the same); ``degenerate`` already says it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stats.welch([0.5, 0.5 + 1e-16], [0.3, 0.4])["degenerate"]
