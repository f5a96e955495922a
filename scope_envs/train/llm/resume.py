"""Resuming an interrupted ``scope-envs train-llm`` run (``--resume``) where its newest checkpoint left it.

Every checkpoint the trainer writes (``--save-every N`` and the final one) holds, beside the weights, a
``trainer_state.pt``: the update it ends, each learner's optimizer state, value head, fp32 master weights (bf16
runs) and KL coefficient, the LoRA adapters' weights (the pool's snapshots too), the numpy and torch generators,
the pool's draw, the realism discriminator and the envs' member schedules. Resumed with the same settings, a
run continues as if it had never stopped: the same metrics, update for update, and the same final weights
(``tests/test_llm_resume.py``). What only places a run (``--device``, ``--engine``, ``--gpu-memory-fraction``,
``chunk_tokens``, ``--gradient-checkpointing``: memory, not math), how long it runs (``--updates``: the total, so a
larger one trains more, and the same one on a finished run has nothing to do: ``RunComplete``) and what it writes
(``--save-every``, ``--out``) may change; any other setting must be the run's own.

    >>> sorted(PLACEMENT)[:3]
    ['chunk_tokens', 'device', 'engine']
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

STATE = "trainer_state.pt"
# the settings a resumed run may change: where it runs, how long, what it writes (never what it computes)
PLACEMENT = frozenset({"device", "engine", "gpu_memory_fraction", "chunk_tokens", "gradient_checkpointing",
                       "updates", "save_every", "save_final", "log", "out", "resume"})


class ResumeError(ValueError):
    """The run in ``--out`` cannot be resumed as asked: ``argument`` names the flag to change."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


class RunComplete(ResumeError):
    """``--resume`` of a run that has already trained ``--updates`` and written its final checkpoint: nothing is
    left to do (the command line says so in one line and exits 0, so a requeued job that reruns the same command
    ends cleanly)."""

    def __init__(self, message: str, done: int, folder: Path):
        super().__init__("--updates", message)
        self.done, self.folder = done, folder


def put_back_interrupted(out: Path) -> None:
    """A checkpoint whose save was killed (SIGKILL: no handler runs) between its two renames
    (``ppo.save_checkpoint``) lies only in ``.NAME.PID.old``: renamed back to ``NAME`` while ``NAME`` is free and
    PID is gone, before ``files.remove_leftovers`` would sweep it as a leftover and ``--resume`` look for it."""
    import os

    for left in (Path(out) / "checkpoints").glob(".*.old"):
        name, _, pid = left.name[1:-len(".old")].rpartition(".")
        if not name or not pid.isdigit() or not left.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # a live process is still saving it
        except ProcessLookupError:
            pass
        except OSError:  # (PermissionError: another user's live process)
            continue
        if not (left.parent / name).exists():
            os.replace(left, left.parent / name)


