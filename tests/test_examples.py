"""The examples in examples/ run as a researcher would run them: `scope-envs bench --method examples/...:NAME
--against REF --games p4g --seeds 2`, at the tiny reference's reduced budget (tests/bench_fixtures.py). Each
report has the new row with its CI and its own tests, and the reference rows are unchanged."""

import json
from pathlib import Path

import pytest
from bench_fixtures import REFERENCE_ARGS, tiny_reference  # noqa: F401

from scope_envs.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CASES = [("domain_randomization.py", "DomainRandomization", "domain-randomization", "sb3_contrib"),
         ("entropy_target.py", "TargetEntropyPG", "entropy-target", None),
         ("my_simulator.py", "MySimulator", "my-simulator", None),
         ("cotrain_sb3.py", "CoTrainSB3", "cotrain-sb3", "sb3_contrib"),
         ("benchmarl_mappo.py", "BenchMARLMAPPO", "benchmarl-mappo", "benchmarl")]  # .ci/benchmarl.sh runs it


@pytest.mark.parametrize("file, attr, row, needs", CASES, ids=[c[2] for c in CASES])
def test_example_is_benchmarked_against_the_reference(file, attr, row, needs, tiny_reference, tmp_path):  # noqa: F811
    if needs:
        pytest.importorskip(needs)
    out = tmp_path / "out"
    main(["bench", *REFERENCE_ARGS, "--method", f"{EXAMPLES / file}:{attr}", "--against", str(tiny_reference),
          "--out", str(out)])
    ref, new = (json.loads((d / "results.json").read_text()) for d in (tiny_reference, out))
    assert list(new["p4g"]) == [*ref["p4g"], row]
    assert all(json.dumps(new["p4g"][m]) == json.dumps(ref["p4g"][m]) for m in ref["p4g"])
    assert (out / "claims.json").read_text() == (tiny_reference / "claims.json").read_text()
    report = (out / "report.md").read_text()
    line = next(x for x in report.splitlines() if x.startswith(f"| {row} | ") and "±" in x)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[4].startswith("[") and cells[-1] == "2"  # its held-out CI; both seeds
    tests = json.loads((out / "entrants.json").read_text())["p4g"][row]
    assert tests["family"][0] == "frozen" and tests["rows"] and all(r["n_paired"] == 2 for r in tests["rows"])
    assert f"| {row} | frozen |" in report
    records = [json.loads(p.read_text())["result"] for p in (out / "runs").glob("*.json")]
    assert sorted(r["seed"] for r in records) == [0, 1] and all(r["method"] == row for r in records)
    assert all(r["agent_steps"] >= 400 and r["curve"][0]["agent_steps"] == 0 for r in records)
