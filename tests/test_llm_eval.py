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
    # what a rerun needs beside the panel: the env's options and the tokens per message (they were not kept)
    assert (report["env_kwargs"], report["max_new_tokens"], report["episodes"]) == ({"max_turns": 1}, 8, 3)
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
    # a list or number where text goes, a timeout out of range: were tracebacks (a TypeError), later
    ({"name": ["x"], "kind": "openai", "base_url": "http://x", "model": "m"}, "--panel", "name must be text"),
    ({"name": "x", "kind": "openai", "base_url": 8000, "model": "m"}, "--panel", "base_url must be text"),
    ({"name": "x", "kind": "openai", "base_url": "http://x", "model": "m", "timeout": -1}, "--panel",
     "timeout is seconds in (0, 3600]"),
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


def test_a_panel_file_that_is_not_text_or_not_yaml_is_one_line(tmp_path, tiny_dir, capsys, monkeypatch):
    """A binary file was a UnicodeDecodeError traceback; a YAML error spread over several lines."""
    pytest.importorskip("yaml")
    _no_work(monkeypatch)
    binary, broken = tmp_path / "binary.yaml", tmp_path / "broken.yaml"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    broken.write_text("simulators: [\n")
    for path, why in ((binary, "cannot read the panel file"), (broken, "is not valid YAML")):
        with pytest.raises(SystemExit) as exit_:
            main(["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", str(path)])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "Traceback" not in err
        last = err.strip().splitlines()[-1]  # the usage, then one line that says why
        assert last.startswith("scope-envs eval-llm: error: argument --panel: ") and why in last, err


def test_a_folder_with_a_tokenizer_but_no_model_is_an_argument_error(tmp_path, tiny_dir, capsys, monkeypatch):
    """A tokenizer alone (or config.json without weights) passed the check, then failed inside transformers as a
    traceback once loading: for train-llm's --model, eval-llm's --policy and a panel's path alike."""
    import shutil
    from pathlib import Path

    _no_work(monkeypatch)
    tokenizer_only, no_weights = tmp_path / "tokenizer-only", tmp_path / "no-weights"
    tokenizer_only.mkdir()
    no_weights.mkdir()
    for f in Path(tiny_dir).iterdir():
        if f.name.startswith("tokenizer"):
            shutil.copy(f, tokenizer_only)
        if f.suffix == ".json":
            shutil.copy(f, no_weights)
    good = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}], "good.json")
    for folder, why in ((tokenizer_only, "holds no model: no readable config.json"),
                        (no_weights, "holds no model weights")):
        bad = _panel(tmp_path, [{"name": "a", "kind": "local", "path": str(folder)}], "bad.json")
        for argv, argument in ((["train-llm", "--env", "llm-toy", "--model", str(folder)], "--model"),
                               (["eval-llm", "--policy", str(folder), "--env", "p4g-frozen", "--panel", good],
                                "--policy"),
                               (["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", bad], "--panel")):
            with pytest.raises(SystemExit) as exit_:
                main(argv)
            err = capsys.readouterr().err
            assert exit_.value.code == 2 and f"argument {argument}: " in err and why in err and "Traceback" not in err


def test_a_lora_runs_final_agent_folder_points_to_its_adapter(tmp_path, tiny_dir, capsys, monkeypatch):
    """After ``train-llm --lora``, checkpoints/final/agent holds only the value head: the policy is
    adapters/agent. The error said to save a tokenizer there."""
    _no_work(monkeypatch)
    final = tmp_path / "checkpoints" / "final"
    (final / "agent").mkdir(parents=True)
    (final / "agent" / "value_head.pt").write_bytes(b"")
    (final / "adapters" / "agent").mkdir(parents=True)
    (final / "adapters" / "agent" / "adapter_config.json").write_text("{}")
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", str(final / "agent"), "--env", "p4g-frozen", "--panel", panel])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert f"its policy is the adapter directory '{final / 'adapters' / 'agent'}'" in err


def _scripted_backends(monkeypatch):
    """eval-llm's policies and simulators answer from a script: no model loads (the paths are still checked)."""
    from llm_fixtures import ScriptedBackend

    from scope_envs.train.llm import panel

    monkeypatch.setattr(panel, "policy_backend", lambda spec: ScriptedBackend(["Would you donate $1?"]))
    monkeypatch.setattr(panel, "simulator_backend", lambda sim: ScriptedBackend(["Okay. [DONATE $0.50]"]))


