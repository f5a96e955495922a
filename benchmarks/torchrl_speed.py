"""TorchRL frames per second on the batched engine: ``TorchRLVecEnv`` against ``PettingZooWrapper`` envs in a
``SerialEnv``, the way TorchRL (and BenchMARL, for a task whose env is not batched) steps N scalar envs.

Both are rolled out in the same process, alternating rounds, with one policy: a uniform draw over each agent's
legal acts (the ``action_mask`` the env hands out), so neither env's speed depends on a network. A frame is one
env step of one slot, BenchMARL's count. Per id: each path's median frames/s and ``speedup`` (batched over
serial).

``--benchmarl`` also times BenchMARL's MAPPO (its default configuration but ``--frames`` frames an iteration over
``--envs`` envs, no logger, no evaluation) for ``--iterations`` iterations on each id, once on the task's
``TorchRLVecEnv`` and once on the same task built over ``SerialEnv`` + ``PettingZooWrapper``, and reports the
frames per second of the whole run, training included. It needs BenchMARL (``bash .ci/benchmarl.sh install``,
then this script with ``.venv-benchmarl/bin/python``).

    python benchmarks/torchrl_speed.py                       # p4g-cotrain, cooperbench-cotrain, tau2-cotrain
    .venv-benchmarl/bin/python benchmarks/torchrl_speed.py --ids p4g-frozen --benchmarl --out /tmp/t.json
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import scope_envs
from scope_envs.arguments import count, output_file, registered_id
from scope_envs.files import write_json
from scope_envs.integrations.torchrl_env import TorchRLVecEnv

OUT = Path(__file__).resolve().parent / "results" / "torchrl_speed.json"
IDS = ["p4g-cotrain", "cooperbench-cotrain", "tau2-cotrain"]


def wrapped(env_id: str, kwargs: dict | None = None, seed: int | None = None, device=None):
    """One scalar env of ``env_id`` through TorchRL's PettingZoo wrapper, as BenchMARL wraps a PettingZoo task."""
    from torchrl.envs import PettingZooWrapper

    with warnings.catch_warnings():  # TorchRL's notice that it tests PettingZoo at one version
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        return PettingZooWrapper(scope_envs.make(env_id, **(kwargs or {})), use_mask=True, categorical_actions=True,
                                 seed=seed, device=device)


try:  # BenchMARL pickles its task into the run folder: the baseline's class is found at module level
    from scope_envs.integrations.benchmarl import ScopeEnvsClass, task_name
except ImportError:  # the main virtualenv: no --benchmarl
    ScopeEnvsClass = None
else:
    class SerialTask(ScopeEnvsClass):
        """The task as BenchMARL runs a PettingZoo env: one scalar env, which it repeats in a ``SerialEnv``."""

        def get_env_fun(self, num_envs, continuous_actions, seed, device):
            env_id, kwargs = self.env_id, self.config
            return lambda: wrapped(env_id, kwargs, seed, device)


def serial_env(env_id: str, num_envs: int, seed: int):
    """N scalar envs of ``env_id`` through TorchRL's PettingZoo wrapper in a ``SerialEnv``: the baseline."""
    from torchrl.envs import SerialEnv

    env = SerialEnv(num_envs, lambda: wrapped(env_id))
    env.set_seed(seed)
    return env


def legal_uniform(groups, generator: torch.Generator):
    """A policy: each agent's act drawn uniformly among its legal ones."""
    def policy(td):
        for g in groups:
            mask = td.get((g, "action_mask"))
            flat = mask.reshape(-1, mask.shape[-1]).float()
            td.set((g, "action"), torch.multinomial(flat, 1, generator=generator).reshape(mask.shape[:-1]))
        return td
    return policy


