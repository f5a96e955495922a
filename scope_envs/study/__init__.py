"""``scope-envs study``: people play the user in a browser; the study is analysed as the SCOPE paper reports it.

Needs the ``study`` extra (``pip install scope-envs[study]``: FastAPI, uvicorn, SQLAlchemy, Jinja2).

``scope-envs study serve --config study.yaml`` (or ``--demo``) starts the web server on 127.0.0.1.
A person arrives from Prolific (``/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``), gives consent, reads
their role card (Persuasion for Good: a persuadee holding a $2 bonus), chats with the agent of the
condition they were assigned (blocked randomisation, one session per participant id), states their
donation and answers 1-7 items (naturalness, satisfaction, would talk again), and gets the completion
code. The conditions are act-level policies (``scope_envs.train.act_ppo``) speaking through the game's
text realizer: the chat is a ``<game>-cotrain`` episode on the text surface with the person as
``user_0``. Every message is committed to the database before its reply is generated; a restarted
server rebuilds each episode from the database and the person continues. ``/admin?token=..`` shows
progress per condition and exports ``sessions.csv`` and ``transcripts.jsonl`` (``RecordTranscripts``'
format). ``--demo`` writes a three-condition P4G study into ``--dir`` and trains its policies in
seconds on a CPU the first time; a later start keeps that folder, and an explicit ``--demo-steps`` other
than the one its study.yaml names is refused (exit 2) rather than ignored.

``scope-envs study analyze STUDY_DIR`` writes ``report.md``, ``analysis.json`` and bar charts
(``study_<measure>.png``): per condition and measure, the mean with its 95% bootstrap CI, Welch's t
against the baseline with Holm's correction across the family, Cohen's d, and next to the people the
same policies' held-out human-proxy and held-out panel scores (``--proxy-episodes 0`` skips them).

Modules: ``config`` (study.yaml), ``agents`` (the conditions' policies), ``store`` (the database),
``engine`` (assignment, chat, exports), ``pages`` (templates), ``app`` (the FastAPI app), ``analyze``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

from scope_envs.arguments import count, listen_problem, nonempty, output_dir

EXTRA_HINT = "the study needs the study extra: pip install 'scope-envs[study]'"
MAX_DEMO_STEPS = 10_000_000
MAX_PROXY_EPISODES = 100_000
MAX_RESAMPLES = 1_000_000


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text[:40]!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {value}")
    return value


def add_arguments(sub) -> None:
    """The ``study`` subcommand and its ``serve`` / ``analyze`` commands."""
    p = sub.add_parser("study", help="human study: serve the chat to people, analyse their answers (scope-envs[study])")
    commands = p.add_subparsers(dest="study_command", required=True)
    s = commands.add_parser("serve", help="the web server on 127.0.0.1")
    source = s.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", type=nonempty, help="a study.yaml (or the folder that holds one)")
    source.add_argument("--demo", action="store_true", help="a three-condition P4G study in --dir, trained in seconds")
    s.add_argument("--dir", type=output_dir, default="study-demo", help="--demo: the study folder (default: ./study-demo)")
    s.add_argument("--demo-steps", type=count(MAX_DEMO_STEPS), default=None,
                   help=f"--demo: PPO steps per trained policy (1 to {MAX_DEMO_STEPS:_}; default 3000), for a new "
                        "--dir only: a folder made with other steps is refused")
    s.add_argument("--port", type=port_number, default=8000, help="0 to 65535 (0: any free port; default 8000)")
    s.set_defaults(func=cmd_serve, parser=s)
    a = commands.add_parser("analyze", help="report.md, analysis.json and charts from a study folder")
    a.add_argument("study_dir", help="the folder holding study.yaml")
    a.add_argument("--baseline", type=nonempty, default=None,
                   help="the condition every other is tested against (config's)")
    a.add_argument("--proxy-episodes", type=count(MAX_PROXY_EPISODES, low=0), default=200,
                   help=f"episodes per policy on the held-out proxies and per panel family (0: skip; at most "
                        f"{MAX_PROXY_EPISODES:_})")
    a.add_argument("--resamples", type=count(MAX_RESAMPLES), default=10_000,
                   help=f"bootstrap resamples (at most {MAX_RESAMPLES:_})")
    a.set_defaults(func=cmd_analyze, parser=a)


def _config(args, path):
    from scope_envs.study.config import ConfigError, load

    try:
        return load(path)
    except ConfigError as e:
        args.parser.error(f"argument {'--config' if args.study_command == 'serve' else 'study_dir'}: {e}")


def build(cfg):
    """The ``Study`` of a config: its database opened (``StoreError`` when it cannot be), its policies loaded
    (or trained once)."""
    from scope_envs.study.agents import speakers
    from scope_envs.study.engine import Study, check_assignment
    from scope_envs.study.store import Store

    store = Store(cfg.database_url)  # first: a bad database URL is said before any policy trains
    try:
        check_assignment(cfg, store)  # and a study.yaml changed under its sessions
        return Study(cfg, speakers(cfg), store)
    except BaseException:
        store.engine.dispose()  # its connections closed: SQLite's WAL files go with them
        raise


def cmd_serve(args) -> None:
    try:
        import uvicorn  # noqa: F401  (the extra, checked here; serve_on runs it)

        from scope_envs.study.app import create_app
    except ImportError:
        sys.exit(f"scope-envs study: error: {EXTRA_HINT}")
    from scope_envs.study.config import ConfigError
    from scope_envs.study.store import StoreError, shown, sqlite_file

    for dest in ("dir", "demo_steps"):  # the demo's options, ignored with --config: refused
        if not args.demo and getattr(args, dest) != args.parser.get_default(dest):
            args.parser.error(f"argument --{dest.replace('_', '-')}: only with --demo (--config names the study)")
    # the port first: not after a demo folder is written, a policy loaded and the URLs printed
    problem = listen_problem("127.0.0.1", args.port)
    if problem:
        args.parser.error(f"argument {problem[0]}: {problem[1]}")
    if args.demo:
        from scope_envs.study.config import DemoMismatch, write_demo

        try:
            path = write_demo(args.dir, steps=args.demo_steps)  # None: not given, the folder's steps are kept
        except DemoMismatch as e:
            args.parser.error(f"argument --demo-steps: {e}")
        except OSError as e:
            from scope_envs.files import describe

            args.parser.error(f"argument --dir: {describe(e)}")
    else:
        path = args.config
    cfg = _config(args, path)
    try:
        cfg.token_origin(generate=False)  # before anything else: a short or empty token never starts
    except ConfigError as e:
        args.parser.error(f"argument --config: {e}")
    database = sqlite_file(cfg.database_url)
    new_database = database is not None and not database.exists()
    try:
        study = build(cfg)
    except (StoreError, ValueError, FileNotFoundError) as e:  # a bad database, an unplayable policy, a missing file
        if new_database:  # a refused start leaves the study folder as it found it
            database.unlink(missing_ok=True)
        args.parser.error(f"argument --config: {e}")
    try:
        token, origin = cfg.token_origin()  # generated once the study can start
    except ConfigError as e:
        args.parser.error(f"argument --config: {e}")
    app = create_app(study)
    from scope_envs.serve.cli import bound_sockets, serve_on

    try:
        sockets = bound_sockets("127.0.0.1", args.port)
    except OSError as e:  # taken since listen_problem tried it
        args.parser.error(f"argument --port: cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}")
    port = sockets[0].getsockname()[1]  # --port 0's free port, where the server listens
    base = f"http://127.0.0.1:{port}"
    print(f"study folder {cfg.folder}; database {shown(cfg.database_url)}")
    print(f"participants: {base}/?PROLIFIC_PID=<id>&STUDY_ID=<study>&SESSION_ID=<session>")
    print(f"admin token:  {origin}")
    print(f"admin:        {base}/admin?token={quote(token, safe='')}", flush=True)  # a URL that opens as printed
    serve_on(sockets, app, host="127.0.0.1", port=port, log_level="warning")


def cmd_analyze(args) -> None:
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        sys.exit(f"scope-envs study: error: {EXTRA_HINT}")
    from scope_envs.study.analyze import analyze as run

    if not args.study_dir or not Path(args.study_dir).is_dir():  # Path("") is the working folder
        what = "is a file, not a study folder" if Path(args.study_dir).is_file() else "no such directory"
        args.parser.error(f"argument study_dir: {what}: {args.study_dir!r}")
    cfg = _config(args, args.study_dir)
    baseline = cfg.baseline if args.baseline is None else args.baseline
    if baseline not in [c.name for c in cfg.conditions]:
        args.parser.error(f"argument --baseline: {baseline!r} is not a condition of the study "
                          f"({', '.join(c.name for c in cfg.conditions)})")
    from scope_envs.files import describe
    from scope_envs.study.agents import PolicyError
    from scope_envs.study.engine import AssignmentChanged
    from scope_envs.study.store import StoreError

    try:
        report = run(cfg, baseline=baseline, proxy_episodes=args.proxy_episodes, resamples=args.resamples)
    except (StoreError, PolicyError, AssignmentChanged) as e:
        args.parser.error(f"argument study_dir: {e}")
    except OSError as e:  # the study folder cannot take the report (read-only, full)
        sys.exit(f"scope-envs study analyze: error: cannot write the report: {describe(e)}")
    print(report)
