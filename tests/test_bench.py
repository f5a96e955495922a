"""``scope-envs bench`` end to end (tiny budget) and its statistics."""

import json
import os

import numpy as np
import pytest
import torch

from scope_envs import bench
from scope_envs.cli import main
from scope_envs.bench.methods import REALISM_METRICS, REALISM_ROWS, available

KEYS = {"train_success", "heldout_success", "gap", "per_seed", "policy_entropy", "sim_entropy", "train_zero_score_frac",
        "panel_success", "normalized", "recovered", "reference_success", "collapse_gap", "misspecification_gap"}
SEED_KEYS = KEYS - {"per_seed"} | {"panel_per_family"}
KEYS |= {"heldout_iqm", "heldout_iqm_ci"}  # the field's aggregates (stats.add_aggregates): not per seed
IMPROVEMENT = {"p_improvement", "p_improvement_ci"}  # P(method > frozen): every method but frozen


def tau2_source() -> str:
    from scope_envs.games.tau2.data import resolve_data_dir

    return resolve_data_dir()[1]


@pytest.mark.slow
def test_bench_end_to_end(tmp_path):
    out = tmp_path / "res"
    main(["bench", "--steps", "300", "--seeds", "2", "--eval-episodes", "40", "--out", str(out)])
    results = json.loads((out / "results.json").read_text())
    assert set(results) == set(bench.GAMES)
    top = {"p4g": 2.0, "cooperbench": 1.0, "tau2": 1.0}  # dollars; success rates
    for game in bench.GAMES:
        assert set(results[game]) == {m for m in bench.METHODS if available(game, m)}  # grounded: p4g's only
        for method, entry in results[game].items():
            own = set(REALISM_METRICS) if method in REALISM_ROWS else set()
            assert set(entry) == KEYS | {"data"} | own | (IMPROVEMENT if method != "frozen" else set()), method
            # what the row played is named: tau2's task source (the real split, or the announced fallback)
            assert entry["data"]["source"] == ("package" if game != "tau2" else tau2_source()), (game, entry["data"])
            lo, hi = entry["heldout_iqm_ci"]
            assert lo <= entry["heldout_iqm"] <= hi
            assert set(entry["per_seed"]) == {"0", "1"}
            for seed in entry["per_seed"].values():
                assert set(seed) == SEED_KEYS | own
                assert seed["gap"] == pytest.approx(seed["train_success"] - seed["heldout_success"])
                assert 0 <= seed["heldout_success"] <= top[game]
            assert entry["gap"] == pytest.approx(np.mean([s["gap"] for s in entry["per_seed"].values()]))
        for png in (f"{game}_learning_curves.png", f"{game}_entropy.png"):
            assert (out / png).stat().st_size > 1000
    assert (out / "performance_profiles.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "Welch" in report and "Holm" in report and "dollars" in report
    assert "merge-conflict rate" in report and "Solo baseline" in report
    assert "Aggregate metrics (Agarwal et al. 2021)" in report and "## All games: normalized held-out success" in report
    # the machine is part of a wall time and of the trained rows' last digits: named in the settings
    machine = next(line for line in report.splitlines() if line.startswith("| machine |"))
    assert f"{os.cpu_count()} CPUs" in machine and f"numpy {np.__version__}" in machine, machine
    assert f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels)" in machine, machine


def test_bench_scope_way_reports_collapse_diagnostics(tmp_path):
    """--user-reward curriculum --advantage grpo --group-size 4: grouped runs, their diagnostics and plot."""
    out = tmp_path / "scope"
    main(["bench", "--games", "p4g", "--methods", "cotrain", "population", "--seeds", "2", "--steps", "600",
          "--eval-episodes", "40", "--user-reward", "curriculum", "--advantage", "grpo", "--group-size", "4",
          "--out", str(out)])
    results = json.loads((out / "results.json").read_text())["p4g"]
    for method in ("cotrain", "population"):
        for key in bench.DIAGNOSTICS:
            assert 0.0 <= results[method][key] <= 1.0, (method, key)
        assert 0.0 <= results[method]["train_zero_score_frac"] <= 1.0
    assert (out / "p4g_collapse.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "Collapse diagnostics" in report and "| advantage | grpo |" in report


def test_holm():
    assert bench.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert bench.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])


