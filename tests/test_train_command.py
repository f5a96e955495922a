"""``scope-envs train`` (``scope_envs.train_command``): the act-level PPO from the command line learns, saves
the folder ``scope-envs score --policy`` reads, keeps its metrics after each iteration, saves on Ctrl-C, and
refuses what it cannot train in one line naming the flag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from scope_envs.cli import main


def _returns(out):
    return [json.loads(line)["return"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_train_learns_and_saves_the_folder_score_reads(tmp_path, capsys):
    """p4g-frozen, 6,000 decisions on a fixed seed: the last iterations' mean return is above the first ones'."""
    from scope_envs.train.act_ppo import PPOTrainer, load_policy

    out = tmp_path / "run"
    main(["train", "--env", "p4g-frozen", "--steps", "6000", "--seed", "0", "--out", str(out), "--no-progress"])
    said = capsys.readouterr().out
    assert f"scope-envs score --policy {out} --game p4g" in said
    returns = _returns(out)
    assert len(returns) >= 8 and np.mean(returns[-4:]) > np.mean(returns[:4]) + 0.15, returns
    trainer = PPOTrainer.load(out)
    assert trainer.cfg.env_id == "p4g-frozen" and trainer.agent_steps >= 6000
    assert load_policy(out) is not None
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["agent_steps"] == trainer.agent_steps


def test_grpo_without_a_group_size_takes_scopes_eight_as_bench_does(tmp_path):
    from scope_envs.train.act_ppo import PPOTrainer

    main(["train", "--env", "p4g-frozen", "--steps", "64", "--advantage", "grpo", "--out", str(tmp_path / "g"),
          "--no-progress"])
    assert PPOTrainer.load(tmp_path / "g").cfg.group_size == 8


def test_a_cotrain_run_trains_the_user_seat_too(tmp_path):
    from scope_envs.train.act_ppo import PPOTrainer

    out = tmp_path / "co"
    main(["train", "--env", "p4g-cotrain", "--steps", "600", "--user-reward", "cooperative", "--advantage", "grpo",
          "--group-size", "4", "--out", str(out), "--no-progress"])
    trainer = PPOTrainer.load(out)
    assert set(trainer.seat) == {"agent_0", "user_0"}
    assert trainer.cfg.env_kwargs == {"user_reward": "cooperative"} and trainer.cfg.group_size == 4


@pytest.mark.parametrize("argv, flag, words", [
    (["--env", "p4g-heldout"], "--env", "held-out population"),
    (["--env", "p4g-frozen", "--advantage", "grpo", "--group-size", "1"], "--group-size", "group_size must be >= 2"),
    (["--env", "p4g-frozen", "--group-size", "3"], "--episodes-per-iter", "multiple of group_size"),
    (["--env", "p4g-frozen", "--user-reward", "adversarial"], "--user-reward", "user_reward"),
    (["--env", "p4g-frozen", "--env-kwargs", '{"no_such_option": 1}'], "--env-kwargs", "no_such_option"),
    (["--env", "p4g-frozen", "--steps", "0"], "--steps", ""),
    (["--env", "p4g-frozen", "--steps", str(10**12)], "--steps", ""),
    (["--env", "no-such-id"], "--env", ""),
    (["--env", "llm-toy"], "--env", "unknown environment id 'llm-toy'"),  # train-llm's toy: a KeyError here
    (["--env", "p4g-frozen", "--lr", "1e300"], "--lr", "expected a number in (0, 1], got 1e+300"),  # NaN weights, saved
    # the game's list named rewards --user-reward does not take (shared, zero, ...)
    (["--env", "tau2-cotrain", "--user-reward", "realism"], "--user-reward",
     "tau2-cotrain's trained user has no 'realism' reward; it takes adversarial, cooperative, curriculum\n"),
    # through --env-kwargs, every reward the game pays is taken, so the game's own list is the answer
    (["--env", "tau2-cotrain", "--env-kwargs", '{"user_reward": "realism"}'], "--env-kwargs",
     "user_reward must be one of ('shared', 'zero', 'persona'"),
])
def test_what_train_cannot_do_is_one_line_naming_the_flag(tmp_path, capsys, argv, flag, words):
    with pytest.raises(SystemExit) as e:
        main(["train", *argv, "--out", str(tmp_path / "x"), "--no-progress"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and words in err and "Traceback" not in err, err
    assert not (tmp_path / "x" / "model.pt").exists()


@pytest.mark.parametrize("command", [["train", "--no-progress"], ["train-llm", "--model", "tiny"]])
def test_a_trainer_refuses_a_benchmarks_output_folder(tmp_path, capsys, command):
    """A trained policy's files (config.json, model.pt, metrics.jsonl; train-llm's checkpoints/) were written
    beside a bench run's results.json and runs/, with no word: the folder then read as neither."""
    (tmp_path / "runs").mkdir()
    with pytest.raises(SystemExit) as e:
        main([*command, "--env", "p4g-frozen", "--out", str(tmp_path)])
    assert e.value.code == 2 and "argument --out: " in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_refused_command_leaves_no_empty_output_folder(tmp_path, capsys):
    """The output folder is made (and proved writable) before the work, so a refusal that comes after it left an
    empty folder (bench: OUT/runs/; score, diagnose: OUT/). A folder that was there before stays."""
    refusals = [["bench", "--method", "examples/domain_randomization.py:DomainRandomization", "--games", "p4g",
                 "--seeds", "1", "--steps", "10", "--against", str(tmp_path / "nowhere")],
                ["diagnose", "--game", "p4g", "--simulator", "no-such-simulator"]]
    for k, argv in enumerate(refusals):
        out = tmp_path / f"out{k}"
        with pytest.raises(SystemExit) as e:
            main([*argv, "--out", str(out)])
        assert e.value.code == 2 and not out.exists(), (argv, capsys.readouterr().err)
    (tmp_path / "kept").mkdir()
    with pytest.raises(SystemExit):
        main([*refusals[1], "--out", str(tmp_path / "kept")])
    assert (tmp_path / "kept").is_dir()


def test_the_score_command_it_prints_is_quoted(tmp_path, capsys):
    out = tmp_path / "my run é"
    main(["train", "--env", "p4g-frozen", "--steps", "64", "--episodes-per-iter", "8", "--num-envs", "8", "--out",
          str(out), "--no-progress"])
    import shlex

    line = next(x for x in capsys.readouterr().out.splitlines() if "score it:" in x)
    assert shlex.split(line.split("score it: ", 1)[1])[3] == str(out)


def test_ctrl_c_saves_the_policy_trained_so_far(tmp_path):
    """A real process, interrupted once its first iterations are logged: exit 130, and the folder loads."""
    from scope_envs.train.act_ppo import PPOTrainer

    out = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "train", "--env", "p4g-frozen", "--steps",
                             "10000000", "--out", str(out), "--no-progress"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 120
    while not ((out / "metrics.jsonl").is_file() and len(_returns(out)) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "the policy so far is saved" in err and "Traceback" not in err
    trainer = PPOTrainer.load(out)
    assert 0 < trainer.agent_steps < 10_000_000
