"""CooperBench on real tasks (``cooperbench-<regime>``, ``surface="text"``, ``tasks="demo"`` or ``data_dir=PATH``).

Game
    CooperBench (Khatua, Zhu et al., 2026) itself, beside the act-level stand-in
    of ``scope_envs.games.cooperbench`` (which stays the default and the fast
    proxy): two coding teammates each get one feature of the same task of a real
    repository, each works in its own git worktree of the task's base commit,
    they may message each other, and at the end their two branches are merged
    with git the way CooperBench's evaluator merges them and both features'
    hidden test patches are run on the result (``merge.py``). The pair succeeds
    only if both features pass. Tasks are read from a CooperBench dataset
    directory (``data_dir=``; its layout in ``dataset.py``) or from the shipped
    demo (``tasks="demo"``: ``demo/textkit_task/task1``, a small Python package
    with three features; features 1 and 3 both change ``slugify``, so that pair
    conflicts unless the teammates coordinate). Each episode deals one feature
    pair; ``agent_0`` gets the first feature (CooperBench's agent1).

Agents
    ``agent_0`` the teammate being trained (``teammate``); ``user_0..`` the
    partner when it is learnable; otherwise a partner inside the env
    (``partners.py``).

Actions and turns (text only)
    A turn is one action: a JSON tool call ``{"name": ..., "arguments": {...}}``
    (as tau2's text game; the schemas ride in ``infos[agent]["tools"]``) or a
    plain message to the partner. Tools: ``list_files``, ``read_file``,
    ``write_file`` (a whole file), ``apply_patch`` (a unified diff),
    ``run_tests`` (this feature's tests, on a fresh copy of this branch, in the
    sandbox of ``sandbox.py``), ``send_message``, ``submit``. Turns alternate,
    ``agent_0`` first; a teammate that has submitted is skipped; a teammate
    that used ``max_turns`` turns is submitted. A malformed call (bad JSON, an
    unknown tool, missing or unknown arguments) is an in-game error; a tool that
    fails (no such file, a patch that does not apply, a path outside the
    worktree: ``workspace.py``) returns ``Error: ...`` and the turn is used.

Observations
    The transcript from the teammate's side: its feature (``feature.md``), its
    own tool calls and their results, both sides' messages; never the other
    side's tool calls or files. ``infos[agent]``: ``messages`` (chat format with
    ``tool_calls``), ``tools``, ``task_id``, ``feature_id``, ``backend``,
    ``network_guard`` (which guard kept the tests off the network); at the end
    ``merge_status`` (``clean``, ``identical``, ``conflicts``,
    ``missing_input``), ``merge_strategy``, ``apply_status``,
    ``conflicting_files``, ``feature_passed`` and ``test_outputs``.

Rewards (at the end)
    The act-level game's definitions, the same functions: ``agent_0`` gets
    team success + 0.5 for its own feature; the partner's ``user_reward``
    (``persona``, ``zero_sum``, ``mixed``, ``adversarial``, ``cooperative``,
    ``curriculum``) as there. Numeric ``infos``: ``success``,
    ``teammate_feature``, ``partner_feature``, ``conflicts`` (conflicting
    files), ``merge_conflict``, ``message_share``, ``tests_run``,
    ``test_timeouts``, ``tool_errors``, ``escapes_refused``.

Partners (``partners.py``)
    Scripted text coders that write the task's gold patches and coordinate by
    the act-level style cards (planner, silent worker, claim-breaker,
    non-answerer, ignorer): ``frozen`` the collapsed modal partner (``vs``: its
    verbalized top-k, the unsharpened policy's replies with their estimated
    probabilities), ``rotation`` several, ``heldout`` the held-out cards (the demo's tasks are shared by both
    splits: only the cards are held out). ``user=`` takes any text
    ``Simulator``; for an LLM, ``partners.ChatPartner(backend)`` reads the
    partner's own chat from the view (``private["messages"]``: its tool calls
    with their results, never the teammate's) and ``private["tools"]``.

Arguments
    ``tasks`` ("demo") or ``data_dir``; ``subset`` (a CooperBench subset name
    under ``data_dir/subsets``); ``pairs`` (pair ids to deal, e.g.
    ``"textkit_task/task1/f1-f3"``); ``max_turns`` (30 each); ``tool_timeout``
    (60 s wall per test run), ``cpu_limit`` (60 s), ``memory_mb`` (2048);
    ``backend`` ("local"; "docker" runs the task's CooperBench image where
    Docker is available); ``network`` ("auto": ``unshare -n`` when possible,
    else a ``sitecustomize`` socket guard; or either by name);
    ``visible_tests`` (True: ``run_tests`` applies the teammate's own feature's
    tests patch; False: only the tests already in its branch, as CooperBench's
    agents see them); ``cache_tests`` (True: a verdict is reused for the same
    tests patch and patch); ``max_message_chars`` (32000); ``user_reward``,
    ``target_var``, ``width``, ``sharpening`` (``gamma`` deprecated), ``render_mode``, ``max_errors`` and
    the regime options as for every game. ``game.close()`` removes the
    worktrees at once (they go anyway when the game is collected).

Version history
    v0: first release (merge procedure of ``cooperbench`` 0.0.29).
"""
