"""CooperBench as the rest of the package sees it: its players, metric, budgets and dials (``GameSpec``)."""

from scope_envs.games.spec import GameSpec

SPEC = GameSpec(
    name="cooperbench",
    factory="scope_envs.regimes:make_cooperbench",
    order=1,
    reference="scope_envs.agents.cooperbench:ReferencePartner",
    collapsed="scope_envs.agents.cooperbench:CollapsedPartner",
    human_proxy="scope_envs.agents.cooperbench:HumanProxyPartner",
    rotation="scope_envs.agents.cooperbench:rotation_members",
    card="scope_envs.games.cooperbench.styles:persona",
    split_sizes="scope_envs.games.cooperbench.styles:SPLIT_SIZES",
    modal_card="scope_envs.games.cooperbench.styles:default_persona",
    role_label="teammate",
    metric_label="cooperative success rate",
    success_note="the **cooperative success rate** (both features complete and a clean merge)",
    # the plateau rule finds no plateau up to 1,118,000 decisions (benchmarks/results/plateau_budget/); at that budget
    # the default run's 16 seeds would train ~160M cooperbench decisions, ~1 h 45 min of both cores here, so the
    # methods keep 20,000 until the seed axis makes it affordable (issue 46), and the ceiling its own plateau, 20,000
    budget=20_000,
    ceiling_budget=20_000,
    eval_episodes_min=128,
    seeds_min=23,
    report="scope_envs.bench.report:cooperbench_metrics",
    family_key=2,
    cooperation=(0.3, 0.2),  # added to every style probability (the frozen simulator's: 0.3)
    probe_agent="scope_envs.agents.cooperbench:ScriptedTeammate",
    concede=("announce_plan", "answer", "report_done"),
    cooperation_outcome=("success", 0.0, "both features merged"),
    served_agent="scope_envs.agents.cooperbench:ScriptedTeammate",
    served_game_module="scope_envs.games.cooperbench.game",  # the real-task game (code/) has no scripted seats
)
