"""Served against in-process, as ratios measured in one run (issue 31).

Starts ``scope-envs serve`` processes on 127.0.0.1 (free ports) and measures, beside the in-process
baseline named in each row:

* act steps/s through the server: one session (``RemoteParallelEnv``), 64 concurrent sessions (64 of
  OpenEnv's async clients on one event loop), the batched endpoint at N = 256 (``RemoteVecEnv``), against
  the in-process env and ``make_vec(N)``;
* text-surface episode latency, served against in-process (the same scripted messages, the same seeds);
* a training run: sb3-contrib's MaskablePPO on the remote vec env against the same run on the in-process
  vec env, same seeds: the learning curves (mean episode return per rollout) and final parameters compared.

Writes JSON (``--out``, atomically) and prints it.

    python benchmarks/serve_speed.py [--steps 3000] [--train-steps 16384] [--out benchmarks/results/serve_speed.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
from tqdm import tqdm

import scope_envs
from scope_envs.arguments import count, output_file
from scope_envs.files import write_json

from env_speed import masked, steps_per_second  # the env speed benchmark's loop and act choice, served or not

ID = "p4g-frozen"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "serve_speed.json")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, env_id: str, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "serve", env_id, "--port",
                                      str(self.port), "--max-sessions", "80", "--max-num-envs", "512", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/health", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server for {env_id} exited with {self.proc.returncode}")
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server for {env_id} did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def legal(mask, rng) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def vec_rate(vec, calls: int) -> float:
    rng = np.random.default_rng(0)
    obs, _ = vec.reset(seed=0)
    start = time.perf_counter()
    for _ in range(calls):
        masks = obs["agent_0"]["action_mask"].astype(bool)
        # a random legal act per slot, drawn at once: argmax of masked uniform noise
        acts = np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)
        obs, *_ = vec.step({"agent_0": acts})
    return calls * vec.num_envs / (time.perf_counter() - start)


async def concurrent_rate(url: str, sessions: int, steps_each: int) -> float:
    from openenv.core import GenericEnvClient

    async def one(i):
        rng = np.random.default_rng(i)
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            result = await env.reset(seed=i)
            for _ in range(steps_each):
                if result.done:
                    result = await env.reset()
                mask = result.observation["agents"]["agent_0"]["action_mask"]
                result = await env.step({"actions": {"agent_0": legal(mask, rng)}})

    # connect every client first, then time the stepping alone
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(sessions)))
    return sessions * steps_each / (time.perf_counter() - start)


MESSAGES = ("Hello! I'm reaching out on behalf of Save the Children.", "Every dollar helps a child in need.",
            "Would you consider donating part of your payment? [DONATE $0.50]", "Thank you so much, goodbye.")


def text_episode_seconds(env, episodes: int) -> float:
    start = time.perf_counter()
    for ep in range(episodes):
        env.reset(seed=ep)
        t = 0
        while env.agents:
            env.step({"agent_0": MESSAGES[min(t, len(MESSAGES) - 1)]})
            t += 1
    return (time.perf_counter() - start) / episodes


def train(venv_factory, total: int, seed: int):
    """MaskablePPO on the vec env; the mean episode return of each rollout and the final parameters."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)

    class Curve(BaseCallback):
        def __init__(self):
            super().__init__()
            self.curve, self.returns = [], []

        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(info["episode"]["r"])
            return True

        def _on_rollout_end(self):
            self.curve.append(float(np.mean(self.returns)) if self.returns else float("nan"))
            self.returns = []

    venv = VecMonitor(venv_factory())
    cb = Curve()
    start = time.perf_counter()
    model = MaskablePPO("MlpPolicy", venv, n_steps=128, batch_size=256, n_epochs=4, seed=seed, verbose=0)
    model.learn(total, callback=cb)
    seconds = time.perf_counter() - start
    params = torch.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy()
    venv.close()
    return cb.curve, params, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=count(1_000_000), default=3000,
                    help="act steps per single-session measure (default 3000, at most 1_000_000)")
    ap.add_argument("--sessions", type=count(256), default=64, help="concurrent sessions (default 64, at most 256)")
    ap.add_argument("--num-envs", type=count(4096), default=256,
                    help="slots of the batched env (default 256, at most 4096)")
    ap.add_argument("--text-episodes", type=count(10_000), default=30,
                    help="text-surface episodes (default 30, at most 10_000)")
    ap.add_argument("--train-steps", type=count(10_000_000, low=0), default=16384,
                    help="decisions of the training run (default 16384, 0 to 10_000_000; 0 skips it)")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON (default {OUT})")
    args = ap.parse_args(argv)
    from scope_envs.integrations.sb3 import SB3VecEnv
    from scope_envs.remote import RemoteParallelEnv, RemoteVecEnv

    out = {"id": ID, "machine": {"cpus": os.cpu_count(), "load_avg_1m_start": os.getloadavg()[0]},
           "command": "python benchmarks/serve_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    bar = tqdm(total=6, desc="serve_speed")
    act = Server(ID)
    try:
        local = steps_per_second(scope_envs.make(ID), args.steps, masked)
        remote = steps_per_second(RemoteParallelEnv(act.url), args.steps, masked)
        out["one_session"] = {"in_process_steps_per_s": local, "served_steps_per_s": remote, "ratio": remote / local}
        bar.update()
        conc = asyncio.run(concurrent_rate(act.url, args.sessions, max(args.steps // args.sessions, 20)))
        out["concurrent_sessions"] = {"sessions": args.sessions, "served_steps_per_s": conc,
                                      "in_process_steps_per_s": local, "ratio": conc / local}
        bar.update()
        n = args.num_envs
        calls = max(args.steps // 50, 20)
        lvec = vec_rate(scope_envs.make_vec(ID, num_envs=n), calls)
        rvec = RemoteVecEnv(act.url, num_envs=n)
        served_vec = vec_rate(rvec, calls)
        rvec.close()
        out["batched"] = {"num_envs": n, "in_process_vec_steps_per_s": lvec, "served_vec_steps_per_s": served_vec,
                          "ratio_to_vec": served_vec / lvec, "ratio_to_in_process_env": served_vec / local}
        bar.update()
        if args.train_steps:
            seed, nenv = 0, 8
            train(lambda: SB3VecEnv(scope_envs.make_vec(ID, num_envs=nenv)), 1024, seed)  # warm torch up first
            lc, lp, ls = train(lambda: SB3VecEnv(scope_envs.make_vec(ID, num_envs=nenv)), args.train_steps, seed)
            bar.update()
            rc, rp, rs = train(lambda: SB3VecEnv(RemoteVecEnv(act.url, num_envs=nenv)), args.train_steps, seed)
            out["training"] = {
                "trainer": "sb3-contrib MaskablePPO, MlpPolicy, n_steps=128, batch 256, 4 epochs, seed 0, 8 envs",
                "timesteps": args.train_steps, "in_process_curve": lc, "served_curve": rc,
                "first_rollout_return": {"in_process": lc[0], "served": rc[0]},
                "last_rollout_return": {"in_process": lc[-1], "served": rc[-1]},
                "same_curve": bool(np.allclose(lc, rc, equal_nan=True)),
                "max_abs_param_diff": float(np.abs(lp - rp).max()),
                "seconds": {"in_process": ls, "served": rs, "ratio": rs / ls}}
        bar.update()
    finally:
        act.stop()
    text = Server(ID, "--surface", "text")
    try:
        lt = text_episode_seconds(scope_envs.make(ID, surface="text"), args.text_episodes)
        rt = text_episode_seconds(RemoteParallelEnv(text.url), args.text_episodes)
        out["text_episode"] = {"in_process_s": lt, "served_s": rt, "ratio": rt / lt}
        bar.update()
    finally:
        text.stop()
    bar.close()
    out["machine"]["load_avg_1m_end"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, out, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