def test_eval_json_is_strict_json_written_atomically(tmp_path, tiny_dir, monkeypatch):
    """With one episode Welch's t is NaN: eval.json held a bare NaN, which strict JSON readers refuse. Both
    files go through write_atomic (they were written in place)."""
    from scope_envs import files

    _scripted_backends(monkeypatch)
    written = []
    real = files.write_atomic
    monkeypatch.setattr(files, "write_atomic", lambda path, data: (written.append(path.name), real(path, data)))
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    out = tmp_path / "eval"
    main(["eval-llm", "--policy", tiny_dir, "--policy", f"{tiny_dir}/", "--env", "p4g-frozen", "--panel", panel,
          "--episodes", "1", "--env-kwargs", '{"max_turns": 1}', "--out", str(out)])

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    report = json.loads((out / "eval.json").read_text(), parse_constant=refuse)
    assert [c["t"] for c in report["comparisons"]] == [None, None] and sorted(written) == ["eval.json", "eval.md"]


def test_eval_llm_shows_its_progress_per_episode(tmp_path, tiny_dir, capsys, monkeypatch):
    """Only a line per policy and simulator was printed: with a large model that is minutes of silence."""
    _scripted_backends(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    main(["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel, "--episodes", "3",
          "--env-kwargs", '{"max_turns": 1}', "--out", str(tmp_path / "eval")])
    err = capsys.readouterr().err
    assert "eval-llm" in err and "3/3" in err and "episode" in err, err


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
    (["--mode", "cotrain", "--env", "cooperbench-cotrain", "--user-reward", "realism"], "--user-reward",
     # a game without real dialogues pays no realism; the game's own list (persona, mixed, ...) is not the flag's
     "cooperbench-cotrain's trained user has no 'realism' reward; it takes adversarial, cooperative, curriculum\n"),
    (["--mode", "cotrain", "--env", "p4g-frozen"], "--env", "p4g-cotrain"),
    (["--mode", "agent", "--env", "p4g-cotrain"], "--env", "p4g-frozen"),
    (["--engine", "vllm", "--lora", "--lora-r", "24"], "--lora-r", "vLLM serves LoRA ranks"),
    (["--gpu-memory-fraction", "1.5"], "--gpu-memory-fraction", "in (0, 1]"),
    # --user-model is not silently dropped: --shared has one model, LoRA one base
    (["--mode", "cotrain", "--env", "p4g-cotrain", "--shared", "--user-model", "tiny"], "--user-model",
     "not used with shared"),
    (["--mode", "cotrain", "--env", "p4g-cotrain", "--lora", "--user-model", tiny_model_dir()], "--user-model",
     "one base model"),
    (["--clip-low", "1.5"], "--clip-low", "expected a number in [0, 1), got 1.5"),
    (["--clip-low", "1"], "--clip-low", "expected a number in [0, 1), got 1.0"),
    (["--clip-low", "nan"], "--clip-low", "expected a number in [0, 1)"),
    # options this run would not read: --lora-r trained full weights, the vLLM share went unused
    (["--lora-r", "16"], "--lora-r", "only with --lora"),
    (["--gpu-memory-fraction", "0.5"], "--gpu-memory-fraction", "only with --engine vllm"),
    # llm-toy took any --env-kwargs without a word (an empty target paid every reply)
    (["--env", "llm-toy", "--env-kwargs", '{"nonsense": 1}'], "--env-kwargs", "llm-toy takes no option(s)"),
    (["--env", "llm-toy", "--env-kwargs", '{"max_turns": "x"}'], "--env-kwargs", "max_turns must be a positive int"),
    (["--env", "llm-toy", "--env-kwargs", '{"target": ""}'], "--env-kwargs", "target must be a non-empty string"),
]


@pytest.mark.parametrize("argv, argument, why", BAD_TRAIN, ids=[" ".join(b[0]).replace(tiny_model_dir(), "TINY") for b in BAD_TRAIN])
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


def test_a_config_refuses_a_clip_low_without_a_floor():
    from scope_envs.train.llm.ppo import Config

    with pytest.raises(ValueError, match=r"clip_low .* \[0, 1\)"):
        Config(clip_low=1.5)  # the ratio floor 1 - 1.5 < 0: no lower clip at all
    assert Config(clip_low=0.0).clip_low == 0.0


def test_train_llm_help_states_the_range_of_clip_low(capsys):
    with pytest.raises(SystemExit):
        main(["train-llm", "--help"])
    assert "x in [0, 1)" in " ".join(capsys.readouterr().out.split())


