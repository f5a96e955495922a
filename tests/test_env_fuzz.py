"""Hardened against hostile input: property-based fuzzing of every registered id on both surfaces.

docs/architecture.md §4.5: bad input gets a clear error and loses nothing. For every id in
``scope_envs.registry`` and both surfaces, Hypothesis plays random legal episodes
interleaved with generated bad actions:

* programmer errors — wrong types (None, bools, ints, floats, bytes, lists,
  tuples, dicts, numpy arrays and scalars, arbitrary objects), out-of-range and
  masked acts, a non-no-op act from the agent whose turn it is not, unknown
  agent names (typos, other members of a population, non-str keys), a missing
  speaker, an ``actions`` that is not a dict, a ``step`` on a finished episode;
* model errors on the text surface — empty / whitespace-only / huge (up to
  200,000 characters) / binary (NUL bytes, latin-1 bytes, random code points,
  lone surrogates) strings, deeply nested JSON (``{"name":"x","arguments":`` +
  ``[`` * 100000 + ``]`` * 100000 + ``}``, and nestings that fit under the message
  cap), game tags with absurd contents, and for tau2 JSON tool calls to the
  real tools of ``infos[a]["tools"]`` with extreme arguments (``1e999``,
  ``-1e999``, ``NaN``, ``Infinity``, ``10**5000`` as digits, huge strings, JSON
  escapes of NUL and lone surrogates, a wrong type for each argument, missing
  and unknown arguments) and the ``calculate`` tool with pathological
  expressions (``9**9**9``, ``2**2**30``, 500 nested parentheses, ``1+`` * 3000 ...).

What is asserted, for every step:

(a) nothing but ``ValueError`` escapes ``step`` (``TypeError`` is tolerated for a
    wrong *type*); a programmer error *is* refused with a ``ValueError`` (naming
    the agent when one agent's action is at fault); on the text surface a bad
    *string* is never refused: the documented malformations (empty or
    whitespace-only, over ``max_message_chars``, NUL bytes / lone surrogates,
    malformed tau2 tool-call JSON) are in-game errors, counted in
    ``infos[speaker]["errors"]`` with the transcript untouched, and the episode
    truncates exactly when a count reaches ``max_errors``; the agent whose turn it
    is not has any string ignored (its error count does not move);
(b) every ``step`` returns within ``STEP_LIMIT_S`` (2 s) of wall time, measured in
    this process with ``time.perf_counter``; a step still running after
    ``STEP_HANG_S`` (3 s) is interrupted by ``SIGALRM`` (CPython checks signals inside
    big-int arithmetic too) and fails naming the id, surface and action; a
    per-test ``faulthandler`` watchdog dumps the stacks and exits the process if a
    test outlives its generous budget, so a hang in C code that never checks
    signals fails CI instead of blocking it;
(c) a refused call changes nothing: the speaker's (every live agent's)
    observation, the live agents, the env's generator state and the error counts
    are the same before and after it, the next legal step works, and a twin env
    that never saw the refused calls (same seeds, same accepted actions) returns
    exactly the same observations, rewards, flags and infos on every step;
(d) a string over the cap never enters the transcript: it is in no agent's
    observation and no ``infos[a]["messages"]`` content.

Tests (each env is built once per module per (id, surface, options), plus its twin,
and reset with a drawn seed):

* ``test_act_surface_hostile_play[id]``, ``test_text_surface_hostile_play[id]``
  (Hypothesis, every id): random legal play interleaved with every kind of bad
  action above;
* ``test_text_hostile_catalogue[id]`` (deterministic, every id, text): the exact
  hostile strings above, sent by each learnable role on its turn and off it;
* ``test_tau2_tool_calls_with_extreme_arguments[id]`` (Hypothesis, tau2 ids):
  generated calls to the real tools, agent's and learnable user's;
* ``test_tau2_every_tool_every_extreme_argument[id-domain]`` (deterministic): every
  tool of each domain with every extreme literal in all its arguments, and each
  argument in turn with the non-finite / out-of-range / wrong-type ones;
* ``test_tau2_calculate_pathological_expressions[id]`` (deterministic, last in the
  file, so a hang that kills the process there lets every other test report first).

The deterministic sweeps run every item and report all failures at once (each
after a failure on fresh envs); a Hypothesis test stops at its first.

Budget. By default each Hypothesis test runs ``DEFAULT_EXAMPLES`` (10) examples
per (id, surface), derandomized (``derandomize=True``, no example database, no
shrinking) so CI is deterministic; the file takes about a minute on two cores. A
longer run (still derandomized; more examples, and shrinking on so a failure is
reported minimal)::

    SCOPE_FUZZ_EXAMPLES=500 .venv/bin/python -m pytest -q tests/test_env_fuzz.py
    .venv/bin/python -m pytest -q tests/test_env_fuzz.py --fuzz-examples 500   # the same, as a pytest option
"""

from __future__ import annotations

import faulthandler
import json
import math
import os
import sys
import time
import zlib
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import ALL_IDS, Hang, deadline, realized_text

DEFAULT_EXAMPLES = 10
STEP_LIMIT_S = 2.0  # (b): the wall time one step may take
STEP_HANG_S = 3.0  # a step still running after this is interrupted (and fails: it is over the limit)
BACKSTOP_S = 240.0  # per test, plus BACKSTOP_PER_EXAMPLE_S per example: the faulthandler watchdog
BACKSTOP_PER_EXAMPLE_S = 3.0
MAX_MOVES = 40  # moves per Hypothesis example (episodes are reset as they end)
REPR_CHARS = 240

TEXT_IDS = ALL_IDS
TAU2_IDS = [i for i in ALL_IDS if i.startswith("tau2-")]
SEEDS = st.integers(0, 2**31 - 1)
WHITESPACE = " \t\n\r\x0b\x0c\xa0\u1680\u2000\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


# ---------------------------------------------------------------------------------------------- budget
def _examples(config) -> int:
    value = config.getoption("--fuzz-examples", default=None)
    if value is None:
        value = os.environ.get("SCOPE_FUZZ_EXAMPLES") or DEFAULT_EXAMPLES
    n = int(value)
    if n < 1:
        raise ValueError(f"--fuzz-examples / SCOPE_FUZZ_EXAMPLES must be a positive int, got {value!r}")
    return n


