"""Resuming a train-llm run (``scope_envs.train.llm.resume``, ``scope-envs train-llm --resume``): a run stopped
after a checkpoint and resumed gives the uninterrupted run's metrics and weights, in each mode's state (optimizer,
value head, KL coefficient, LoRA adapters and the pool's snapshots, generators, member schedules); a resume that
cannot continue the run is one line naming the flag.

Every model is a tiny random Llama built on the spot (tests/llm_fixtures.py); nothing is downloaded.
"""

from __future__ import annotations

import json

import llm_fixtures
import pytest
from llm_fixtures import tiny_model_dir

from scope_envs.cli import main

pytest.importorskip("transformers")
pytest.importorskip("peft")

_one_thread = llm_fixtures._one_thread  # a pytest fixture


def _cfg(out, **kw):
    from scope_envs.train.llm import ppo

    base = {"env": "llm-toy", "model": tiny_model_dir(), "out": str(out), "log": False, "updates": 3, "groups": 2,
            "group_size": 2, "max_new_tokens": 4, "lr": 1e-2, "kl_target": 0.05}
    base.update(kw)
    return ppo.Config(**base)


def _numbers(history):
    """The metrics rows as metrics.jsonl holds them (NaN as null), without their clocks (which differ between
    any two runs)."""
    from scope_envs.files import jsonable

    return [json.loads(json.dumps(jsonable({k: v for k, v in row.items() if not k.startswith(("time_", "tokens_per_s"))})))
            for row in history]


def _weights(learners):
    import torch

    out = {}
    for name, lr in learners.items():
        out.update({f"{name}/{k}": v.detach().clone() for k, v in lr.model.state_dict().items()})
        if lr.value_head is not None:
            out.update({f"{name}/value/{k}": v.clone() for k, v in lr.value_head.state_dict().items()})
    return {k: v.to(torch.float64) for k, v in out.items()}


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="agent-ppo-adaptive-kl"),
    pytest.param({"algo": "grpo", "group_size": 2}, id="agent-grpo"),
    pytest.param({"dtype": "bfloat16"}, id="agent-bf16-fp32-master"),
    pytest.param({"env": "p4g-cotrain", "mode": "cotrain", "lora": True, "user_reward": "realism",
                  "env_kwargs": {"max_turns": 2}}, id="cotrain-lora-realism"),
    pytest.param({"env": "p4g-population", "mode": "population", "lora": True, "pool_size": 3, "snapshot_every": 1,
                  "env_kwargs": {"max_turns": 2}}, id="population-lora-pool"),
    pytest.param({"env": "p4g-population", "mode": "members", "members": 3, "lora": True,
                  "env_kwargs": {"max_turns": 2, "schedule": "round_robin"}}, id="members-schedule"),
])
def test_a_resumed_run_is_the_uninterrupted_run(tmp_path, _one_thread, monkeypatch, kw):
    """Stopped after update 2 (its checkpoint), resumed to 3: the same metrics rows and the same final weights as
    one run of 3 updates. Without the trainer's state (a fresh optimizer, generators, pool or schedule) they
    differ (the last assertions)."""
    import torch

    from scope_envs.train.llm import ppo, resume

    whole = ppo.train(_cfg(tmp_path / "whole", **kw))
    ppo.train(_cfg(tmp_path / "cut", updates=2, save_every=2, save_final=False, **kw))
    resumed = ppo.train(_cfg(tmp_path / "cut", resume=True, **kw))
    assert [r["update"] for r in resumed["history"]] == [1, 2, 3]
    assert _numbers(resumed["history"]) == _numbers(whole["history"])
    a, b = _weights(whole["learners"]), _weights(resumed["learners"])
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    lines = (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["update"] for line in lines] == [1, 2, 3]
    state = resume.load(tmp_path / "cut" / "checkpoints" / "update_2", "cpu")
    assert state["update"] == 2 and set(state["learners"]) == set(whole["learners"])
    # the state is what makes it the same run: resumed with the weights and optimizers but not the generators,
    # the pool's draw or the schedules, update 3 is another
    ppo.train(_cfg(tmp_path / "bare", updates=2, save_every=2, save_final=False, **kw))
    monkeypatch.setattr(resume, "restore_loop", lambda *a, **k: None)
    bare = ppo.train(_cfg(tmp_path / "bare", resume=True, **kw))
    assert _numbers(bare["history"])[:2] == _numbers(resumed["history"])[:2]
    assert _numbers(bare["history"])[2] != _numbers(resumed["history"])[2]


def test_resume_goes_on_from_the_newest_checkpoint_and_a_larger_updates_trains_more(tmp_path, _one_thread):
    """A run stopped after update 3, its newest checkpoint update 2's: resumed, update 3 is done again (the same
    numbers) and metrics.jsonl holds each update once; --updates above the run's trains on."""
    from scope_envs.train.llm import ppo, resume

    first = ppo.train(_cfg(tmp_path, updates=3, save_every=2, save_final=False))["history"]
    assert [u for u, _ in resume.checkpoints(tmp_path)] == [2]
    history = ppo.train(_cfg(tmp_path, updates=4, resume=True))["history"]
    assert [r["update"] for r in history] == [1, 2, 3, 4] and _numbers(history)[:3] == _numbers(first)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["update"] for line in lines] == [1, 2, 3, 4]
    assert resume.checkpoints(tmp_path)[-1] == (4, tmp_path / "checkpoints" / "final")
    with pytest.raises(resume.RunComplete, match="has trained 4 updates") as e:  # nothing to do
        resume.resume_point(_cfg(tmp_path, updates=4, resume=True))
    assert e.value.argument == "--updates" and (e.value.done, e.value.folder.name) == (4, "final")
    with pytest.raises(resume.ResumeError, match="pass more than 4") as e:  # fewer than it has trained
        resume.resume_point(_cfg(tmp_path, updates=3, resume=True))
    assert e.value.argument == "--updates" and not isinstance(e.value, resume.RunComplete)