def run_settings(out) -> dict:
    """The settings of the run in ``out`` as its newest checkpoint saved them (``{}`` when there is none)."""
    found = checkpoints(out)
    if not found:
        return {}
    try:
        saved = json.loads((found[-1][1] / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def checkpoints(out: Path) -> list[tuple[int, Path]]:
    """``(update, folder)`` of every checkpoint under ``out/checkpoints`` that holds a trainer state, oldest
    first (``final`` counts as its run's last update)."""
    found = []
    for folder in (Path(out) / "checkpoints").glob("*"):
        if not (folder / STATE).is_file():
            continue
        if folder.name.startswith("update_") and folder.name[len("update_"):].isdigit():
            found.append((int(folder.name[len("update_"):]), folder))
        elif folder.name == "final":
            try:
                found.append((int(json.loads((folder / "config.json").read_text())["updates"]), folder))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return sorted(found, key=lambda item: (item[0], item[1].name == "final"))


def resume_point(cfg) -> tuple[int, Path]:
    """The newest checkpoint of the run in ``cfg.out`` and the update it ends, checked against ``cfg`` (its
    settings, and ``updates`` above what it has trained); else ``ResumeError``. Reads no weights."""
    found = checkpoints(cfg.out)
    if not found:
        raise ResumeError("--resume", f"--out {cfg.out} holds no checkpoint to resume from (checkpoints/update_N or "
                                      f"final with a {STATE}); a run writes one every --save-every N updates and "
                                      "at its end. Leave out --resume to start a new run there")
    done, folder = found[-1]
    try:
        saved = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise ResumeError("--resume", f"{folder / 'config.json'} cannot be read ({e}); it is not a whole "
                                      "checkpoint") from None
    ours = json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
    differ = sorted(k for k in set(saved) | set(ours) if k not in PLACEMENT and saved.get(k) != ours.get(k))
    if differ:
        shown = "; ".join(f"--{k.replace('_', '-')} was {saved.get(k)!r}, now {ours.get(k)!r}" for k in differ[:4])
        raise ResumeError(f"--{differ[0].replace('_', '-')}",
                          f"--resume continues the run in --out {cfg.out} with its own settings: {shown}. "
                          "Pass the run's settings again, or a new --out for a new run")
    where = folder.relative_to(Path(cfg.out))
    if done == cfg.updates and (folder.name == "final" or not cfg.save_final):
        raise RunComplete(f"the run in --out {cfg.out} is complete: it has trained {done} updates ({where}) of "
                          f"--updates {cfg.updates}, so there is nothing to do (--updates is the total: pass more "
                          f"than {done} to train on)", done, folder)
    if done > cfg.updates:
        raise ResumeError("--updates", f"the run in --out {cfg.out} has trained {done} updates ({where}); --updates "
                                       f"is the total: pass more than {done} to train on")
    return done, folder  # (done == updates without its final checkpoint: the resume writes it, training nothing)


# ----------------------------------------------------------------------------- what a checkpoint holds
def _tensors(value):
    """numpy arrays as tensors, recursively: a trainer state loads with ``torch.load(weights_only=True)``."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": torch.from_numpy(value.copy())}
    if isinstance(value, dict):
        return {k: _tensors(v) for k, v in value.items()}
    return value


def _arrays(value):
    if isinstance(value, dict):
        if set(value) == {"__ndarray__"}:
            return value["__ndarray__"].numpy().copy()
        return {k: _arrays(v) for k, v in value.items()}
    return value


def _adapter_weights(learners) -> dict:
    """Every LoRA adapter's weights (the live learners' and the pool's snapshots), by parameter name."""
    weights = {}
    for model in {id(lr.model): lr.model for lr in learners.values() if lr.adapter is not None}.values():
        names = tuple(f".{a}." for a in model.peft_config)
        weights.update({n: p.detach().cpu().clone() for n, p in model.named_parameters()
                        if any(a in n for a in names)})
    return weights


def capture(update: int, cfg, rng, learners, kl_ctls, pool, realism, envs) -> dict:
    """The trainer's state after ``update``: what ``restore`` needs, beside the checkpoint's weights."""
    schedules = [getattr(env.unwrapped, "schedule", None) for env in envs]
    state = {
        "update": update,
        "numpy_rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if cfg.device.startswith("cuda") else None,
        "learners": {name: {"optimizer": lr.optimizer.state_dict(), "kl_coef": kl_ctls[name].coef,
                            "value_head": None if lr.value_head is None else lr.value_head.state_dict(),
                            "master": None if lr.master is None else [m.detach().cpu() for _, m in lr.master]}
                     for name, lr in learners.items()},
        "adapters": _adapter_weights(learners),
        "pool": None if pool is None else {"snapshots": list(pool.snapshots), "rng": pool.rng.bit_generator.state},
        "realism": None if realism is None else _tensors({
            "flat": realism.discriminator.flat, "exp_avg": realism.discriminator.adam.exp_avg,
            "exp_avg_sq": realism.discriminator.adam.exp_avg_sq, "steps": realism.discriminator.adam.steps}),
        "schedules": [None if s is None else _tensors(copy.deepcopy(vars(s))) for s in schedules],
    }
    return state


def load(folder: Path, device: str) -> dict:
    return torch.load(Path(folder) / STATE, map_location=device, weights_only=True)


def restore_learners(state: dict, folder: Path, cfg, learners) -> None:
    """The learners' weights, value heads, master weights and optimizers as the checkpoint left them, and the
    pool's snapshot adapters recreated on the base model (before any engine is built on the weights)."""
    from transformers import AutoModelForCausalLM

    pool = state["pool"]
    if pool:
        user = learners["user"]
        for name in pool["snapshots"]:
            user.model.add_adapter(name, copy.deepcopy(user.model.peft_config[user.adapter]))
    restored = set()
    for name, learner in learners.items():
        if learner.adapter is not None:
            params = dict(learner.model.named_parameters())
            with torch.no_grad():
                for key, value in state["adapters"].items():
                    if key in params:
                        params[key].copy_(value)
        elif id(learner.model) not in restored:  # a full model: the checkpoint's saved weights
            saved = AutoModelForCausalLM.from_pretrained(str(folder / name), local_files_only=True,
                                                         dtype=next(learner.model.parameters()).dtype)
            learner.model.load_state_dict(saved.state_dict())
            restored.add(id(learner.model))
        mine = state["learners"][name]
        if learner.value_head is not None:
            learner.value_head.load_state_dict(mine["value_head"])
        if learner.master is not None:
            with torch.no_grad():
                for (_, m), value in zip(learner.master, mine["master"]):
                    m.copy_(value)
        learner.optimizer.load_state_dict(mine["optimizer"])
    if pool:
        for key, p in learners["user"].model.named_parameters():
            if any(f".{name}." in key for name in pool["snapshots"]):
                p.requires_grad_(False)


def restore_loop(state: dict, cfg, rng, kl_ctls, pool, realism, envs) -> None:
    """The loop's own state: generators, KL coefficients, the pool's draw, the discriminator, the schedules."""
    for name, ctl in kl_ctls.items():
        ctl.coef = state["learners"][name]["kl_coef"]
    if pool is not None and state["pool"]:
        pool.snapshots = list(state["pool"]["snapshots"])
        pool.rng.bit_generator.state = state["pool"]["rng"]
        if pool.on_snapshot is not None:  # vLLM: the restored snapshots are registered as at their making
            for name in pool.snapshots:
                pool.on_snapshot(name)
    if realism is not None and state["realism"] is not None:
        saved = _arrays(state["realism"])
        d = realism.discriminator
        d.flat[:] = saved["flat"]  # in place: the discriminator's views and Adam read this buffer
        d.adam.exp_avg[:], d.adam.exp_avg_sq[:], d.adam.steps = saved["exp_avg"], saved["exp_avg_sq"], saved["steps"]
    for env, saved in zip(envs, state["schedules"]):
        if saved is not None:
            vars(env.unwrapped.schedule).update(_arrays(saved))
    rng.bit_generator.state = state["numpy_rng"]
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"] is not None and cfg.device.startswith("cuda"):
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])


def metrics_until(path: Path, update: int) -> list[dict]:
    """The lines of ``metrics.jsonl`` up to ``update`` (a run stopped after its checkpoint wrote more)."""
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # a line cut short by the stop
                continue
            if isinstance(row, dict) and isinstance(row.get("update"), int) and row["update"] <= update:
                rows.append(row)
    return rows
