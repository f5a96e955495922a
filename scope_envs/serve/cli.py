"""``scope-envs serve ID``: the command line of the server (``add_parser`` hooks it into ``scope-envs``)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import Optional

import ipaddress
import re

from scope_envs.arguments import count, listen_problem, registered_id
from scope_envs.vec import MAX_NUM_ENVS

MAX_PORT = 65535
MAX_KWARG_CHARS = 4096
MAX_IDLE_TIMEOUT = 7 * 86400.0


def host(text: str) -> str:
    """An IP address or a host name to listen on."""
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    if len(text) <= 253 and re.fullmatch(r"[A-Za-z]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9-]{1,63})*", text):
        return text
    raise argparse.ArgumentTypeError(f"expected an IP address or a host name, got {text[:60]!r}")


def idle_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, a number, got {text[:40]!r}") from None
    if not 0 < value <= MAX_IDLE_TIMEOUT:
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most {MAX_IDLE_TIMEOUT:g} (7 days), "
                                         f"got {value:g}")
    return value


def kwarg(text: str) -> tuple[str, object]:
    """``key=value``: the value read as JSON (``4``, ``true``, ``"x"``, ``[1, 2]``), else kept as a string."""
    if len(text) > MAX_KWARG_CHARS:
        raise argparse.ArgumentTypeError(f"a --kwarg is at most {MAX_KWARG_CHARS} characters")
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value with a Python name as key, got {text[:60]!r}")
    if key == "surface":  # make()'s own argument, which serve takes as an option
        raise argparse.ArgumentTypeError("the surface is --surface act|text, not a --kwarg")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def served_id(text: str) -> str:
    """A registered id (``scope-envs list``). Not ``llm-toy``: that is ``train-llm``'s toy task, no env to serve."""
    if text == "llm-toy":
        raise argparse.ArgumentTypeError("'llm-toy' is train-llm's toy task, not an environment to serve; serve a "
                                         "registered id (`scope-envs list` prints them)")
    return registered_id(text)