# ----------------------------------------------------------------------------- eval-llm's --env-kwargs
@pytest.mark.parametrize("kwargs, why", [('{"nonsense": 1}', "takes no option(s) ['nonsense']"),
                                         ('{"max_turns": "x"}', "max_turns must be an int in [1, 10000], got 'x'")])
def test_eval_llm_checks_env_kwargs_as_train_llm_does(tmp_path, tiny_dir, capsys, monkeypatch, kwargs, why):
    """The same check (commands.check_env_kwargs) and the same line as train-llm, before any model loads."""
    _no_work(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    errors = []
    for argv in (["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel],
                 ["train-llm", "--env", "p4g-frozen"]):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--env-kwargs", kwargs])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "Traceback" not in err and why in err
        errors.append(err.split("error: ", 1)[1])
    assert errors[0] == errors[1] and errors[0].startswith("argument --env-kwargs: p4g-frozen does not take")


def test_eval_llm_checks_the_panels_verbalized_sampling_options(tmp_path, tiny_dir, capsys, monkeypatch):
    _no_work(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}], verbalized_sampling={"k": "x"})
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --panel: p4g-vs does not take" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- vLLM, checked before any work
@pytest.fixture
def no_vllm(monkeypatch):
    """vLLM absent (whether or not this machine has it), found as the commands find it: by find_spec."""
    import importlib.util
    import sys

    real = importlib.util.find_spec
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))


