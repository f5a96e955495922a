"""``scope-envs diagnose``: the command line (``add_parser``) and what it runs (``run``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from scope_envs.arguments import count, existing_dir, output_dir, seed
from scope_envs.diagnose.limits import LIMITS  # every count has an upper bound, and its --help says its range


def cards(text: str) -> int:
    """``--cards``: 0 (no persona probe) or 2 to the upper bound; 1 card has no spread to measure."""
    value = count(LIMITS["cards"][1], LIMITS["cards"][0])(text)
    if value == 1:
        raise argparse.ArgumentTypeError("the persona probe needs at least 2 cards, or 0 for none; got 1")
    return value


cards.maximum = LIMITS["cards"][1]


SECONDS_MAX = 600  # --connect-timeout and --timeout: seconds in (0, SECONDS_MAX]


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, {SECONDS_MAX}], got {text!r}") from None
    if not 0 < value <= SECONDS_MAX:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, {SECONDS_MAX}], got {value}")
    return value


seconds.maximum = SECONDS_MAX


def declaration_problem(game: str) -> str | None:
    """What a game's spec declares for the probes and cannot work, before any episode: a conceding act its user
    does not have (its rate would read 0), a probe agent without ``act(view, rng)``."""
    import inspect

    import scope_envs
    from scope_envs.games import build, game_spec

    spec = game_spec(game)
    env = scope_envs.make(f"{game}-frozen")
    g = env.unwrapped.game
    unknown = sorted(set(spec.concede) - set(g.acts(g.user_role)))
    if unknown:
        return (f"{game}'s GameSpec.concede names acts its user does not have: {', '.join(unknown)} (the user's "
                f"acts: {', '.join(g.acts(g.user_role))})")
    act = getattr(build(spec.probe_agent, game=g, env=env), "act", None)
    try:
        takes = callable(act) and inspect.signature(act).bind(None, None) is not None
    except (TypeError, ValueError):
        takes = False
    if not takes:
        return (f"{game}'s GameSpec.probe_agent ({spec.probe_agent}) has no act(view, rng): the probes call it "
                "with the agent's View and a numpy Generator, and take back an act index")
    return None


def add_parser(subparsers) -> argparse.ArgumentParser:
    from scope_envs.diagnose.specs import GAMES

    d = subparsers.add_parser("diagnose", help="how collapsed is a simulator? sharpening, mode coverage, persona "
                                               "sensitivity, cooperation bias (JSON + Markdown + PNG)")
    d.add_argument("--game", choices=GAMES, required=True, help="the game the simulator plays the user of")
    d.add_argument("--simulator", default=None,
                   help="a built-in name (--list), path/file.py:ClassName, openai:BASE_URL#MODEL or hf:DIR")
    d.add_argument("--list", action="store_true",
                   help="print the game's built-in simulator names and the ranges the parametrised ones "
                        "take, and exit")
    d.add_argument("--out", type=output_dir, default="runs/diagnose",
                   help="diagnose.json, diagnose.md and diagnose.png go here (default: ./runs/diagnose)")
    d.add_argument("--data", type=existing_dir, default=None,
                   help="p4g: the folder of the real P4G csv files (e.g. ../shared/data/p4g) for the real-people numbers")
    d.add_argument("--sampled", action="store_true",
                   help="fit from sampled answers even when the simulator states its distribution")
    defaults = {"probe_episodes": 40, "samples": 4, "cards": 6, "persona_states": 40, "episodes": 400,
                "bootstrap": 300, "max_new_tokens": 64}
    helps = {"probe_episodes": "reference-driven probe episodes", "samples": "answers drawn per probe state",
             "cards": "train cards of the persona probe (0: none)", "persona_states": "states of the persona probe",
             "episodes": "episodes the simulator plays itself (and the reference, twice)",
             "bootstrap": "bootstrap replicates (0: no CIs)",
             "real_dialogues": "p4g --data: the first N real dialogues",
             "max_new_tokens": "an LLM's reply budget in tokens"}
    for name, (low, high) in LIMITS.items():
        accepted = f"0, or 2 to {high:_}" if name == "cards" else f"{low} to {high:_}"  # 1 card has no spread
        d.add_argument("--" + name.replace("_", "-"), type=cards if name == "cards" else count(high, low),
                       default=defaults.get(name),
                       help=f"{helps[name]} (default {defaults.get(name, 'all')}; {accepted})")
    d.add_argument("--seed", type=seed, default=0, help="seed of everything (default 0; 0 to 2**32-1)")
    d.add_argument("--connect-timeout", type=seconds, default=5.0,
                   help=f"seconds to wait for an endpoint (default 5; more than 0, at most {SECONDS_MAX})")
    d.add_argument("--timeout", type=seconds, default=60.0,
                   help=f"seconds per LLM request (default 60; more than 0, at most {SECONDS_MAX})")
    d.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    d.set_defaults(func=run, parser=d)
    return d


def run(args) -> None:
    from scope_envs.diagnose import report
    from scope_envs.diagnose.diagnosis import DataError, DiagnoseError, with_real_dialogues, diagnose
    from scope_envs.games import game_spec, load
    from scope_envs.diagnose.specs import SpecError, names, ranges
    from scope_envs.files import OutputError, check_output_dir

    parser = args.parser
    if args.list:
        if args.simulator:
            parser.error("argument --simulator: not used with --list (which prints every built-in name)")
        print("\n".join(names(args.game)))
        # the parametrised names take more values than the examples above: say which
        print("\nparametrised (any value in range):")
        for spec, accepted in ranges(args.game):
            print(f"  {spec:<14} {accepted}")
        return
    if not args.simulator:
        parser.error("argument --simulator: required (or --list to see the built-in names)")
    if not args.simulator.startswith(("openai:", "hf:")):  # options only an LLM simulator reads: never ignored
        for name in ("max_new_tokens", "timeout", "connect_timeout"):
            if getattr(args, name) != parser.get_default(name):
                parser.error(f"argument --{name.replace('_', '-')}: only for an LLM simulator (openai:BASE_URL#MODEL "
                             f"or hf:DIR), not {args.simulator!r}")
    for off, other in (("cards", "persona_states"), ("persona_states", "cards")):  # either 0: no persona probe
        if getattr(args, off) == 0 and getattr(args, other) not in (0, parser.get_default(other)):
            parser.error(f"argument --{other.replace('_', '-')}: not used with --{off.replace('_', '-')} 0 (no "
                         "persona probe); leave it out, or give both above 0 for a persona probe")
    if not game_spec(args.game).probe_agent:  # a game outside the package may leave it unset (docs/adding-a-game.md)
        parser.error(f"argument --game: {args.game} declares no probe agent (GameSpec.probe_agent: the fixed agent "
                     "the probes play against the simulator), so it cannot be diagnosed")
    problem = declaration_problem(args.game)
    if problem:
        parser.error(f"argument --game: {problem}")
    if args.data is not None:
        check_data = game_spec(args.game).real_dialogues
        if check_data is None:
            parser.error(f"argument --data: only {with_real_dialogues()} real dialogues, not {args.game!r}")
        try:
            load(check_data)(Path(args.data))
        except FileNotFoundError as e:
            parser.error(f"argument --data: {e}")
    elif args.real_dialogues is not None:
        parser.error("argument --real-dialogues: only used with --data")
    try:
        check_output_dir(args.out)
    except OutputError as e:
        parser.error(f"argument --out: {e}")
    try:
        result = diagnose(args.game, args.simulator, probe_episodes=args.probe_episodes, samples=args.samples,
                          cards=args.cards, persona_states=args.persona_states, episodes=args.episodes,
                          bootstrap=args.bootstrap, seed=args.seed, data=args.data,
                          real_dialogues=args.real_dialogues, sampled=args.sampled, progress=not args.no_progress,
                          llm_options={"max_new_tokens": args.max_new_tokens, "timeout": args.timeout,
                                       "connect_timeout": args.connect_timeout})
    except SpecError as e:
        parser.error(f"argument --simulator: {e}")
    except DataError as e:  # truncated or malformed csv files: the check of ``scope-envs validate p4g --data``
        parser.error(f"argument --data: {e}")
    except DiagnoseError as e:
        print(f"scope-envs diagnose: error: {e}", file=sys.stderr)
        sys.exit(1)
    command = "scope-envs diagnose " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["diagnose"] \
        else None
    try:
        files = report.write(result, args.out, command)
    except OSError as e:
        print(f"scope-envs diagnose: error: {e}", file=sys.stderr)
        sys.exit(1)
    for row in report.rows(report.clean(result)):
        print(f"{row[0]:<45} {row[1]}")
    print("wrote " + ", ".join(str(f) for f in files))
