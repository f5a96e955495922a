"""Hostile text (issue: hardened against hostile input): parsers stay linear and refuse what they cannot read."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scope_envs
from scope_envs.games.p4g import language

WORDS = ["no", "not", "won't", "donate", "give", "i'll", "sure", "ok", "you", "?", "heard of", "charity", "usually",
         "ever give", "\n", " ", "x", "[DONATE $1]", "[donate", "]", "$", "0.5", "bye"]
PAIRS = [rule for rules in (language._PERSUADER_RULES, language._PERSUADEE_RULES) for _, rule in rules
         if isinstance(rule, tuple)]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join))
def test_linear_rules_read_exactly_like_the_regex_they_replace(text):
    """``(A, B)`` means the regular expression ``A.*B``: the same verdict on any text."""
    assert PAIRS
    for first, then in PAIRS:
        regex = re.compile(f"(?:{first.pattern}).*(?:{then.pattern})")
        assert language._matches((first, then), text) == bool(regex.search(text)), (first.pattern, then.pattern)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["[DONATE", "[ donate", "]", "$1", " ", "x", "[", "DONATE]"]), max_size=12).map("".join))
def test_donate_tags_are_the_regex_findall(text):
    assert language.donate_tags(text) == re.findall(r"\[\s*DONATE\b([^\]]*)\]", text, re.IGNORECASE)


@pytest.mark.parametrize("message", ["no " * 1333, "you " * 999 + "x", "[DONATE" * 570, "[DONATE" + " " * 3990 + "x]"])
def test_worst_case_persuadee_messages_are_read(message):
    """Messages that made the old patterns backtrack: now one pass each (speed: benchmarks/hostile_text.py)."""
    env = scope_envs.make("p4g-cotrain", surface="text")
    env.reset(seed=0)
    env.step({"agent_0": "Hello! Would you like to donate?", "user_0": ""})
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": message})
    assert infos["user_0"]["errors"] <= 1 and env.agents
