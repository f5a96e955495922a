"""``scope-envs train``: the bundled act-level PPO / GRPO (``scope_envs.train.act_ppo``) on one environment id,
from the command line, saved as the folder that ``scope-envs score --policy`` and ``PPOTrainer.load`` read.

    scope-envs train --env p4g-vs --steps 20000 --out runs/p4g-vs
    scope-envs score --policy runs/p4g-vs --game p4g

``OUT`` receives ``config.json`` and ``model.pt`` (``PPOTrainer.save``: every learnable seat's network, so a
``-cotrain`` run's user is scored with ``--seat user_0``) and ``metrics.jsonl``, one line per iteration (the
trainer's log row: decisions so far, mean return, entropies, losses), appended as each ends. A run stopped
with Ctrl-C saves what it has trained so far. The held-out regime is refused: it is the population every
policy is evaluated against (the benchmark's ceiling, ``oracle``, trains on its *train* personas).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from scope_envs.arguments import (GROUP_SIZE, MAX_DECISIONS, count, env_id, held_out_refusal, json_object,
                                  learning_rate, nonnegative_float, output_dir, resolve_group_size, seed)
from scope_envs.core.rewards import TRAINED_USER_REWARDS, UnknownUserReward, trained_reward_refusal
from scope_envs.files import benchmark_run_refusal

# a ValueError of PPOConfig / PPOTrainer names a field; the command line names its flag (the first that matches)
FLAGS = (("user_reward", "--user-reward"), ("episodes_per_iter", "--episodes-per-iter"), ("group_size", "--group-size"),
         ("advantage", "--advantage"), ("selfplay", "--env"), ("curriculum", "--group-size"))


def add_arguments(t: argparse.ArgumentParser) -> None:
    t.add_argument("--env", type=env_id, required=True,
                   help="an env id to train agent_0 against, e.g. p4g-vs, tau2-rotation, cooperbench-cotrain "
                        "(scope-envs list); a learnable user seat (-cotrain, -population) trains beside it")
    t.add_argument("--env-kwargs", type=json_object, default={}, help='JSON options for the env, e.g. \'{"k": 5}\'')
    t.add_argument("--steps", type=count(MAX_DECISIONS), default=20_000,
                   help=f"the budget in agent_0 decisions (20000; at most {MAX_DECISIONS:_}), trained in whole "
                        "iterations (--episodes-per-iter episodes each): the last one may cross it")
    t.add_argument("--seed", type=seed, default=0, help="0 to 2**32-1")
    t.add_argument("--advantage", choices=["gae", "grpo"], default="gae",
                   help="gae: a value baseline (PPO); grpo: each episode's return minus its group's mean (SCOPE's)")
    t.add_argument("--group-size", type=count(1024), default=None,
                   help=f"episodes per scenario (1; {GROUP_SIZE}, SCOPE's, with --advantage grpo or --user-reward "
                        "curriculum, which need at least 2; at most 1024)")
    t.add_argument("--user-reward", choices=TRAINED_USER_REWARDS, default=None,
                   help="a learnable user's reward (-cotrain, -population ids; default: the game's)")
    t.add_argument("--episodes-per-iter", type=count(65_536), default=64,
                   help="whole episodes per PPO iteration (64; a multiple of --group-size; at most 65_536)")
    t.add_argument("--num-envs", type=count(4096), default=64,
                   help="episodes stepped together, one batched forward pass a step (64; at most 4096)")
    t.add_argument("--lr", type=learning_rate, default=1e-3, help="learning rate, in (0, 1], annealed to 0 (1e-3)")
    t.add_argument("--ent-coef", type=nonnegative_float, default=0.01, help="agent_0's entropy bonus (0.01)")
    t.add_argument("--hidden", type=count(4096), default=64, help="the networks' hidden width (64; at most 4096)")
    t.add_argument("--out", type=output_dir, default="runs/act",
                   help="config.json, model.pt and metrics.jsonl go here (default: ./runs/act)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")


def config(args):
    """The run's ``PPOConfig`` from the arguments; the user reward rides with the env's options."""
    from scope_envs.train.act_ppo import PPOConfig

    env_kwargs = dict(args.env_kwargs)
    if args.user_reward is not None:
        env_kwargs["user_reward"] = args.user_reward
    return PPOConfig(env_id=args.env, env_kwargs=env_kwargs, seed=args.seed, total_steps=args.steps,
                     num_envs=args.num_envs, episodes_per_iter=args.episodes_per_iter, learning_rate=args.lr,
                     ent_coef=args.ent_coef, hidden=args.hidden, advantage=args.advantage,
                     group_size=resolve_group_size(args.group_size, args.advantage, args.user_reward))


def _flag(message: str, cfg) -> str:
    default = "--user-reward" if "user_reward" in cfg.env_kwargs and "user_reward" in message else "--env-kwargs"
    return next((flag for key, flag in FLAGS if key in message), default)


def build(args, parser: argparse.ArgumentParser):
    """The trainer, or argparse's one-line error (exit 2) for options the env or the trainer refuses."""
    import scope_envs
    from scope_envs.train.act_ppo import PPOTrainer

    if why := held_out_refusal(args.env):
        parser.error(f"argument --env: {why}")
    if why := benchmark_run_refusal(args.out):
        parser.error(f"argument --out: {why}")
    cfg = config(args)
    try:
        return PPOTrainer(cfg)
    except UnknownUserReward as e:
        if args.user_reward is None:  # given in --env-kwargs, which takes every reward the game pays
            parser.error(f"argument --env-kwargs: {args.env}: {e}")
        parser.error(f"argument --user-reward: {trained_reward_refusal(args.env, e)}")
    except (TypeError, ValueError) as e:
        flag = _flag(str(e), cfg)
        parser.error(f"argument {flag}: {args.env} with {json.dumps(cfg.env_kwargs)}: {e}" if flag == "--env-kwargs"
                     else f"argument {flag}: {e}")