@pytest.fixture
def fuzz_examples(request) -> int:
    return _examples(request.config)


@pytest.fixture
def fuzz_settings(fuzz_examples):
    phases = [Phase.explicit, Phase.generate]
    if fuzz_examples > DEFAULT_EXAMPLES:  # the long run may spend its time shrinking a failure
        phases.append(Phase.shrink)
    return settings(
        max_examples=fuzz_examples,
        deadline=None,  # (b) is checked per step, by hand
        derandomize=True,
        database=None,
        phases=phases,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.large_base_example],
    )


def _stderr_fd(config):
    """The real stderr (pytest's faulthandler plugin keeps a dup of it), not the captured one."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        return config.stash[fault_handler_stderr_fd_key]
    except Exception:
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else 2


@pytest.fixture(autouse=True)
def _hang_backstop(request, fuzz_examples):
    """Last resort for a hang that SIGALRM cannot interrupt: dump every stack and exit the process."""
    faulthandler.dump_traceback_later(BACKSTOP_S + BACKSTOP_PER_EXAMPLE_S * fuzz_examples, exit=True,
                                      file=_stderr_fd(request.config))
    yield
    faulthandler.cancel_dump_traceback_later()


# ---------------------------------------------------------------------------------------------- reprs and diffs
def _short(x, n: int = REPR_CHARS) -> str:
    """A bounded repr (huge strings, 10**5000, nested containers all stay printable)."""
    if isinstance(x, str):
        r = repr(x[: n + 1])
        return r if len(x) <= n else f"{r[:n]}... (a str of {len(x)} chars)"
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 256:
        return f"<int of {x.bit_length()} bits>"
    if isinstance(x, dict):
        r = "{" + ", ".join(f"{_short(k, 40)}: {_short(v, n)}" for k, v in list(x.items())[:8]) + "}"
    elif isinstance(x, (list, tuple)) and len(x) <= 8:
        r = type(x).__name__ + "(" + ", ".join(_short(v, 60) for v in x) + ")"
    else:
        try:
            r = repr(x)
        except Exception:
            r = f"<{type(x).__name__}, unprintable>"
    return r if len(r) <= n else f"{r[:n]}... ({len(r)} chars)"


def _diff(a, b, path: str = "") -> str | None:
    """Where ``a`` and ``b`` differ (None when equal): dicts, sequences, arrays (NaN equal to NaN), scalars."""
    if type(a) is type(b) and isinstance(a, (dict, list, tuple, str, int, float)):
        try:  # the fast path: plain equal data (arrays inside make == ambiguous: then walk it)
            if a == b:
                return None
        except (ValueError, TypeError):
            pass
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(map(str, a))} != {sorted(map(str, b))}"
        for k in a:
            d = _diff(a[k], b[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape or x.dtype.kind != y.dtype.kind:
            return f"{path}: array {x.dtype}{x.shape} != {y.dtype}{y.shape}"
        same = np.array_equal(x, y, equal_nan=True) if x.dtype.kind in "fc" else np.array_equal(x, y)
        return None if same else f"{path}: {_short(x)} != {_short(y)}"
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    try:
        same = bool(a == b) and type(a) is type(b)
    except Exception:
        same = False
    return None if same else f"{path}: {_short(a)} != {_short(b)}"


# ---------------------------------------------------------------------------------------------- hostile values
def _pow10(k: int) -> int:
    return 10**k


# act surface: not an int act index at all (ValueError, or TypeError)
WRONG_TYPES_ACT = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0, 1.0, 1e300]),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.lists(st.integers(-2, 30), max_size=3),
    st.tuples(st.integers(0, 3)),
    st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
    st.complex_numbers(max_magnitude=10),
    st.sampled_from(["np.array([1])", "np.array([[0, 1]])", "np.array(1.0)", "np.float32(1)", "np.float64(nan)",
                     "np.bool_(True)", "np.array(True)", "np.array([])", "np.array(None, dtype=object)",
                     "np.array('1')", "np.array([np.nan])", "np.str_('1')", "np.bytes_(b'1')", "object()",
                     "set()", "frozenset({1})", "bytearray(b'1')", "Ellipsis", "int"]).map(
        lambda src: eval(src, {"np": np, "nan": float("nan")})),
)

# text surface: not a str (ValueError, or TypeError)
WRONG_TYPES_TEXT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.binary(max_size=20),
    st.binary(max_size=20).map(bytearray),
    st.lists(st.text(max_size=10), max_size=3),
    st.tuples(st.text(max_size=10)),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    st.sampled_from(["{'name': 'calculate', 'arguments': {'expression': '1+1'}}", "np.array(['hi'])",
                     "np.array('hi')", "np.bytes_(b'hi')", "np.array([1, 2])", "np.float64(1)", "np.int64(3)",
                     "memoryview(b'hi')", "object()", "str", "Ellipsis"]).map(
        lambda src: eval(src, {"np": np})),
)

# unknown agent keys (plus, at draw time, the population members that are not live)
UNKNOWN_AGENTS = st.one_of(
    st.sampled_from(["agent_1", "user_9", "user_", "user_-1", "AGENT_0", " agent_0", "agent_0 ", "agent_0\x00",
                     "", "agent", "env", "__class__", "user_0\n"]),
    st.text(max_size=10),
    st.integers(-2, 2**70),
    st.none(),
    st.floats(),
    st.binary(max_size=6),
    st.tuples(st.text(max_size=4)),
    st.booleans(),
)

# not a dict of actions at all
NOT_A_DICT = st.sampled_from([
    "None", "0", "1.5", "'agent_0'", "b'agent_0'", "[]", "[0]", "[('agent_0', 1)]", "(('agent_0', 1),)",
    "{'agent_0'}", "object()", "np.array([1])", "np.zeros(0)", "True",
])


def _not_a_dict(src: str):
    return eval(src, {"np": np})


# out-of-range acts: the ints are built lazily so Hypothesis never prints 10**5000
def _out_of_range(n: int):
    named = {
        "-1": lambda: -1, "n": lambda: n, "n+1": lambda: n + 1, "2**31": lambda: 2**31, "2**63": lambda: 2**63,
        "-2**63-1": lambda: -(2**63) - 1, "10**100": lambda: 10**100, "10**5000": lambda: _pow10(5000),
        "-10**5000": lambda: -_pow10(5000), "np.int64(-1)": lambda: np.int64(-1),
        "np.uint64(2**64-1)": lambda: np.uint64(2**64 - 1), "np.int8(-128)": lambda: np.int8(-128),
        "np.array(n)": lambda: np.array(n), "np.array(-1)": lambda: np.array(-1),
        "np.int32(n)": lambda: np.int32(n),
    }
    return st.one_of(
        st.integers(max_value=-1),
        st.integers(min_value=n),
        st.sampled_from(sorted(named)).map(lambda k: (k, named[k]())),
    )


def _unwrap(v):
    """Values from ``_out_of_range`` may be ``(label, value)`` pairs."""
    return v[1] if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) else v


# bad strings as small recipes (Hypothesis prints the recipe, not a 200k-character string)
UNITS = ["x", "a ", "{", "[", "}", "1+", "you ", "[DONATE $", "\u00e9", "\U0001F600", '{"name":', "\\", '"',
         "EDIT ", "###STOP###", "\u0130", "\ufb03"]
NEST_KINDS = ["call-list", "call-object", "call-open", "bare-list", "bare-object", "fenced-call-list"]


def _nested(kind: str, depth: int) -> str:
    lists = "[" * depth + "]" * depth
    objects = '{"a":' * depth + "1" + "}" * depth
    if kind == "call-list":
        return '{"name":"x","arguments":' + lists + "}"
    if kind == "call-object":
        return '{"name":"x","arguments":' + objects + "}"
    if kind == "call-open":
        return '{"name":"x","arguments":' + "[" * depth
    if kind == "bare-list":
        return lists
    if kind == "bare-object":
        return objects
    return "```json\n" + '{"name":"x","arguments":' + lists + "}\n```"


def _build(recipe) -> str:
    kind = recipe[0]
    if kind == "empty":
        return ""
    if kind in ("whitespace", "text", "literal"):
        return recipe[1]
    if kind == "repeat":
        unit, length = recipe[1], recipe[2]
        return (unit * (length // len(unit) + 1))[:length]
    if kind == "latin1":
        return recipe[1].decode("latin-1")
    if kind == "codepoints":
        return "".join(map(chr, recipe[1]))
    if kind == "with_nul":
        return recipe[1] + "\x00" + recipe[2]
    if kind == "with_surrogate":
        return recipe[1] + chr(recipe[2]) + recipe[3]
    if kind == "nested":
        return _nested(recipe[1], recipe[2])
    raise AssertionError(f"unknown recipe {recipe!r}")


def _string_recipes(cap: int):
    return st.one_of(
        st.tuples(st.just("empty")),
        st.tuples(st.just("whitespace"), st.text(WHITESPACE, min_size=1, max_size=40)),
        st.tuples(st.just("repeat"), st.sampled_from(UNITS),
                  st.one_of(st.integers(cap - 2, cap + 2), st.integers(cap + 1, 200_000), st.just(200_000))),
        st.tuples(st.just("latin1"), st.binary(min_size=1, max_size=200)),
        st.tuples(st.just("codepoints"), st.lists(st.integers(0, 0x10FFFF), min_size=1, max_size=60)),
        st.tuples(st.just("with_nul"), st.text(max_size=20), st.text(max_size=20)),
        st.tuples(st.just("with_surrogate"), st.text(max_size=20), st.integers(0xD800, 0xDFFF), st.text(max_size=20)),
        st.tuples(st.just("nested"), st.sampled_from(NEST_KINDS),
                  st.one_of(st.integers(1, 2000), st.integers(1, 100_000), st.just(100_000))),
        st.tuples(st.just("text"), st.text(max_size=120)),
        st.tuples(st.just("literal"), st.sampled_from(HOSTILE_MESSAGES)),
    )


def _nul_or_surrogate(s: str) -> bool:
    return "\x00" in s or any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _tau2_malformed_call(s: str) -> bool:
    """True when the tau2 text protocol documents ``s`` as a malformed tool call (an in-game error)."""
    body = s.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:].strip()
    if not body.startswith("{"):
        return False
    try:
        call = json.loads(body)
    except json.JSONDecodeError:
        return True
    except (RecursionError, ValueError):
        return False  # too deep (or too big) for our own check to say: no claim
    return not isinstance(call, dict) or not isinstance(call.get("name"), str) or bool(set(call) - {"name", "arguments"})


def _must_be_in_game_error(s: str, cap: int, game: str) -> bool:
    """The malformations the README / docs/architecture.md §4.5 document as in-game errors for the speaker."""
    if len(s) > cap or not s.strip() or _nul_or_surrogate(s):
        return True
    return game == "tau2" and _tau2_malformed_call(s)


# messages with game syntax and absurd contents, all under the default cap
HOSTILE_MESSAGES = [
    "[DONATE $1e999]", "[DONATE $NaN]", "[DONATE $inf]", "[DONATE $-1]", "[DONATE $" + "9" * 3980 + "]",
    "[DONATE $0." + "0" * 3980 + "1]", "[DONATE $" + "1" * 400 + "." + "5" * 400 + "]", "[DONATE" + " " * 3990,
    "[DONATE $0.50]" * 250, "[donate" * 500, "[" * 3999, "]" * 3999,
    "EDIT " + "x" * 3990, "EDIT " + "\u0130" * 1000, "EDIT  COMBINED", "EDIT " * 799, "SUBMIT" * 600,
    "you " * 999, "?" * 3999, "you" * 1333 + "?", "hello " * 666, "i'll take " * 399, "\\" * 3999,
    "###STOP###" * 399, "###TRANSFER###", "###OUT-OF-SCOPE###", "```json\n{}\n```", "```" * 1333, "```json",
    "{", "}", "{}", "[]", "null", "1e999", "NaN", '{"name": null}', '{"name": 1e999}', '{"name": ["x"]}',
    '{"name": "x", "arguments": {}, "extra": 1}', '{"arguments": {}}', '{"name": "x"} trailing',
    '{"name": "x", "arguments": NaN}', '{"name": "x", "arguments": "' + "a" * 3900 + '"}',
    '{"name": "' + "n" * 3900 + '", "arguments": {}}', '{"name": "\\u0000", "arguments": {}}',
    '{"name": "\\ud800", "arguments": {"\\udfff": "\\ud800"}}', '{"name": "x", "name": "y"}',
    '{"name": "x", "arguments": ' + "1" * 3900 + "}", '{"name": "x", "arguments": 1' + "0" * 3900 + "}",
    '{"name": "transfer_to_human_agents", "arguments": {"summary": ' + '"' + "s" * 3900 + '"}}',
]


# tau2 tool calls: extreme JSON literals for arguments, by label (the literal text is built at use)
EXTREME = {
    "1e999": "1e999", "-1e999": "-1e999", "NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity",
    "10**5000": "1" + "0" * 5000, "10**3900": "1" + "0" * 3900, "-10**400": "-1" + "0" * 400,
    "10**400.5": "1" + "0" * 400 + ".5", "1e-999": "1e-999", "-0": "-0", "-0.0": "-0.0", "max": "1.7976931348623157e308",
    "denorm": "5e-324", "2**63": str(2**63), "-2**63-1": str(-(2**63) - 1), "2**53+1": str(2**53 + 1), "0.1": "0.1",
    "1.0": "1.0", "0": "0", "-1": "-1", "true": "true", "false": "false", "null": "null", "[]": "[]", "{}": "{}",
    '""': '""', '" "': '" "', "str3900": json.dumps("x" * 3900), "str200k": json.dumps("x" * 200_000),
    "nul": '"\\u0000"', "surrogate": '"\\ud800"', "surrogates": '"\\udfff\\ud800"', "nested50": "[" * 50 + "]" * 50,
    "nested1900": "[" * 1900 + "]" * 1900, "[1e999]": "[1e999]", "[NaN]": "[NaN]", '{"a": NaN}': '{"a": NaN}',
    "[{}]": "[{}]", '[""]': '[""]', "[null]": "[null]", '["x"]': '["x"]', "obj": '{"first_name": 1e999, "x": null}',
    "id-like": '"#W0000000"', "user-like": '"sara_doe_496"', "res-like": '"ZFA04Y"',
    "phone": '"555-123-4567"', "date": '"2024-05-15"', "neg-str": '"-1e999"', "bool-str": '"true"',
}
EXTREME_LABELS = sorted(EXTREME)
# the per-argument sweep: non-finite and out-of-range numbers, and one value of each other JSON type
PER_ARGUMENT_LABELS = ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "10**3900", "10**400.5", "-10**400", "2**63",
                       "-0.0", "denorm", "true", "null", "[]", "{}", "str3900", "nested50", "nul", "surrogate", "obj"]
CALC_EXPRESSIONS = [
    "9**9**9", "2**2**30", "(" * 500 + "1" + ")" * 500, "1+" * 3000 + "1", "1+" * 1990 + "1", "9**999999",
    "-" * 3900 + "1", "1" * 3990, "1/0", "0**-1", "(((", ")", "", " ", "2**-1", "10**10**10", "99**99**9",
    "1" + "0" * 3900 + "**2", "(1)" * 1300, "((" * 100 + "2" + "))" * 100 + "**9**9", "1e999", "nan", "9" * 400 + ".",
]


def _tool_calls(tools: list[dict]):
    """Recipes of tool calls to the real tools in ``tools`` (OpenAI function schemas), with extreme arguments."""
    names = [t["function"]["name"] for t in tools] or ["calculate"]
    params = {t["function"]["name"]: list(t["function"]["parameters"]["properties"]) for t in tools}
    has_calc = "calculate" in params

    @st.composite
    def recipe(draw):
        name = draw(st.sampled_from(names))
        args = []
        for p in params.get(name, []):
            choice = draw(st.sampled_from(["extreme", "extreme", "missing", "typed"]))
            if choice == "extreme":
                args.append((p, draw(st.sampled_from(EXTREME_LABELS))))
            elif choice == "typed":
                args.append((p, "id-like"))
        if draw(st.booleans()):
            args.append((draw(st.sampled_from(["x", "", "__class__", "expression", "user_id"])),
                         draw(st.sampled_from(EXTREME_LABELS))))
        calc = None
        if has_calc and name == "calculate" and draw(st.booleans()):
            calc = draw(st.one_of(st.sampled_from(CALC_EXPRESSIONS),
                                  st.text(alphabet="0123456789+-*/(). ", max_size=40)))
        form = draw(st.sampled_from(["call", "call", "call", "fenced", "arguments-literal", "no-arguments",
                                     "name-literal"]))
        literal = draw(st.sampled_from(EXTREME_LABELS))
        return name, tuple(args), calc, form, literal

    return recipe()


def _call_text(recipe) -> str:
    name, args, calc, form, literal = recipe
    if calc is not None:
        arguments = json.dumps({"expression": calc})
    else:
        arguments = "{" + ", ".join(f"{json.dumps(k)}: {EXTREME[v]}" for k, v in args) + "}"
    if form == "arguments-literal":
        arguments = EXTREME[literal]
    text = '{"name": ' + (EXTREME[literal] if form == "name-literal" else json.dumps(name))
    text += "}" if form == "no-arguments" else ', "arguments": ' + arguments + "}"
    return f"```json\n{text}\n```" if form == "fenced" else text


# legal messages: what a model would plausibly send (any may still be an in-game error)
TEXT_POOL = {
    "p4g": ["Hello!", "Would you donate? [DONATE $0.50]", "bye", "Hi! Would you consider donating to Save the "
            "Children?", "Yes, sure. [DONATE $0.50]", "No thanks. [DONATE $0]", "I see. [DONATE $2]", "Okay."],
    "cooperbench": ["Hello!", "SUBMIT", "WAIT", "I'm done with my edits.", "Which regions do you need to touch?",
                    "Not sure yet, sorry.", "EDIT nowhere", "bye"],
    "tau2": ["Hello! How can I help you today?", "Could you give me your user id?", "bye", "###STOP###",
             "Thanks, that's all.", '{"name": "transfer_to_human_agents", "arguments": {"summary": "help"}}',
             '{"name": "get_user_details", "arguments": {"user_id": "sara_doe_496"}}',
             '{"name": "calculate", "arguments": {"expression": "2 + 2"}}', "My user id is sara_doe_496."],
}


def text_pool(game: str, env) -> list[str]:
    """The game's legal messages: its own above, or a game outside the package's acts as its language writes them."""
    return TEXT_POOL.get(game) or list(realized_text(env))


# ---------------------------------------------------------------------------------------------- the harness
_ENVS: dict[tuple, object] = {}


def _env(env_id: str, surface: str, slot: int, **kwargs):
    """One env per (id, surface, kwargs, slot), built once per module and reset with a drawn seed."""
    key = (env_id, surface, tuple(sorted(kwargs.items())), slot)
    if key not in _ENVS:
        import scope_envs

        _ENVS[key] = scope_envs.make(env_id, surface=surface, **kwargs)
    return _ENVS[key]


class Fuzz:
    """An env under fuzz and its twin, which gets exactly the accepted actions (c)."""

    def __init__(self, env_id: str, surface: str, **kwargs):
        self.id, self.surface, self.game = env_id, surface, env_id.split("-")[0]
        self.kwargs = kwargs
        self.env = _env(env_id, surface, 0, **kwargs)
        self.twin = _env(env_id, surface, 1, **kwargs)
        self.cap = getattr(self.env.unwrapped, "max_message_chars", 4000)
        self.max_errors = getattr(self.env.unwrapped, "max_errors", 3)
        self.seed = None
        self.moves = 0
        self.obs = self.infos = None

    # -- bookkeeping
    def broken(self):
        """After a failure the env's state is suspect: build fresh ones for the next test."""
        for slot in (0, 1):
            _ENVS.pop((self.id, self.surface, tuple(sorted(self.kwargs.items())), slot), None)

    def fail(self, message: str):
        self.broken()
        raise AssertionError(message)

    def where(self, kind: str, actions, recipe=None) -> str:
        extra = f" recipe={_short(recipe, 160)}" if recipe is not None else ""
        made = f" {self.kwargs}" if self.kwargs else ""
        return (f"{self.id} [{self.surface}]{made} seed={self.seed} move={self.moves} kind={kind}{extra} "
                f"actions={_short(actions)}")

    def speaker(self) -> str | None:
        return next((a for a in self.env.agents if self.infos[a].get("active")), None)

    def history(self) -> int | None:
        game = getattr(self.env.unwrapped, "game", None)
        return len(game.history) if hasattr(game, "history") else None

    def snapshot(self) -> dict:
        u = self.env.unwrapped
        snap = {"agents": list(self.env.agents)}
        if self.env.agents and hasattr(u, "_observe"):
            snap["obs"] = u._observe()
        if self.env.agents:
            snap["state"] = self.env.state()
        if hasattr(u, "_rng"):
            snap["rng"] = u._rng.bit_generator.state
        if hasattr(u, "_error_count"):
            snap["errors"] = dict(u._error_count)
        snap["history"] = self.history()
        return snap

    # -- reset
    def reset(self, seed: int):
        self.seed = seed
        outs = []
        for env in (self.env, self.twin):
            t0 = time.perf_counter()
            try:
                with deadline(STEP_HANG_S):
                    outs.append(env.reset(seed=seed, options={"reset_schedule": True}))
            except Hang:
                self.fail(f"reset did not return within {STEP_HANG_S}s: {self.id} [{self.surface}] seed={seed}")
            if time.perf_counter() - t0 > STEP_LIMIT_S:
                self.fail(f"reset took {time.perf_counter() - t0:.2f}s: {self.id} [{self.surface}] seed={seed}")
        d = _diff(outs[0], outs[1])
        if d:
            self.fail(f"twin envs differ right after reset(seed={seed}) ({d}): {self.id} [{self.surface}]")
        self.obs, self.infos = outs[0]

    # -- one step
    def step(self, actions, kind: str, expect: str, name=None, type_ok: bool = False, recipe=None,
             senders: dict | None = None):
        """Step with ``actions``; ``expect`` is "refuse" (a programmer error: ValueError) or "accept".

        ``senders`` maps agents to the strings they sent (text surface), for the checks of (a) and (d).
        """
        self.moves += 1
        before = self.snapshot() if expect == "refuse" else None  # (c): only a refusal must leave it as it was
        history = self.history()
        prev_infos = self.infos
        t0 = time.perf_counter()
        try:
            with deadline(STEP_HANG_S):
                out = self.env.step(actions)
        except Hang:
            self.fail(f"step hung: still running after {STEP_HANG_S}s (interrupted by SIGALRM): "
                      f"{self.where(kind, actions, recipe)}")
        except (ValueError, TypeError) as e:
            elapsed = time.perf_counter() - t0
            where = self.where(kind, actions, recipe)
            if elapsed > STEP_LIMIT_S:
                self.fail(f"step took {elapsed:.2f}s (limit {STEP_LIMIT_S}s) to refuse: {where}")
            if expect != "refuse":
                self.fail(f"step raised {type(e).__name__} for an action that must be accepted "
                          f"({'a bad string is an in-game error, not an exception' if senders else 'a legal action'}):"
                          f" {where}: {_short(e, 400)}")
            if isinstance(e, TypeError) and not type_ok:
                self.fail(f"step raised TypeError, not ValueError, for a non-type error: {where}: {_short(e, 400)}")
            if name is not None and isinstance(e, ValueError) and name not in str(e):
                self.fail(f"the ValueError does not name the agent {name!r}: {where}: {_short(e, 400)}")
            d = _diff(before, self.snapshot())
            if d:
                self.fail(f"a refused step changed the env ({d}): {where}")
            return None
        except Exception as e:
            self.fail(f"{type(e).__name__} escaped step (only ValueError may): {self.where(kind, actions, recipe)}: "
                      f"{_short(e, 400)}")
        elapsed = time.perf_counter() - t0
        where = self.where(kind, actions, recipe)
        if elapsed > STEP_LIMIT_S:
            self.fail(f"step took {elapsed:.2f}s (limit {STEP_LIMIT_S}s): {where}")
        if expect == "refuse":
            self.fail(f"a programmer error was accepted (expected ValueError): {where}")
        # (c) the twin, which never saw the refused calls, must agree exactly
        try:
            with deadline(STEP_HANG_S):
                twin_out = self.twin.step(actions)
        except BaseException as e:  # the env accepted it: the twin must too
            self.fail(f"the twin env raised {type(e).__name__} on an action the env accepted: {where}: {_short(e)}")
        d = _diff(out, twin_out)
        if d:
            self.fail(f"the env and its twin (same seeds, same accepted actions) diverged ({d}): {where}")
        obs, rewards, terms, truncs, infos = out
        self.obs, self.infos = obs, infos
        if self.surface == "text":
            self._check_text(history, prev_infos, out, senders or {}, where)
        return out

    def _check_text(self, history, prev_infos, out, senders, where):
        obs, rewards, terms, truncs, infos = out
        for a, info in infos.items():
            if info["errors"] < prev_infos[a]["errors"]:
                self.fail(f"{a}'s error count went down ({prev_infos[a]['errors']} -> {info['errors']}): {where}")
            if info["errors"] >= self.max_errors and not truncs[a]:
                self.fail(f"{a} has {info['errors']} errors (max_errors={self.max_errors}) and the episode "
                          f"was not truncated: {where}")
        speaker = next((a for a in prev_infos if prev_infos[a].get("active")), None)
        for agent, s in senders.items():
            if len(s) > self.cap:  # (d) never in the transcript, nor in any observation
                for a, info in infos.items():
                    for m in info.get("messages", []):
                        if isinstance(m.get("content"), str) and s in m["content"]:
                            self.fail(f"a {len(s)}-char message (over the cap {self.cap}) entered "
                                      f"infos[{a!r}]['messages']: {where}")
                    if s in str(obs[a]):
                        self.fail(f"a {len(s)}-char message (over the cap {self.cap}) entered {a}'s observation:"
                                  f" {where}")
            if agent != speaker:  # the agent whose turn it is not: its text is ignored
                if infos[agent]["errors"] != prev_infos[agent]["errors"]:
                    self.fail(f"{agent}'s string was counted as an error although it was not its turn: {where}")
            elif _must_be_in_game_error(s, self.cap, self.game):
                e0, e1 = prev_infos[agent]["errors"], infos[agent]["errors"]
                if e1 != e0 + 1:
                    self.fail(f"a malformed message was not counted as an in-game error "
                              f"(infos[{agent!r}]['errors'] {e0} -> {e1}): {where}")
                for a in infos:
                    d = _diff(prev_infos[a].get("messages"), infos[a].get("messages"))
                    if d:
                        self.fail(f"a malformed message changed infos[{a!r}]['messages'] ({d}): {where}")
                if history != self.history():
                    self.fail(f"a malformed message entered the game's history: {where}")
                if all(truncs.values()) != (e1 >= self.max_errors):
                    self.fail(f"after {e1} in-game errors (max_errors={self.max_errors}) truncations are "
                              f"{truncs}: {where}")

    # -- legal play
    def legal_actions(self, data) -> tuple[dict, dict]:
        speaker = self.speaker()
        actions, senders = {}, {}
        for a in self.env.agents:
            if self.surface == "act":
                mask = self.obs[a]["action_mask"]
                actions[a] = int(data.draw(st.sampled_from(np.flatnonzero(mask).tolist()), label=f"{a} act"))
            else:
                pool = text_pool(self.game, self.env)
                text = data.draw(st.sampled_from(pool), label=f"{a} text") if a == speaker else ""
                actions[a] = senders[a] = text
        return actions, senders

    def legal_step(self, data, kind="legal"):
        actions, senders = self.legal_actions(data)
        return self.step(actions, kind, "accept", senders=senders)

    def ensure_live(self, data):
        if not self.env.agents:
            self.reset(data.draw(SEEDS, label="reset seed"))


