"""``benchmarks/p4g_split_fit.py``: the held-out proxies fitted on the held-out part of the people split,
calibrated and checked against that part, beside the fit on everyone (issue 49, item 1), without touching what
the package ships."""

import json

import pytest
from bench_fixtures import load_script

from scope_envs.games.p4g import personas


def test_both_fits_are_checked_against_the_held_out_part(p4g_data, tmp_path):
    script = load_script("p4g_split_fit")
    shipped = personas.params("heldout")
    script.main(["--data", str(p4g_data), "--episodes", "10", "--validate-episodes", "40", "--out", str(tmp_path)])
    assert personas.params("heldout") is shipped  # the shipped parameters are back in place
    report = json.loads((tmp_path / "p4g_split_fit.json").read_text())
    every, held = report["fits"]["all people (as shipped)"], report["fits"]["held-out part"]
    # the held-out part's fit reads about half the people, and is the target's own
    assert held["survey_rows"] < every["survey_rows"] and held["annotated_dialogues"] < every["annotated_dialogues"]
    assert held["real"] == report["target"] != every["real"]
    for fit in (every, held):
        assert set(fit["calibration"]) >= {"human_proxy_offset", "human_proxy_amount_shift", "reference_offset"}
        assert fit["within_tolerance"] == all(fit["abs_diff"][k] <= 0.05 for k in ("mean_donation", "give_rate"))
    assert "| held-out part |" in (tmp_path / "p4g_split_fit.md").read_text()


def test_a_folder_without_the_data_is_an_argument_error(tmp_path, capsys):
    script = load_script("p4g_split_fit")
    with pytest.raises(SystemExit) as e:
        script.main(["--data", str(tmp_path), "--out", str(tmp_path / "out")])
    assert e.value.code == 2 and "--data" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
