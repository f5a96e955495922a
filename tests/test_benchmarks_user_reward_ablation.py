"""benchmarks/user_reward_ablation.py: a folder an earlier run left (other --games, other --seeds) is resumed, never
taken as this run's results (its tiny real run: tests/test_benchmarks_scripts.py)."""

import json

from bench_fixtures import load_script

ROW = {"train_success": 0.5, "train_zero_score_frac": 0.1, "zero_std_group_frac": 0.2, "all_fail_group_frac": 0.0,
       "all_success_group_frac": 0.0, "heldout_success": 0.4}


def test_a_rerun_with_another_game_runs_it_and_tables_both(monkeypatch, tmp_path):
    module = load_script("user_reward_ablation")
    calls = []

    def fake_run(games, seeds, out, user_reward, **kwargs):  # what bench.run writes and returns, for these games
        calls.append((tuple(games), seeds, user_reward))
        results = {g: {"cotrain": ROW} for g in games}
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results))
        return results

    for mode in module.SIMULATOR_REWARDS:  # an earlier run of p4g alone
        (tmp_path / mode).mkdir()
        (tmp_path / mode / "results.json").write_text(json.dumps({"p4g": {"cotrain": ROW}}))
    monkeypatch.setattr(module.bench, "run", fake_run)
    module.main(["--games", "p4g", "tau2", "--seeds", "1", "--out", str(tmp_path)])
    assert calls == [(("p4g", "tau2"), 1, mode) for mode in module.SIMULATOR_REWARDS]
    rows = json.loads((tmp_path / "ablation.json").read_text())
    assert sorted({r["game"] for r in rows}) == ["p4g", "tau2"] and len(rows) == 6
