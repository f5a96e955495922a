"""A user's mistake on the command line: argparse's exit 2, the argument named, nothing slow started."""

import pytest

from scope_envs.cli import main

BAD = [
    (["bench", "--games", "nope"], "--games", "unknown game 'nope'"),
    (["bench", "--seeds", "-1"], "--seeds", "an integer from 1 to"),
    (["bench", "--seeds", "0"], "--seeds", "an integer from 1 to"),
    (["bench", "--steps", "0"], "--steps", "an integer from 1 to"),
    (["bench", "--steps", "-5"], "--steps", "an integer from 1 to"),
    (["bench", "--eval-episodes", "0"], "--eval-episodes", "an integer from 1 to"),
    (["bench", "--jobs", "0"], "--jobs", "an integer from 1 to"),
    (["bench", "--advantage", "grpo"], "--group-size", "must be >= 2"),
    (["bench", "--user-reward", "curriculum"], "--group-size", "must be >= 2"),
    (["bench", "--user-reward", "kind"], "--user-reward", "invalid choice"),
    (["bench", "--advantage", "td"], "--advantage", "invalid choice"),
    (["bench", "--group-size", "0"], "--group-size", "an integer from 1 to"),
    (["validate", "tau2", "--data", "/nonexistent"], "--data", "no such directory"),
    (["validate", "p4g", "--data", "/nonexistent"], "--data", "no such directory"),
    (["validate", "tau2", "--episodes", "10"], "--episodes", "not used by 'validate tau2'"),
    (["validate", "tau2", "--seed", "1"], "--seed", "not used by 'validate tau2'"),
    (["validate", "nope"], "game", "invalid choice"),
    (["demo", "--episodes", "0"], "--episodes", "an integer from 1 to"),
    (["train-llm", "--env-kwargs", "notjson"], "--env-kwargs", "not valid JSON"),
    (["train-llm", "--env-kwargs", "[1, 2]"], "--env-kwargs", "JSON object"),
    (["train-llm", "--env", "nope"], "--env", "unknown environment id 'nope'"),
    (["train-llm", "--env-kwargs", '{"max_turnz": 3}'], "--env-kwargs", "max_turnz"),
    (["train-llm", "--model", "/nonexistent"], "--model", "never downloads"),
    (["train-llm", "--lr", "-1"], "--lr", "positive"),
    (["train-llm", "--updates", "0"], "--updates", "an integer from 1 to"),
]


@pytest.mark.parametrize("argv, argument, why", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_argument_exits_2_naming_it(argv, argument, why, capsys, monkeypatch):
    from scope_envs.train.llm import ppo

    def no_training(*a, **k):
        raise AssertionError("training started on a bad argument")

    monkeypatch.setattr(ppo, "train", no_training)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"argument {argument}" in err and why in err and "Traceback" not in err


def test_validate_p4g_on_a_folder_without_the_data_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "p4g", "--data", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "argument --data" in err[-1] and str(tmp_path) in err[-1]


def test_bench_run_rejects_an_empty_budget(tmp_path):
    from scope_envs import bench

    for key in ("seeds", "steps", "eval_episodes"):
        with pytest.raises(ValueError, match=key):
            bench.run(games=["p4g"], methods=["frozen"], out=tmp_path, progress=False, **{key: 0})
