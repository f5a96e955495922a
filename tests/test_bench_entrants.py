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
    assert "| dr |" not in conf and "m = 9" in conf  # frozen against p4g's nine methods: grounded and the realism rows among them
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


# ---------------------------------------------------------------------------- against a whole reference
@pytest.fixture(scope="module")
def three_seed_reference(tmp_path_factory):
    """A tiny reference of 3 seeds (the band, frozen, rotation and uncollapsed, for the collapse cost): an
    entrant run at 2 seeds against it must still meet all 3."""
    from scope_envs.cli import main

    out = tmp_path_factory.mktemp("reference") / "ref3"
    main(["bench", "--games", "p4g", "--seeds", "3", "--steps", "400", "--eval-episodes", "24", "--methods",
          "random", "oracle", "untrained", "frozen", "rotation", "uncollapsed", "--out", str(out)])
    return out


FIRST_LEGAL = '''
from scope_envs.train.policy import UniformPolicy

def first_legal(ctx):
    ctx.progress(0, UniformPolicy(seed=ctx.seed))
    ctx.progress(ctx.budget, UniformPolicy(seed=ctx.seed))
    return lambda obs, mask: mask.argmax(1)
'''


def test_an_entrant_at_fewer_seeds_meets_every_reference_seed(three_seed_reference, tmp_path, capsys):
    """--seeds 2 against a 3-seed reference: the reference's rows, claims and built-in collapse rows stay
    byte-identical to its own, the entrant's Welch tests use all 3 reference seeds (paired: the 2 shared), and
    stdout ends with the verdict block (power and collapse beside it), not with the report."""
    from scope_envs.cli import main

    ref = three_seed_reference
    plugin = tmp_path / "mine.py"
    plugin.write_text(FIRST_LEGAL)
    out = tmp_path / "new"
    capsys.readouterr()
    main(["bench", "--games", "p4g", "--seeds", "2", "--steps", "400", "--eval-episodes", "24", "--method",
          f"{plugin}:first_legal", "--against", str(ref), "--out", str(out)])
    stdout = capsys.readouterr().out
    assert (out / "claims.json").read_bytes() == (ref / "claims.json").read_bytes()
    theirs, mine = (json.loads((d / "results.json").read_text())["p4g"] for d in (ref, out))
    assert list(mine) == [*theirs, "first_legal"] and list(mine["first_legal"]["per_seed"]) == ["0", "1"]
    assert all(json.dumps(mine[m]) == json.dumps(theirs[m]) for m in theirs)  # all 3 seeds, byte for byte
    split_ref, split_new = (json.loads((d / "split.json").read_text())["p4g"] for d in (ref, out))
    assert all(json.dumps(split_new["rows"][m]) == json.dumps(r) for m, r in split_ref["rows"].items())
    assert split_new["cost"] == split_ref["cost"]
    v = json.loads((out / "entrants.json").read_text())["p4g"]["first_legal"]
    held = {m: [s["heldout_success"] for s in e["per_seed"].values()] for m, e in mine.items()}
    best = max(("untrained", "frozen", "rotation"), key=lambda m: np.mean(held[m]))  # chosen on all 3 seeds
    assert v["family"] == list(dict.fromkeys(["frozen", best]))
    for row in v["rows"]:
        welch = sstats.ttest_ind(held["first_legal"], held[row["b"]], equal_var=False)
        assert row["p"] == pytest.approx(welch.pvalue) and (row["n"], row["n_other"], row["n_paired"]) == (2, 3, 2)
        assert 0 < row["power"] < 1 and row["mde"] > 0
    c = v["collapse"]
    assert c["cost"] == split_ref["cost"]["mean"] and c["cost_ci"] == split_ref["cost"]["ci"]
    if c["costs"]:
        assert c["share"] == pytest.approx(c["diff"] / c["cost"]) and len(c["share_ci"]) == 2
    else:
        assert c["share"] is None and c["share_ci"] is None
    tail = stdout[stdout.index("p4g: first_legal, held-out success"):]
    assert "### " not in tail and "| method |" not in stdout  # the summary, not the report
    assert "vs frozen: " in tail and "p_Holm" in tail and "power: detects" in tail and "2 vs 3 seeds" in tail
    assert f"vs frozen: {v['rows'][0]['reading']}: " in tail
    assert "caution: 2 seed(s), fewer than 5: Welch's p is too small" in tail and v["few_seeds"]
    assert "collapse: cost at this budget" in tail and "share of it" in tail
    assert ("not evidence about collapse" in tail) == (not c["costs"])
    assert tail.rstrip().endswith(f"the whole report: {out.resolve() / 'report.md'}")
    assert "## The entrants' verdicts" in (out / "report.md").read_text()


