"""Every argument parser of a command line, read without running the command."""

import json
import subprocess
import sys

# runs each target as ``__main__`` with argparse's parse_args replaced by a stop that hands back the parser, so
# nothing the command does after parsing runs; prints {target: [its arguments with no help text]}
BARE_ARGUMENTS = """
import argparse, json, runpy, sys
from pathlib import Path

class Parsed(Exception):
    pass

def stop(self, args=None, namespace=None):
    raise Parsed(self)

argparse.ArgumentParser.parse_args = argparse.ArgumentParser.parse_known_args = stop
bare = {}
for target in sys.argv[1:]:
    sys.argv = [target]
    try:
        if target.endswith(".py"):
            sys.path.insert(0, str(Path(target).parent))  # a script imports its neighbours, as when run
            runpy.run_path(target, run_name="__main__")
        else:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        bare[target] = "parsed no arguments"
        continue
    except Parsed as e:
        parsers = [([], e.args[0])]
    while parsers:
        words, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [([*words, name], sub) for name, sub in action.choices.items()]
            elif not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
                bare.setdefault(target, []).append(" ".join([*words, *(action.option_strings or [action.dest])]))
print(json.dumps(bare))
"""


def bare_arguments(targets: list[str], cwd) -> dict[str, list[str] | str]:
    """Each target (a script's path, or a module run with ``-m``) whose parser has an argument without a help
    text, with those arguments; a target that never parsed its command line, with that said."""
    done = subprocess.run([sys.executable, "-c", BARE_ARGUMENTS, *targets], capture_output=True, text=True,
                          timeout=300, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
