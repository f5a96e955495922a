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
    budget=1_118_000,  # the plateau rule's answers (benchmarks/results/plateau_budget/): none found, the highest
    ceiling_budget=1_118_000,  # rung judged; the ceiling never trains less than the methods
    eval_episodes_min=128,
    seeds_min=16,
    report="scope_envs.bench.report:cooperbench_metrics",
    family_key=2,
    cooperation=(0.3, 0.2),  # added to every style probability (the frozen simulator's: 0.3)
    probe_agent="scope_envs.agents.cooperbench:ScriptedTeammate",
    concede=("announce_plan", "answer", "report_done"),
    cooperation_outcome=("success", 0.0, "both features merged"),
    served_agent="scope_envs.agents.cooperbench:ScriptedTeammate",
    served_game_module="scope_envs.games.cooperbench.game",  # the real-task game (code/) has no scripted seats
)
