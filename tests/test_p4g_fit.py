"""The shipped P4G parameters (one file per part of the people split) are reproducible from the real data, each
from its own part's people, and ship no raw rows."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "p4g"
PACKAGE = ROOT / "scope_envs" / "games" / "p4g"
PARTS = {"train": PACKAGE / "params_train.json", "heldout": PACKAGE / "params_heldout.json"}

needs_data = pytest.mark.skipif(
    not (DATA / "full_info.csv").exists(),
    reason=f"Persuasion-for-Good data not found at {DATA} (needed to refit the shipped parameters)",
)


@pytest.fixture(scope="module")
def fitted():
    from scope_envs.games.p4g.fit import fit

    return fit(DATA)


@pytest.fixture(scope="module", params=list(PARTS))
def part(request):
    return request.param


def _assert_close(a, b, where="params"):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys differ"
        for k in a:
            _assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        # 1e-6 is the rounding step of the file; a hair more absorbs a rounding flip
        assert math.isclose(a, b, rel_tol=0, abs_tol=1e-6 + 1e-9), f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@needs_data
def test_refit_matches_shipped(part):
    """Each part's packaged file is the fit on that part's people alone (``--part``)."""
    from scope_envs.games.p4g.fit import fit
    from scope_envs.games.p4g.people import outside

    from scope_envs.games.p4g.personas import PART_FILES

    assert PARTS[part].name == PART_FILES[part]
    shipped = json.loads(PARTS[part].read_text())
    refit = fit(DATA, holdout=outside(DATA, part))
    for key, value in refit.items():  # keys written by other code (calibration, ...) are not ours
        assert key in shipped, f"{PARTS[part].name} lacks {key!r}: rerun python -m scope_envs.validate.p4g"
        _assert_close(value, shipped[key], key)


@needs_data
def test_facts(fitted):
    real = fitted["real"]
    assert 0.30 <= real["mean_donation"] <= 0.40
    assert 0.45 <= real["give_rate"] <= 0.60
    assert real["mean_intended"] > real["mean_actual"]  # people give less than they say

    resp = fitted["responses"]
    rows = [*resp["given"].values(), resp["start"]]
    for row in rows:
        assert len(row) == len(resp["acts"])
        assert abs(sum(row) - 1) < 1e-4 and min(row) > 0
    for dist in [fitted["amounts"]["given_give"], fitted["gap"]["intended_probs"],
                 *fitted["empirical_persuader"]["by_turn"]]:
        assert abs(sum(dist) - 1) < 1e-4

    pm = fitted["persona_model"]
    L = np.array(pm["cholesky"])
    n = len(pm["numeric"])
    assert L.shape == (n, n)
    assert np.allclose(L, np.tril(L))
    corr = L @ L.T
    assert np.allclose(np.diag(corr), 1.0, atol=1e-4)
    assert np.allclose(corr, corr.T) and np.all(np.abs(corr) <= 1 + 1e-4)
    assert np.all(np.linalg.eigvalsh(corr) > 0)


def test_no_raw_rows_shipped(part):
    text = PARTS[part].read_text()
    assert "user_" not in text, f"a user id leaked into {PARTS[part].name}"
    assert "_live" not in text, f"a dialogue id leaked into {PARTS[part].name}"


# ----------------------------------------------------------------------------- the fitting script


@pytest.fixture
def fake_data(tmp_path):
    """A folder with the three file names the script checks for (empty: enough for argument checks)."""
    from scope_envs.games.p4g.fit import FILES

    folder = tmp_path / "fake_p4g"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_text("")
    return folder


def _packaged_state():
    return [(p.read_bytes(), p.stat().st_mtime_ns) for p in PARTS.values()]


def test_default_output_is_not_a_packaged_file(fake_data, tmp_path, monkeypatch):
    from scope_envs.validate import p4g as command

    monkeypatch.chdir(tmp_path)
    ap = command.build_parser()
    out = command.output_path(ap, ap.parse_args(["--data", str(fake_data)]))
    assert out.resolve() == tmp_path.resolve() / "p4g_params.json"
    for part, path in PARTS.items():
        args = ap.parse_args(["--data", str(fake_data), "--part", part, "--overwrite-packaged"])
        assert command.output_path(ap, args).resolve() == path.resolve()


@pytest.mark.parametrize("argv", [["--out", str(PARTS["train"])], ["--out", str(PARTS["heldout"]), "--part", "heldout"],
                                  ["--out", "x.json", "--overwrite-packaged"]])
def test_writing_the_packaged_file_needs_the_flag_alone(argv, fake_data, tmp_path, monkeypatch, capsys):
    from scope_envs.validate.p4g import fit_command as main

    monkeypatch.chdir(tmp_path)
    before = _packaged_state()
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(fake_data), *argv])
    assert exc.value.code == 2
    assert "argument --" in capsys.readouterr().err
    assert _packaged_state() == before


@pytest.mark.parametrize("argv,named", [
    (["--data", "{tmp}/no_such_folder"], "--data"),
    (["--episodes", "0"], "--episodes"),
    (["--out", "{tmp}/no_such_folder/params.json"], "--out"),
])
def test_bad_arguments_exit_2_naming_the_argument(argv, named, fake_data, tmp_path, monkeypatch, capsys):
    from scope_envs.validate.p4g import fit_command as main

    monkeypatch.chdir(tmp_path)
    argv = [a.format(tmp=tmp_path) for a in argv]
    if "--data" not in argv:
        argv = ["--data", str(fake_data), *argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {named}:" in err, err
    if named == "--data":
        assert "no_such_folder" in err and "full_info.csv" in err


def test_missing_data_file_is_named(fake_data, capsys):
    from scope_envs.validate.p4g import fit_command as main

    (fake_data / "300_info.csv").unlink()
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(fake_data)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --data:" in err and "300_info.csv" in err


@needs_data
def test_script_writes_out_and_leaves_the_packaged_file_alone(fitted, tmp_path, monkeypatch):
    from scope_envs.games.p4g import personas
    from scope_envs.validate.p4g import fit_command as main

    monkeypatch.chdir(tmp_path)
    before = _packaged_state()
    with personas.params_kept():  # calibration installs the parameters it fits
        main(["--data", str(DATA), "--no-calibrate"])
        written = json.loads((tmp_path / "p4g_params.json").read_text())
        assert set(written) == set(fitted) and "calibration" not in written
        _assert_close(written["real"], fitted["real"], "real")
        # with calibration (a few episodes, to be quick), into a named file
        main(["--data", str(DATA), "--out", "calibrated.json", "--episodes", "2"])
        calibrated = json.loads((tmp_path / "calibrated.json").read_text())
        assert calibrated["calibration"]["episodes"] == 2 and calibrated["calibration"]["split"] == "train"
    assert _packaged_state() == before


def test_a_fit_on_everyone_replaces_no_packaged_file(fake_data, tmp_path, monkeypatch, capsys):
    """``--overwrite-packaged`` without ``--part``: no part reads a fit on everyone, so exit 2, the files untouched."""
    from scope_envs.validate.p4g import fit_command as main

    monkeypatch.chdir(tmp_path)
    before = _packaged_state()
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(fake_data), "--overwrite-packaged", "--no-calibrate"])
    assert exc.value.code == 2
    assert "argument --overwrite-packaged: no part of the game reads a fit on everyone" in capsys.readouterr().err
    assert _packaged_state() == before


@needs_data
@pytest.mark.parametrize("part,survey_rows", [("train", 524), ("heldout", 493)])
def test_a_part_is_fitted_on_its_own_people(part, survey_rows, fitted, tmp_path, monkeypatch):
    """``--part``: the fit reads that part's people only (people.py's counts: 524 and 493 of the 1,017 survey
    rows), so its real numbers are that part's."""
    from scope_envs.validate.p4g import fit_command as main

    monkeypatch.chdir(tmp_path)
    main(["--data", str(DATA), "--part", part, "--no-calibrate", "--out", "part.json"])
    written = json.loads((tmp_path / "part.json").read_text())
    assert written["source"]["n_persuadees"] == survey_rows < fitted["source"]["n_persuadees"]
    assert written["real"]["n"] < fitted["real"]["n"] and written["real"] != fitted["real"]