def test_a_comparison_reads_better_or_worse_only_when_significant_in_that_direction():
    """The verdict gave numbers alone, and the report's "significant: yes" had no direction (a method far worse
    than frozen read "yes" too)."""
    frozen = 0.3 + 0.05 * METHODS.index("frozen")  # fake_runs' level of the k-th method: 0.3 + 0.05 k
    shift = {"up": frozen - 0.3 + 0.3, "down": frozen - 0.35 - 0.3, "same": frozen - 0.4}
    runs = fake_runs(METHODS) + fake_runs(["up", "down", "same"], shift=shift, rng_seed=3)
    _, st, _ = everything(runs, confirmatory=["frozen"])
    read = {name: e["rows"][0]["reading"] for name, e in st["p4g"]["entrants"].items()}
    assert read == {"up": "better", "down": "worse", "same": "no detectable difference"}, read
    assert entrants.reading(0.1, 0.001, (0.05, 0.15)) == "better"
    assert entrants.reading(0.1, 0.001, (-0.01, 0.15)) == "no detectable difference"  # CI reaching 0
    assert entrants.reading(-0.1, 0.2) == "no detectable difference"
    assert entrants.reading(0.1, float("nan")) == "no detectable difference"


def test_the_plots_draw_every_entrant_beside_the_built_in_rows(tmp_path):
    """An entrant was missing from the learning-curve and entropy plots (they listed the built-in rows alone), and
    one that reported no progress had no curve to draw."""
    from scope_envs.bench.plots import plot, rows_in_order

    runs = fake_runs(["random", "frozen"], seeds=2) + fake_runs(["mine", "heuristic"], seeds=2, rng_seed=4)
    for r in runs:
        r["curve"] = [] if r["method"] in ("random", "heuristic") else [
            {"agent_steps": k * 100, "train": 0.5, "heldout": 0.3} for k in range(3)]
        r["training"] = [] if not r["curve"] else [{"agent_steps": k * 100, "policy_entropy": 1.0 - 0.1 * k}
                                                   for k in range(3)]
    assert rows_in_order(runs) == ["random", "frozen", "mine", "heuristic"]
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    plot(tmp_path / "with", runs)
    plot(tmp_path / "without", [r for r in runs if r["method"] in ("random", "frozen")])
    for name in ("p4g_learning_curves.png", "p4g_entropy.png"):
        assert (tmp_path / "with" / name).read_bytes() != (tmp_path / "without" / name).read_bytes()


