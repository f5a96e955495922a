"""Persuasion for Good as the rest of the package sees it: its players, metric, budgets and dials (``GameSpec``)."""

from scope_envs.games.spec import GameSpec

SPEC = GameSpec(
    name="p4g",
    factory="scope_envs.regimes:make_p4g",
    order=0,
    reference="scope_envs.agents.p4g:ReferencePersuadee",
    collapsed="scope_envs.agents.p4g:CollapsedPersuadee",
    human_proxy="scope_envs.agents.p4g:HumanProxyPersuadee",
    rotation="scope_envs.agents.p4g:rotation_members",
    grounded="scope_envs.agents.p4g:GroundedPersuadee",  # fitted to the training part (games/p4g/grounded.py)
    realism="scope_envs.games.p4g.grounded:real_pairs",  # the training part's reply pairs (games/p4g/realism.py)
    card="scope_envs.games.p4g.personas:persona",
    split_sizes="scope_envs.games.p4g.personas:SPLIT_SIZES",
    modal_card="scope_envs.games.p4g.personas:default_persona",
    role_label="persuader",
    metric_label="mean donation ($)",
    success_note="the mean **actual donation in dollars** ($0-$2; held-out human proxies do not always give what "
                 "they state)",
    budget=20_000,  # the plateau rule's answers (benchmarks/results/plateau_budget/)
    ceiling_budget=1_118_000,
    frozen_cards=3,  # homogeneous: the modal card's collapse costs nothing at the plateau (collapse_design)
    eval_episodes_min=4672,
    seeds_min=12,
    variants="scope_envs.games.p4g.human_proxy:VARIANTS",
    worlds="scope_envs.games.p4g.reference:WORLDS",
    family_key=1,
    cooperation=(1.0, 0.5),  # added to the willingness logit (the frozen simulator's: 1.0)
    probe_agent="scope_envs.agents.p4g:EmpiricalPersuader",
    probe_explores=False,  # it samples the real persuaders' per-turn strategy mix: its states vary already
    concede=("agree_donation", "positive_reaction", "confirm_donation"),
    cooperation_outcome=("intended", 0.0, "states a gift above $0"),
    real_dialogues="scope_envs.games.p4g.fit:check_data",
    served_agent="scope_envs.agents.p4g:ScriptedPersuader",
    validate="scope_envs.validate.p4g:validate",
    out_of_sample="scope_envs.validate.p4g_holdout:out_of_sample",
)
