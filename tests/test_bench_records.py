"""A benchmark folder's run records (scope_envs.bench.records): runs/ and the packed file read the same."""

import gzip
import json

import pytest

from scope_envs.bench import records, reference
from scope_envs.files import write_json


def _folder(tmp_path, n=3):
    out = tmp_path / "ref"
    (out / "runs").mkdir(parents=True)
    for seed in range(n):
        write_json(out / "runs" / f"p4g-frozen-{seed}.json",
                   {"task": {"game": "p4g", "method": "frozen", "seed": seed},
                    "result": {"metrics": {"heldout_success": 0.1 * seed}, "wall_s": 1.5}})
    return out


def test_packing_keeps_every_record_and_reads_the_same(tmp_path):
    out = _folder(tmp_path)
    before = list(records.read(out))
    assert records.pack(out) == 3
    assert not (out / "runs").exists() and (out / records.PACKED).is_file()
    assert list(records.read(out)) == before == sorted(before, key=lambda r: r[0])
    assert reference.read_records(out) == [r for _, r in before]


def test_packing_drops_curves_json_the_records_second_copy(tmp_path):
    out = _folder(tmp_path)
    write_json(out / records.CURVES, {"settings": {}, "wall_s": 1.0, "runs": [r for _, r in records.read(out)]})
    (out / "report.md").write_text("kept")
    records.pack(out)
    assert not (out / records.CURVES).exists() and (out / "report.md").read_text() == "kept"


def test_the_committed_references_keep_one_copy_of_their_records():
    """Each packed reference under benchmarks/results holds its runs once (runs.jsonl.gz), not again uncompressed in
    curves.json (33 MB of the 41 MB there were such copies, and their fingerprints went stale on a restamp)."""
    results = reference.REPO / "benchmarks" / "results"
    packed = [f.parent for f in results.glob("**/" + records.PACKED)]
    assert {"default", "full", "reference-sb3"} <= {f.name for f in packed}
    assert [f for f in packed if (f / records.CURVES).exists()] == []


def test_packing_the_same_records_twice_gives_the_same_bytes(tmp_path):
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    records.pack(a), records.pack(b)
    assert (a / records.PACKED).read_bytes() == (b / records.PACKED).read_bytes()  # no timestamp inside


def test_a_damaged_packed_file_is_named(tmp_path):
    out = _folder(tmp_path)
    records.pack(out)
    (out / records.PACKED).write_bytes(gzip.compress(b'{"name": "x", "task": {}}\nnot json\n'))
    with pytest.raises(records.RecordError, match=r"runs.jsonl.gz: line 1: not a \{task, result\}"):
        list(records.read(out))
    (out / records.PACKED).write_bytes(b"not gzip")
    with pytest.raises(reference.ReferenceMismatch, match="not a packed file of run records"):
        reference.read_records(out)


def test_a_folder_without_records_is_refused_by_against(tmp_path):
    with pytest.raises(reference.ReferenceMismatch, match="has no runs/ folder"):
        reference.folders(str(tmp_path))
    out = _folder(tmp_path)
    records.pack(out)
    assert reference.folders(str(out)) == [out]


def test_the_command_packs_and_refuses_a_folder_without_runs(tmp_path, capsys):
    out = _folder(tmp_path)
    records.main([str(out)])
    assert f"packed 3 records into {out / records.PACKED}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        records.main([str(out)])
    assert e.value.code == 2 and "has no runs/ folder" in capsys.readouterr().err
    lines = gzip.decompress((out / records.PACKED).read_bytes()).decode().splitlines()
    assert [json.loads(line)["name"] for line in lines] == [f"p4g-frozen-{s}" for s in range(3)]


def test_the_documented_command_runs_without_a_warning(tmp_path):
    """`python -m scope_envs.bench.records OUT` (docs/scale-out.md) printed runpy's RuntimeWarning on every call:
    the package's import of the executors had loaded the module it then ran."""
    import subprocess
    import sys

    out = _folder(tmp_path)
    done = subprocess.run([sys.executable, "-m", "scope_envs.bench.records", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "packed 3 records" in done.stdout, done.stderr
    assert "Warning" not in done.stderr, done.stderr