# ----------------------------------------------------------------------------- validation


def test_validate_with_a_wrong_folder_names_folder_and_file(tmp_path):
    from scope_envs.validate.p4g import validate

    missing = tmp_path / "not_here"
    with pytest.raises(FileNotFoundError) as exc:
        validate(missing, episodes=1)
    message = str(exc.value)
    assert str(missing) in message and "full_info.csv" in message and "\n" not in message

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "full_info.csv").write_text("")
    with pytest.raises(FileNotFoundError) as exc:
        validate(str(empty), episodes=1)
    assert str(empty) in str(exc.value) and "300_dialog.csv" in str(exc.value)


def test_validate_with_files_of_the_wrong_shape(fake_data):
    from scope_envs.validate.p4g import validate

    (fake_data / "full_info.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="full_info.csv lacks the column"):
        validate(fake_data, episodes=1)



def test_a_file_cut_short_mid_row_is_refused_naming_its_line(fake_data):
    """A csv cut inside its last row still parses (the row's missing fields read as None): it is refused, not
    fitted on (a cut 300_dialog.csv had moved validate's real give rate by 0.14)."""
    from scope_envs.games.p4g.fit import COLUMNS
    from scope_envs.validate.p4g import validate

    header = ",".join(COLUMNS["full_info.csv"])
    whole = ",".join(["1"] * len(COLUMNS["full_info.csv"]))
    (fake_data / "full_info.csv").write_text(f"{header}\n{whole}\n{whole[:3]}")
    with pytest.raises(ValueError, match=r"full_info.csv: line 3 has 2 fields, the header \d+: is the file cut short"):
        validate(fake_data, episodes=1)

def test_compare_takes_the_real_statistics_it_is_given():
    from scope_envs.agents.p4g import EmpiricalPersuader, HumanProxyPersuadee
    from scope_envs.games.p4g.simulate import play, statistics
    from scope_envs.games.p4g.donations import compare

    real = {"mean_donation": 0.5, "give_rate": 0.25, "mean_intended": 1.0, "mean_actual": 0.5, "n": 7, "extra": 1}
    sim = statistics(play(HumanProxyPersuadee(), EmpiricalPersuader(), "heldout", 20, 0))
    report = compare(real, sim)
    assert report["real"] == {k: v for k, v in real.items() if k != "extra"}
    assert report["simulated"] == sim and sim["episodes"] == 20
    assert report["abs_diff"]["give_rate"] == round(abs(sim["give_rate"] - 0.25), 4)
    with pytest.raises(ValueError, match="mean_intended"):
        compare({"mean_donation": 0.3, "give_rate": 0.5, "mean_actual": 0.3, "n": 1}, sim)
