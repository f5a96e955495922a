"""LLM stack on a GPU with no network: vLLM vs transformers rollouts, weight sync, one PPO update.

Builds a randomly initialised ~0.5B Llama with a locally trained byte-level BPE
tokenizer (no model is downloaded), then measures

* rollout tokens per second through vLLM (``VLLMBackend.generate_ids``) and through
  ``transformers.generate`` (``TransformersBackend.generate_ids``), same prompts, same batch;
* the time to push the trained weights into the vLLM engine (``load_weights``) and the
  gap between vLLM's sampling logprobs and the trainer's recomputed ones;
* through the trainer (``scope_envs.train.llm.ppo.train``, ``engine="vllm"``, text surface),
  for each path SCOPE trains with: ``ppo`` (agent vs the frozen p4g user), ``grpo``
  (groups of ``--group-size`` episodes), ``cotrain`` (GRPO, two separate models, one
  engine each) and ``pool`` (GRPO co-training with the user's LoRA snapshots in a
  pool): time per update, rollout tokens per second, trained tokens per second,
  weight-sync time (``time_sync``: pushing weights or adapters into the engines),
  peak GPU memory.

Writes a JSON (``--out``). Needs ``pip install -e '.[llm,vllm]'`` and one CUDA GPU.
``--dry-run``: tiny sizes on CPU, transformers only — checks the script itself.
``--paths``: which trainer paths to run (default: all four).

Status: ready to run, and not yet run on a GPU (no GPU was available where it was
written); only ``--dry-run`` has run. Its first GPU run is the first measurement
of every number above.

    python benchmarks/llm_gpu.py --out benchmarks/llm_gpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def prompts_from_env(tokenizer, n: int, seed: int = 0) -> list[list[int]]:
    """First-turn persuader prompts of p4g (text surface), through the chat template."""
    import scope_envs

    env = scope_envs.make("p4g-frozen", surface="text")
    out = []
    for i in range(n):
        _, infos = env.reset(seed=seed + i)
        msgs = infos["agent_0"]["messages"] + [{"role": "user", "content": "Hi! Who are you raising money for?"}]
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        out.append(list(tokenizer(text, add_special_tokens=False)["input_ids"]))
    return out


def timed_generation(backend, prompts, max_new_tokens, repeats=2):
    backend.generate_ids(prompts[:2], max_new_tokens=8, seed=0)  # warm-up
    best = None
    for r in range(repeats):
        t0 = time.perf_counter()
        gens = backend.generate_ids(prompts, max_new_tokens=max_new_tokens, temperature=1.0, seed=r)
        dt = time.perf_counter() - t0
        tokens = sum(len(g.token_ids) for g in gens)
        if best is None or tokens / dt > best["tokens_per_s"]:
            best = {"tokens": tokens, "seconds": dt, "tokens_per_s": tokens / dt}
    return best, gens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/llm_gpu.json")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--intermediate", type=int, default=4096)
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--ppo-updates", type=int, default=2, help="updates per trainer path")
    ap.add_argument("--group-size", type=int, default=8, help="grpo, cotrain and pool: episodes per scenario")
    ap.add_argument("--paths", default="ppo,grpo,cotrain,pool", help="trainer paths to measure, comma-separated")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes on CPU, transformers only")
    args = ap.parse_args()

    import torch
    from scope_envs.agents.llm.backends import TransformersBackend
    from scope_envs.agents.llm.tiny import build_tiny_model

    from scope_envs.train.llm import ppo

    if args.dry_run:
        args.hidden, args.layers, args.heads, args.intermediate, args.batch, args.max_new_tokens = 64, 2, 2, 128, 4, 8
        args.vocab, args.ppo_updates = 400, 1
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --dry-run to check the script on CPU")
    result = {"device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu",
              "torch": torch.__version__, "batch": args.batch, "max_new_tokens": args.max_new_tokens}

    path = tempfile.mkdtemp(prefix="scope-llm-gpu-")
    t0 = time.perf_counter()
    model, tok = build_tiny_model(path, hidden=args.hidden, layers=args.layers, heads=args.heads,
                                  intermediate=args.intermediate, vocab_size=args.vocab, max_positions=4096,
                                  dtype="bfloat16" if device == "cuda" else "float32")
    result["params"] = sum(p.numel() for p in model.parameters())
    result["vocab"] = len(tok)
    result["build_s"] = time.perf_counter() - t0
    prompts = prompts_from_env(tok, args.batch)
    result["prompt_tokens_mean"] = sum(map(len, prompts)) / len(prompts)

    # transformers.generate
    hf = TransformersBackend(model.to(device).eval(), tok)
    result["transformers"], _ = timed_generation(hf, prompts, args.max_new_tokens)
    del hf, model
    import gc

    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()

    # vLLM: throughput, weight sync, logprob agreement with the trainer
    if not args.dry_run:
        from scope_envs.agents.llm.backends import VLLMBackend
        from transformers import AutoModelForCausalLM

        t0 = time.perf_counter()
        engine = VLLMBackend(path, gpu_memory_utilization=args.gpu_memory_utilization, dtype="bfloat16")
        result["vllm_startup_s"] = time.perf_counter() - t0
        result["vllm"], gens = timed_generation(engine, prompts, args.max_new_tokens)
        result["speedup_vllm_over_transformers"] = result["vllm"]["tokens_per_s"] / result["transformers"]["tokens_per_s"]
        trained = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.bfloat16).to(device)
        with torch.no_grad():
            for p in trained.parameters():
                p.add_(torch.randn_like(p) * 1e-3)  # "an update"
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        engine.load_weights(trained)
        torch.cuda.synchronize()
        result["weight_sync_s"] = time.perf_counter() - t0
        gens = engine.generate_ids(prompts[:8], max_new_tokens=32, seed=1)
        gaps = []
        with torch.no_grad():
            for p, g in zip(prompts[:8], gens):
                ids = torch.tensor([p + g.token_ids], device=device)
                logp = torch.log_softmax(trained(ids).logits[0, len(p) - 1:-1].float(), -1)
                mine = logp.gather(-1, ids[0, len(p):].unsqueeze(-1)).squeeze(-1).cpu()
                gaps += (mine - torch.tensor(g.logprobs)).abs().tolist()
        result["logprob_gap_after_sync"] = {"mean": sum(gaps) / len(gaps), "max": max(gaps)}
        del engine, trained
        torch.cuda.empty_cache()

    # the trainer's paths (vLLM generation on GPU; transformers on CPU for --dry-run)
    common = {"model": path, "device": device, "engine": "hf" if args.dry_run else "vllm", "updates": args.ppo_updates,
                  "max_new_tokens": min(args.max_new_tokens, 64), "minibatch": 8, "log": False}
    episodes = max(args.batch // 2, 2)
    user_path = None
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = set(paths) - {"ppo", "grpo", "cotrain", "pool"}
    if unknown:
        raise SystemExit(f"--paths: unknown path(s) {sorted(unknown)}")
    if "cotrain" in paths:  # a second model with its own tokenizer (another vocabulary) for the user
        from scope_envs.agents.llm.tiny import corpus

        user_path = tempfile.mkdtemp(prefix="scope-llm-gpu-user-")
        build_tiny_model(user_path, hidden=args.hidden, layers=args.layers, heads=args.heads,
                         intermediate=args.intermediate, vocab_size=args.vocab, max_positions=4096,
                         dtype="bfloat16" if device == "cuda" else "float32",
                         texts=[line.upper() for line in corpus()])
    g = args.group_size
    configs = {
        "ppo": {"env": "p4g-frozen", "env_kwargs": {"max_turns": 3}, "groups": max(episodes // 2, 1), "group_size": 2},
        "grpo": {"env": "p4g-frozen", "env_kwargs": {"max_turns": 3}, "algo": "grpo", "groups": max(episodes // g, 1),
                     "group_size": g},
        "cotrain": {"env": "p4g-cotrain", "env_kwargs": {"max_turns": 3}, "mode": "cotrain", "algo": "grpo",
                        "user_model": user_path, "user_reward": "adversarial", "groups": max(episodes // g, 1),
                        "group_size": g},
        "pool": {"env": "p4g-population", "env_kwargs": {"max_turns": 3}, "mode": "population", "algo": "grpo", "lora": True,
                     "pool_size": 3, "snapshot_every": 1, "groups": max(episodes // g, 1), "group_size": g},
    }
    for name in paths:
        if device == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        cfg = ppo.Config(**common, **configs[name], out=tempfile.mkdtemp(prefix=f"scope-llm-gpu-{name}-"))
        t0 = time.perf_counter()
        history = ppo.train(cfg)["history"]
        learners = sorted({k.split("/", 1)[1] for h in history for k in h if k.startswith("tokens/")})
        trained = [sum(h.get(f"tokens/{n}", 0) for n in learners) for h in history]
        result[name] = {
            "episodes_per_update": cfg.groups * cfg.group_size,
            "wall_s": time.perf_counter() - t0,
            "time_update_s": [h["time_update"] for h in history],
            "time_rollout_s": [h["time_rollout"] for h in history],
            "time_sync_s": [h["time_sync"] for h in history],
            "rollout_tokens_per_s": [h["tokens_per_s"] for h in history],
            "trained_tokens_per_s": [t / max(h["time_update"], 1e-9) for t, h in zip(trained, history)],
            "logprob_gap": {n: [h.get(f"logprob_gap/{n}") for h in history] for n in learners},
            "kl": [h.get("kl") for h in history],
            "zero_std_group_frac": [h.get("zero_std_group_frac/agent") for h in history],
        }
        if name == "pool":
            result[name]["pool_entry"] = [h.get("pool_entry") for h in history]
        if device == "cuda":
            result[name]["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
    try:
        import vllm

        result["vllm_version"] = vllm.__version__
    except ImportError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
