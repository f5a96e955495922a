"""tau^2-bench as the rest of the package sees it: its players, metric, budgets and dials (``GameSpec``)."""

from scope_envs.games.spec import GameSpec

SPEC = GameSpec(
    name="tau2",
    factory="scope_envs.regimes:make_tau2",
    order=2,
    reference="scope_envs.agents.tau2:ReferenceUser",
    collapsed="scope_envs.agents.tau2:CollapsedUser",
    human_proxy="scope_envs.agents.tau2:HumanProxyUser",
    rotation="scope_envs.agents.tau2:rotation_members",
    card="scope_envs.games.tau2.behaviour:card",
    split_sizes="scope_envs.games.tau2.behaviour:SPLIT_SIZES",
    modal_card="scope_envs.games.tau2.behaviour:default_card",
    card_keyword="style",  # a behaviour card over the dealt task: the env still deals the task
    role_label="service agent",
    metric_label="task success rate (tau^2 reward 1)",
    success_note="the **task success rate** (tau^2 reward 1; held-out = test-split tasks)",
    ladder_base=8_000,  # the default budget before the plateau rule: its episodes are longer
    budget=40_000,  # the plateau rule's answers (benchmarks/results/plateau_budget/)
    ceiling_budget=447_000,  # none found: the highest rung judged
    eval_episodes_min=128,
    seeds_min=10,
    variants="scope_envs.games.tau2.human_proxy:VARIANTS",
    report="scope_envs.bench.report:tau2_metrics",
    data="scope_envs.bench.reference:tau2_data",
    family_key=3,
    cooperation=(0.3, 0.2),  # the fraction of the way the cooperative traits move toward the modal card
    cooperation_range=(0.0, 1.0),
    reply_styles=(("terse", 0.2), ("plain", 0.5), ("wordy", 0.8)),  # the card's verbose
    probe_agent="scope_envs.agents.tau2:OracleAgent(game)",
    probe_text_agent="scope_envs.agents.tau2:OracleTextAgent(env)",
    concede=("inform_all", "inform_identity", "inform_details", "confirm"),
    cooperation_outcome=("success", 0.0, "task solved"),
    served_agent="scope_envs.agents.tau2:OracleAgent(game)",
    validate="scope_envs.validate.tau2:validate",
    validate_simulates=False,  # it replays every task's gold actions once
)
