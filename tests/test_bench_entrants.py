"""New entrants never move the built-in rows' statistics (scope_envs.bench.entrants): byte-identical results,
tests and claims whatever is added; each entrant tested in its own family, Welch and paired."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sstats

from scope_envs.bench import entrants
from scope_envs.bench.methods import METHODS
from scope_envs.bench.report import write_report
from scope_envs.bench.stats import claims, summarize


def fake_runs(methods, seeds=8, game="p4g", shift=None, rng_seed=0):
    """Runs with made-up per-seed metrics (an entrant is just another method name here)."""
    rng = np.random.default_rng(rng_seed)
    shift = shift or {}
    runs = []
    for i, m in enumerate(methods):
        for s in range(seeds):
            held = 0.3 + 0.05 * i + shift.get(m, 0.0) + rng.normal(0, 0.05)
            runs.append({"game": game, "method": m, "seed": s, "outcomes": {"train": {}, "heldout": {}},
                         "metrics": {"train_success": held + 0.4, "heldout_success": held, "gap": 0.4,
                                     "policy_entropy": 1.0, "sim_entropy": 1.0, "train_zero_score_frac": 0.1,
                                     "panel_success": held, "panel_per_family": [held] * 6}})
    return runs


def everything(runs, confirmatory=None):
    results = summarize(runs)
    st = entrants.stats_by_game(results, confirmatory)
    return results, st, claims(entrants.builtin_results(results), st)


def dump(x):
    return json.dumps(x, sort_keys=True, default=float)


@pytest.mark.parametrize("n_new", [1, 3, 12])
def test_adding_entrants_leaves_every_built_in_number_byte_identical(n_new):
    base = fake_runs(METHODS)
    new = fake_runs([f"new-{k}" for k in range(n_new)], shift={"new-0": 0.5}, rng_seed=1)
    r0, st0, c0 = everything(base)
    r1, st1, c1 = everything(base + new)
    for method in METHODS:
        assert dump(r1["p4g"][method]) == dump(r0["p4g"][method])
    assert dump(c1) == dump(c0)
    for key in ("confirmatory", "exploratory", "family", "band", "n", "sd", "mde", "mde_frac"):
        assert dump(st1["p4g"][key]) == dump(st0["p4g"][key])
    assert {m: st1["p4g"]["ci"][m] for m in METHODS} == st0["p4g"]["ci"]
    # m stays as declared (the measurement rows and frozen are not in it)
    assert len(st1["p4g"]["family"]) == len(METHODS) - 4
    assert set(st1["p4g"]["entrants"]) == {f"new-{k}" for k in range(n_new)}


def test_an_entrant_is_tested_in_its_own_family():
    base = fake_runs(METHODS)
    results, st, _ = everything(base + fake_runs(["dr"], shift={"dr": 0.6}, rng_seed=2))
    e = st["p4g"]["entrants"]["dr"]
    best = max((m for m in METHODS if m not in ("random", "oracle")),
               key=lambda m: results["p4g"][m]["heldout_success"])
    assert e["family"] == ["frozen", best] and e["declared"] == "default"
    held = {m: [results["p4g"][m]["per_seed"][str(s)]["heldout_success"] for s in range(8)] for m in ("dr", "frozen")}
    row = e["rows"][0]
    assert row["b"] == "frozen"
    assert row["p"] == pytest.approx(sstats.ttest_ind(held["dr"], held["frozen"], equal_var=False).pvalue)
    assert row["p_paired"] == pytest.approx(sstats.ttest_rel(held["dr"], held["frozen"]).pvalue)
    ps = sorted(r["p"] for r in e["rows"])
    assert max(r["p_holm"] for r in e["rows"]) == pytest.approx(min(1.0, max(2 * ps[0], ps[1])))  # Holm, m = 2
    assert row["n_paired"] == 8 and row["ci"][0] < row["diff"] < row["ci"][1]


def test_confirmatory_names_the_family_and_other_entrants_stay_apart():
    base = fake_runs(METHODS)
    more = fake_runs(["dr", "frozen-sb3"], rng_seed=3)
    _, st, _ = everything(base + more, confirmatory=["frozen-sb3", "vs", "absent"])
    e = st["p4g"]["entrants"]["dr"]
    assert e["family"] == ["frozen-sb3", "vs", "absent"] and e["declared"] == "confirmatory"
    assert [r["b"] for r in e["rows"]] == ["frozen-sb3", "vs"] and e["missing"] == ["absent"]
    assert st["p4g"]["entrants"]["frozen-sb3"]["family"] == ["vs", "absent"]  # not against itself


def test_paired_test_on_shared_seeds_only():
    x = {"0": 1.0, "1": 2.0, "2": 3.5, "5": 9.0}
    y = {"0": 0.5, "1": 1.0, "2": 2.0}
    r = entrants.paired(x, y)
    assert r["n_paired"] == 3 and r["p_paired"] == pytest.approx(sstats.ttest_rel([1, 2, 3.5], [0.5, 1, 2]).pvalue)
    assert entrants.paired({"0": 1.0}, {"0": 0.0})["n_paired"] == 1
    same = entrants.paired({"0": 1.0, "1": 2.0}, {"0": 0.0, "1": 1.0})
    assert same["p_paired"] == 0.0  # a constant positive difference: decided by its sign


def test_the_report_shows_the_entrant_with_its_ci_and_its_own_tests(tmp_path):
    runs = fake_runs(METHODS) + fake_runs(["dr"], shift={"dr": 0.6}, rng_seed=2)
    results, st, _ = everything(runs)
    write_report(tmp_path, results, runs, {"seeds": 8}, 1.0, st)
    text = (tmp_path / "report.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| dr | ") and "±" in line)
    assert "[" in row and "### New entrants" in text and "| dr | frozen |" in text
    start = text.index("### Confirmatory")
    conf = text[start:text.index("\n### ", start)]
    assert "| dr |" not in conf and "m = 6" in conf
    assert not re.search(r"\bdr\b", text[text.index("### The paper's claims"):])  # claims: built-in rows only


def test_the_leaderboard_lists_every_row_with_its_cis(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from leaderboard import leaderboard

    runs = fake_runs(METHODS, shift={"oracle": 0.4}) + fake_runs(["dr"], shift={"dr": 0.7}, rng_seed=2)
    text = leaderboard(summarize(runs))
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| row")]
    assert len(rows) == len(METHODS) + 1 and rows[0].startswith("| dr (entrant) |")  # sorted by held-out success
    assert "(floor)" in text and "(ceiling)" in text and all(line.count("[") == 4 for line in rows)


def test_the_leaderboard_refuses_a_folder_as_its_out_file(tmp_path, capsys):
    """--out an existing directory: exit 2 naming --out, not IsADirectoryError; a new file's folder is made."""
    from bench_fixtures import load_script

    leaderboard = load_script("leaderboard")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(summarize(fake_runs(["random", "frozen"]))))
    with pytest.raises(SystemExit) as e:
        leaderboard.main([str(folder), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --out: " in err and "is a folder" in err and "Traceback" not in err
    leaderboard.main([str(folder), "--out", str(tmp_path / "new" / "board.md")])
    assert "| frozen |" in (tmp_path / "new" / "board.md").read_text()