def test_a_vllm_policy_or_panel_entry_without_vllm_is_an_argument_error(tmp_path, tiny_dir, capsys, monkeypatch,
                                                                        no_vllm):
    import sys

    _no_work(monkeypatch)
    local = {"name": "a", "kind": "local", "path": tiny_dir}
    for panel, policies, argument, why in (
        (_panel(tmp_path, [local, {"name": "v", "kind": "vllm", "path": tiny_dir}], "vllm.json"), [tiny_dir], "--panel",
         "simulator 'v' (kind: vllm) needs vLLM"),
        (_panel(tmp_path, [local], "local.json"), [tiny_dir, f"vllm:{tiny_dir}"], "--policy", f"'vllm:{tiny_dir}' needs vLLM"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["eval-llm", *[x for p in policies for x in ("--policy", p)], "--env", "p4g-frozen",
                  "--panel", panel, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"argument {argument}: " in err and why in err
        assert "scope-envs[vllm]" in err and "Traceback" not in err
    assert "vllm" not in sys.modules and not (tmp_path / "out").exists()


def test_train_llm_engine_vllm_without_vllm_is_an_argument_error(capsys, monkeypatch, no_vllm):
    import sys

    _no_work(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--env", "llm-toy", "--engine", "vllm"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --engine: vllm: vLLM is not installed" in err
    assert "Traceback" not in err and "vllm" not in sys.modules


def test_vllm_is_found_without_being_imported(monkeypatch):
    import importlib.machinery
    import importlib.util
    import sys

    from scope_envs.train.llm.commands import vllm_installed

    real = importlib.util.find_spec
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: importlib.machinery.ModuleSpec("vllm", None)
                        if name == "vllm" else real(name, *a))
    assert vllm_installed() and "vllm" not in sys.modules


# ----------------------------------------------------------------------------- --out: the tiny model, a run there
def test_a_tiny_lora_run_keeps_its_base_model_under_out_and_no_temporary_folder(tmp_path, monkeypatch):
    """--model tiny is built in OUT/base-model and the saved adapters point there, so they load after the
    run (eval-llm takes them); nothing is left in the temporary folder."""
    pytest.importorskip("peft")
    import tempfile

    from scope_envs.train.llm.panel import adapter_base

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    out = tmp_path / "run"
    main(["train-llm", "--env", "llm-toy", "--model", "tiny", "--lora", "--updates", "1", "--groups", "1",
          "--max-new-tokens", "4", "--out", str(out)])
    adapter = out / "checkpoints" / "final" / "adapters" / "agent"
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str((out / "base-model").resolve())
    assert adapter_base(adapter) == str((out / "base-model").resolve())
    assert list(scratch.iterdir()) == []


def test_a_tiny_model_is_the_same_wherever_it_is_built(tmp_path):
    """The base model lives under --out now: the same seed still gives the same numbers in another folder."""
    from scope_envs.train.llm import ppo

    rows = []
    for name in ("a", "b"):
        cfg = ppo.Config(env="llm-toy", model="tiny", updates=1, groups=1, max_new_tokens=4, log=False,
                         save_final=False, out=str(tmp_path / name))
        row = ppo.train(cfg)["history"][0]
        rows.append({k: v for k, v in row.items() if not k.startswith(("time_", "tokens_per_s"))})
    assert rows[0] == rows[1] and (tmp_path / "a" / "base-model" / "config.json").is_file()


def test_train_llm_says_when_out_already_holds_a_run(tmp_path, capsys, monkeypatch):
    """Not refused (folders are reused on purpose): one line on stderr, only when a run is there."""
    from scope_envs.train.llm import ppo

    monkeypatch.setattr(ppo, "train", lambda cfg: (tmp_path / "metrics.jsonl").write_text("{}\n"))
    argv = ["train-llm", "--env", "llm-toy", "--updates", "1", "--out", str(tmp_path)]
    main(argv)
    assert "already holds a run" not in capsys.readouterr().err
    main(argv)
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "already holds a run" in line] == [
        f"scope-envs train-llm: note: --out {tmp_path} already holds a run (metrics.jsonl, checkpoints/); "
        "this run replaces it (--resume continues it)"]


def test_train_llm_removes_the_checkpoint_a_killed_run_was_saving(tmp_path, monkeypatch):
    """SIGKILL while a checkpoint is saved leaves its temporary folder (``checkpoints/.update_3.<pid>.tmp``, or the
    one it replaces, ``.<name>.<pid>.old``): a whole model's size, hidden, which every later run into that --out
    kept. A run removes those of processes that are gone; a live process's stays."""
    import os
    import subprocess

    from scope_envs.train.llm import ppo

    monkeypatch.setattr(ppo, "train", lambda cfg: None)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that no process has now
    checkpoints = tmp_path / "checkpoints"
    left = [checkpoints / f".update_3.{gone.pid}.tmp", checkpoints / f".final.{gone.pid}.old"]
    for folder in left:
        (folder / "agent").mkdir(parents=True)
        (folder / "agent" / "model.safetensors").write_bytes(b"half")
    live = checkpoints / f".update_4.{os.getppid()}.tmp"
    live.mkdir()
    main(["train-llm", "--env", "llm-toy", "--updates", "1", "--out", str(tmp_path)])
    assert not [folder for folder in left if folder.exists()] and live.is_dir()


def test_the_llm_commands_help_states_their_defaults(capsys):
    """--updates, --groups, --lr, --temperature, eval-llm's --episodes ... had no default in --help."""
    helps = {}
    for command in ("train-llm", "eval-llm"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        helps[command] = " ".join(capsys.readouterr().out.split())
    for said in ("--members MEMBERS members mode: K users (2;", "--lora-r LORA_R LoRA rank (8;",
                 "--updates UPDATES PPO / GRPO updates (10;", "--groups GROUPS scenario seeds per update (4;",
                 "per turn (32;", "sampling temperature (1.0)", "--lr LR learning rate, in (0, 1] (1e-4)"):
        assert said in helps["train-llm"], said
    for said in ("episodes per policy and simulator (20;", "per message (128;", "for an endpoint (5;",
                 "--env-kwargs ENV_KWARGS JSON options", "a LoRA adapter directory"):
        assert said in helps["eval-llm"], said


# ----------------------------------------------------------------------------- folders whose files cannot be loaded
def _break(folder, how: str) -> None:
    """Spoil a copy of a saved model (or LoRA adapter) the way a user's folder gets spoilt."""
    import os

    weights = "adapter_model" if (folder / "adapter_config.json").is_file() else "model"
    config = folder / ("adapter_config.json" if weights == "adapter_model" else "config.json")
    if how == "random safetensors":
        (folder / f"{weights}.safetensors").write_bytes(os.urandom(4096))
    elif how == "truncated safetensors":
        data = (folder / f"{weights}.safetensors").read_bytes()
        (folder / f"{weights}.safetensors").write_bytes(data[:len(data) // 2])
    elif how == "garbage bin":
        (folder / f"{weights}.safetensors").unlink()
        (folder / f"{'pytorch_model' if weights == 'model' else weights}.bin").write_bytes(os.urandom(4096))
    elif how == "unknown model_type":
        data = json.loads(config.read_text())
        data["model_type" if weights == "model" else "peft_type"] = "not-a-model"
        config.write_text(json.dumps(data))
    elif how == "config not json":
        config.write_text("{not json")
    elif how == "r not an int":
        config.write_text(json.dumps({**json.loads(config.read_text()), "r": "4"}))
    else:
        raise AssertionError(how)


BROKEN = {  # how a folder is spoilt: what the one line says
    "random safetensors": "a .safetensors weights file is corrupt or truncated",
    "truncated safetensors": "a .safetensors weights file is corrupt or truncated",
    "garbage bin": "a .bin weights file is corrupt or not a torch checkpoint",
    "unknown model_type": "has model type `not-a-model` but Transformers does not recognize this architecture",
    "config not json": "no readable config.json",  # said before any model loads (check_model_dir)
}


def _broken_model(tiny_dir, tmp_path, how: str) -> str:
    import shutil

    folder = tmp_path / how.replace(" ", "-")
    shutil.copytree(tiny_dir, folder)
    _break(folder, how)
    return str(folder)


def _one_line_refusal(capsys, exit_, command: str, argument: str, *said: str) -> str:
    """Exit 2, no traceback, and stderr's last line is the refusal naming ``argument`` and ``said``."""
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert exit_.value.code == 2 and "Traceback" not in err, err
    assert last.startswith(f"scope-envs {command}: error: argument {argument}: "), err
    assert all(s in last for s in said), (said, last)
    return last


def test_train_llm_a_model_folder_whose_files_cannot_be_loaded_is_an_argument_error(tmp_path, tiny_dir, capsys):
    """Corrupt or truncated weights and an unknown model_type passed every check, then were a traceback from
    safetensors, torch.load or transformers once the model loaded: one line naming the folder now, exit 2."""
    from scope_envs.train.llm import ppo

    for how, why in BROKEN.items():
        folder = _broken_model(tiny_dir, tmp_path, how)
        with pytest.raises(SystemExit) as exit_:
            main(["train-llm", "--env", "llm-toy", "--model", folder, "--updates", "1", "--max-new-tokens", "4",
                  "--out", str(tmp_path / "run")])
        _one_line_refusal(capsys, exit_, "train-llm", "--model", repr(folder), why)
    folder = _broken_model(tiny_dir, tmp_path / "user", "random safetensors")  # the second model of a cotrain run
    with pytest.raises(SystemExit) as exit_:
        main(["train-llm", "--env", "p4g-cotrain", "--mode", "cotrain", "--model", tiny_dir, "--user-model", folder,
              "--updates", "1", "--max-new-tokens", "4", "--out", str(tmp_path / "run")])
    _one_line_refusal(capsys, exit_, "train-llm", "--user-model", repr(folder), BROKEN["random safetensors"])
    from scope_envs.train.llm.panel import ModelLoadError

    with pytest.raises(ModelLoadError) as raised:  # the trainer's own loader: the same error, for Python callers
        ppo.load_model(folder, "cpu", 0)
    assert raised.value.path == folder


def test_eval_llm_a_policy_or_panel_model_whose_files_cannot_be_loaded_is_an_argument_error(tmp_path, tiny_dir, capsys,
                                                                                            monkeypatch):
    """The same folders as eval-llm's --policy and as a panel entry's path: one line, exit 2, no episode played,
    and the progress bar closed before the line (it was printed after it)."""
    from scope_envs.train.llm import panel

    def no_episode(*a, **k):
        raise AssertionError("an episode played with a model that cannot be loaded")

    monkeypatch.setattr(panel, "play", no_episode)
    good = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}], "good.json")
    for how, why in BROKEN.items():
        folder = _broken_model(tiny_dir, tmp_path, how)
        bad = _panel(tmp_path, [{"name": "sim", "kind": "local", "path": folder}], "bad.json")
        for argv, argument, said in (
                (["--policy", folder, "--panel", good], "--policy", (repr(folder), why)),
                (["--policy", tiny_dir, "--panel", bad], "--panel", (repr(folder), why, "'sim'"))):
            with pytest.raises(SystemExit) as exit_:
                main(["eval-llm", *argv, "--env", "p4g-frozen", "--episodes", "1", "--out", str(tmp_path / "eval")])
            _one_line_refusal(capsys, exit_, "eval-llm", argument, *said)


def test_eval_llm_a_broken_later_policy_or_adapter_is_refused_before_the_first_plays(tmp_path, tiny_dir, capsys,
                                                                                   monkeypatch):
    """With several --policy, a later one whose weights are corrupt or truncated, or whose model_type is unknown,
    was found only when its turn came to load, after the earlier ones had played all their episodes; its
    config and its weights' headers are now read with the others', before any episode."""
    pytest.importorskip("peft")
    import shutil

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from scope_envs.train.llm import panel

    monkeypatch.setattr(panel, "play", lambda *a, **k: pytest.fail("an episode played"))
    good = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}], "good.json")
    adapter = tmp_path / "adapter"
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_dir),
                   LoraConfig(r=4, lora_alpha=8, task_type="CAUSAL_LM")).save_pretrained(adapter)
    broken_adapter = tmp_path / "adapter-truncated"
    shutil.copytree(adapter, broken_adapter)
    _break(broken_adapter, "truncated safetensors")
    for later, why in [*((_broken_model(tiny_dir, tmp_path, how), BROKEN[how])
                         for how in ("truncated safetensors", "random safetensors", "unknown model_type")),
                       (str(broken_adapter), ADAPTER_BROKEN["truncated safetensors"])]:
        with pytest.raises(SystemExit) as exit_:
            main(["eval-llm", "--policy", tiny_dir, "--policy", later, "--panel", good, "--env", "p4g-frozen",
                  "--episodes", "1", "--out", str(tmp_path / "eval")])
        _one_line_refusal(capsys, exit_, "eval-llm", "--policy", repr(later), why)