def test_a_resume_that_cannot_continue_the_run_is_one_line_naming_the_flag(tmp_path, capsys, _one_thread):
    base = ["train-llm", "--env", "llm-toy", "--model", tiny_model_dir(), "--updates", "2", "--groups", "1",
            "--group-size", "2", "--max-new-tokens", "2", "--out", str(tmp_path)]
    for extra, flag, words in (([], "--resume", "holds no checkpoint to resume from"),):
        with pytest.raises(SystemExit) as e:
            main(base + ["--resume"] + extra)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {flag}: " in err and words in err and "Traceback" not in err
    main(base + ["--save-every", "1"])
    capsys.readouterr()
    for extra, flag, words in ((["--lr", "0.5"], "--lr", "--lr was 0.0001, now 0.5"),
                               (["--updates", "1"], "--updates", "pass more than 2"),
                               (["--seed", "3"], "--seed", "--seed was 0, now 3")):
        with pytest.raises(SystemExit) as e:
            main([*base, *extra, "--resume"])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {flag}: " in err and words in err and "Traceback" not in err, err
    main([*base, "--updates", "3", "--resume"])  # the run's settings again, one more update
    err = capsys.readouterr().err
    assert "already holds a run" not in err
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["update"] for line in lines] == [1, 2, 3]


def test_the_same_resume_command_on_a_finished_run_exits_0_saying_it_is_complete(tmp_path, capsys, _one_thread):
    """A requeued job reruns its --resume command: once the run is done that was "pass more than N", exit 2. It is
    one line saying the run is complete now, exit 0, the run's files untouched; a resume that trains says in one
    line which checkpoint it goes on from."""
    base = ["train-llm", "--env", "llm-toy", "--model", tiny_model_dir(), "--groups", "1", "--group-size", "2",
            "--max-new-tokens", "2", "--save-every", "1", "--out", str(tmp_path)]
    main(base + ["--updates", "1"])
    capsys.readouterr()
    main(base + ["--updates", "2", "--resume"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"resuming the run in {tmp_path} from checkpoints/final (update 1 of 2)"
    assert out[1].startswith("update    2 ")
    metrics = (tmp_path / "metrics.jsonl").read_text()
    main(base + ["--updates", "2", "--resume"])  # the same command again: no SystemExit, so exit 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"scope-envs train-llm: the run in --out {tmp_path} is complete: it has trained 2 updates "
        "(checkpoints/final) of --updates 2, so there is nothing to do (--updates is the total: pass more than 2 to "
        "train on)"]
    assert "error" not in captured.err and (tmp_path / "metrics.jsonl").read_text() == metrics


def test_a_checkpoint_killed_between_its_two_renames_is_put_back_and_resumed(tmp_path, capsys, _one_thread):
    """SIGKILL between save_checkpoint's renames leaves the previous checkpoint only as .NAME.PID.old: --resume
    goes on from it (the leftover sweep at the start had deleted it, and the run had no checkpoint)."""
    import subprocess
    import sys

    base = ["train-llm", "--env", "llm-toy", "--model", tiny_model_dir(), "--groups", "1", "--group-size", "2",
            "--max-new-tokens", "2", "--out", str(tmp_path)]
    main(base + ["--updates", "2"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid no live process has: the killed saver's
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "final").rename(checkpoints / f".final.{gone.pid}.old")
    capsys.readouterr()
    main(base + ["--updates", "3", "--resume"])
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["update"] for line in lines] == [1, 2, 3]
    assert sorted(p.name for p in checkpoints.iterdir()) == ["final"]


def test_a_run_resumed_on_another_device_keeps_its_dtype(tmp_path, capsys, monkeypatch, _one_thread):
    """--device may change on --resume (docs/llm-training.md), but --dtype and --gradient-checkpointing default
    from it (bfloat16 and on, on cuda): a CPU run resumed on a GPU was refused for two flags it never set. It
    keeps its float32 weights; checkpointing (memory, not math) follows the new device."""
    import torch

    from scope_envs.train.llm import ppo

    base = ["train-llm", "--env", "llm-toy", "--model", tiny_model_dir(), "--groups", "1", "--group-size", "2",
            "--max-new-tokens", "2", "--out", str(tmp_path)]
    main(base + ["--updates", "1"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU machine, as far as the checks can tell
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    seen = []
    monkeypatch.setattr(ppo, "train", lambda cfg: seen.append(cfg))
    main(base + ["--updates", "2", "--device", "cuda", "--resume"])
    assert [(c.device, c.dtype, c.gradient_checkpointing) for c in seen] == [("cuda", "float32", True)]
    with pytest.raises(SystemExit) as e:  # a dtype given, not the run's: a different run
        main(base + ["--updates", "2", "--device", "cuda", "--dtype", "bfloat16", "--resume"])
    assert e.value.code == 2 and "--dtype was 'float32', now 'bfloat16'" in capsys.readouterr().err