def test_the_collapse_sentence_follows_the_cost_ci():
    table = summarize(fake_runs(["frozen", "uncollapsed", "mine"], shift={"uncollapsed": 0.3}))["p4g"]
    for entry in table.values():
        for s in entry["per_seed"].values():
            s["ref_users"] = s["heldout_success"]
    hurts = entrants.collapse(table, "mine", {"mean": 0.35, "ci": [0.3, 0.4], "hurts": True}, "ref_users")
    flat = entrants.collapse(table, "mine", {"mean": 0.02, "ci": [-0.03, 0.07], "hurts": False}, "ref_users")
    assert not hurts["includes_zero"] and flat["includes_zero"]
    lo, hi = hurts["share_ci"]
    assert lo < hurts["share"] < hi
    assert "absent" in entrants.collapse(table, "mine", None, "ref_users")
    base = {"family": ["frozen"], "missing": [], "rows": [], "heldout_success": 0.4, "seeds": 8, "builtin_seeds": 8}
    said = entrants.summary({"p4g": {"mine": {**base, "collapse": flat}}}, "r.md")
    assert "not evidence about collapse" in said and "not evidence" not in entrants.summary(
        {"p4g": {"mine": {**base, "collapse": hurts}}}, "r.md")
    # a cost below 0 (the collapsed simulator trained better) has no share to recover, and says why
    helps = entrants.collapse(table, "mine", {"mean": -0.07, "ci": [-0.09, -0.05], "hurts": False}, "ref_users")
    assert not helps["includes_zero"] and not helps["costs"] and helps["share"] is None
    said = entrants.summary({"p4g": {"mine": {**base, "collapse": helps}}}, "r.md")
    assert "share of it n/a" in said and "the cost is below 0" in said and "not evidence about collapse" in said
    # one seed a side: no CI, and the sentence does not quote one
    alone = entrants.collapse(table, "mine", {"mean": 0.01, "ci": [float("nan")] * 2, "hurts": False}, "ref_users")
    said = entrants.summary({"p4g": {"mine": {**base, "collapse": alone}}}, "r.md")
    assert "the cost has no CI" in said and "CI includes 0" not in said and "not evidence about collapse" in said


def test_the_verdict_says_when_the_game_cannot_judge_methods():
    """Where the reference's ceiling does not clear its floor the report says the game cannot judge methods; the
    verdict, all that stdout shows, had given the entrant's tests (and MDEs of 1000% of a headroom within noise)
    without a word of it."""
    for oracle_shift, judges in ((-0.05, False), (0.5, True)):  # oracle at random's level, or well above it
        runs = fake_runs(["random", "oracle", "frozen", "mine"], shift={"oracle": oracle_shift})
        results = summarize(runs)
        st = entrants.stats_by_game(results)
        v = entrants.verdicts(results, st, {}, "heldout_success")
        assert st["p4g"]["band"]["clears"] is judges and v["p4g"]["mine"]["band_clears"] is judges
        said = entrants.summary(v, "r.md")
        assert ("this game cannot judge methods" in said) is not judges, said
        assert entrants.to_json(st)["p4g"]["mine"]["band_clears"] is judges  # entrants.json holds it too


def test_the_verdict_says_how_far_the_entrant_crossed_its_budget():
    """One progress call at 10x the budget is within the budget rule (the iteration that reaches it may cross it);
    its record said so, but nothing the entrant's verdict or entrants.json showed did."""
    runs = fake_runs(["random", "oracle", "frozen", "mine", "exact"], shift={"oracle": 0.5})
    for r in runs:
        r["agent_steps"] = {"mine": 10_000, "exact": 1_000}.get(r["method"], 1_020)
    results = summarize(runs)
    st = entrants.stats_by_game(results)
    v = entrants.verdicts(results, st, {}, "heldout_success", runs=runs, budgets={"p4g": 1_000})
    assert (v["p4g"]["mine"]["agent_steps_max"], v["p4g"]["mine"]["budget"]) == (10_000, 1_000)
    said = entrants.summary(v, "r.md")
    assert "  budget: up to 10,000 decisions of agent_0 a seed against 1,000 (10.00x" in said
    assert said.count("  budget: ") == 1  # "exact" kept to its budget: no line
    assert entrants.to_json(st)["p4g"]["mine"]["agent_steps_max"] == 10_000


def test_bench_help_names_each_default(capsys):
    from scope_envs.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: ./results" in text and "--print-report" in text
    from scope_envs.bench.methods import SEEDS_MIN

    assert ", ".join(f"{g} {n}" for g, n in SEEDS_MIN.items()) in text and "seeds_min" in text
    assert "p4g 20_000, cooperbench 20_000, tau2 40_000" in text and "presets.py" in text
