"""CooperBench (``cooperbench``): two teammates implement two features of one pull request.

Game
    After CooperBench (Khatua, Zhu et al., 2026): two coding agents each get one
    feature of the same pull request, work in separate branches of the same
    repository, and may message each other; the pair succeeds only if both
    features pass after the branches merge. Here the repository is a small code
    world of our own (``world.py``): 12 named regions in three files; a task
    needs 2-4 regions per feature, 0-2 of them wanted by both. Each teammate
    sees only its own feature. At the end both branches are merged for real
    (a region-wise three-way merge equal to ``git merge-file``, tested): a
    region both changed differently conflicts and fails every feature that
    needs it. A combined edit is written with the writer's own line first, so
    two teammates who both integrate one shared region conflict: each shared
    region needs exactly one owner (v0.3). Turns alternate, ``agent_0``
    first; the episode ends when both have submitted (a teammate that used ``max_turns`` turns is submitted).

Agents
    ``agent_0`` the teammate being trained (feature A); ``user_0..`` the partner
    (feature B) when it is learnable; otherwise a simulated partner in the env.

Acts (both roles, 44, ``dialogue_acts.ACTS``)
    no-op; ``edit:<region>`` (this feature's change); ``edit_combined:<region>``
    (both features' changes; legal once the partner's needs are known);
    ``claim:<region>``; messages ``announce_plan`` (reveals this teammate's
    regions), ``report_done``, ``ask`` (for the partner's plan), ``answer``
    (reveals them), ``decline``; ``wait``; ``submit``.

Spaces
    ``act``: ``Discrete(44)``; ``Dict(observation=Box(-5, 5, (82,)), action_mask)``:
    own regions, the partner's regions as far as told, both sides' claims, own
    edits (own / combined), the partner's last message, turn, a pending
    question, whether the partner reported or submitted. ``text``: messages in
    natural language, edits as commands (``EDIT <region> [COMBINED]``, ``WAIT``,
    ``SUBMIT``; ``language.py``).

Rewards (at the end)
    ``agent_0``: team success (1.0 if both features are complete and the merge
    is clean) + 0.5 if its own feature is complete. ``infos`` carry
    ``success``, ``teammate_feature``, ``partner_feature``, ``conflicts`` (regions),
    ``merge_conflict`` (0/1) and ``message_share``. ``game.agent_score()``, the
    agent's normalised score: its reward over its maximum 1.5, in [0, 1].
    A learnable partner's ``user_reward=``:
    ``persona`` (default): team success + 0.5 for its own feature - |message
    share - the ``talk`` on its card|, a teammate true to its style;
    ``zero_sum``: minus the agent's reward (v0 called it ``adversarial``);
    ``mixed``: 0.5 * persona + 0.5 * zero_sum;
    SCOPE's three (``scope_envs.core.rewards``), in score = ``agent_score()``:
    ``adversarial``: 1 - score; ``cooperative``: score; ``curriculum``: 0 per
    episode, the trainer paying each episode of a group played on one scenario
    exp(-(var - target_var)^2 / width), var the population variance of the
    group's scores; ``target_var`` (0.25) and ``width`` (0.02) are game
    options kept on ``env.unwrapped.game``, an error with any other mode.
    SCOPE publishes no partner reward for CooperBench: the CooperBench scripts
    of its code release (CHATS-lab/scope_usim, ``cmd/slime/.../train_cooperbench.sh``)
    train only the agent (``--trainable-role agent``), beside a fixed API model
    as partner in their ``coop`` setting. For a co-trained partner the nearest
    reading is self-play on the shared outcome, i.e. ``cooperative``. The
    default stays ``persona``, what the benchmark has always used, so that its
    numbers do not move.

Partners (``styles.py``, ``scope_envs.agents.cooperbench``)
    Five styles after the paper's failure modes (planner, silent worker,
    claim-breaker, non-answerer, ignorer); the frozen simulator is the
    idealized chat-model teammate (the modal style, over-cooperative,
    sharpened). In the training-side reference model the cards' needs differ
    (v0.3, ``styles.gate``, ``styles.leaves_shared``): a card that ignores
    claims needs its teammate to yield the shared regions it takes, a
    claim-breaker needs its teammate to do them, and a quiet card (``talk``
    below 1/2) leaves them to its teammate and is derailed by a claim; the
    collapsed partner leads and respects claims, so what it teaches (yield, or
    claim first) fails the quiet cards; ``heldout`` mixes the styles with held-out parameters and
    plays held-out tasks. The task sets are seeded; ``train`` (400) and
    ``heldout`` (200) share no task.

Arguments
    ``surface``, ``max_turns`` (12), ``user_reward`` (``persona``), ``target_var`` (0.25) and
    ``width`` (0.02) with ``curriculum``, ``sharpening`` (from 1 to 100; ``gamma`` deprecated)
    (3.0), ``render_mode``, ``max_errors``, ``max_message_chars`` (4000); regime options as for every game.

Version history
    v0: first release.
    v0.1 (same ids): text messages over ``max_message_chars`` or not printable text are in-game errors.
    v0.2 (same ids): ``user_reward`` gains SCOPE's ``adversarial`` (1 - score), ``cooperative`` and
    ``curriculum`` (options ``target_var``, ``width``); v0's ``adversarial`` (minus the agent's reward) is
    now ``zero_sum``, same formula. The default (``persona``) is unchanged.
    v0.3 (same ids; issue 28, a world in which collapse can hurt): the game rule: a combined edit carries
    the writer's own feature's line first (``batched.PARTNER_CONTENT``), so two combined edits of one
    region conflict (before, they were identical and "both integrate everything" was safe against every
    partner). The training-side reference (``styles.decide`` in expected mode): a commitment (respect a
    claim, keep one's own) takes its likelier side instead of holding whenever its chance is above 0, and
    quiet cards leave shared regions to their teammate and work alone once claimed at. The held-out proxy
    (sampled mode) keeps its v0 rules; only the merge rule reaches it.
"""
