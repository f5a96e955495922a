"""The P4G realizer and light NLU: natural-language renderings of the dialogue acts, and keyword rules back to acts.

Every act has several renderings of our own; a persuadee's persona shapes its
style (extroverts exclaim, neurotic personas hedge, disagreeable ones are curt).
A persuadee states its gift as ``[DONATE $N]``. The NLU is keyword rules: good
enough for scripted simulators to react to an LLM persuader's strategy.
"""

from __future__ import annotations

import re

import numpy as np

from scope_envs.core.game import InGameError, Persona
from scope_envs.games.p4g import dialogue_acts

PERSUADER_TEXT = {
    "logical_appeal": [
        "Your donation could go a long way: every dollar buys meals and school supplies for a child.",
        "Think about it logically: money here does far more for a child abroad than it would for us.",
    ],
    "emotion_appeal": [
        "Imagine a child going to bed hungry tonight, with no one to help. It breaks my heart.",
        "Millions of children are suffering in war zones right now; they need someone to care.",
    ],
    "credibility_appeal": [
        "Save the Children has been working since 1919 and is rated highly by charity watchdogs.",
        "Save the Children is an established organization that works in over 100 countries.",
    ],
    "foot_in_the_door": [
        "Even a small amount, like ten cents, would be a great start.",
        "You don't have to give much; even a little helps as a start.",
    ],
    "self_modeling": [
        "I'm going to donate part of my own payment to Save the Children.",
        "I have already decided to donate some of my earnings myself.",
    ],
    "personal_story": [
        "When I was young my family got help from a charity, and I never forgot it.",
        "A friend of mine volunteered abroad and saw these programs change kids' lives.",
    ],
    "donation_information": [
        "Your donation will be taken directly from your task payment, and you can choose any amount up to $2.",
        "The research team will send the donation straight to Save the Children from your payment.",
    ],
    "source_related_inquiry": [
        "Have you heard of Save the Children before?",
        "Do you know the charity Save the Children?",
    ],
    "task_related_inquiry": [
        "Do you usually donate to charities?",
        "Have you ever given to a children's charity?",
    ],
    "personal_related_inquiry": [
        "Do you have any children of your own?",
        "How are you feeling about all this, personally?",
    ],
    "greeting": ["Hello! How are you today?", "Hi there, nice to meet you."],
    "propose_donation": [
        "Would you be willing to donate some of your payment to Save the Children?",
        "Would you like to make a donation to Save the Children today?",
    ],
    "ask_donation_amount": ["How much would you like to donate?", "What amount would you be comfortable giving?"],
    "confirm_donation": ["Just to confirm, you'll donate that amount?", "So you are donating, correct?"],
    "thank": ["Thank you so much for your time.", "Thanks, I really appreciate it."],
    "off_task": ["The weather has been strange lately.", "Anyway, how is your day going?"],
    "close": ["It was nice talking with you. Goodbye!", "Have a great day, bye!"],
}

PERSUADEE_TEXT = {
    "greeting": ["Hi, I'm good, how are you?", "Hello there."],
    "ask_org_info": ["What does Save the Children actually do?", "Where does the money go?"],
    "ask_donation_procedure": ["How would I donate?", "How does the donation work?"],
    "ask_persuader_intention": ["Are you donating too?", "How much are you giving?"],
    "agree_donation": ["Sure, I'd like to donate.", "Okay, I'll give something."],
    "disagree_donation": ["No, I don't want to donate.", "I'd rather not give anything."],
    "positive_reaction": ["That sounds like a great cause.", "That's really good to hear."],
    "neutral_reaction": ["I see.", "Okay, I understand."],
    "negative_reaction": ["I'm not sure that money really helps.", "I don't trust charities much."],
    "positive_answer": ["Yes, I have.", "Yes, definitely."],
    "neutral_answer": ["Not really, I don't know.", "Maybe, I'm not sure."],
    "negative_answer": ["No, I haven't.", "No, not at all."],
    "task_related_inquiry": ["Do you know how much of it reaches the children?", "Is this part of the study?"],
    "personal_related_inquiry": ["Do you have kids?", "What made you care about this?"],
    "confirm_donation": ["Yes, that's right.", "Yes, I confirm."],
    "thank": ["Thanks for telling me.", "Thank you."],
    "off_task": ["Ha, that's true.", "Right."],
    "closing": ["Goodbye!", "Bye, have a nice day."],
}

