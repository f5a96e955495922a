"""The ``scope-envs`` command line: list, validate, demo."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import scope_envs
from scope_envs.registry import REGIME_AGENTS


def cmd_list(args) -> None:
    width = max(map(len, scope_envs.registry))
    for id_, spec in sorted(scope_envs.registry.items()):
        print(f"{id_:<{width}}  regime={spec.regime:<10}  agents: {REGIME_AGENTS[spec.regime]}  ({spec.pettingzoo_id})")


def cmd_validate(args) -> None:
    if args.game != "p4g":
        raise SystemExit(f"validate: only 'p4g' can be validated, got {args.game!r}")
    from scope_envs.games.p4g.validate import validate

    print(json.dumps(validate(args.data, episodes=args.episodes, seed=args.seed), indent=1))


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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="scope-envs", description=scope_envs.__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every environment id with its regime and live agents").set_defaults(func=cmd_list)
    v = sub.add_parser("validate", help="real versus simulated statistics of a game (JSON)")
    v.add_argument("game")
    v.add_argument("--data", default=None, help="directory of the real data; default: the shipped fitted numbers")
    v.add_argument("--episodes", type=int, default=2000)
    v.add_argument("--seed", type=int, default=0)
    v.set_defaults(func=cmd_validate)
    d = sub.add_parser("demo", help="a scripted persuader against p4g-frozen and p4g-heldout")
    d.add_argument("--episodes", type=int, default=200)
    d.add_argument("--seed", type=int, default=0)
    d.set_defaults(func=cmd_demo)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
