"""The LLM path on one GPU, with nothing to download: rollout speed, the four trainer paths, what fits.

Made for the GPU machine this project can use (one H200; Python 3.12, torch, transformers, peft and
accelerate; no vLLM, no network; about 15 minutes of GPU time in all): it needs only this project's code
and its small pure-Python dependencies, carried as wheels (``benchmarks/gpu_wheels.py``; the install
line is in ``docs/llm-training.md``, "The GPU check"). Models are randomly initialised from configs on the device
(``load_model("random:DIR")``: a Llama config and a tokenizer trained on the spot, no weights), so no
checkpoint is needed. On the transformers engine (``TransformersBackend``, the trainer's own weights,
bf16, gradient checkpointing: the trainer's GPU defaults) it measures, for ~0.5B and ~1.5B models:

* rollout tokens per second: one batch of p4g first-turn prompts through ``generate_ids``;
* the four trainer paths (``scope_envs.train.llm.ppo.train`` on the text surface): ``ppo`` (agent vs the
  frozen p4g user), ``grpo`` (groups of ``--group-size``), ``cotrain`` (GRPO, two models, each its own
  tokenizer) and ``pool`` (GRPO co-training, the user's LoRA snapshots in a pool): time per update,
  generated tokens per second by role (``tokens_per_s/<learner>``), trained tokens per second, peak GPU
  memory;
* the largest model each path fits (``--fit-sizes``, ascending, one short update each until the first
  out-of-memory; probes stop when ``--budget-s`` is spent and say so).

vLLM: "not measured: not installed" unless it imports (then its rollout tokens per second beside
transformers'). Each model and engine is freed before the next (``free``). Output: one JSON (``--out``)
and a Markdown table beside it (``.md``), both written atomically. It is sized to finish in under 8
minutes on an H200.

``--dry-run`` runs the same code paths on CPU (random models from configs, the transformers engine, the
four trainer paths, the fit probe) at tiny sizes in float32, and says so: none of its numbers is a GPU
measurement. Its sizes and settings are fixed (``DRY_RUN``), so it refuses the options that set them
(--sizes, --fit-sizes, --updates, --episodes, --group-size, --batch, --max-new-tokens, --vocab, --budget-s).

    python benchmarks/llm_gpu.py --out benchmarks/results/llm_gpu.json           # on the GPU machine
    python benchmarks/llm_gpu.py --dry-run --out /tmp/llm_gpu_dry.json             # here, on CPU
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# model shapes (Llama; vocabulary from a tokenizer trained on the spot); parameter counts are computed
SIZES = {
    "0.5B": dict(hidden=1024, layers=24, heads=16, intermediate=5120),
    "1.5B": dict(hidden=1536, layers=28, heads=12, intermediate=8960),
    "3B": dict(hidden=2560, layers=32, heads=20, intermediate=9728),
    "7B": dict(hidden=3584, layers=28, heads=28, intermediate=18944),
    "14B": dict(hidden=5120, layers=48, heads=40, intermediate=13824),
}
DRY_SIZES = {  # --dry-run: the same code paths at sizes a CPU runs in seconds
    "tiny-a": dict(hidden=64, layers=2, heads=2, intermediate=128),
    "tiny-b": dict(hidden=96, layers=2, heads=2, intermediate=192),
    "tiny-c": dict(hidden=128, layers=3, heads=2, intermediate=256),
}
PATHS = ("ppo", "grpo", "cotrain", "pool")
# the options that size a run: the GPU run's defaults, and --dry-run's fixed values (which refuse the options)
GPU_RUN = dict(sizes="0.5B,1.5B", fit_sizes="3B,7B,14B", updates=2, episodes=16, group_size=8, batch=32,
               max_new_tokens=48, vocab=4000, budget_s=420.0)
DRY_RUN = dict(sizes="tiny-a,tiny-b", fit_sizes="tiny-c", updates=1, episodes=4, group_size=2, batch=4,
               max_new_tokens=8, vocab=400, budget_s=float("inf"))  # every probe runs: every code path checked
BOUNDED = (("--updates", 1, 10, "updates per measured path"), ("--episodes", 2, 256, "episodes per update"),
           ("--group-size", 2, 64, "grpo, cotrain, pool: episodes per scenario"),
           ("--batch", 1, 512, "prompts in the rollout-speed batch"), ("--max-new-tokens", 1, 512, "per turn"),
           ("--vocab", 400, 32000, "the tokenizer trained on the spot"))


def _key(option: str) -> str:
    return option[2:].replace("-", "_")
DRY_RUN_NOTE = ("DRY RUN on CPU: the GPU run's code paths (random models from configs, the transformers engine, "
                "the four trainer paths, the fit probe) at tiny sizes in float32; no number here is a GPU "
                "measurement")


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def free() -> None:
    """Drop what the last measurement held (models, engines, optimizers) before the next one."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gb() -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def model_spec(root: Path, name: str, shape: dict, vocab: int, upper: bool = False) -> tuple[str, int]:
    """``random:DIR`` for a model of ``shape`` (its config and tokenizer saved under root/name), and its
    parameter count. ``upper``: the tokenizer trained on the upper-cased corpus (another vocabulary)."""
    from scope_envs.agents.llm.tiny import corpus, save_random_model_config

    d = root / (name + ("-user" if upper else ""))
    texts = [line.upper() for line in corpus()] if upper else None
    params = save_random_model_config(d, vocab_size=vocab, texts=texts, **shape)
    return "random:" + str(d), params