# A rule is a pattern, or ``(A, B)``: A and, later on the same line, B. That is the regular
# expression ``A.*B`` read in linear time: the earliest end of an A, then a B from there
# (``A.*B`` itself backtracks quadratically on text full of A's without a B).
_PERSUADER_RULES = [
    ("close", r"\b(bye|goodbye|have a (great|nice|good) day)\b"),
    ("ask_donation_amount", r"\bhow much (would|will|can|could|do) you\b|\bwhat amount\b"),
    ("propose_donation", r"\b(would|will|could) you (like to |be willing to |consider )?(donat|give|make a donation)"),
    ("confirm_donation", r"\bconfirm\b|\bso you are donating\b"),
    ("self_modeling", r"\bi('m| am| will|'ll| have)( already)?( going to| also| decided to)? (donat|give)|\bi (also )?donated\b"),
    ("foot_in_the_door", r"\b(even|just) a (small|little)|\bsmall amount\b|\bcents\b|\bas a start\b"),
    ("donation_information", r"\b(payment|deducted|taken (directly )?from|research team)\b"),
    ("credibility_appeal", r"\b(rated|established|since 19|countries|watchdog|reputable|transparent)\b"),
    ("emotion_appeal", r"\b(imagine|heart|suffer|hungry|starv|die|dying|war|tragic|pain)\w*"),
    ("personal_story", r"\b(when i was|my family|a friend of mine|i remember|my (mother|father|sister|brother))\b"),
    ("logical_appeal", r"\b(go a long way|logical|research shows|statistic|percent|difference|effective|every dollar)\w*"),
    ("greeting", r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b"),
    ("source_related_inquiry", (r"\b(heard of|know (the charity|about|of)) ", r"\?")),
    ("task_related_inquiry", (r"\b(usually|ever|often) (donate|give)\w* |\bcharit\w* ", r"\?")),
    ("personal_related_inquiry", (r"\byou\b", r"\?")),
    ("thank", r"\bthank"),
]
_PERSUADEE_RULES = [
    ("closing", r"\b(bye|goodbye)\b"),
    ("disagree_donation", (r"\b(no|not|rather not|won't|don't want)\b", r"\b(donat|give)")),
    ("agree_donation", (r"\b(i'll|i will|i'd like to|happy to|sure)\b", r"\b(donat|give)")),
    ("agree_donation", (r"\b(sure|okay|ok|yes)\b", r"\bdonat")),
    ("ask_donation_procedure", r"\bhow (do|would|can) i (donate|give)|\bhow does the donation"),
    ("ask_persuader_intention", r"\bare you (donating|giving)|\bhow much are you"),
    ("ask_org_info", r"\b(what does|where does|who is|tell me (more )?about)\b"),
    ("negative_reaction", r"\b(don't trust|scam|not sure|doubt|waste)\b"),
    ("positive_reaction", r"\b(great|wonderful|good cause|amazing|good to hear)\b"),
    ("thank", r"\bthank"),
    ("greeting", r"^\s*(hi|hello|hey)\b"),
    ("positive_answer", r"^\s*(yes|yeah|yep|definitely)\b"),
    ("negative_answer", r"^\s*(no|nope|not at all)\b"),
    ("neutral_answer", r"^\s*(maybe|not really|i don't know|not sure)\b"),
    ("personal_related_inquiry", (r"\byou\b", r"\?")),
    ("task_related_inquiry", r"\?"),
    ("neutral_reaction", r"\b(i see|okay|ok|i understand)\b"),
]
DONATE = re.compile(r"\[\s*DONATE\b", re.IGNORECASE)
AMOUNT = re.compile(r"\s*(?:\$\s*)?(\d+(?:\.\d+)?)\s*")


def _compile(rules):
    out = []
    for act, rule in rules:
        if isinstance(rule, tuple):
            out.append((act, tuple(re.compile(p) for p in rule)))
        else:
            out.append((act, re.compile(rule)))
    return out


_PERSUADER_RULES, _PERSUADEE_RULES = _compile(_PERSUADER_RULES), _compile(_PERSUADEE_RULES)


def _matches(rule, text: str) -> bool:
    if not isinstance(rule, tuple):
        return rule.search(text) is not None
    first, then = rule
    start = 0
    while True:  # line by line, as ``.`` stops at a newline
        a = first.search(text, start)
        if a is None:
            return False
        line_end = text.find("\n", a.start())
        line_end = len(text) if line_end < 0 else line_end
        if then.search(text, a.end(), line_end):
            return True
        start = line_end + 1


def donate_tags(text: str) -> list[str]:
    """The contents of each ``[DONATE ...]`` tag, as ``re.findall(r"\\[\\s*DONATE\\b([^\\]]*)\\]")`` in linear time."""
    tags, pos = [], 0
    while (m := DONATE.search(text, pos)) is not None:
        close = text.find("]", m.end())
        if close < 0:  # no later tag can close either
            break
        tags.append(text[m.end():close])
        pos = close + 1
    return tags


def understand_persuader(text: str) -> int:
    t = text.lower()
    for act, rule in _PERSUADER_RULES:
        if _matches(rule, t):
            return dialogue_acts.PERSUADER_INDEX[act]
    return dialogue_acts.PERSUADER_INDEX["off_task"]


def understand_persuadee(text: str) -> int:
    """Persuadee text to an act; ``[DONATE $N]`` states a gift. Malformed tags are in-game errors."""
    tags = donate_tags(text)
    if tags:
        m = AMOUNT.fullmatch(tags[-1])
        if not m:
            raise InGameError(f"could not read the amount in [DONATE{tags[-1]}]; write e.g. [DONATE $0.50]")
        dollars = float(m.group(1))
        if dollars > dialogue_acts.AMOUNT_BINS[-1]:
            raise InGameError(f"a donation can be at most ${dialogue_acts.AMOUNT_BINS[-1]:.2f}, got ${dollars:.2f}")
        return dialogue_acts.FIRST_AMOUNT + dialogue_acts.amount_bin(dollars)
    if "[donate" in text.lower():
        raise InGameError("unterminated [DONATE ...] tag; write e.g. [DONATE $0.50]")
    t = text.lower()
    for act, rule in _PERSUADEE_RULES:
        if _matches(rule, t):
            return dialogue_acts.PERSUADEE_INDEX[act]
    return dialogue_acts.PERSUADEE_INDEX["off_task"]


def realize_persuader(act: int, rng: np.random.Generator) -> str:
    options = PERSUADER_TEXT[dialogue_acts.PERSUADER_ACTS[act]]
    return options[int(rng.integers(len(options)))]


def realize_persuadee(act: int, persona: Persona, rng: np.random.Generator) -> str:
    if act >= dialogue_acts.FIRST_AMOUNT:
        dollars = dialogue_acts.AMOUNT_BINS[act - dialogue_acts.FIRST_AMOUNT]
        text = "I'll pass this time." if dollars == 0 else "Okay, I can give that much."
        return f"{_styled(text, persona, rng)} [DONATE ${dollars:.2f}]"
    options = PERSUADEE_TEXT[dialogue_acts.PERSUADEE_ACTS[act]]
    return _styled(options[int(rng.integers(len(options)))], persona, rng)


def _styled(text: str, persona: Persona, rng: np.random.Generator) -> str:
    t = persona.traits
    if t["agreeable"] < 3.0:
        text = text.split(",")[0].rstrip(".!") + "."
    if t["neurotic"] > 3.5 and rng.random() < 0.5:
        text = "Hmm, " + text[0].lower() + text[1:]
    if t["extrovert"] > 3.5 and text.endswith("."):
        text = text[:-1] + "!"
    return text