def frames_per_second(env, frames: int, seed: int) -> float:
    env.set_seed(seed)
    policy = legal_uniform(list(env.full_action_spec.keys()), torch.Generator().manual_seed(seed))
    steps = max(1, frames // env.batch_size.numel())
    start = time.perf_counter()
    env.rollout(steps, policy, break_when_any_done=False)
    return steps * env.batch_size.numel() / (time.perf_counter() - start)


def benchmarl_fps(env_id: str, envs: int, frames: int, iterations: int, batched: bool, out_dir: str) -> float:
    """Frames per second of a BenchMARL MAPPO run on ``env_id``'s task, its env batched or a ``SerialEnv``."""
    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    task = (ScopeEnvsClass if batched else SerialTask)(task_name(env_id), {})
    config = ExperimentConfig.get_from_yaml()
    config.max_n_iters, config.max_n_frames = iterations, None
    config.on_policy_collected_frames_per_batch, config.on_policy_n_envs_per_worker = frames, envs
    config.loggers, config.evaluation, config.create_json, config.checkpoint_at_end = [], False, False, False
    config.save_folder = out_dir
    experiment = Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(),
                            model_config=MlpConfig.get_from_yaml(), critic_model_config=MlpConfig.get_from_yaml(),
                            seed=0, config=config)
    start = time.perf_counter()
    experiment.run()
    return experiment.total_frames / (time.perf_counter() - start)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", nargs="+", type=registered_id, default=IDS,
                    help=f"ids of the act surface (default: {' '.join(IDS)})")
    ap.add_argument("--envs", type=count(4096), default=64, help="envs stepped together (at most 4096; default 64)")
    ap.add_argument("--frames", type=count(10_000_000), default=20_000,
                    help="frames a round (an env step of one slot is a frame; at most 10,000,000; default 20,000)")
    ap.add_argument("--rounds", type=count(20), default=3, help="rounds, the two paths alternating (at most 20)")
    ap.add_argument("--benchmarl", action="store_true", help="also time BenchMARL's MAPPO on each path")
    ap.add_argument("--iterations", type=count(100), default=4,
                    help="MAPPO iterations of --frames frames with --benchmarl (at most 100; default 4)")
    ap.add_argument("--out", type=output_file, default=OUT, help=f"the JSON written (default {OUT})")
    args = ap.parse_args(argv)
    if args.iterations != ap.get_default("iterations") and not args.benchmarl:
        ap.error("argument --iterations: only with --benchmarl (the iterations of BenchMARL's MAPPO)")
    if args.benchmarl and ScopeEnvsClass is None:
        ap.error("argument --benchmarl: BenchMARL is not installed here (bash .ci/benchmarl.sh install, then run "
                 "this script with .venv-benchmarl/bin/python)")
    torch.set_num_threads(1)
    results = {}
    for env_id in tqdm(args.ids, desc="ids"):
        batched, serial = TorchRLVecEnv(env_id, args.envs), serial_env(env_id, args.envs, 0)
        fps = {"batched": [], "serial": []}
        for r in range(args.rounds):
            fps["batched"].append(frames_per_second(batched, args.frames, r))
            fps["serial"].append(frames_per_second(serial, args.frames, r))
        batched.close()
        serial.close()
        row = {path: round(float(np.median(v)), 1) for path, v in fps.items()}
        row["speedup"] = round(row["batched"] / row["serial"], 2)
        if args.benchmarl:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                mappo = {path: benchmarl_fps(env_id, args.envs, args.frames, args.iterations, path == "batched", tmp)
                         for path in ("batched", "serial")}
            row["benchmarl_mappo"] = {**{k: round(v, 1) for k, v in mappo.items()},
                                      "speedup": round(mappo["batched"] / mappo["serial"], 2)}
        results[env_id] = row
        tqdm.write(f"{env_id}: {row}")
    from scope_envs.bench.runner import machine

    write_json(args.out, {"envs": args.envs, "frames": args.frames, "rounds": args.rounds, "machine": machine(),
                          "torchrl": __import__("torchrl").__version__, "results": results})
    print(args.out)


if __name__ == "__main__":
    main()