def prompts_from_env(tokenizer, n: int) -> list[list[int]]:
    """First-turn persuader prompts of p4g (text surface), through the chat template."""
    import scope_envs

    env = scope_envs.make("p4g-frozen", surface="text")
    out = []
    for i in range(n):
        _, infos = env.reset(seed=i)
        msgs = infos["agent_0"]["messages"] + [{"role": "user", "content": "Hi! Who are you raising money for?"}]
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        out.append(list(tokenizer(text, add_special_tokens=False)["input_ids"]))
    return out


def rollout_speed(spec: str, device: str, dtype: str, batch: int, max_new_tokens: int) -> dict:
    """Tokens per second of one batch through the transformers engine (after a warm-up batch)."""
    from scope_envs.agents.llm.backends import TransformersBackend
    from scope_envs.train.llm.ppo import load_model

    model, tokenizer, _ = load_model(spec, device, 0, dtype)
    backend = TransformersBackend(model.eval(), tokenizer)
    prompts = prompts_from_env(tokenizer, batch)
    backend.generate_ids(prompts[:2], max_new_tokens=4, seed=0)
    t0 = time.perf_counter()
    gens = backend.generate_ids(prompts, max_new_tokens=max_new_tokens, seed=1)
    _sync()
    seconds = time.perf_counter() - t0
    tokens = sum(len(g.token_ids) for g in gens)
    out = {"batch": batch, "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
           "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts), "peak_gb": peak_gb()}
    del backend, model
    free()
    return out


def vllm_speed(spec: str, root: Path, batch: int, max_new_tokens: int, fraction: float) -> dict | str:
    """vLLM's rollout tokens per second on the same model (its random weights saved for it), or why not."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "not measured: not installed"
    from scope_envs.agents.llm.backends import VLLMBackend
    from scope_envs.train.llm.ppo import load_model

    model, tokenizer, _ = load_model(spec, "cuda", 0, "bfloat16")
    d = root / "vllm-weights"
    model.save_pretrained(d)
    tokenizer.save_pretrained(d)
    del model
    free()
    engine = VLLMBackend(d, gpu_memory_utilization=fraction, dtype="bfloat16")
    prompts = prompts_from_env(engine.tokenizer, batch)
    engine.generate_ids(prompts[:2], max_new_tokens=4, seed=0)
    t0 = time.perf_counter()
    gens = engine.generate_ids(prompts, max_new_tokens=max_new_tokens, seed=1)
    seconds = time.perf_counter() - t0
    tokens = sum(len(g.token_ids) for g in gens)
    del engine
    free()
    return {"batch": batch, "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def path_config(name: str, spec: str, user_spec: str, device: str, dtype: str, updates: int, episodes: int,
                group_size: int, max_new_tokens: int, out: str):
    from scope_envs.train.llm import ppo

    common = dict(model=spec, device=device, dtype=dtype, engine="hf", updates=updates, max_new_tokens=max_new_tokens,
                  env_kwargs={"max_turns": 3}, log=False, save_final=False, out=out)
    g = group_size
    return ppo.Config(**common, **{
        "ppo": dict(env="p4g-frozen", groups=max(episodes // 2, 1), group_size=2),
        "grpo": dict(env="p4g-frozen", algo="grpo", groups=max(episodes // g, 1), group_size=g),
        "cotrain": dict(env="p4g-cotrain", mode="cotrain", algo="grpo", user_model=user_spec,
                        user_reward="adversarial", groups=max(episodes // g, 1), group_size=g),
        "pool": dict(env="p4g-population", mode="population", algo="grpo", lora=True, lora_r=16, pool_size=3,
                     snapshot_every=1, groups=max(episodes // g, 1), group_size=g),
    }[name])


def run_path(cfg) -> dict:
    """Train ``cfg`` and read its metrics: time per update, tokens per second by role, peak memory."""
    from scope_envs.train.llm import ppo

    free()
    t0 = time.perf_counter()
    history = ppo.train(cfg)["history"]
    wall = time.perf_counter() - t0
    learners = sorted({k.split("/", 1)[1] for h in history for k in h if k.startswith("tokens/")})
    roles = sorted({k.split("/", 1)[1] for h in history for k in h if k.startswith("tokens_per_s/")})
    out = {
        "episodes_per_update": cfg.groups * cfg.group_size, "updates": cfg.updates, "wall_s": wall,
        "time_update_s": [h["time_update"] for h in history], "time_rollout_s": [h["time_rollout"] for h in history],
        "generated_tokens_per_s": {r: [h.get(f"tokens_per_s/{r}") for h in history] for r in roles},
        "trained_tokens_per_s": {n: [h.get(f"tokens/{n}", 0) / max(h["time_update"], 1e-9) for h in history]
                                 for n in learners},
        "logprob_gap": {n: [h.get(f"logprob_gap/{n}") for h in history] for n in learners},
        "peak_gb": peak_gb(),
    }
    del history
    free()
    return out


def fits(cfg) -> tuple[bool, str]:
    """Whether one update of ``cfg`` runs without running out of GPU memory."""
    import torch

    try:
        run_path(cfg)
        return True, "fits"
    except torch.cuda.OutOfMemoryError as e:
        message = str(e).splitlines()[0][:200]
        del e
        free()
        return False, "out of memory: " + message


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"


def to_markdown(result: dict) -> str:
    lines = [f"# LLM path on one GPU: {result['device']}", ""]
    if result["dry_run"]:
        lines += [f"**{DRY_RUN_NOTE}.**", ""]
    vllm = result["vllm"] if isinstance(result["vllm"], str) else f"{result['vllm']['tokens_per_s']:.0f} tok/s"
    lines += [f"torch {result['torch']}, transformers {result['transformers']}; engine: transformers "
              f"({result['dtype']}); vLLM: {vllm}", "",
              "| model | params | rollout tok/s | path | s/update | generated tok/s by role | trained tok/s | peak GB |",
              "|---|---|---|---|---|---|---|---|"]
    for size, r in result["sizes"].items():
        for name, p in r["paths"].items():
            gen = ", ".join(f"{k} {v[-1]:.0f}" for k, v in p["generated_tokens_per_s"].items() if v and v[-1])
            trained = ", ".join(f"{k} {v[-1]:.0f}" for k, v in p["trained_tokens_per_s"].items() if v)
            peak = f"{p['peak_gb']:.1f}" if p["peak_gb"] is not None else "-"
            lines.append(f"| {size} | {_count(r['params'])} | {r['rollout']['tokens_per_s']:.0f} | {name} | "
                         f"{p['time_update_s'][-1]:.2f} | {gen} | {trained} | {peak} |")
    lines += ["", "| path | largest size that fit | probes |", "|---|---|---|"]
    for name, f in result["fit"].items():
        probes = "; ".join(f"{s}: {v}" for s, v in f["probes"].items())
        lines.append(f"| {name} | {f['largest'] or '-'} | {probes} |")
    lines += ["", f"wall time {result['wall_s']:.0f} s"]
    return "\n".join(lines) + "\n"


def main() -> None:
    from scope_envs.arguments import output_file, positive_float

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=output_file, default="benchmarks/results/llm_gpu.json",
                    help="the JSON (the Markdown goes beside it)")
    ap.add_argument("--sizes", default=None, help="models measured in full, from " + ",".join(SIZES)
                    + f" (default {GPU_RUN['sizes']})")
    ap.add_argument("--fit-sizes", default=None,
                    help=f"larger models probed, ascending, per path (default {GPU_RUN['fit_sizes']})")
    ap.add_argument("--paths", default=",".join(PATHS), help="trainer paths, comma-separated")
    for name, low, high, what in BOUNDED:
        ap.add_argument(name, type=int, default=None, help=f"{what} (default {GPU_RUN[_key(name)]}; {low} to {high})")
    ap.add_argument("--budget-s", type=positive_float, default=None,
                    help=f"no new fit probe starts after this much wall time (default {GPU_RUN['budget_s']:g})")
    ap.add_argument("--dry-run", action="store_true",
                    help="tiny sizes on CPU, the same code paths; its sizes and settings are fixed, so it refuses "
                         "the options above but --out and --paths")
    args = ap.parse_args()
    given = [f"--{k.replace('_', '-')}" for k in GPU_RUN if getattr(args, k) is not None]
    if args.dry_run and given:
        ap.error(f"argument {given[0]}: --dry-run uses fixed tiny sizes and settings, not this option")
    for key, value in (DRY_RUN if args.dry_run else GPU_RUN).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for name, low, high, _ in BOUNDED:
        value = getattr(args, _key(name))
        if not low <= value <= high:
            ap.error(f"argument {name}: must be in [{low}, {high}], got {value}")
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not paths:
        ap.error(f"argument --paths: no path given; known: {list(PATHS)}")
    if set(paths) - set(PATHS):
        ap.error(f"argument --paths: unknown {sorted(set(paths) - set(PATHS))}; known: {list(PATHS)}")
    table = DRY_SIZES if args.dry_run else SIZES
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    fit_sizes = [s.strip() for s in args.fit_sizes.split(",") if s.strip()]
    for name, listed in (("--sizes", sizes), ("--fit-sizes", fit_sizes)):
        if set(listed) - set(table):
            ap.error(f"argument {name}: unknown {sorted(set(listed) - set(table))}; known: {list(table)}")
    if not sizes:
        ap.error(f"argument --sizes: no size given; known: {list(SIZES)}")
    if [list(table).index(s) for s in fit_sizes] != sorted({list(table).index(s) for s in fit_sizes}):
        ap.error(f"argument --fit-sizes: not ascending and distinct (known, ascending: {list(table)})")

    import torch
    import transformers

    started = time.perf_counter()
    if args.dry_run:
        device, dtype = "cpu", "float32"
        print(DRY_RUN_NOTE, flush=True)
    else:
        if not torch.cuda.is_available():
            ap.error("no CUDA device: run with --dry-run to check the script on CPU")
        device, dtype = "cuda", "bfloat16"
    result = {"dry_run": args.dry_run, "measured_on_gpu": not args.dry_run,
              "device": torch.cuda.get_device_name(0) if device == "cuda" else (platform.processor() or "cpu"),
              "torch": torch.__version__, "transformers": transformers.__version__, "dtype": dtype,
              "settings": {k: v for k, v in vars(args).items() if k not in ("out",)}, "sizes": {}, "fit": {}}
    root = Path(tempfile.mkdtemp(prefix="scope-llm-gpu-"))
    for size in sizes:
        spec, params = model_spec(root, size, table[size], args.vocab)
        user_spec, _ = model_spec(root, size, table[size], args.vocab, upper=True)
        print(f"[{time.perf_counter() - started:5.0f}s] {size} ({_count(params)}): rollout", flush=True)
        entry = {"params": params, "rollout": rollout_speed(spec, device, dtype, args.batch, args.max_new_tokens),
                 "paths": {}}
        for name in paths:
            print(f"[{time.perf_counter() - started:5.0f}s] {size}: {name}", flush=True)
            cfg = path_config(name, spec, user_spec, device, dtype, args.updates, args.episodes, args.group_size,
                              args.max_new_tokens, str(root / f"run-{size}-{name}"))
            entry["paths"][name] = run_path(cfg)
        result["sizes"][size] = entry
    result["vllm"] = (vllm_speed(model_spec(root, sizes[0], table[sizes[0]], args.vocab)[0], root, args.batch,
                                 args.max_new_tokens, 0.3) if not args.dry_run else "not measured: dry run (CPU)")
    for name in paths:  # the largest size each path fits: one short update per size, ascending
        largest = next((s for s in reversed(sizes) if s in result["sizes"]), None)
        probes = {}
        for size in fit_sizes:
            if time.perf_counter() - started > args.budget_s:
                probes[size] = "not probed: time budget spent"
                continue
            spec, params = model_spec(root, size, table[size], args.vocab)
            user_spec, _ = model_spec(root, size, table[size], args.vocab, upper=True)
            print(f"[{time.perf_counter() - started:5.0f}s] fit {name} {size} ({_count(params)})", flush=True)
            cfg = path_config(name, spec, user_spec, device, dtype, 1, min(args.episodes, 8), min(args.group_size, 4),
                              min(args.max_new_tokens, 16), str(root / f"fit-{size}-{name}"))
            ok, why = fits(cfg)
            probes[size] = why
            if not ok:
                break
            largest = size
        result["fit"][name] = {"largest": largest, "probes": probes}
    result["wall_s"] = time.perf_counter() - started
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(result, indent=1))
    write_atomic(out.with_suffix(".md"), to_markdown(result))
    print(to_markdown(result), flush=True)
    if args.dry_run:
        print(DRY_RUN_NOTE, flush=True)


if __name__ == "__main__":
    main()
