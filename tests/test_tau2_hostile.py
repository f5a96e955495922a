"""tau2 against hostile input (issue: hardened against hostile input).

Deeply nested JSON, huge and non-finite numbers, expressions that make ``eval``
hang, and messages that made the NLU's regular expressions backtrack: each is an
in-game error or a tool error, never an exception out of ``step``, and the env
stays usable afterwards. Speed is not measured here (benchmarks/); a few tests
only put a generous deadline on inputs that used to take minutes or forever.
"""

import contextlib
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scope_envs
from conftest import deadline, start_on_task
from scope_envs.core.game import InGameError
from scope_envs.games.tau2 import arithmetic, nlu, text_protocol
from scope_envs.games.tau2.tools import ToolError

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau2"


def make(domain, **kw):
    return scope_envs.make("tau2-cotrain", surface="text", domain=domain, **kw)


def step(env, who, text):
    return env.step({who: text, **{b: "" for b in env.agents if b != who}})


def still_usable(env, who="agent_0"):
    """After the error the same speaker can still send a legal message, and the turn moves on."""
    obs, rew, term, trunc, infos = step(env, who, "Hello! How can I help you today?" if who == "agent_0"
                                        else "I need help with my account.")
    assert env.agents and not any(trunc.values())
    assert not infos[who]["active"], "a legal message passes the turn"


# ---------------------------------------------------------------- 1. deeply nested JSON
DEEP = '{"name":"x","arguments":' + "[" * 1500 + "]" * 1500 + "}"


@pytest.mark.parametrize("who", ["agent_0", "user_0"])
def test_deeply_nested_tool_call_is_an_in_game_error(who):
    env = make("airline")
    start_on_task(env, "syn_air_0")
    if who == "user_0":
        step(env, "agent_0", "Hello! How can I help you today?")
    obs, rew, term, trunc, infos = step(env, who, DEEP)
    assert "[error] malformed tool call: nested too deeply" in obs[who]
    assert infos[who]["errors"] == 1 and infos[who]["active"]
    still_usable(env, who)


def test_nesting_depth_is_checked_before_parsing_and_strings_do_not_count():
    ok = '{"name": "x", "arguments": ' + "[" * 31 + "]" * 31 + "}"  # 32 levels: the call object and 31 arrays
    assert text_protocol.depth(ok) == 32 and text_protocol.parse(ok)["name"] == "x"
    with pytest.raises(InGameError, match="nested too deeply"):
        text_protocol.parse('{"name": "x", "arguments": ' + "[" * 32 + "]" * 32 + "}")
    quoted = '{"name": "x", "arguments": {"s": "' + "[{" * 3000 + '\\"]"}}'
    assert text_protocol.parse(quoted)["arguments"]["s"].startswith("[{[{")
    with pytest.raises(InGameError, match="nested too deeply"):  # 100,000 brackets: one scan, no recursion
        text_protocol.parse("{" * 100_000)
    with pytest.raises(InGameError, match="invalid JSON"):  # an unterminated string hides the brackets after it
        text_protocol.parse('{"name": "' + "[" * 100)


def test_a_recursion_error_in_the_json_parser_is_still_an_in_game_error(monkeypatch):
    monkeypatch.setattr(text_protocol, "MAX_DEPTH", 10**9)  # the scan lets it through: the parser recurses
    with pytest.raises(InGameError, match="nested too deeply"):
        text_protocol.parse('{"a":' + "[" * 100_000 + "]" * 100_000 + "}")