def backend_spec(text: str) -> str:
    """A ``load_backend`` spec's form (whether it loads or answers is checked once the command line parses)."""
    from scope_envs.serve.llm import UserLLMError, check_spec_form

    try:
        return check_spec_form(text)
    except UserLLMError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(f"expected a temperature from 0 to 10, got {value:g}")
    return value


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("serve", help="serve an id over OpenEnv's HTTP/WebSocket protocol (needs scope-envs[serve])",
                              description="Serve ID over OpenEnv's protocol: many isolated sessions on /ws, "
                                          "a batched endpoint on /scope/vec. See docs/serving.md.")
    p.add_argument("id", type=served_id, help="a registered id (`scope-envs list`)")
    p.add_argument("--host", type=host, default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=count(MAX_PORT, low=0), default=8000, help="0 to 65535 (0: any free port)")
    p.add_argument("--surface", choices=("act", "text"), default="act",
                   help="act (default): dialogue acts with a legal mask; text: strings in and out")
    p.add_argument("--kwarg", type=kwarg, action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument of make (repeatable; the value is read as JSON when it parses)")
    p.add_argument("--max-sessions", type=count(4096), default=64,
                   help="concurrent sessions, /ws and /mcp together: OpenEnv's server counts both against one "
                        "limit (1 to 4096)")
    p.add_argument("--max-vec-sessions", type=count(256), default=8, help="concurrent batched sessions (1 to 256)")
    p.add_argument("--max-num-envs", type=count(MAX_NUM_ENVS), default=1024,
                   help=f"episodes per batched session (1 to {MAX_NUM_ENVS}: make_vec's bound)")
    p.add_argument("--idle-timeout", type=idle_seconds, default=300.0,
                   help="seconds before an idle session closes (at most 7 days)")
    p.add_argument("--max-body-bytes", type=count(1 << 30, low=1024), default=4 << 20,
                   help="largest request body or WebSocket frame, bytes (1024 to 1_073_741_824)")
    p.add_argument("--body-timeout", type=idle_seconds, default=30.0, metavar="SECONDS",
                   help="seconds a request body may take to arrive, else 408 (at most 7 days; default 30)")
    p.add_argument("--header-timeout", type=idle_seconds, default=30.0, metavar="SECONDS",
                   help="seconds a request's line and headers may take to arrive (from the connection's opening or "
                        "the first byte of the request), else the connection is closed (at most 7 days; default 30)")
    llm = p.add_argument_group("the user seat as an LLM (text surface; see docs/serving.md)")
    llm.add_argument("--user-llm", type=backend_spec, metavar="SPEC",
                     help="the user of a frozen or vs id, or the backend of a population pool's named adapters: "
                          "openai:BASE_URL#MODEL, a local model directory (hf:DIR), or vllm:DIR")
    # (default None: given without --user-llm, each is refused in run(); UserLLMOptions holds the defaults)
    llm.add_argument("--user-llm-max-new-tokens", type=count(8192), metavar="N",
                     help="tokens per user message (1 to 8192; default 256)")
    llm.add_argument("--user-llm-temperature", type=temperature, metavar="T",
                     help="sampling temperature (0 to 10; default 1)")
    llm.add_argument("--user-llm-timeout", type=idle_seconds, metavar="SECONDS",
                     help="an endpoint's seconds per request (at most 7 days; default 60)")
    llm.add_argument("--user-llm-retries", type=count(20, low=0), metavar="N",
                     help="an endpoint's retries of a failed request (0 to 20; default 3)")
    llm.add_argument("--user-adapter-dir", metavar="DIR",
                     help="a local model's LoRA adapters, one PEFT directory per name, for reset(adapter=NAME)")
    p.set_defaults(func=run, parser=p)
    return p


BACKLOG = 2048  # uvicorn's default


def bound_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address of ``host`` and listening (as asyncio's server binds them: ``SO_REUSEADDR``,
    IPv6 only on an IPv6 socket) on one port, ``port`` or, for 0, the free port the first one got: ``serve_on`` serves on
    them, so the port printed is the one bound (uvicorn, binding port 0 itself, tells no one the port it got,
    and gets one per address)."""
    sockets = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port, *address[2:]))
            # listening at once: a client that reads the printed URL and connects before uvicorn's loop has
            # started is queued, not refused (uvicorn listens again with its own backlog)
            sock.listen(BACKLOG)
            port = sock.getsockname()[1]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def url_host(host: str) -> str:
    """``host`` as a URL's authority writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def serve_on(sockets: list[socket.socket], app, header_timeout: Optional[float] = None, **options) -> None:
    """``uvicorn.run(app, **options)`` on ``sockets``, ending as it ends: an interrupt returns once the server
    has shut down, a start that failed (the app's startup) exits 3. A connection whose request line and headers
    do not arrive within ``header_timeout`` seconds (default ``protocol.DEFAULT_HEADER_TIMEOUT``) is closed:
    uvicorn alone would hold it open forever (``scope_envs.serve.protocol``)."""
    import uvicorn

    from scope_envs.serve import protocol

    seconds = protocol.DEFAULT_HEADER_TIMEOUT if header_timeout is None else header_timeout
    server = uvicorn.Server(uvicorn.Config(app, http=protocol.with_header_timeout(seconds), **options))
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    finally:
        for sock in sockets:
            sock.close()
    if not server.started:
        sys.exit(3)


def run(args) -> None:
    from scope_envs.serve.llm import UserLLMError, UserLLMOptions, check_regime

    if args.user_llm is None:  # the LLM's settings without an LLM: a mistake, named (never silently unused)
        for option, value in (("--user-llm-max-new-tokens", args.user_llm_max_new_tokens),
                              ("--user-llm-temperature", args.user_llm_temperature),
                              ("--user-llm-timeout", args.user_llm_timeout),
                              ("--user-llm-retries", args.user_llm_retries)):
            if value is not None:
                args.parser.error(f"argument {option}: goes with --user-llm SPEC (the LLM it sets)")
        if args.user_adapter_dir is not None:
            args.parser.error("argument --user-adapter-dir: goes with --user-llm SPEC (the model the adapters fit)")
    problem = listen_problem(args.host, args.port)  # now, not after "serving ... on" and uvicorn's own error
    if problem:
        args.parser.error(f"argument {problem[0]}: {problem[1]}")
    if args.user_llm is not None:  # before the server's imports: a wrong id or surface is said at once
        try:
            check_regime(args.id, args.surface, dict(args.kwarg))
        except UserLLMError as e:
            args.parser.error(f"argument {e.argument}: {e}")
    try:
        import uvicorn  # noqa: F401  (the extra, checked here; serve_on runs it)

        from scope_envs.serve.app import create_app
    except ImportError as e:
        args.parser.error(f"serving needs the serve extra: pip install 'scope-envs[serve]' ({e.name} is missing)")
    kwargs = dict(args.kwarg)
    if len(kwargs) < len(args.kwarg):  # the last of two values would be served without a word
        twice = sorted({k for k, _ in args.kwarg if [key for key, _ in args.kwarg].count(k) > 1})
        args.parser.error(f"argument --kwarg: {', '.join(twice)} given more than once")
    llm = {}
    if args.user_llm is not None:
        llm = dict(user_llm=args.user_llm, user_adapter_dir=args.user_adapter_dir,
                   user_llm_options=UserLLMOptions(**{k: v for k, v in (
                       ("max_new_tokens", args.user_llm_max_new_tokens), ("temperature", args.user_llm_temperature),
                       ("timeout", args.user_llm_timeout), ("retries", args.user_llm_retries)) if v is not None}))
    try:
        app = create_app(args.id, args.surface, kwargs, max_sessions=args.max_sessions,
                         idle_timeout=args.idle_timeout, max_body_bytes=args.max_body_bytes,
                         max_vec_sessions=args.max_vec_sessions, max_num_envs=args.max_num_envs,
                         body_timeout=args.body_timeout, **llm)
    except UserLLMError as e:
        args.parser.error(f"argument {e.argument}: {e}")
    except (ValueError, TypeError) as e:  # make() refused the kwargs: the user's mistake, named
        args.parser.error(f"argument --kwarg: cannot serve {args.id} with {str(kwargs)[:300]}: {e}")
    try:
        sockets = bound_sockets(args.host, args.port)
    except OSError as e:  # taken since listen_problem tried it
        args.parser.error(f"argument --port: cannot listen on {args.host}:{args.port}: {e.strerror or e}")
    port = sockets[0].getsockname()[1]
    print(f"serving {args.id} ({args.surface}) on http://{url_host(args.host)}:{port} (boot {app.state.scope_spec['boot_id']})",
          file=sys.stderr, flush=True)
    serve_on(sockets, app, header_timeout=args.header_timeout, host=args.host, port=port, log_level="warning",
             ws_max_size=args.max_body_bytes)
