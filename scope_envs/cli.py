"""The ``scope-envs`` command line: list, validate, demo, bench, train-llm.

Every argument is checked by argparse: a bad value exits 2 with the argument
named, before anything slow starts.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import scope_envs
from scope_envs.arguments import (env_id, existing_dir, json_object, model_source, nonnegative_float,
                                  nonnegative_int, positive_float, positive_int)
from scope_envs.registry import REGIME_AGENTS


def cmd_list(args) -> None:
    width = max(map(len, scope_envs.registry))
    for id_, spec in sorted(scope_envs.registry.items()):
        print(f"{id_:<{width}}  regime={spec.regime:<10}  agents: {REGIME_AGENTS[spec.regime]}  ({spec.pettingzoo_id})")


def cmd_validate(args) -> None:
    try:
        if args.game == "tau2":
            from scope_envs.validate.tau2 import validate as validate_tau2

            # tau2 is validated by replaying every task's gold actions: no episodes, no randomness
            for option in ("episodes", "seed"):
                if getattr(args, option) is not None:
                    args.parser.error(f"argument --{option}: not used by 'validate tau2' (it replays each task's "
                                      "gold actions once)")
            report = validate_tau2(args.data)
        else:
            from scope_envs.validate.p4g import validate

            report = validate(args.data, episodes=2000 if args.episodes is None else args.episodes,
                              seed=0 if args.seed is None else args.seed)
    except (FileNotFoundError, ValueError) as e:
        args.parser.error(f"argument --data: {e}")
    print(json.dumps(report, indent=1))


def cmd_demo(args) -> None:
    """A scripted persuader against the frozen simulator and against held-out human proxies."""
    from scope_envs.agents.p4g import ScriptedPersuader

    persuader = ScriptedPersuader()
    for id_ in ("p4g-frozen", "p4g-heldout"):
        env = scope_envs.make(id_)
        rng = np.random.default_rng(args.seed)
        gifts = []
        for ep in range(args.episodes):
            env.reset(seed=args.seed + ep)
            while env.agents:
                _, rew, _, _, _ = env.step({"agent_0": persuader.act(env.unwrapped.view("persuader"), rng)})
            gifts.append(rew["agent_0"])
        print(f"{id_:<12} scripted persuader: mean donation ${np.mean(gifts):.3f} over {len(gifts)} episodes")


def cmd_bench(args) -> None:
    from scope_envs import bench

    bench.main(args)


def cmd_train_llm(args) -> None:
    """LLM-PPO on multi-turn text episodes (scope_envs.train.llm.ppo)."""
    if args.env != "llm-toy":  # the env and its options are checked before any model loads
        kwargs = dict(args.env_kwargs, **({"members": args.members} if args.mode == "population" else {}))
        try:
            scope_envs.make(args.env, surface="text", **kwargs).close()
        except (TypeError, ValueError) as e:
            args.parser.error(f"argument --env-kwargs: {args.env} does not take {json.dumps(args.env_kwargs)}: {e}")
    from scope_envs.train.llm import ppo

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from scope_envs.agents.llm.backends import BackendError

    fields = {f for f in ppo.Config.__dataclass_fields__}
    cfg = ppo.Config(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    try:
        ppo.train(cfg)
    except BackendError as e:  # a missing extra, engine or device: the user's setup, not a bug
        sys.exit(f"scope-envs train-llm: error: {e}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="scope-envs", description=scope_envs.__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every environment id with its regime and live agents").set_defaults(func=cmd_list)
    v = sub.add_parser("validate", help="real versus simulated statistics of a game (JSON)")
    v.add_argument("game", choices=["p4g", "tau2"])
    v.add_argument("--data", type=existing_dir, default=None,
                   help="directory of the real data; default: the shipped fitted numbers")
    v.add_argument("--episodes", type=positive_int, default=None, help="p4g: simulated episodes (2000)")
    v.add_argument("--seed", type=nonnegative_int, default=None, help="p4g: seed of the simulation (0)")
    v.set_defaults(func=cmd_validate, parser=v)
    d = sub.add_parser("demo", help="a scripted persuader against p4g-frozen and p4g-heldout")
    d.add_argument("--episodes", type=positive_int, default=200)
    d.add_argument("--seed", type=nonnegative_int, default=0)
    d.set_defaults(func=cmd_demo)
    from scope_envs.bench import add_arguments as bench_arguments

    b = sub.add_parser("bench", help="the simulator-collapse benchmark: train per method, evaluate vs held-out users")
    bench_arguments(b)
    b.set_defaults(func=cmd_bench, parser=b)
    t = sub.add_parser("train-llm", help="LLM-PPO: train LLM agents/users on text episodes (needs scope-envs[llm])")
    t.add_argument("--env", type=env_id, default="p4g-frozen", help="an env id (text surface is used) or llm-toy")
    t.add_argument("--env-kwargs", type=json_object, default={},
                   help='JSON options for the env, e.g. \'{"max_turns": 4}\'')
    t.add_argument("--mode", choices=["agent", "cotrain", "population"], default="agent")
    t.add_argument("--model", type=model_source, default="tiny", help="a local model directory, or 'tiny' (random tiny Llama; no download)")
    t.add_argument("--user-model", type=model_source, default=None, help="agent mode: a frozen LLM user; cotrain: the user's model")
    t.add_argument("--shared", action="store_true", help="cotrain: one model plays both roles")
    t.add_argument("--members", type=positive_int, default=2, help="population: K user adapters")
    t.add_argument("--lora", action="store_true")
    t.add_argument("--lora-r", type=positive_int, default=8)
    t.add_argument("--engine", choices=["hf", "vllm"], default="hf")
    t.add_argument("--device", default="cpu")
    t.add_argument("--updates", type=positive_int, default=10)
    t.add_argument("--groups", type=positive_int, default=4, help="scenario seeds per update")
    t.add_argument("--group-size", type=positive_int, default=2, help="episodes per seed")
    t.add_argument("--max-new-tokens", type=positive_int, default=32)
    t.add_argument("--temperature", type=positive_float, default=1.0)
    t.add_argument("--lr", type=positive_float, default=1e-4)
    t.add_argument("--ppo-epochs", type=positive_int, default=2)
    t.add_argument("--minibatch", type=positive_int, default=4)
    t.add_argument("--kl-coef", type=nonnegative_float, default=0.05)
    t.add_argument("--kl-estimator", choices=["k1", "k3"], default="k1")
    t.add_argument("--kl-target", type=positive_float, default=None, help="set for an adaptive KL coefficient")
    t.add_argument("--seed", type=nonnegative_int, default=0)
    t.add_argument("--out", default="runs/llm", help="metrics.jsonl and checkpoints/ go here")
    t.add_argument("--save-every", type=nonnegative_int, default=0)
    t.add_argument("--threads", type=nonnegative_int, default=0, help="torch CPU threads (0: torch's default)")
    t.set_defaults(func=cmd_train_llm, parser=t)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
