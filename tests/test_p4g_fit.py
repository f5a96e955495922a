"""The shipped P4G parameters are reproducible from the real data and ship no raw rows."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "p4g"
PARAMS = ROOT / "scope_envs" / "games" / "p4g" / "params.json"

pytestmark = pytest.mark.skipif(
    not (DATA / "full_info.csv").exists(),
    reason=f"Persuasion-for-Good data not found at {DATA} (needed to refit params.json)",
)


@pytest.fixture(scope="module")
def fitted():
    from scope_envs.games.p4g.fit import fit

    return fit(DATA)


@pytest.fixture(scope="module")
def shipped():
    return json.loads(PARAMS.read_text())


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


def test_refit_matches_shipped(fitted, shipped):
    for key, value in fitted.items():  # keys written by other code (calibration, ...) are not ours
        assert key in shipped, f"params.json lacks {key!r}: rerun python -m scope_envs.games.p4g.fit"
        _assert_close(value, shipped[key], key)


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


def test_no_raw_rows_shipped():
    text = PARAMS.read_text()
    assert "user_" not in text, "a user id leaked into params.json"
    assert "_live" not in text, "a dialogue id leaked into params.json"