class Collect:
    """For the deterministic sweeps: run every item, collect each failure (on fresh envs), fail once at the end."""

    def __init__(self, f: Fuzz):
        self.f = f
        self.failures: list[str] = []

    @contextmanager
    def item(self):
        try:
            yield
        except AssertionError as e:
            self.failures.append(str(e).splitlines()[0])
            old = self.f  # its envs were evicted by Fuzz.fail: the next item plays on fresh ones
            self.f = Fuzz(old.id, old.surface, **old.kwargs)
            self.f.reset(old.seed if old.seed is not None else 0)

    def check(self):
        if self.failures:
            shown = "\n".join(f"  - {m[:700]}" for m in self.failures[:40])
            more = f"\n  ... and {len(self.failures) - 40} more" if len(self.failures) > 40 else ""
            raise AssertionError(f"{len(self.failures)} hostile input(s) failed:\n{shown}{more}")


# ---------------------------------------------------------------------------------------------- moves
def _move(f: Fuzz, data, kind: str):
    """Build one move of ``kind`` and step it."""
    speaker = f.speaker()
    others = [a for a in f.env.agents if a != speaker]
    legal, senders = f.legal_actions(data)
    if kind == "legal":
        return f.step(legal, kind, "accept", senders=senders)
    if kind == "wrong_type":
        agent = data.draw(st.sampled_from(f.env.agents), label="agent")
        bad = data.draw(WRONG_TYPES_ACT if f.surface == "act" else WRONG_TYPES_TEXT, label="wrong type")
        return f.step({**legal, agent: bad}, kind, "refuse", name=agent, type_ok=True)
    if kind == "out_of_range":
        agent = data.draw(st.sampled_from(f.env.agents), label="agent")
        n = f.env.action_space(agent).n
        bad = _unwrap(data.draw(_out_of_range(n), label="act"))
        return f.step({**legal, agent: bad}, kind, "refuse", name=agent)
    if kind == "masked":
        mask = np.asarray(f.obs[speaker]["action_mask"]).astype(bool)
        if mask.all():
            return f.step(legal, "legal", "accept")
        act = data.draw(st.sampled_from(np.flatnonzero(~mask).tolist()), label="masked act")
        return f.step({**legal, speaker: act}, kind, "refuse", name=speaker)
    if kind == "off_turn":  # a non-no-op act from the agent whose turn it is not
        if not others:
            return f.step(legal, "legal", "accept")
        agent = data.draw(st.sampled_from(others), label="agent")
        n = f.env.action_space(agent).n
        act = data.draw(st.integers(1, n - 1), label="act")
        return f.step({**legal, agent: act}, kind, "refuse", name=agent)
    if kind == "unknown_agent":
        extra = [a for a in f.env.possible_agents if a not in f.env.agents]
        key = data.draw(st.one_of(UNKNOWN_AGENTS, st.sampled_from(extra)) if extra else UNKNOWN_AGENTS,
                        label="key")
        if key in f.env.agents:
            return f.step(legal, "legal", "accept", senders=senders)
        value = data.draw(st.sampled_from([0, 1, "hello", None]), label="value")
        return f.step({**legal, key: value}, kind, "refuse")
    if kind == "missing_speaker":
        return f.step({a: v for a, v in legal.items() if a != speaker}, kind, "refuse", name=speaker)
    if kind == "not_a_dict":
        src = data.draw(NOT_A_DICT, label="actions")
        return f.step(_not_a_dict(src), kind, "refuse", type_ok=True)
    if kind == "bad_string":  # text: the speaker sends a hostile string
        recipe = data.draw(_string_recipes(f.cap), label="string")
        s = _build(recipe)
        return f.step({**legal, speaker: s}, kind, "accept", recipe=recipe, senders={**senders, speaker: s})
    if kind == "off_turn_string":  # text: the agent whose turn it is not sends a hostile string (ignored)
        if not others:
            return f.step(legal, "legal", "accept", senders=senders)
        agent = data.draw(st.sampled_from(others), label="agent")
        recipe = data.draw(_string_recipes(f.cap), label="string")
        s = _build(recipe)
        return f.step({**legal, agent: s}, kind, "accept", recipe=recipe, senders={**senders, agent: s})
    if kind == "tool_call":  # tau2 text: a call to a real tool with extreme arguments
        tools = f.infos[speaker].get("tools") or []
        recipe = data.draw(_tool_calls(tools), label="tool call")
        s = _call_text(recipe)
        return f.step({**legal, speaker: s}, kind, "accept", recipe=recipe, senders={**senders, speaker: s})
    raise AssertionError(kind)