def test_pairwise_tests():
    rows = bench.pairwise_tests({"a": [1.0, 1.1, 0.9], "b": [0.0, 0.1, -0.1], "c": [1.0, 1.2, 0.8]})
    assert len(rows) == 3
    ab = next(r for r in rows if (r["a"], r["b"]) == ("a", "b"))
    assert ab["diff"] == pytest.approx(1.0) and ab["p"] < 0.01 and ab["p_holm"] >= ab["p"] and ab["d"] > 5


def test_method_setup_never_trains_on_heldout():
    """Only the ceiling, ``oracle``, trains against the held-out behaviour model, and on train personas only."""
    for method in bench.METHODS:
        env_id, env_kwargs, _ = bench.method_setup("p4g", method)
        assert not env_id.endswith("heldout") or (method == "oracle" and env_kwargs["personas"] == "train")
    with pytest.raises(ValueError):
        bench.method_setup("p4g", "nope")


def test_an_earlier_runs_sensitivity_and_entrants_files_do_not_outlive_it(tmp_path):
    """A run without --sensitivity (or --method) into a folder where one with it had written sensitivity.json,
    sensitivity.md and entrants.json left them beside its own results.json: files of other runs, read as its."""
    for name in ("sensitivity.json", "sensitivity.md", "entrants.json"):
        (tmp_path / name).write_text("[]")
    bench.run(games=["cooperbench"], methods=["random"], seeds=1, steps=64, eval_episodes=8, out=tmp_path, jobs=1,
              progress=False)
    assert (tmp_path / "results.json").is_file()
    assert not any((tmp_path / name).exists() for name in ("sensitivity.json", "sensitivity.md", "entrants.json"))


def test_every_json_output_opens_in_a_strict_json_reader(tmp_path):
    """A frozen row has no learned user: its training log's user entropy is NaN, which curves.json held as a bare
    ``NaN`` (JavaScript's JSON.parse, Go's and serde's refuse it). The outputs now write it null; the run records,
    which --resume and --against read back, keep it as computed."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    bench.run(games=["p4g"], methods=["frozen"], seeds=1, steps=64, eval_episodes=8, out=tmp_path, jobs=1,
              progress=False)
    outputs = sorted(tmp_path.glob("*.json"))
    assert {p.name for p in outputs} >= {"results.json", "claims.json", "curves.json", "split.json"}
    for path in outputs:
        json.loads(path.read_text(), parse_constant=refuse)
    training = json.loads((tmp_path / "curves.json").read_text())["runs"][0]["training"]
    assert training and all(row["user_entropy"] is None for row in training)
    record = json.loads(next((tmp_path / "runs").glob("*.json")).read_text())
    assert np.isnan(record["result"]["training"][0]["user_entropy"])


def test_write_json_writes_nan_null_unless_not_strict(tmp_path):
    from scope_envs.files import write_json

    path = tmp_path / "x.json"
    write_json(path, {"a": [1.0, float("nan"), (float("inf"), -float("inf"))], "b": "NaN"})
    assert json.loads(path.read_text()) == {"a": [1.0, None, [None, None]], "b": "NaN"}
    write_json(path, {"a": float("nan")}, strict=False)
    assert np.isnan(json.loads(path.read_text())["a"])


def test_the_closing_summary_says_each_claim_with_its_verdict(tmp_path):
    """The lines a run ends with: per game and claim, its verdict and what the claim says, in columns."""
    from pathlib import Path

    from scope_envs.bench.runner import summary

    reference = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "default"
    claims = json.loads((reference / "claims.json").read_text())
    lines = summary(reference, tmp_path / "report.md", False).splitlines()
    assert len(lines) == len(claims) + 1 and lines[-1] == f"the whole report: {tmp_path / 'report.md'}"
    verdict = {True: "holds", False: "does not hold", None: "not judged"}
    for line, c in zip(lines, claims):
        number, _, statement = c["claim"].partition(". ")
        assert line.split()[:3] == [f"{c['game']}:", "claim", f"{number}:"] and line.endswith(statement), line
        assert f" {verdict[c['held']]} " in line
    assert len({line.index(" claim ") for line in lines[:-1]}) == 1  # the games' names padded to one column
    # every --method a built-in row (--method frozen): no entrant, so the claims close the run, not nothing
    import shutil

    shutil.copy(reference / "claims.json", tmp_path / "claims.json")
    (tmp_path / "entrants.json").write_text("{}")
    assert summary(tmp_path, tmp_path / "report.md", True).splitlines() == lines