ADAPTER_BROKEN = {
    "random safetensors": "cannot load the LoRA adapter there: a .safetensors weights file is corrupt or truncated",
    "truncated safetensors": "cannot load the LoRA adapter there: a .safetensors weights file is corrupt or truncated",
    "garbage bin": "cannot load the LoRA adapter there: a .bin weights file is corrupt or not a torch checkpoint",
    "unknown model_type": "its config names 'not-a-model', which this version does not know",  # the peft_type
    "config not json": "its adapter_config.json is not readable JSON",
    "r not an int": "its config has a field of the wrong type",  # peft's TypeError
}


def test_eval_llm_a_lora_adapter_whose_files_cannot_be_loaded_is_an_argument_error(tmp_path, tiny_dir, capsys,
                                                                                   monkeypatch):
    """A LoRA adapter policy with corrupt weights, an unknown peft_type or an adapter_config.json that is not
    JSON was a traceback from safetensors, torch, peft or json; and one whose base model cannot be loaded."""
    pytest.importorskip("peft")
    import shutil

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from scope_envs.train.llm import panel

    monkeypatch.setattr(panel, "play", lambda *a, **k: pytest.fail("an episode played"))
    adapter = tmp_path / "adapter"
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_dir),
                   LoraConfig(r=4, lora_alpha=8, task_type="CAUSAL_LM")).save_pretrained(adapter)
    good = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    for how, why in ADAPTER_BROKEN.items():
        folder = tmp_path / f"adapter-{how.replace(' ', '-')}"
        shutil.copytree(adapter, folder)
        _break(folder, how)
        with pytest.raises(SystemExit) as exit_:
            main(["eval-llm", "--policy", str(folder), "--panel", good, "--env", "p4g-frozen", "--episodes", "1",
                  "--out", str(tmp_path / "eval")])
        _one_line_refusal(capsys, exit_, "eval-llm", "--policy", repr(str(folder)), why)
    base = _broken_model(tiny_dir, tmp_path, "unknown model_type")
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": base}))
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", str(adapter), "--panel", good, "--env", "p4g-frozen", "--episodes", "1",
              "--out", str(tmp_path / "eval")])
    _one_line_refusal(capsys, exit_, "eval-llm", "--policy", "is a LoRA adapter whose base model cannot be loaded",
                      repr(base), BROKEN["unknown model_type"])