ACT_KINDS = ["legal"] * 4 + ["wrong_type", "out_of_range", "masked", "off_turn", "unknown_agent", "missing_speaker",
                             "not_a_dict"]
TEXT_KINDS = ["legal"] * 3 + ["wrong_type", "unknown_agent", "missing_speaker", "not_a_dict", "bad_string",
                             "bad_string", "off_turn_string"]
TAU2_TEXT_KINDS = TEXT_KINDS + ["tool_call", "tool_call"]


def _hostile_play(env_id: str, surface: str, seed: int, data):
    f = Fuzz(env_id, surface)
    f.reset((seed + zlib.crc32(env_id.encode())) % 2**31)  # derandomized draws are the same for every id
    kinds = ACT_KINDS if surface == "act" else TAU2_TEXT_KINDS if f.game == "tau2" else TEXT_KINDS
    for _ in range(data.draw(st.integers(1, MAX_MOVES), label="moves")):
        if not f.env.agents:
            if data.draw(st.booleans(), label="step the finished episode"):  # a programmer error too
                f.step({"agent_0": 0 if surface == "act" else "Hello!"}, "step_after_end", "refuse")
            f.reset(data.draw(SEEDS, label="reset seed"))
            continue
        kind = data.draw(st.sampled_from(kinds), label="kind")
        refused = _move(f, data, kind) is None
        if refused and f.env.agents:  # (c) the env still plays on
            f.legal_step(data, kind=f"legal after a refused {kind}")


