"""CooperBench in words (the realizer and the light NLU): edits are short commands, messages are natural language.

Commands: ``EDIT <region>`` (this teammate's change), ``EDIT <region> COMBINED``
(both features' changes), ``WAIT``, ``SUBMIT``. Anything else is a message to
the partner, read by keyword: a plan or an answer lists regions ("I need to
change data.cache and model.main"), a claim takes one ("I'll take
data.cache"), "done" reports completion, a question asks for the partner's
plan, "can't say" declines. A message that says none of these is small talk
(a ``wait``).
"""

from __future__ import annotations

import re

import numpy as np

from scope_envs.core.game import InGameError
from scope_envs.games.cooperbench.dialogue_acts import ACTS, CLAIM, COMBINED, EDIT, INDEX, kind, region
from scope_envs.games.cooperbench.world import REGIONS

COMMAND = re.compile(r"^\s*EDIT\s+(\S+)(\s+COMBINED)?\s*$", re.IGNORECASE)
REGION_NAME = re.compile(r"\b(" + "|".join(re.escape(r) for r in REGIONS) + r")\b")


def _names(regions) -> str:
    names = [REGIONS[r] for r in sorted(regions)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def realize(act: int, needs, rng: np.random.Generator) -> str:
    k = kind(act)
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    if k == "edit":
        return f"EDIT {REGIONS[region(act)]}"
    if k == "edit_combined":
        return f"EDIT {REGIONS[region(act)]} COMBINED"
    if k == "claim":
        return pick([f"I'll take {REGIONS[region(act)]}, leave it to me.", f"Claiming {REGIONS[region(act)]}."])
    if k == "announce_plan":
        return pick([f"My plan: I need to change {_names(needs)}.", f"Here's my plan: I'll touch {_names(needs)}."])
    if k == "answer":
        return pick([f"I need {_names(needs)}.", f"For my feature I need to change {_names(needs)}."])
    texts = {
        "report_done": ["I'm done with my edits.", "Finished on my side."],
        "ask": ["Which regions do you need to touch?", "What's your plan?"],
        "decline": ["Can't say right now.", "Not sure yet, sorry."],
        "wait": ["WAIT"],
        "submit": ["SUBMIT"],
        "noop": [""],
    }
    return pick(texts[ACTS[act] if k == "noop" else k])


def understand(utterance: str, asked: bool) -> int:
    t = utterance.strip()
    m = COMMAND.match(t)
    if m:
        if m.group(1) not in REGIONS:
            raise InGameError(f"unknown region {m.group(1)!r}; regions are {', '.join(REGIONS)}")
        return (COMBINED if m.group(2) else EDIT) + REGIONS.index(m.group(1))
    if t.upper() in ("SUBMIT", "WAIT"):
        return INDEX[t.lower()]
    if t.upper().startswith("EDIT"):
        raise InGameError("write an edit as EDIT <region> or EDIT <region> COMBINED")
    low, named = t.lower(), REGION_NAME.findall(t)
    if named and re.search(r"\b(i'll take|claim|leave it to me|i'll do|mine)\b", low):
        return CLAIM + REGIONS.index(named[0])
    if named and re.search(r"\b(need|plan|change|touch|edit)\b", low):
        return INDEX["answer"] if asked else INDEX["announce_plan"]
    if re.search(r"\b(done|finished|complete)\b", low):
        return INDEX["report_done"]
    if re.search(r"\b(can't|cannot|won't|not sure|no idea)\b", low):
        return INDEX["decline"]
    if "?" in t:
        return INDEX["ask"]
    return INDEX["wait"]


def instructions(feature: str, needs, max_turns: int) -> str:
    return (
        f"You and a partner each implement one feature of the same pull request, in separate branches that are "
        f"merged at the end. Your feature ({feature}) needs changes in {_names(needs)}. If you both change the same "
        f"region differently the merge conflicts and breaks it; a combined edit (EDIT <region> COMBINED) makes both "
        f"features' changes at once, and two identical combined edits merge cleanly. You see only your own feature; "
        f"talk to your partner in plain messages. Commands: EDIT <region>, EDIT <region> COMBINED, WAIT, SUBMIT. "
        f"You have {max_turns} turns. Regions: {', '.join(REGIONS)}."
    )