def test_score_text_a_model_folder_whose_files_cannot_be_loaded_is_an_argument_error(tmp_path, tiny_dir, capsys):
    """scope-envs score --surface text loads its --policy the way eval-llm does: the same one line, exit 2."""
    for how in ("random safetensors", "unknown model_type"):
        folder = _broken_model(tiny_dir, tmp_path, how)
        with pytest.raises(SystemExit) as exit_:
            main(["score", "--surface", "text", "--game", "p4g", "--policy", folder, "--episodes", "1",
                  "--max-new-tokens", "4", "--out", str(tmp_path / "score")])
        _one_line_refusal(capsys, exit_, "score", "--policy", repr(folder), BROKEN[how])


def test_only_the_errors_of_broken_files_become_one_line(tmp_path):
    """panel.loading turns the load errors of a user's folder into ModelLoadError (a PanelError); a bug (a
    TypeError, an AttributeError), a missing folder (BackendError, said by its own handlers) or out of memory
    goes on as it is, with its traceback."""
    import torch
    from safetensors import SafetensorError

    from scope_envs.agents.llm.backends import BackendError
    from scope_envs.train.llm.panel import ModelLoadError, PanelError, loading

    for error in (SafetensorError("Error while deserializing header: header too large"), OSError("not JSON"),
                  ValueError("model type `x`"), KeyError("X"), RuntimeError("PytorchStreamReader failed")):
        with pytest.raises(ModelLoadError) as raised, loading(tmp_path):
            raise error
        assert isinstance(raised.value, PanelError) and raised.value.path == str(tmp_path)
        assert "\n" not in str(raised.value) and str(raised.value).startswith(f"{str(tmp_path)!r}: cannot load")
    for error in (TypeError("a bug"), AttributeError("a bug"), BackendError("no local model directory"),
                  torch.OutOfMemoryError("CUDA out of memory"), NotImplementedError("a bug")):
        with pytest.raises(type(error)) as raised, loading(tmp_path):
            raise error
        assert raised.value is error


