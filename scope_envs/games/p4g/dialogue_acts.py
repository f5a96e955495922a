"""Dialogue acts of Persuasion for Good, and how the annotated labels map onto them.

Index 0 of each role's act list is the no-op, the only legal act when it is not
that role's turn. The persuader's ten strategies are the P4G persuasion
strategies (Wang et al. 2019, Table 1); the other acts are its non-strategy
dialogue acts. The persuadee's acts are the P4G persuadee acts, with the stated
donation split into amount bins (``provide_amount_*``).
"""

from __future__ import annotations

NOOP = "noop"

STRATEGIES = (
    "logical_appeal",
    "emotion_appeal",
    "credibility_appeal",
    "foot_in_the_door",
    "self_modeling",
    "personal_story",
    "donation_information",
    "source_related_inquiry",
    "task_related_inquiry",
    "personal_related_inquiry",
)
PERSUADER_OTHER = (
    "greeting",
    "propose_donation",
    "ask_donation_amount",
    "confirm_donation",
    "thank",
    "off_task",
    "close",
)
PERSUADER_ACTS = (NOOP, *STRATEGIES, *PERSUADER_OTHER)

# Dollar amounts a persuadee can state; real donations are snapped to the nearest bin.
AMOUNT_BINS = (0.0, 0.05, 0.10, 0.25, 0.50, 0.75, 1.00, 1.50, 2.00)
AMOUNT_ACTS = tuple(f"provide_amount_{a:.2f}" for a in AMOUNT_BINS)

PERSUADEE_VERBAL = (
    "greeting",
    "ask_org_info",
    "ask_donation_procedure",
    "ask_persuader_intention",
    "agree_donation",
    "disagree_donation",
    "positive_reaction",
    "neutral_reaction",
    "negative_reaction",
    "positive_answer",
    "neutral_answer",
    "negative_answer",
    "task_related_inquiry",
    "personal_related_inquiry",
    "confirm_donation",
    "thank",
    "off_task",
    "closing",
)
PERSUADEE_ACTS = (NOOP, *PERSUADEE_VERBAL, *AMOUNT_ACTS)

PERSUADER_INDEX = {a: i for i, a in enumerate(PERSUADER_ACTS)}
PERSUADEE_INDEX = {a: i for i, a in enumerate(PERSUADEE_ACTS)}
FIRST_AMOUNT = PERSUADEE_INDEX[AMOUNT_ACTS[0]]
STRATEGY_IDS = tuple(PERSUADER_INDEX[s] for s in STRATEGIES)

# Annotation labels of 300_dialog.csv (er_label_1 / ee_label_1) -> our acts.
# Labels without a counterpart of their own fall into ``off_task``.
PERSUADER_LABELS = {
    "logical-appeal": "logical_appeal",
    "emotion-appeal": "emotion_appeal",
    "credibility-appeal": "credibility_appeal",
    "foot-in-the-door": "foot_in_the_door",
    "self-modeling": "self_modeling",
    "personal-story": "personal_story",
    "donation-information": "donation_information",
    "source-related-inquiry": "source_related_inquiry",
    "task-related-inquiry": "task_related_inquiry",
    "non-personal-Task-related-inquiry": "task_related_inquiry",
    "personal-related-inquiry": "personal_related_inquiry",
    "greeting": "greeting",
    "proposition-of-donation": "propose_donation",
    "ask-donation-amount": "ask_donation_amount",
    "ask-donate-more": "ask_donation_amount",
    "confirm-donation": "confirm_donation",
    "thank": "thank",
    "you-are-welcome": "thank",
    "closing": "close",
}
PERSUADEE_LABELS = {
    "greeting": "greeting",
    "ask-org-info": "ask_org_info",
    "ask-donation-procedure": "ask_donation_procedure",
    "ask-persuader-donation-intention": "ask_persuader_intention",
    "agree-donation": "agree_donation",
    "disagree-donation": "disagree_donation",
    "disagree-donation-more": "disagree_donation",
    "positive-reaction-to-donation": "positive_reaction",
    "neutral-reaction-to-donation": "neutral_reaction",
    "negative-reaction-to-donation": "negative_reaction",
    "positive-to-inquiry": "positive_answer",
    "neutral-to-inquiry": "neutral_answer",
    "negative-to-inquiry": "negative_answer",
    "task-related-inquiry": "task_related_inquiry",
    "personal-related-inquiry": "personal_related_inquiry",
    "confirm-donation": "confirm_donation",
    "thank": "thank",
    "closing": "closing",
    # provide-donation-amount is mapped to an amount bin from the stated donation
}


def persuader_act(label: str) -> str:
    return PERSUADER_LABELS.get(label, "off_task")


def persuadee_act(label: str) -> str:
    return PERSUADEE_LABELS.get(label, "off_task")


def amount_bin(dollars: float) -> int:
    """Index into AMOUNT_BINS of the bin nearest to ``dollars`` (capped at $2)."""
    d = min(max(float(dollars), 0.0), AMOUNT_BINS[-1])
    return min(range(len(AMOUNT_BINS)), key=lambda i: abs(AMOUNT_BINS[i] - d))
