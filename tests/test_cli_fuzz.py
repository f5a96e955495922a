"""Every subcommand's arguments, fuzzed: types, signs, sizes, paths. A value that an argument does not
take is argparse's exit 2 with a one-line error naming the argument, never a traceback; every integer argument
has an upper bound; nothing slow ever starts (a value is sent to the command line only when its type refuses
it, and a parse that succeeds stops before the command runs).

The arguments are read from the real parser of ``scope-envs`` (``subcommands``), so a subcommand added later is
fuzzed too."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scope_envs.cli import main

HUGE = "9" * 30


class Parsed(Exception):
    """The command line parsed: the command would start here (it never does in these tests)."""


def root_parser() -> argparse.ArgumentParser:
    captured = {}
    original = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        captured["root"] = self
        raise Parsed

    argparse.ArgumentParser.parse_args = grab
    try:
        with contextlib.suppress(Parsed):
            main([])
    finally:
        argparse.ArgumentParser.parse_args = original
    return captured["root"]


def subcommands(parser=None, path=()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every leaf subcommand: (words) -> its parser."""
    parser = parser or root_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {path: parser}
    out = {}
    for name, child in subs[0].choices.items():
        out.update(subcommands(child, (*path, name)))
    return out


COMMANDS = subcommands()


def typed_arguments():
    """(command words, option string or None for a positional, the action) for every argument with a type or
    choices."""
    for words, parser in COMMANDS.items():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.type is None and action.choices is None:
                continue
            if action.nargs == 0:
                continue
            yield words, (action.option_strings[-1] if action.option_strings else None), action


ARGUMENTS = list(typed_arguments())


REFUSED = object()


def read_as(action, value: str):
    """What argparse makes of ``value`` for ``action``: the converted value, or ``REFUSED`` (its type raises, or the
    value is not one of the choices). The type is called once: a folder type reads the disk, where another xdist
    worker's ``output_dir`` probe may make and remove ``./1`` between two calls."""
    try:
        converted = action.type(value) if action.type is not None else value
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return REFUSED
    return REFUSED if action.choices is not None and converted not in action.choices else converted


def refuses(action, value: str) -> bool:
    return read_as(action, value) is REFUSED


def run_refused(words, option, action, value, capsys) -> str:
    """``scope-envs WORDS OPTION VALUE`` for a refused value: exit 2, one error line naming the argument."""
    argv = [*words, option, value] if option else [*words, value]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, (argv, err)
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err
    name = option or action.metavar or action.dest
    assert f"argument {name}" in errors[0] or f"argument {action.dest}" in errors[0] or "/" in errors[0], errors[0]
    return errors[0]


TABLE = ["-1", "0", "-0", HUGE, "-" + HUGE, "abc", "", " ", "nan", "inf", "-inf", "1e309", "1.5", "0x10", "1_0",
         "\x00", "é" * 300, "1" * 5000, "--", "-5e-324", "+", "٣",
         "~0"]  # the home of a user that does not exist: pathlib's expanduser raised RuntimeError


@pytest.mark.parametrize("words, option, action", ARGUMENTS,
                         ids=[f"{' '.join(w)} {o or a.dest}" for w, o, a in ARGUMENTS])
def test_each_argument_refuses_bad_values_in_one_line(words, option, action, capsys):
    refused = 0
    for value in TABLE:
        if value.startswith("-") and option is None:
            continue  # a positional never sees a dash word as its value
        if refuses(action, value):
            run_refused(words, option, action, value, capsys)
            refused += 1
    assert refused > 0, f"{' '.join(words)} {option}: took every value of the table"


INTEGER_ARGUMENTS = [(w, o, a) for w, o, a in ARGUMENTS if a.type is not None and isinstance(read_as(a, "1"), int)]


@pytest.mark.parametrize("words, option, action", INTEGER_ARGUMENTS,
                         ids=[f"{' '.join(w)} {o or a.dest}" for w, o, a in INTEGER_ARGUMENTS])
def test_every_integer_argument_has_an_upper_bound(words, option, action, capsys):
    assert refuses(action, HUGE), f"{' '.join(words)} {option} takes {HUGE}: no upper bound"
    line = run_refused(words, option, action, HUGE, capsys)
    assert len(line) < 300


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ARGUMENTS), st.one_of(st.text(max_size=60), st.integers().map(str),
                                            st.floats(allow_nan=True, allow_infinity=True).map(repr)))
def test_no_value_makes_an_argument_type_raise_anything_but_its_refusal(argument, value):
    """Any text: an argument's type accepts it or refuses it the argparse way (no other exception)."""
    _, _, action = argument
    refuses(action, value)


def path_cases(tmp: Path) -> dict[str, str]:
    (tmp / "file").write_text("x")
    return {"a file": str(tmp / "file"), "under a file": str(tmp / "file" / "x"), "a long name": str(tmp / ("n" * 300)),
            "missing": str(tmp / "missing" / "deeper")}


OUT_ARGUMENTS = [(w, o, a) for w, o, a in ARGUMENTS if o in ("--out", "--dir")]


@pytest.mark.parametrize("words, option, action", OUT_ARGUMENTS,
                         ids=[f"{' '.join(w)} {o}" for w, o, a in OUT_ARGUMENTS])
def test_output_folders_that_cannot_be_written_are_refused(words, option, action, tmp_path, capsys):
    cases = path_cases(tmp_path)
    for name in ("a file", "under a file", "a long name"):
        assert refuses(action, cases[name]), (option, name)
        run_refused(words, option, action, cases[name], capsys)
    assert not refuses(action, cases["missing"])  # created when the work starts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.sampled_from(sorted(COMMANDS)), tokens=st.lists(st.one_of(
    st.sampled_from(sorted({o for p in COMMANDS.values() for a in p._actions for o in a.option_strings
                            if o not in ("-h", "--help")})),
    st.sampled_from(TABLE), st.text(max_size=12)), max_size=6))
def test_any_command_line_parses_or_is_one_line_error(words, tokens):
    """Random words after a subcommand: argparse takes them (the command would start: stopped here) or says
    one error line and exits 2."""
    err = io.StringIO()
    original = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        original(self, args, namespace)
        raise Parsed

    argparse.ArgumentParser.parse_args = parse_only
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main([*words, *tokens])
    except Parsed:
        return
    except SystemExit as e:
        assert e.code in (0, 2), (words, tokens, err.getvalue())
        assert "Traceback" not in err.getvalue()
        if e.code == 2:
            assert sum("error:" in line for line in err.getvalue().splitlines()) == 1, err.getvalue()
    finally:
        argparse.ArgumentParser.parse_args = original