def test_eval_llm_connect_timeout_reaches_an_endpoint_policy(tmp_path, tiny_dir, capsys, monkeypatch):
    """--connect-timeout is the wait for every endpoint, an openai: policy's too (it had the 5 s default), and
    an unreachable policy is named as the policy, not as a panel simulator."""
    from scope_envs.train.llm import panel as panel_module

    _no_work(monkeypatch)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    waits = []
    real = panel_module.check_reachable
    monkeypatch.setattr(panel_module, "check_reachable", lambda sim, timeout=5.0: (waits.append(timeout),
                                                                                    real(sim, timeout))[1])
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", f"openai:{url}#m", "--env", "p4g-frozen", "--panel", panel,
              "--connect-timeout", "2"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --policy" in err and "unreachable" in err and waits == [2.0]
    assert "simulator" not in err and f"'openai:{url}#m'" in err


def test_eval_llm_refuses_a_policy_given_twice(tmp_path, tiny_dir, capsys, monkeypatch):
    """eval.json keys its rows by the --policy spec: a repeat was played twice, kept once and compared with itself."""
    _no_work(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    with pytest.raises(SystemExit) as exit_:
        main(["eval-llm", "--policy", tiny_dir, "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --policy" in err and "more than once" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- chat templates, checked at load
@pytest.mark.parametrize("kind, said", [("broken", "unexpected '}'"), ("missing", "has no chat template")])
def test_a_missing_or_broken_chat_template_is_an_argument_error_naming_the_folder(tmp_path, tiny_dir, capsys,
                                                                                  monkeypatch, kind, said):
    """A broken template was a traceback (exit 1) from inside the first rollout, after both models had loaded; a
    missing one an error naming neither the option nor the folder. Both are one line naming the option and the
    folder now (exit 2), before any model loads, for --model, --user-model, --policy and panel entries alike;
    and the "already holds a run" note does not come before the refusal."""
    from llm_fixtures import template_variant

    _no_work(monkeypatch)
    bad = template_variant(tmp_path / kind, kind)
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"update": 1}\n')
    train = ["train-llm", "--env", "p4g-frozen", "--updates", "1", "--out", str(out)]
    good_panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}], name="good.json")
    bad_panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": bad}], name="bad.json")
    for command, argv, argument in (
            ("train-llm", [*train, "--model", bad], "--model"),
            ("train-llm", [*train, "--user-model", bad], "--user-model"),
            ("eval-llm", ["eval-llm", "--policy", bad, "--env", "p4g-frozen", "--panel", good_panel], "--policy"),
            ("eval-llm", ["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", bad_panel], "--panel")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "Traceback" not in err, err
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"scope-envs {command}: error: argument {argument}: ") and repr(bad) in last, last
        assert said in last and "already holds a run" not in err
    assert (out / "metrics.jsonl").read_text() == '{"update": 1}\n'


