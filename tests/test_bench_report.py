"""report.md's settings table (scope_envs.bench.report): a resumed run's wall time is only what this process ran,
so the table also adds up the runs' own clocks, the compute the numbers stand on."""

from __future__ import annotations

from scope_envs.bench import entrants
from scope_envs.bench.methods import METHODS
from scope_envs.bench.report import write_report
from scope_envs.bench.stats import summarize
from tests.test_bench_entrants import fake_runs


def setting(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {name} |"))


def test_the_runs_own_clocks_add_up_the_runs_trained_here_not_the_reference(tmp_path):
    reference = fake_runs(METHODS)
    new = fake_runs(["dr"], rng_seed=2)
    for r in reference:  # trained elsewhere (--against): not this run's compute
        r["wall_s"] = 100.0
    for i, r in enumerate(new):
        r["wall_s"] = 10.0 + i
    runs = reference + new
    results = summarize(runs)
    write_report(tmp_path, results, runs, {"seeds": 8}, 3.0, entrants.stats_by_game(results),
                 trained_here=new)
    text = (tmp_path / "report.md").read_text()
    assert setting(text, "wall time").startswith("| wall time | 3 s")
    assert setting(text, "the runs' own clocks") == "| the runs' own clocks | 108 worker-s |"  # 10 + ... + 17
