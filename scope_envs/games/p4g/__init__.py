"""Persuasion for Good (``p4g``): a persuader asks a persuadee to donate to Save the Children.

Game
    Wang et al. (ACL 2019): two crowd workers talk; the persuader tries to get
    the persuadee to give part of a $2 task payment. Turns alternate, the
    persuader first. The episode ends when the persuadee says goodbye after
    stating an amount, or after the persuadee's reply to the persuader's
    ``close`` or to its ``max_turns``-th turn (default 10) — that last reply
    must state an amount if none was stated yet.

Agents
    ``agent_0`` the persuader; ``user_0..`` the persuadee when it is learnable
    (``cotrain``, ``population``); otherwise a simulator inside the env.

Acts (``dialogue_acts.py``)
    Persuader: no-op, the ten P4G strategies (logical, emotion and credibility
    appeal, foot-in-the-door, self-modeling, personal story, donation
    information, source-, task- and personal-related inquiry), greeting,
    propose donation, ask amount, confirm, thank, off-task, close (18).
    Persuadee: no-op, the P4G persuadee acts (greeting, ask org info, ask
    procedure, ask persuader's intention, agree/disagree, positive/neutral/
    negative reaction and answer, task/personal inquiry, confirm, thank,
    off-task, closing) and ``provide_amount_X`` for X in $0, 0.05, 0.10, 0.25,
    0.50, 0.75, 1, 1.50, 2 (28).

Spaces
    ``act`` surface: ``Discrete(18)`` / ``Discrete(28)``;
    ``Dict(observation=Box(-5, 5, (77,) | (93,), float32), action_mask=Box(int8))``.
    The persuader sees the turn, the persuadee's last act and both sides' act
    counts, and the amount stated so far; the persuadee also sees its persona
    card (25 standardized survey traits) and whether its reply is the final one.
    ``text`` surface: transcripts in, strings out; the persuadee states a gift
    as ``[DONATE $N]``; ``infos[a]["messages"]`` holds the chat messages with
    the role's instructions and persona card as the system prompt; acts are
    rendered and read back by ``language.py``.

Rewards (at the end)
    ``agent_0``: the actual donation in dollars. ``infos`` carry ``intended``
    (the stated amount) and ``actual`` every step. Simulators and learnable
    users keep their word (actual = stated); the human proxies do not always.
    ``game.agent_score()``, the agent's normalised score SCOPE writes its
    simulator rewards in: ``min(actual / 2, 1)`` (the gift over the $2), in [0, 1].
    A learnable persuadee's reward ``user_reward=``:
    ``mixed`` (default): 0.5 * persona + 0.5 * zero_sum — a user that resists
    but stays in character;
    ``persona``: minus the distance between the stated amount and the gift its
    card implies (the data's propensity regression times the mean real gift;
    computed from the card alone);
    ``zero_sum``: minus the actual donation in dollars (the agent's reward
    negated; v0 called it ``adversarial``);
    SCOPE's three (``scope_envs.core.rewards``), in score = ``agent_score()``:
    ``adversarial``: 1 - score;
    ``cooperative``: score;
    ``curriculum``: 0 per episode; the trainer pays each episode of a group
    played on one persona exp(-(var - target_var)^2 / width), var the
    population variance of the group's scores (``curriculum_reward``);
    ``target_var`` (0.25) and ``width`` (0.02) are game options, kept on
    ``env.unwrapped.game`` for the trainer; they are an error with any other
    ``user_reward``;
    ours, grounded in the real dialogues (``realism.py``, ``scope_envs.train.realism``):
    ``realism``: 0 per episode; the trainer pays each reply a discriminator's
    log-odds that a real persuadee of the training part would have said it,
    the discriminator trained as training goes (GAIL-style);
    ``realism_mixed``: half ``mixed`` (paid by the env), half ``realism``.
    SCOPE trains its P4G persuadee with ``adversarial`` (1 - r). The default
    stays ``mixed``, what the benchmark has always used, so that its numbers
    do not move; pass ``user_reward="adversarial"`` to train as SCOPE does.

Personas (``personas.py``)
    Synthetic survey cards (Big Five, moral foundations, Schwartz values,
    decision style, demographics) drawn from a model fitted to the real
    survey; ``train`` (1000) and ``heldout`` (500) draw from disjoint seed streams.

Users
    ``reference.py``: what a language model knows of persuadees (training side).
    ``human_proxy.py``: the held-out behaviour model, evaluation only; its
    docstring lists what was fitted to the data and what is assumed.
    ``grounded.py``: a frozen simulator fitted to the training part of the real
    dialogues (``people.py``'s split), the user of ``p4g-grounded``.
    Built-in players in ``scope_envs.agents.p4g``.

Arguments
    ``surface`` (``act``|``text``), ``max_turns`` (10), ``user_reward``
    (``mixed``), ``target_var`` (0.25) and ``width`` (0.02) with ``curriculum``,
    ``sharpening`` (3.0, sharpness of the frozen simulator, from 1 to 100; ``gamma`` is its deprecated name),
    ``render_mode`` (``ansi``), ``max_errors`` (3, in-game errors of one agent
    before the episode truncates, text surface), ``max_message_chars`` (4000,
    text surface: a longer message is an in-game error); ``vs``: ``k``, ``tau``,
    ``min_survivors``, ``weight_mode``, ``tail``, ``temperature``;
    ``rotation``: ``schedule``; ``population``: ``members`` (4), ``schedule``;
    ``heldout``: ``personas`` (``heldout``|``train``), ``assumptions`` (a name of
    ``human_proxy.VARIANTS`` or a dict of ``human_proxy.Assumptions`` fields: which
    acts move willingness, wear-out, heterogeneity, pushiness).

Version history
    v0: first release.
    v0.1 (same ids): text messages over ``max_message_chars`` or not printable text are in-game errors.
    v0.2 (same ids): ``user_reward`` gains SCOPE's ``adversarial`` (1 - score), ``cooperative`` and
    ``curriculum`` (options ``target_var``, ``width``); v0's ``adversarial`` (minus the gift in dollars) is
    now ``zero_sum``, same formula. The default (``mixed``) is unchanged.
    v0.3 (same ids): ``heldout`` takes ``assumptions=`` (the proxies' assumption switches); the default
    is today's proxy, bit for bit.
    v0.4 (same ids): a new id, ``p4g-grounded`` (the grounded simulator on train personas); every other id's
    episodes are unchanged.
"""
