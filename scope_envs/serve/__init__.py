"""Every scope env as a server, over OpenEnv's HTTP/WebSocket protocol (``pip install "scope-envs[serve]"``).

    scope-envs serve p4g-cotrain --port 8000

serves ``scope_envs.make("p4g-cotrain")`` with OpenEnv's own server library: one isolated env per
WebSocket session (``/ws``), a session limit and an idle timeout, OpenEnv's typed ``Action`` and
``Observation`` models extended for several agents (``scope_envs.serve.models``), and a batched endpoint
that steps N episodes through ``make_vec`` per request (``scope_envs.serve.vec``). OpenEnv's own client
(``openenv.core.GenericEnvClient``) connects; the package's client, ``scope_envs.remote``, gives back a
PettingZoo ``ParallelEnv`` (and the vec env) over it. The guide is docs/serving.md.
"""

from scope_envs.serve.cli import add_parser

__all__ = ["add_parser", "create_app"]


def __getattr__(name):  # the app needs openenv (the serve extra); the command line's parser does not
    if name == "create_app":
        from scope_envs.serve.app import create_app

        return create_app
    raise AttributeError(name)
