"""``scope-envs eval-llm`` (the held-out LLM panel) and the LLM commands' bad-input errors.

Every model is a tiny random Llama built on the spot (tests/llm_fixtures.py); nothing is downloaded.
"""

from __future__ import annotations

import itertools
import json
import socket

import llm_fixtures
import numpy as np
import pytest
from llm_fixtures import tiny_model_dir

from scope_envs.cli import main

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

_one_thread, tiny_dir = llm_fixtures._one_thread, llm_fixtures.tiny_dir  # pytest fixtures


def _panel(tmp_path, entries, name="panel.json", **extra):
    path = tmp_path / name
    path.write_text(json.dumps({"simulators": entries, **extra}))
    return str(path)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


def _no_work(monkeypatch):
    """Fail the test if a model would load or training start: errors must come first."""
    from scope_envs.train.llm import panel, ppo

    def forbidden(*a, **k):
        raise AssertionError("work started on bad input")

    monkeypatch.setattr(ppo, "train", forbidden)
    monkeypatch.setattr(panel, "evaluate", forbidden)


def test_eval_llm_reports_per_simulator_and_mean_with_welch_holm(tmp_path, tiny_dir, capsys):
    other = tiny_model_dir(corpus="upper")
    panel = _panel(tmp_path, [{"name": "sim-a", "kind": "local", "path": tiny_dir},
                              {"name": "sim-b", "kind": "local", "path": other}])
    out = tmp_path / "eval"
    main(["eval-llm", "--policy", tiny_dir, "--policy", other, "--env", "p4g-frozen", "--panel", panel,
          "--episodes", "3", "--max-new-tokens", "8", "--env-kwargs", '{"max_turns": 1}', "--out", str(out)])
    report = json.loads((out / "eval.json").read_text())
    assert set(report["policies"]) == {tiny_dir, other}
    for r in report["policies"].values():
        per = r["simulators"]
        assert set(per) == {"sim-a", "sim-b"} and all(len(p["scores"]) == 3 for p in per.values())
        assert all(0 <= s <= 1 for p in per.values() for s in p["scores"])
        assert r["mean"]["score"] == pytest.approx(np.mean([p["score"] for p in per.values()]))
        assert r["mean"]["success"] == pytest.approx(np.mean([p["success"] for p in per.values()]))
    comps = report["comparisons"]
    assert {c["simulator"] for c in comps} == {"sim-a", "sim-b", "panel"}
    ordered = sorted(comps, key=lambda c: c["p"])
    assert all(c["p_holm"] >= c["p"] for c in comps)
    assert all(a["p_holm"] <= b["p_holm"] for a, b in itertools.pairwise(ordered))  # monotone step-down
    md = (out / "eval.md").read_text()
    assert "sim-a" in md and "p (Holm)" in md and md in capsys.readouterr().out


def test_eval_llm_takes_a_lora_adapter_policy(tmp_path, tiny_dir):
    pytest.importorskip("peft")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from scope_envs.train.llm.panel import evaluate, policy_backend

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_dir),
                           LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, task_type="CAUSAL_LM"))
    model.save_pretrained(tmp_path / "adapter")
    backend = policy_backend(str(tmp_path / "adapter"))
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():  # the adapter is folded in: not the base model's outputs
        assert not torch.allclose(backend.model(input_ids=ids).logits,
                                  AutoModelForCausalLM.from_pretrained(tiny_dir)(input_ids=ids).logits)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    report = evaluate([str(tmp_path / "adapter")], "p4g-frozen", panel, 1, max_new_tokens=4,
                      env_kwargs={"max_turns": 1}, log=None)
    assert len(report["policies"][str(tmp_path / "adapter")]["simulators"]["a"]["scores"]) == 1


def test_holm_and_welch():
    from scipy import stats

    from scope_envs.train.llm.panel import holm, welch

    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.2, 0.9]) == pytest.approx([0.4, 0.9]) and holm([0.5, 0.9]) == [1.0, 1.0]
    a, b = [0.1, 0.4, 0.3, 0.9], [0.0, 0.2, 0.1]
    assert welch(a, b) == pytest.approx(tuple(stats.ttest_ind(a, b, equal_var=False)))
    assert welch([1.0, 1.0], [1.0, 1.0]) == (0.0, 1.0)


BAD_EVAL = [
    ({"name": "x", "kind": "anthropic-magic", "path": "."}, "--panel", "unknown kind"),
    ({"name": "x", "kind": "local", "path": "/nonexistent/model"}, "--panel", "no model directory"),
    ({"name": "x", "kind": "openai", "model": "m"}, "--panel", "needs base_url and model"),
]


