"""``scope_envs.bench.sb3_methods``: the SB3 reference rows (sb3-contrib's MaskablePPO) as plug-ins of the
benchmark, run the way ``docs/benchmark-your-algorithm.md`` tells a user to."""

import pytest

pytest.importorskip("sb3_contrib")

from scope_envs.bench.methods import run_one  # noqa: E402

SPEC = "scope_envs.bench.sb3_methods:{}"
TINY = {"steps": 1536, "eval_episodes": 24, "curve_points": 2, "curve_episodes": 8, "heldout_episodes": 24}


@pytest.mark.parametrize("name,cls", [("frozen-sb3", "FrozenSB3"), ("rotation-sb3", "RotationSB3")])
def test_an_sb3_row_trains_its_budget_and_leaves_no_log_folder(name, cls, tmp_path, monkeypatch):
    """A run trains MaskablePPO for the budget (whole rollouts of 12 slots x 64 steps), reports its curve at the
    marks and its evaluation, and leaves no folder where SB3 logs (it makes one per ``learn`` unless given a
    logger)."""
    logs = tmp_path / "sb3-logs"
    monkeypatch.setenv("SB3_LOGDIR", str(logs))
    r = run_one("p4g", name, 0, **TINY, plugin=SPEC.format(cls))
    assert r["method"] == name and r["agent_steps"] == r["env_steps"] == 1536
    assert [p["agent_steps"] for p in r["curve"]] == [0, 768, 1536]
    assert r["curve"][-1]["policy_entropy"] != r["curve"][0]["policy_entropy"]  # the weights moved
    assert 0 <= r["metrics"]["heldout_success"] <= 2.0
    assert not logs.exists()