def train(args) -> None:
    """``scope-envs train``: train, a metrics line after each iteration, and save (on Ctrl-C too)."""
    from tqdm import tqdm

    import scope_envs
    from scope_envs.files import jsonable

    trainer = build(args, args.parser)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, t0 = [], time.perf_counter()
    bar = tqdm(total=args.steps, desc=f"train {args.env}", unit="decision", disable=args.no_progress,
               file=sys.stderr)
    # a line a write: a run of a million iterations must not rewrite its whole log after each, and one write()
    # of a line is there whole or not at all when the process is killed
    metrics = os.open(out / "metrics.jsonl", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)

    # Ctrl-C stops the run after the iteration under way, whose update is then whole: a KeyboardInterrupt raised
    # anywhere in it could leave a network half-updated, and the saved policy with it. A second Ctrl-C stops at once.
    stop = []

    def on_interrupt(signum, frame):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stop.append(signum)

    previous = signal.signal(signal.SIGINT, on_interrupt)

    def logged(row):
        rows.append(row)
        os.write(metrics, (json.dumps(jsonable(row)) + "\n").encode())
        bar.update(min(row["agent_steps"], args.steps) - bar.n)
        bar.set_postfix(ret=f"{row['return']:.3f}")
        if stop:
            raise KeyboardInterrupt

    try:
        trainer.train(callback=logged)
    except KeyboardInterrupt:
        bar.close()
        trainer.save(out)
        print(f"interrupted after {trainer.agent_steps} of {args.steps} decisions: the policy so far is saved in "
              f"{out}", file=sys.stderr)
        sys.exit(130)
    finally:
        os.close(metrics)
        signal.signal(signal.SIGINT, previous)
    bar.close()
    trainer.save(out)
    game = scope_envs.registry[args.env].game
    final = rows[-1]["return"] if rows else float("nan")
    print(f"trained {args.env} for {trainer.agent_steps} decisions in {time.perf_counter() - t0:.0f} s "
          f"(last iteration's mean return {final:.3f}); saved in {out}\n"
          f"score it: scope-envs score --policy {shlex.quote(str(out))} --game {game}")