def test_a_lora_adapter_folder_given_as_a_model_names_its_base_model(tmp_path, tiny_dir, capsys, monkeypatch):
    """train-llm --model ADAPTER advised saving a tokenizer into the adapter folder, as did eval-llm --policy
    vllm:ADAPTER: each says it is a LoRA adapter and names its base model now."""
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    _no_work(monkeypatch)
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_dir),
                   LoraConfig(r=4, lora_alpha=8, task_type="CAUSAL_LM")).save_pretrained(tmp_path / "adapter")
    adapter = str(tmp_path / "adapter")
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    for command, argv, argument, advice in (
            ("train-llm", ["train-llm", "--env", "p4g-frozen", "--model", adapter, "--out", str(tmp_path / "o")],
             "--model", f"pass its base model ({tiny_dir!r}) as --model"),
            ("eval-llm", ["eval-llm", "--policy", f"vllm:{adapter}", "--env", "p4g-frozen", "--panel", panel],
             "--policy", "without vllm:")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        last = _one_line_refusal(capsys, exit_, command, argument, f"{adapter!r} is a LoRA adapter",
                                 f"base model {tiny_dir!r}", advice)
        assert "save one there" not in last


def test_an_env_kwargs_refusal_lists_the_options_taken_as_json(tmp_path, tiny_dir, capsys, monkeypatch):
    """The refusal listed only the regime's options, ['user'] (a player, no JSON, and --user-model's or the
    panel's), and none of the game's that are taken (max_turns...)."""
    _no_work(monkeypatch)
    panel = _panel(tmp_path, [{"name": "a", "kind": "local", "path": tiny_dir}])
    for command, argv in (("train-llm", ["train-llm", "--env", "p4g-frozen"]),
                          ("eval-llm", ["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel])):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--env-kwargs", '{"bogus": 1}'])
        last = _one_line_refusal(capsys, exit_, command, "--env-kwargs", "takes no option(s) ['bogus']",
                                 "'max_turns'", "'sharpening'")
        assert "'user'" not in last
    # the user seat is --user-model's (it would have been replaced without a word) and the panel's (a TypeError)
    for command, argv in (("train-llm", ["train-llm", "--env", "p4g-frozen", "--user-model", "tiny"]),
                          ("eval-llm", ["eval-llm", "--policy", tiny_dir, "--env", "p4g-frozen", "--panel", panel])):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--env-kwargs", '{"user": "reference"}'])
        _one_line_refusal(capsys, exit_, command, "--env-kwargs", "user is the env's user seat")


def test_the_docs_panel_example_loads_and_plays(tmp_path, tiny_dir):
    """docs/llm.md's panel.yaml, its model paths made this machine's (its vllm entry left out: no vLLM here, its
    endpoint a stand-in): its top-level verbalized_sampling turns --env p4g-frozen into p4g-vs, said in the
    progress output, eval.json (env, env_asked) and eval.md's title."""
    yaml = pytest.importorskip("yaml")
    import re
    from pathlib import Path

    from llm_fixtures import ChatStandIn

    from scope_envs.train.llm.panel import eval_env_id, evaluate, load_panel

    text = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "simulators:" in b]
    assert len(blocks) == 1
    data = yaml.safe_load(blocks[0])
    assert [e["kind"] for e in data["simulators"]] == ["local", "vllm", "openai"]
    assert data["verbalized_sampling"] == {"k": 5}
    stand_in = ChatStandIn(replies=("Sure. [DONATE $1]",))
    try:
        for entry in data["simulators"]:
            if "path" in entry:
                entry["path"] = tiny_dir
            if entry["kind"] == "openai":
                entry.update(base_url=stand_in.url, api_key_env="SCOPE_TEST_NO_KEY")
        path = tmp_path / "panel.yaml"
        path.write_text(yaml.safe_dump(data))
        sims, options = load_panel(path)
        assert [s.name for s in sims] == ["qwen-user", "llama-user", "gpt-4o-mini"]
        assert eval_env_id("p4g-frozen", options) == ("p4g-vs", {"k": 5})
        data["simulators"] = [e for e in data["simulators"] if e["kind"] != "vllm"]
        path.write_text(yaml.safe_dump(data))
        said = []
        report = evaluate([tiny_dir], "p4g-frozen", str(path), 1, max_new_tokens=2, env_kwargs={"max_turns": 1},
                          out=tmp_path / "eval", log=said.append)
    finally:
        stand_in.close()
    assert said[0] == "the panel's verbalized_sampling plays p4g-vs in place of p4g-frozen"
    assert (report["env"], report["env_asked"]) == ("p4g-vs", "p4g-frozen")
    assert json.loads((tmp_path / "eval" / "eval.json").read_text())["env_asked"] == "p4g-frozen"
    title = (tmp_path / "eval" / "eval.md").read_text().splitlines()[0]
    assert title.startswith("# Held-out panel: p4g-vs (--env p4g-frozen, through the panel's verbalized_sampling)")