def _depth(value) -> int:
    if isinstance(value, (list, dict)):
        return 1 + max(map(_depth, value.values() if isinstance(value, dict) else value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(alphabet='[]{}"\\ ab,:'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ a', max_size=3), inner,
                                                                  max_size=3),
    max_leaves=12)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(json_values)
def test_the_depth_scan_is_the_json_nesting_depth(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert text_protocol.depth(text) == _depth(value)


# ---------------------------------------------------------------- 2. huge and non-finite numbers
NUMBER_CASES = [
    ("airline", "send_certificate", '{"user_id": "x", "amount": 1e999}', "'amount' must be an integer, got inf"),
    ("airline", "send_certificate", '{"user_id": "x", "amount": -1e999}', "'amount' must be an integer, got -inf"),
    ("airline", "send_certificate", '{"user_id": "x", "amount": NaN}', "'amount' must be an integer, got nan"),
    ("airline", "send_certificate", '{"user_id": "x", "amount": 1' + "0" * 400 + "}", "'amount' is out of range"),
    ("airline", "send_certificate", '{"user_id": "x", "amount": -1' + "0" * 400 + ".0}",
     "'amount' must be an integer, got -inf"),
    ("airline", "book_reservation",
     '{"user_id": "x", "origin": "JFK", "destination": "SFO", "flight_type": "one_way", "cabin": "economy", '
     '"flights": [], "passengers": [], "payment_methods": [{"payment_id": "p", "amount": Infinity}], '
     '"total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}',
     "'payment_methods[0].amount' must be an integer, got inf"),
    ("telecom", "get_bills_for_customer", '{"customer_id": "x", "limit": Infinity}',
     "'limit' must be an integer, got inf"),
    ("telecom", "get_bills_for_customer", '{"customer_id": "x", "limit": -Infinity}',
     "'limit' must be an integer, got -inf"),
    ("telecom", "get_bills_for_customer", '{"customer_id": "x", "limit": NaN}', "'limit' must be an integer, got nan"),
    ("telecom", "get_bills_for_customer", '{"customer_id": "x", "limit": 9' * 1 + "9" * 3000 + "}",
     "'limit' is out of range"),
    ("telecom", "refuel_data", '{"customer_id": "x", "line_id": "y", "gb_amount": 1e999}',
     "'gb_amount' must be a finite number, got inf"),
    ("telecom", "refuel_data", '{"customer_id": "x", "line_id": "y", "gb_amount": NaN}',
     "'gb_amount' must be a finite number, got nan"),
    ("telecom", "refuel_data", '{"customer_id": "x", "line_id": "y", "gb_amount": 1' + "0" * 400 + "}",
     "'gb_amount' is out of range"),
]


@pytest.mark.parametrize("domain,tool,arguments,error", NUMBER_CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(NUMBER_CASES)])
def test_bad_numbers_are_tool_errors(domain, tool, arguments, error):
    """A well-formed call whose number is non-finite or out of range gets an ``Error: ...`` tool message (as
    upstream's argument validation), before any conversion; nothing escapes ``step``."""
    env = make(domain)
    start_on_task(env, {"airline": "syn_air_0", "telecom": "syn_tel_0"}[domain])
    obs, rew, term, trunc, infos = step(env, "agent_0", f'{{"name": "{tool}", "arguments": {arguments}}}')
    tool_message = infos["agent_0"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("Error: argument ")
    assert error in tool_message["content"]
    assert infos["agent_0"]["errors"] == 0 and env.unwrapped.game.tool_errors == 1
    still_usable(env)


def test_an_integer_too_long_to_read_is_a_malformed_call():
    """Python will not turn more than 4,300 digits into an int (and it is quadratic beyond); the call text is
    unreadable: an in-game error. (Through ``step`` the 4,000-character cap refuses it first.)"""
    with pytest.raises(InGameError, match="an integer of 5000 digits"):
        text_protocol.parse('{"name": "send_certificate", "arguments": {"amount": ' + "7" * 5000 + "}}")
    with pytest.raises(InGameError, match="an integer of 5000 digits"):
        text_protocol.parse('{"name": "x", "arguments": [-' + "7" * 5000 + "]}")
    assert text_protocol.parse('{"name": "x", "arguments": [' + "7" * 4300 + "]}")["arguments"][0] % 10 == 7


# ---------------------------------------------------------------- 3. calculate without eval
def eval_calculate(expression: str) -> str:
    """The implementation ``arithmetic.calculate`` replaced (upstream's: whitelist, eval, round)."""
    if not all(c in "0123456789+-*/(). " for c in expression):
        return "Error: Invalid characters in expression"
    try:
        with warnings.catch_warnings():  # "(1)(2)": "'int' object is not callable; perhaps you missed a comma?"
            warnings.simplefilter("ignore", SyntaxWarning)
            return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
    except Exception as e:
        return f"Error: {e}"


def safe_calculate(expression: str) -> str:
    try:
        return arithmetic.calculate(expression)
    except ToolError as e:
        return f"Error: {e}"


NUMBERS = st.one_of(st.integers(0, 999).map(str),
                    st.sampled_from(["0", "00", "007", "1.5", ".5", "2.", "0.0", "3.14159", "1.005", "2.675", "0.125"]))


SMALL_EXPONENTS = st.sampled_from(["0", "1", "2", "3", "-1", "-2", "0.5", "(1/3)", "(-1)", "(0)", "-0.5"])


def expressions(depth: int):
    """Random arithmetic over small numbers, bounded so that eval itself is fast (powers take small exponents,
    and nesting is at most ``depth``)."""
    if depth == 0:
        return NUMBERS
    sub = expressions(depth - 1)
    return st.one_of(
        NUMBERS,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "//", " + ", " / ", " * ", " - "]), sub).map("".join),
        st.tuples(sub, st.sampled_from(["**", " ** "]), SMALL_EXPONENTS).map("".join),
        sub.map(lambda e: f"({e})"), sub.map(lambda e: f"-{e}"), sub.map(lambda e: f"+{e}"),
        sub.map(lambda e: f" {e}"))


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(expressions(4))
def test_safe_calculate_matches_eval_on_arithmetic(expression):
    assert safe_calculate(expression) == eval_calculate(expression)


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(st.one_of(st.text(alphabet="0123456789+-*/(). ", max_size=14),
                 st.lists(st.sampled_from(["1", "0", "9", "2.5", ".", "...", "(", ")", "()", "+", "-", "*", "/",
                                           "//", " ", "0/0", "1/0", "0**-1"]), max_size=9).map("".join))
       .filter(lambda e: "**" not in e.replace("0**-1", "")))
