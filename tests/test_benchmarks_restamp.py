"""``benchmarks/restamp.py``: a reference's records get the new fingerprint only where the numbers are proven the
same, and the rows rebuilt on purpose (``--rebuilt``) keep the old one for their rebuild to replace."""

import json

import pytest
from bench_fixtures import load_script

OLD = {"code": "old", "engine": "e-old", "version": "1"}
NEW = {"code": "new", "engine": "e-new", "version": "1"}


@pytest.fixture(scope="module")
def restamp():
    return load_script("restamp")


def played(path, fingerprint, frozen_success):
    records = {f"p4g-{m}-0": {"game": "p4g", "method": m, "seed": 0, "fingerprint": fingerprint,
                              "metrics": {"heldout_success": frozen_success if m == "frozen" else 0.5}}
               for m in ("frozen", "cotrain")}
    path.write_text(json.dumps({"records": records}))
    return str(path)


def reference(root):
    runs = root / "default" / "runs"
    runs.mkdir(parents=True)
    for m in ("frozen", "cotrain", "frozen-sb3"):
        record = {"task": {"game": "p4g", "method": m, "seed": 0}, "result": {"fingerprint": OLD}}
        (runs / f"p4g-{m}-0.json").write_text(json.dumps(record))
    return runs


def test_rebuilt_rows_keep_their_fingerprint_and_the_rest_is_carried_over(restamp, tmp_path, capsys):
    before, after = played(tmp_path / "b.json", OLD, 0.4), played(tmp_path / "a.json", NEW, 0.7)
    with pytest.raises(SystemExit, match="differ"):  # frozen moved: without --rebuilt, no restamp
        restamp.main([before, after, "--results", str(tmp_path)])
    runs = reference(tmp_path / "results")
    restamp.main([before, after, "--results", str(tmp_path / "results"), "--rebuilt", "p4g-frozen", "p4g-frozen-sb3"])
    fingerprint = {p.stem: json.loads(p.read_text())["result"]["fingerprint"] for p in runs.glob("*.json")}
    assert fingerprint == {"p4g-cotrain-0": NEW, "p4g-frozen-0": OLD, "p4g-frozen-sb3-0": OLD}
    out = capsys.readouterr().out
    assert "restamped 1 records in default" in out and "left 2 records of the rebuilt rows in default" in out