# ---------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_act_surface_hostile_play(env_id, fuzz_settings):
    @fuzz_settings
    @given(seed=SEEDS, data=st.data())
    def run(seed, data):
        _hostile_play(env_id, "act", seed, data)

    run()


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_surface_hostile_play(env_id, fuzz_settings):
    @fuzz_settings
    @given(seed=SEEDS, data=st.data())
    def run(seed, data):
        _hostile_play(env_id, "text", seed, data)

    run()


def _catalogue(cap: int) -> list[tuple[str, str]]:
    """The brief's exact hostile strings, always tried (whatever the example budget)."""
    items = [
        ("empty", ""), ("space", " "), ("whitespace", "\n\t \r\x0b\x0c"), ("unicode whitespace", "\u3000\u2028\xa0"),
        ("cap", "x" * cap), ("cap+1", "x" * (cap + 1)), ("200k x", "x" * 200_000), ("200k words", "a " * 100_000),
        ("200k braces", "{" * 200_000), ("200k brackets", "[" * 200_000), ("200k emoji", "\U0001F600" * 200_000),
        ("NUL", "\x00"), ("NULs in text", "I will give\x00\x00 [DONATE $1]"), ("latin-1 bytes", bytes(range(256)).decode("latin-1")),
        ("replacement", b"\xff\xfe\xfa".decode("utf-8", errors="replace")), ("lone surrogate", "\ud800"),
        ("surrogates in text", "hello \udfff\ud800 there"), ("all planes", "".join(chr(c) for c in range(0, 0x110000, 0x1111))),
        ("nested call 100000", '{"name":"x","arguments":' + "[" * 100000 + "]" * 100000 + "}"),
        ("nested call under cap", _nested("call-list", (cap - 26) // 2)),
        ("nested objects under cap", _nested("call-object", (cap - 27) // 6)),
        ("open nesting under cap", _nested("call-open", cap - 30)),
        ("bare nesting under cap", _nested("bare-list", cap // 2)),
        ("fenced nesting under cap", _nested("fenced-call-list", (cap - 40) // 2)),
        ("1+ * 3000", "1+" * 3000 + "1"), ("1+ under cap", "1+" * ((cap - 1) // 2) + "1"),
        ("10**5000 digits", "1" + "0" * 5000),
    ]
    # nestings around the interpreter's recursion limit (where it falls depends on the caller's stack depth)
    for depth in (100, 500, 900, 950, 970, 980, 990, 1000, 1500):
        items.append((f"call x, arguments nested {depth}", _nested("call-list", depth)))
        items.append((f"transfer, summary nested {depth}", '{"name": "transfer_to_human_agents", "arguments": '
                      '{"summary": ' + "[" * depth + "]" * depth + "}}"))
    items += [(f"hostile message {i}", m) for i, m in enumerate(HOSTILE_MESSAGES)]
    for label in EXTREME_LABELS:
        items.append((f"call x({label})", '{"name": "x", "arguments": {"a": ' + EXTREME[label] + "}}"))
    return items


def _advance_until(f: Fuzz, agent_pred, data_rng) -> None:
    """Legal steps (a fixed pseudo-random policy) until a live agent satisfying ``agent_pred`` speaks."""
    for _ in range(60):
        if not f.env.agents:
            f.reset(int(data_rng.integers(2**31)))
            continue
        speaker = f.speaker()
        if speaker is not None and agent_pred(speaker):
            return
        pool = text_pool(f.game, f.env)
        actions = {a: (str(pool[int(data_rng.integers(len(pool)))]) if a == speaker else "") for a in f.env.agents}
        f.step(actions, "legal (advancing)", "accept", senders=actions)
    raise AssertionError(f"{f.id}: no turn for the wanted agent within 60 legal steps (seed {f.seed})")


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_hostile_catalogue(env_id):
    """Every catalogue string, sent by each learnable role when it speaks and by the one whose turn it is not."""
    c = Collect(Fuzz(env_id, "text"))
    rng = np.random.default_rng(0)
    c.f.reset(0)
    roles = [lambda a: a == "agent_0"]
    if len(c.f.env.possible_agents) > 1:
        roles.append(lambda a: a != "agent_0")
    for label, s in _catalogue(c.f.cap):
        for wanted in roles:
            with c.item():
                f = c.f
                _advance_until(f, wanted, rng)
                speaker = f.speaker()
                actions = {a: (s if a == speaker else "") for a in f.env.agents}
                f.step(actions, f"catalogue: {label}", "accept", senders={speaker: s})
                if f.env.agents and len(f.env.agents) > 1:  # the same string from the agent whose turn it is not
                    speaker = f.speaker()
                    pool = text_pool(f.game, f.env)
                    actions = {a: (pool[0] if a == speaker else s) for a in f.env.agents}
                    f.step(actions, f"catalogue, off turn: {label}", "accept",
                           senders={a: v for a, v in actions.items()})
    c.check()


@pytest.mark.parametrize("env_id", TAU2_IDS)
def test_tau2_tool_calls_with_extreme_arguments(env_id, fuzz_settings):
    """Calls to the real tools of ``infos[a]["tools"]`` (agent's and, when learnable, the user's phone tools)."""

    @fuzz_settings
    @given(seed=SEEDS, data=st.data())
    def run(seed, data):
        f = Fuzz(env_id, "text")
        f.reset(seed)
        for _ in range(data.draw(st.integers(1, 25), label="moves")):
            f.ensure_live(data)
            speaker = f.speaker()
            if data.draw(st.integers(0, 3), label="legal?") == 0 or not f.infos[speaker].get("tools"):
                f.legal_step(data)
                continue
            _move(f, data, "tool_call")

    run()


def _each_tool(f: Fuzz, speaker: str):
    return [t["function"]["name"] for t in f.infos[speaker].get("tools") or []]


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
@pytest.mark.parametrize("env_id", TAU2_IDS)
def test_tau2_every_tool_every_extreme_argument(env_id, domain):
    """Deterministic sweep: every tool of the domain (the agent's, and the user's when it is learnable) gets
    every extreme literal in all its arguments at once (an argument-less tool gets an unknown one)."""
    c = Collect(Fuzz(env_id, "text", domain=domain))
    rng = np.random.default_rng(1)
    c.f.reset(0)
    roles = [lambda a: a == "agent_0"]
    if len(c.f.env.possible_agents) > 1:
        roles.append(lambda a: a != "agent_0")
    for wanted in roles:
        _advance_until(c.f, wanted, rng)
        tools = {t["function"]["name"]: list(t["function"]["parameters"]["properties"])
                 for t in c.f.infos[c.f.speaker()].get("tools") or []}
        calls = []
        for name, params in tools.items():
            for label in EXTREME_LABELS:  # every argument at once
                calls.append((name, f"*={label}", [(p, EXTREME[label]) for p in params or ["x"]]))
            for p in params if len(params) > 1 else []:  # each argument first (checked first), the others plain
                for label in PER_ARGUMENT_LABELS:
                    calls.append((name, f"{p}={label}", [(p, EXTREME[label])] + [(q, '"x"') for q in params if q != p]))
        for name, what, args in calls:
            with c.item():
                f = c.f
                _advance_until(f, wanted, rng)
                speaker = f.speaker()
                text = ('{"name": ' + json.dumps(name) + ', "arguments": {'
                        + ", ".join(f"{json.dumps(k)}: {v}" for k, v in args) + "}}")
                actions = {a: (text if a == speaker else "") for a in f.env.agents}
                f.step(actions, f"tool {name}({what})", "accept", senders={speaker: text})
    c.check()


@pytest.mark.parametrize("env_id", TAU2_IDS)
def test_tau2_calculate_pathological_expressions(env_id):
    """``calculate`` (airline, retail) on expressions that explode; last in the file: a hang here is the worst."""
    c = Collect(Fuzz(env_id, "text", domain=("airline", "retail")))
    rng = np.random.default_rng(2)
    c.f.reset(0)
    for i, expression in enumerate(CALC_EXPRESSIONS):
        with c.item():
            f = c.f
            _advance_until(f, lambda a: a == "agent_0", rng)
            assert "calculate" in _each_tool(f, "agent_0"), f"{env_id}: no calculate tool in {f.infos['agent_0']}"
            text = json.dumps({"name": "calculate", "arguments": {"expression": expression}})
            form = "fenced" if i % 2 else "call"
            if form == "fenced":
                text = f"```json\n{text}\n```"
            actions = {a: (text if a == "agent_0" else "") for a in f.env.agents}
            f.step(actions, f"calculate({_short(expression, 60)}) [{form}]", "accept", senders={"agent_0": text})
    c.check()