def test_safe_calculate_matches_eval_on_character_soup(expression):
    """Anything the whitelist admits (syntax errors, division by zero, ``()``, ``...``, calls) gets eval's
    answer and eval's error text; ``**`` only in bounded form (random ``**`` can make eval run forever)."""
    assert safe_calculate(expression) == eval_calculate(expression)


def test_an_expression_eval_never_finishes_is_refused_at_once():
    """``9**9**9`` (370 million digits: eval does not return in any useful time, and no signal interrupts it)
    is refused before it is computed. In a child process, so that a regression fails the test instead of
    hanging the run."""
    code = ("from scope_envs.games.tau2.arithmetic import calculate\n"
            "try:\n    calculate('9**9**9')\nexcept Exception as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "expression too large to evaluate", out.stderr[-2000:]


@pytest.mark.parametrize("expression,expected", [
    ("2**2**30", "Error: expression too large to evaluate"),
    ("2**2**20", "Error: expression too large to evaluate"),
    (("7" * 3000 + "*") * 3 + "7" * 3000, "Error: expression too large to evaluate"),  # ~39,900 bits
    ("(" * 100 + "1" + ")" * 100, "1.0"),
    ("1+" * 1999 + "1", "2000.0"),
    ("-" * 3990 + "1", "Error: expression too large to evaluate"),  # deeper than the parser goes: eval fails too
    ("2**-1", "0.5"),
    ("(-8)**(1/3)", "Error: float() argument must be a string or a real number, not 'complex'"),
    ("10**400/10**399", "10.0"),
    ("2**32767//2**32765", "4.0"),
    ("1**(2**32767-1)", "1.0"),
    ("1/0", "Error: division by zero"),
    ("2.5//0", "Error: float floor division by zero"),
    ("(1)(2)", "Error: 'int' object is not callable"),
    ("  12.5 * 4 ", "50.0"),
    ("1e3", "Error: Invalid characters in expression"),
])
def test_calculate_hostile_and_edge_expressions(expression, expected):
    with deadline(5):
        assert safe_calculate(expression) == expected
    if "too large" not in expected:
        assert eval_calculate(expression) == expected, "the same answer as upstream's eval"


def test_calculate_tool_call_that_would_hang_is_a_tool_error_and_the_env_goes_on():
    env = make("airline")
    start_on_task(env, "syn_air_0")
    with deadline(5):
        obs, rew, term, trunc, infos = step(env, "agent_0", '{"name": "calculate", "arguments": {"expression": '
                                                            '"2**2**26"}}')
    assert infos["agent_0"]["messages"][-1]["content"] == "Error: expression too large to evaluate"
    obs, *_, infos = step(env, "agent_0", '{"name": "calculate", "arguments": {"expression": "(100 - 15) * 2"}}')
    assert infos["agent_0"]["messages"][-1]["content"] == "170.0"
    still_usable(env)


# ---------------------------------------------------------------- 4. linear text parsing
# the regular expressions the linear readers replaced, verbatim
OLD_DENY = re.compile(r"(\b(policy|policies)\b.*\b(not|cannot|can't|unable|doesn't|does not|won't)\b|"
                      r"\b(not|cannot|can't|unable|doesn't|does not|won't)\b.*\b(policy|policies|allowed|permitted|"
                      r"eligible)\b|\bnot eligible\b|\bnot possible\b|\bi(?: am|'m)? (?:unable|not able) to\b|"
                      r"\bi cannot\b|\bi can't\b|\bunfortunately\b)")
OLD_TRANSFER = re.compile(r"transfer(?:ring|red)?\b.*\b(human|agent|representative|specialist|colleague)")
SOUP = ["policy", "policies", "not", "cannot", "can't", "can", "unable", "doesn't", "does not", "does", "won't",
        "allowed", "permitted", "eligible", "not eligible", "not possible", "i", "i am", "i'm", "able", "to",
        "unfortunately", "transfer", "transferring", "transferred", "transfers", "retransfer", "transferr", "human",
        "humans", "agent", "representative", "specialist", "colleague", "\n", ",", "'", "-", "x", "?", ""]


@settings(max_examples=1000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(SOUP), max_size=12), st.sampled_from([" ", "", "_", ".", " \n"]))
def test_linear_readers_give_the_regex_verdict(words, sep):
    text = sep.join(words)
    for low in (text, " ".join(text.lower().split())):
        assert nlu._refuses(low) == bool(OLD_DENY.search(low)), low
        assert nlu._then(*nlu._TRANSFER, low) == bool(OLD_TRANSFER.search(low)), low