@pytest.mark.parametrize("entry, argument, why", BAD_EVAL, ids=[b[2] for b in BAD_EVAL])
def test_eval_llm_bad_panel_is_one_line_exit_2(tmp_path, tiny_dir, capsys, monkeypatch, entry, argument, why):
    _no_work(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", _panel(tmp_path, [entry])])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {argument}" in err and why in err and "Traceback" not in err


def test_eval_llm_unreachable_endpoint_is_found_before_any_episode(tmp_path, tiny_dir, capsys, monkeypatch):
    _no_work(monkeypatch)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    panel = _panel(tmp_path, [{"name": "api", "kind": "openai", "base_url": url, "model": "gpt-x"}])
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel, "--connect-timeout", "2"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --panel" in err and "unreachable" in err and url in err


def test_eval_llm_bad_policy_and_env(tmp_path, tiny_dir, capsys, monkeypatch):
    _no_work(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    empty = tmp_path / "no-tokenizer"
    empty.mkdir()
    for argv, argument, why in (
        (["--policy", str(empty), "--env", "p4g-frozen"], "--policy", "holds no tokenizer"),
        (["--policy", tiny_dir, "--env", "p4g-cotrain"], "--env", "user seat"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["eval-llm", "--panel", panel, *argv])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"argument {argument}" in err and why in err and "Traceback" not in err


def test_a_yaml_panel_with_verbalized_sampling(tmp_path, tiny_dir):
    pytest.importorskip("yaml")
    from scope_envs.train.llm.panel import eval_env_id, load_panel

    path = tmp_path / "panel.yaml"
    path.write_text(f"simulators:\n  - {{name: a, kind: local, path: {tiny_dir}}}\n"
                    "verbalized_sampling: {k: 3}\n")
    sims, options = load_panel(path)
    assert [s.name for s in sims] == ["a"] and eval_env_id("p4g-frozen", options) == ("p4g-vs", {"k": 3})


BAD_TRAIN = [
    (["--algo", "grpo", "--group-size", "1"], "--group-size", "group_size must be >= 2"),
    (["--mode", "population"], "--lora", "LoRA"),
    (["--user-reward", "adversarial"], "--user-reward", "trained user"),
    (["--mode", "cotrain", "--user-reward", "curriculum", "--group-size", "1", "--env", "p4g-cotrain"],
     "--group-size", "group"),
    (["--mode", "cotrain", "--env", "p4g-cotrain", "--env-kwargs", '{"turns": 3}'], "--env-kwargs", "turns"),
    (["--mode", "cotrain", "--env", "p4g-frozen"], "--env", "p4g-cotrain"),
    (["--mode", "agent", "--env", "p4g-cotrain"], "--env", "p4g-frozen"),
    (["--engine", "vllm", "--lora", "--lora-r", "24"], "--lora-r", "vLLM serves LoRA ranks"),
    (["--gpu-memory-fraction", "1.5"], "--gpu-memory-fraction", "in (0, 1]"),
]


@pytest.mark.parametrize("argv, argument, why", BAD_TRAIN, ids=[" ".join(b[0]) for b in BAD_TRAIN])
def test_train_llm_bad_input_exits_2_before_training(argv, argument, why, capsys, monkeypatch):
    _no_work(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", *argv])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {argument}" in err and why in err and "Traceback" not in err


def test_train_llm_model_dir_without_a_tokenizer(tmp_path, capsys, monkeypatch):
    _no_work(monkeypatch)
    for flag in ("--model", "--user-model"):
        with pytest.raises(SystemExit) as exit_:
            main(["train-llm", "--mode", "cotrain", "--env", "p4g-cotrain", flag, str(tmp_path)])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"argument {flag}" in err and "holds no tokenizer" in err


def test_cli_train_llm_grpo_cotrain(tmp_path, tiny_dir):
    main(["train-llm", "--env", "p4g-cotrain", "--mode", "cotrain", "--algo", "grpo", "--group-size", "2",
          "--groups", "1", "--model", tiny_dir, "--user-model", tiny_model_dir(corpus="upper"), "--updates", "1",
          "--max-new-tokens", "4", "--env-kwargs", '{"max_turns": 1}', "--user-reward", "cooperative",
          "--user-lr", "1e-5", "--clip-high", "0.3", "--out", str(tmp_path)])
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert row["sequences/agent"] == 2 and row["sequences/user"] == 2
    cfg = json.loads((tmp_path / "checkpoints" / "final" / "config.json").read_text())
    assert (cfg["algo"], cfg["clip_low"], cfg["clip_high"], cfg["user_lr"]) == ("grpo", 0.2, 0.3, 1e-5)