WORST = ["policy ", "not ", "unable ", "transfer ", "policies not ", "does not ", "transferring ", "i "]


@pytest.mark.parametrize("word", WORST)
def test_worst_case_agent_messages_are_read_in_linear_time(word):
    """``"policy " * 15000`` took 39 s in one step; at 100,000 characters (past the message cap, read
    directly) every reader now takes milliseconds. The deadline is a guard, generous a hundredfold."""
    env = make("telecom")
    game = start_on_task(env, "syn_tel_0")
    text = (word * (100_000 // len(word) + 1))[:100_000]
    with deadline(5):
        nlu.read_agent(game, text)
        nlu.read_user(game, text)
        with contextlib.suppress(InGameError):
            text_protocol.parse("{" + text)
    env = make("airline")
    start_on_task(env, "syn_air_0")
    obs, rew, term, trunc, infos = step(env, "agent_0", (word * 4000)[:4000])
    assert infos["agent_0"]["errors"] == 0 and not infos["agent_0"]["active"]


@pytest.mark.skipif(not (REAL / "domains" / "retail" / "tasks.json").exists(), reason="needs the real tau2 data")
def test_the_users_questions_are_answered_once_every_fact_was_said():
    env = make("retail", data_dir=str(REAL / "domains"))
    game = start_on_task(env, "19")  # communicate_info: 54.04 and 41.64
    assert game.goal.questions == ["54.04", "41.64"] and not game.answered
    step(env, "agent_0", "The first refund is $54.04.")
    assert not game.answered
    step(env, "user_0", "And the other one?")
    step(env, "agent_0", "The second is $41.64.")
    assert game.answered
