"""Method plug-ins (scope_envs.bench.plugins): loading three ways, the built-in rows as plug-ins, the budget rule,
and a broken plug-in failing its own runs only."""

import json
import re
import sys
import textwrap
from importlib.metadata import EntryPoint

import pytest

from scope_envs.bench import plugins
from scope_envs.bench.executors import BenchFailure, execute
from scope_envs.bench.methods import EXTRA_METHODS, METHODS, PPOMethod, builtin, run_one
from scope_envs.bench.plugins import Budget, BudgetExceeded, Method, PluginError, Trained, load
from scope_envs.train.policy import UniformPolicy

TINY = {"steps": 600, "eval_episodes": 24, "curve_points": 2, "curve_episodes": 8, "heldout_episodes": 24}

PLUGIN = textwrap.dedent('''
    import numpy as np
    from scope_envs.bench.plugins import Trained
    from scope_envs.train.policy import UniformPolicy

    class FirstLegal:
        name = "first-legal"
        def train_envs(self, game):
            return [f"{game}-frozen", (f"{game}-vs", {"k": 3})]
        def train(self, ctx):
            for decisions in range(0, ctx.budget + 1, ctx.budget // 3):
                ctx.progress(decisions, UniformPolicy(seed=ctx.seed))
            return Trained(policy=lambda obs, mask: mask.argmax(1), agent_steps=ctx.budget,
                           history=[{"agent_steps": ctx.budget, "return": 1.0, "policy_entropy": 0.0}])

    def shaped(ctx):
        ctx.progress(0, UniformPolicy())
        return UniformPolicy()
    shaped.train_envs = ["{game}-rotation"]

    class Raises:
        name = "raises"
        def train_envs(self, game): return [f"{game}-frozen"]
        def train(self, ctx): raise RuntimeError("a bug in my method")

    class NotAPolicy:
        name = "not-a-policy"
        def train_envs(self, game): return [f"{game}-frozen"]
        def train(self, ctx): return {"weights": [1, 2, 3]}

    class Overruns:
        name = "overruns"
        def train_envs(self, game): return [f"{game}-frozen"]
        def train(self, ctx):
            for decisions in (0, ctx.budget, 2 * ctx.budget):
                ctx.progress(decisions, UniformPolicy())
            return UniformPolicy()

    class Exits:
        name = "exits"
        def train_envs(self, game): return [f"{game}-frozen"]
        def train(self, ctx): raise SystemExit(3)

    class BadActs:
        name = "bad-acts"
        def train_envs(self, game): return [f"{game}-frozen"]
        def train(self, ctx):
            ctx.progress(0, UniformPolicy())
            return lambda obs, mask: mask.argmax(1) * 0 + 999

    class Unregistered:
        name = "unregistered"
        def train_envs(self, game): return ["chess-frozen"]
        def train(self, ctx): return UniformPolicy()
''')


@pytest.fixture
def plugin_file(tmp_path):
    path = tmp_path / "my_methods.py"
    path.write_text(PLUGIN)
    return path


def test_the_built_in_rows_are_plug_ins_of_the_protocol():
    """Every built-in row, cotrain and population included, is a Method; its training simulator is its regime's."""
    for name in METHODS + EXTRA_METHODS:
        m = load(name, builtin())
        assert isinstance(m, PPOMethod) and isinstance(m, Method) and m.name == name
    assert load("population", builtin()).train_envs("p4g") == [("p4g-population", {"pool_size": 5, "snapshot_every": 4})]
    assert load("oracle", builtin()).train_envs("tau2") == [("tau2-heldout", {"personas": "train"})]
    assert load("selfplay", builtin()).train_envs("cooperbench")[0][0] == "cooperbench-cotrain"


def test_loading_from_a_file_a_module_and_an_entry_point(plugin_file, monkeypatch):
    m = load(f"{plugin_file}:FirstLegal")
    assert m.name == "first-legal" and m.train_envs("p4g")[1] == ("p4g-vs", {"k": 3})
    f = load(f"{plugin_file}:shaped")  # a function is a method: its name, its train_envs attribute
    assert f.name == "shaped" and f.train_envs("tau2") == ["tau2-rotation"]
    monkeypatch.syspath_prepend(str(plugin_file.parent))
    assert load("my_methods:FirstLegal").name == "first-legal"
    ep = EntryPoint(name="first-legal", value="my_methods:FirstLegal", group=plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group=None: [ep] if group == ep.group else [])
    assert load("first-legal").name == "first-legal"
    monkeypatch.chdir(plugin_file.parent)  # a worker (or a Ray task) gets the file by its absolute path
    assert plugins.absolute("my_methods.py:FirstLegal") == f"{plugin_file}:FirstLegal"
    assert plugins.absolute("my_methods:FirstLegal") == "my_methods:FirstLegal"


def test_loading_errors_name_what_is_wrong(plugin_file, tmp_path, monkeypatch):
    with pytest.raises(PluginError, match="no such file"):
        load(f"{tmp_path}/nope.py:X")
    (tmp_path / "folder.py").mkdir()  # it exists: "no such file" sent the user looking for a missing path
    with pytest.raises(PluginError, match=r"folder.py: a directory, not a Python file"):
        load(f"{tmp_path}/folder.py:X")
    (tmp_path / "method.txt").write_text("class X:\n    name = 'x'\n")  # importlib found no loader: an AttributeError
    with pytest.raises(PluginError, match=r"method.txt is not a Python file: its name must end in .py"):
        load(f"{tmp_path}/method.txt:X")
    (tmp_path / "policy_shaped.py").write_text("def act(obs, mask):\n    return mask.argmax(1)\n\n"
                                              "class Envs:\n    name = 'envs'\n    def train_envs(self):\n"
                                              "        return []\n    def train(self, ctx):\n        return None\n")
    with pytest.raises(PluginError, match=r"act\(obs, mask\) cannot be called as train\(ctx\)"):  # once it ran
        load(f"{tmp_path}/policy_shaped.py:act")
    with pytest.raises(PluginError, match=r"train_envs\(\) cannot be called as train_envs\(game\)"):
        load(f"{tmp_path}/policy_shaped.py:Envs")
    with pytest.raises(PluginError, match="has no 'Missing'.*FirstLegal"):
        load(f"{plugin_file}:Missing")
    with pytest.raises(PluginError, match="not a method"):
        load(f"{plugin_file}:np")
    with pytest.raises(PluginError, match="no installed entry point 'dr'"):
        load("dr")
    with pytest.raises(PluginError, match="cannot import"):
        load("no_such_module_27:X")
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('needs a package you do not have')\n")
    with pytest.raises(PluginError, match="importing .*broken.py failed: ImportError: needs a package"):
        load(f"{broken}:X")
    (tmp_path / "pkg").mkdir()  # module:NAME of a file in the working folder, which is not on the console
    (tmp_path / "pkg" / "mine.py").write_text("X = 1\n")  # script's path: its file form is named
    with monkeypatch.context() as m:
        m.chdir(tmp_path)
        m.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
        with pytest.raises(PluginError, match=r"cannot import pkg.mine: ModuleNotFoundError: .*; pkg/mine.py is a "
                                              r"file here: give it as --method pkg/mine.py:X"):
            load("pkg.mine:X")
    exits = tmp_path / "exits.py"  # a script's sys.exit at import ended bench with its message alone, exit 1
    exits.write_text("import sys\nsys.exit('usage: exits.py DATA')\n")
    with pytest.raises(PluginError, match="importing .*exits.py failed: SystemExit: usage: exits.py DATA"):
        load(f"{exits}:X")


def test_budget_rule():
    books = Budget("m", 1000)
    for d in (0, 400, 1100):  # the iteration that reaches the budget may cross it
        books.report(d)
    with pytest.raises(BudgetExceeded, match="reported 1,100|reported 1_100"):
        books.report(1500)
    with pytest.raises(PluginError, match="an int >= 0"):
        Budget("m", 10).report(-1)
    with pytest.raises(BudgetExceeded, match="trained 5_000"):
        Budget("m", 1000).close(Trained(policy=UniformPolicy(), agent_steps=5000))
    assert Budget("m", 1000).close(Trained(policy=UniformPolicy())).agent_steps == 0


def test_a_progress_call_without_a_policy_is_named_as_such(tmp_path):
    """ctx.progress(decisions, None) had been told as "train returned NoneType", pointing at the wrong call."""
    path = tmp_path / "early.py"
    path.write_text("from scope_envs.train.policy import UniformPolicy\n"
                    "def early(ctx):\n    ctx.progress(0, None)\n    return UniformPolicy()\n")
    with pytest.raises(PluginError, match=r"method 'early': progress\(\) was given NoneType, not a policy"):
        run_one("p4g", "early", 0, **TINY, plugin=f"{path}:early")


def test_a_plug_in_gets_what_a_built_in_gets(plugin_file):
    """run_one with a plug-in: the same record (curve points at the same marks, the evaluation, the fingerprint)."""
    r = run_one("p4g", "first-legal", 0, **TINY, plugin=f"{plugin_file}:FirstLegal")
    builtin = run_one("p4g", "frozen", 0, **TINY)
    assert set(builtin) <= set(r) and r["method"] == "first-legal"
    # reported at 0, 200, 400, 600: a point at 0 and where each of the 2 marks (300, 600) is first reached
    assert [p["agent_steps"] for p in r["curve"]] == [0, 400, 600]
    assert [s["env"] for s in r["train_simulators"]] == ["p4g-frozen", "p4g-vs"]
    assert r["fingerprint"] == builtin["fingerprint"] and r["agent_steps"] == 600
    assert r["metrics"]["heldout_success"] != builtin["metrics"]["heldout_success"]
    with pytest.raises(PluginError, match="its name is 'first-legal', the run's is 'other'"):
        run_one("p4g", "other", 0, **TINY, plugin=f"{plugin_file}:FirstLegal")
    with pytest.raises(PluginError, match="'chess-frozen', not a registered env id"):
        run_one("p4g", "unregistered", 0, **TINY, plugin=f"{plugin_file}:Unregistered")


def test_broken_plug_ins_fail_their_own_runs_and_nothing_else(plugin_file, tmp_path):
    """Raising, exiting, returning a non-policy, overrunning the budget and a policy that plays illegal acts are
    named failures of the method, not retried; the other runs are written."""
    base = {"game": "p4g", "seed": 0, **TINY, "user_reward": None, "advantage": "gae", "group_size": 1}
    tasks = [dict(base, method="frozen")] + [dict(base, method=n, plugin=f"{plugin_file}:{c}") for n, c in
                                             (("raises", "Raises"), ("not-a-policy", "NotAPolicy"),
                                              ("overruns", "Overruns"), ("exits", "Exits"), ("bad-acts", "BadActs"))]
    with pytest.raises(BenchFailure) as e:
        execute(tasks, tmp_path / "out", jobs=1, progress=False)
    failed = e.value.failed
    assert set(failed) == {"p4g-raises-0", "p4g-not-a-policy-0", "p4g-overruns-0", "p4g-exits-0", "p4g-bad-acts-0"}
    assert not any(f.retry for f in failed.values())
    assert "a bug in my method" in failed["p4g-raises-0"]
    assert "returned dict, not a policy" in failed["p4g-not-a-policy-0"]
    assert "overran its budget" in failed["p4g-overruns-0"]
    assert "SystemExit: 3" in failed["p4g-exits-0"]
    said = str(e.value)
    assert "p4g-bad-acts-0: method 'bad-acts': its policy failed in evaluation: ValueError: the policy " \
           "function returned act 999 in row 0" in said and "PluginFailure" not in said
    written = json.loads((tmp_path / "out" / "runs" / "p4g-frozen-0.json").read_text())
    assert written["result"]["method"] == "frozen"
    assert sorted(p.name for p in (tmp_path / "out" / "runs").glob("*.json")) == ["p4g-frozen-0.json"]


def test_cli_rejects_bad_method_specs(plugin_file, capsys):
    from scope_envs.cli import main

    for argv in (["--method", f"{plugin_file}:Missing"], ["--against", "x"],
                 ["--method", f"{plugin_file}:FirstLegal", "--method", f"{plugin_file}:FirstLegal"]):
        with pytest.raises(SystemExit) as e:
            main(["bench", "--games", "p4g", *argv, "--out", str(plugin_file.parent / "o")])
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --method: --method" in err and "has no 'Missing'" in err
    assert "argument --against: needs at least one --method" in err
    assert "two methods share a name" in err
    # train_envs naming no env of a game: one line before any run (it had failed every run of the game, exit 1)
    with pytest.raises(SystemExit) as e:
        main(["bench", "--games", "p4g", "--method", f"{plugin_file}:Unregistered", "--out",
              str(plugin_file.parent / "o")])
    assert e.value.code == 2 and not (plugin_file.parent / "o").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "argument --method: method 'unregistered': train_envs('p4g') names 'chess-frozen', not a registered env id "
        "(scope-envs list)")


def test_a_policy_that_raises_while_played_is_named_by_file_and_line(tmp_path):
    """As a raise in train is: the line of the plug-in's own file where its policy's act raised."""
    from scope_envs.bench.plugins import PluginFailure

    path = tmp_path / "shaky.py"
    path.write_text("class Shaky:\n    def act(self, obs, mask, greedy=False):\n"
                    "        raise RuntimeError('a shape bug')\n\n"
                    "def shaky(ctx):\n    return Shaky()\n")
    with pytest.raises(PluginFailure) as e:
        run_one("p4g", "shaky", 0, **TINY, plugin=f"{path}:shaky")
    assert str(e.value) == f"method 'shaky': its policy failed in evaluation at {path}:3: RuntimeError: a shape bug"


def test_a_plug_in_named_as_a_built_in_row_is_asked_for_another_name(tmp_path, capsys):
    """A plug-in of one's own whose name is a built-in row's had been told, with --against, to "rerun built-in rows
    without --against, with --methods"; a built-in row given by name beside a plug-in had been told to rename it."""
    from scope_envs.bench import entrants
    from scope_envs.cli import build_parser, main

    path = tmp_path / "mine.py"
    path.write_text("from scope_envs.train.policy import UniformPolicy\n"
                    "def frozen(ctx):\n    return UniformPolicy()\n"
                    "def mine(ctx):\n    return UniformPolicy()\n")
    for against in ([], ["--against", "reference"]):
        with pytest.raises(SystemExit) as e:
            main(["bench", "--games", "p4g", "--method", f"{path}:frozen", *against, "--out", str(tmp_path / "o")])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "argument --method: 'frozen' is a built-in row's name: give your method another name" in err, err
    with pytest.raises(SystemExit):  # the built-in row itself, with --against: the reference's, taken as it is
        main(["bench", "--games", "p4g", "--method", "frozen", "--against", "reference", "--out", str(tmp_path / "o")])
    assert "'frozen': a row of the reference, taken as it is" in capsys.readouterr().err
    args = build_parser().parse_args(["bench", "--games", "p4g", "--method", "frozen", "--method", f"{path}:mine"])
    entrants.check_arguments(args)  # a built-in row by name beside a plug-in: both rows, nothing to rename


def test_a_raising_plug_in_is_named_by_file_and_line_kept_and_not_retried(plugin_file, tmp_path, monkeypatch):
    """Its own error is deterministic: one try, the one-line error names the plug-in's file and line, and the
    whole traceback is kept in runs/<run>.error.txt; a failure outside the method is still retried, and says so."""
    from scope_envs.bench import executors

    line = next(i for i, text in enumerate(plugin_file.read_text().splitlines(), 1) if "a bug in my method" in text)
    base = {"game": "p4g", "seed": 0, **TINY, "user_reward": None, "advantage": "gae", "group_size": 1}
    tries = []
    real = executors.attempt

    def counted(task):
        tries.append(task["method"])
        return real(task)

    monkeypatch.setattr(executors, "attempt", counted)
    with pytest.raises(BenchFailure) as e:
        execute([dict(base, method="raises", plugin=f"{plugin_file}:Raises")], tmp_path / "out", jobs=1,
                progress=False)
    assert tries == ["raises"]  # not retried
    message = str(e.value)
    assert f"raised in train at {plugin_file}:{line}: RuntimeError: a bug in my method" in message
    assert "not retried" in message and "p4g-raises-0.error.txt" in message and "failed twice" not in message
    kept = (tmp_path / "out" / "runs" / "p4g-raises-0.error.txt").read_text()
    assert "Traceback" in kept and f'File "{plugin_file}", line {line}, in train' in kept
    lost = executors.Failed("the worker process running it died")  # the infrastructure's failure: retried
    said = str(BenchFailure({"p4g-frozen-0": lost}, tmp_path))
    assert lost.retry and "failed twice: retried once" in said


@pytest.mark.parametrize("body, missing", [("def train_envs(self, game): return []\n    def train(self, ctx): pass",
                                            "`name`"),
                                           ("name = 'x'\n    def train(self, ctx): pass", "`train_envs`"),
                                           ("pass", "`name` and no `train_envs` and no `train`")])
def test_a_class_missing_an_attribute_is_told_which(tmp_path, body, missing):
    path = tmp_path / "partial.py"
    path.write_text(f"class Partial:\n    {body}\n")
    with pytest.raises(PluginError, match=f"Partial is not a method: it has no {missing} "):
        load(f"{path}:Partial")


@pytest.mark.parametrize("seats,env,named", [('{"user_0": UniformPolicy()}', "frozen", "'user_0'"),
                                             ('{"agent_0": UniformPolicy()}', "cotrain", "'agent_0'")])
def test_a_seat_the_training_envs_have_no_learned_user_in_is_refused(tmp_path, seats, env, named):
    """Trained(seats={"user_0": ...}) from a method training on -frozen (whose user is the env's simulator) had
    been left unplayed without a word, and seats={"agent_0": ...} replaced the policy on the train side only."""
    path = tmp_path / "seated.py"
    path.write_text("from scope_envs.bench.plugins import Trained\n"
                    "from scope_envs.train.policy import UniformPolicy\n"
                    f"def seated(ctx):\n    return Trained(policy=UniformPolicy(), seats={seats})\n"
                    f"seated.train_envs = ['{{game}}-{env}']\n")
    with pytest.raises(PluginError, match=rf"method 'seated': Trained\(seats=...\) names {named}, not a learned "
                                          rf"user's seat of its training envs \(p4g-{env}; their seats: "):
        run_one("p4g", "seated", 0, **TINY, plugin=f"{path}:seated")


CHEATS = '''
import scope_envs
from scope_envs.agents.families import panel
from scope_envs.agents.p4g import CollapsedPersuadee, HumanProxyPersuadee
from scope_envs.games.p4g.personas import persona
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
from scope_envs.train.policy import UniformPolicy


def ceiling_recipe(ctx):
    PPOTrainer(PPOConfig(env_id="p4g-heldout", env_kwargs={"personas": "train"}, total_steps=100, num_envs=2))


def batched_proxies(ctx):
    scope_envs.make_vec("p4g-heldout", num_envs=4)


def the_panel(ctx):
    PPOTrainer(PPOConfig(env_id="p4g-frozen", env_kwargs={"user": panel("p4g")[0]}, total_steps=100, num_envs=2))


def a_proxy(ctx):
    scope_envs.make("p4g-frozen", user=HumanProxyPersuadee())


def a_held_out_card(ctx):
    scope_envs.make("p4g-frozen", user=CollapsedPersuadee(persona=persona("heldout", 3)))


def honest(ctx):
    ctx.progress(0, UniformPolicy())  # a learning-curve point: the benchmark's evaluation, held-out side included
    return UniformPolicy()


class DeclaresHeldOut:
    name = "declares-held-out"

    def train_envs(self, game):
        return [(f"{game}-heldout", {"personas": "train"})]

    def train(self, ctx):
        return UniformPolicy()
'''


@pytest.mark.parametrize("cheat, said", [
    ("ceiling_recipe", "p4g-heldout is the held-out side, sealed while a benchmark method trains"),
    ("batched_proxies", "p4g-heldout is the held-out side"),
    ("the_panel", "the held-out simulator families of p4g (the panel) is the held-out side"),
    ("a_proxy", "HumanProxyPersuadee (the held-out human proxies) is the held-out side"),
    ("a_held_out_card", "held-out card 3 is the held-out side")])
def test_a_plug_in_that_trains_on_the_held_out_side_fails_its_run(tmp_path, cheat, said):
    """A plug-in could train on the held-out users by the ceiling's recipe, make_vec, the held-out panel, a
    human-proxy simulator or a held-out card, and its verdict read as a clean win. Its train now runs with the
    held-out side sealed: each route fails the run, naming what it asked for; the benchmark's own evaluation (a
    progress point, the record) still reads the held-out side."""
    path = tmp_path / "cheats.py"
    path.write_text(CHEATS)
    with pytest.raises(plugins.PluginFailure, match=rf"method .{cheat}. raised in train at .*HeldOutSealed: {re.escape(said)}"):
        run_one("p4g", cheat, 0, **TINY, plugin=f"{path}:{cheat}")
    record = run_one("p4g", "honest", 0, **TINY, plugin=f"{path}:honest")
    assert record["curve"][0]["agent_steps"] == 0 and "heldout_success" in record["metrics"]
    with pytest.raises(PluginError, match=r"train_envs\('p4g'\) names 'p4g-heldout', the held-out side"):
        run_one("p4g", "declares-held-out", 0, **TINY, plugin=f"{path}:DeclaresHeldOut")


def test_the_seal_is_lifted_outside_and_nests():
    import doctest

    import scope_envs
    from scope_envs.core import seal

    assert doctest.testmod(seal, optionflags=doctest.ELLIPSIS).failed == 0
    with seal.sealed():
        with seal.unsealed():
            scope_envs.make("p4g-heldout")
        with pytest.raises(seal.HeldOutSealed):
            scope_envs.make("tau2-heldout")
    scope_envs.make("cooperbench-heldout")


def test_a_policy_of_another_game_is_named_before_it_plays(tmp_path):
    """A plug-in returning a trainer of another game failed in evaluation with numpy's matmul error
    ("size 48 is different from 77"); it is one line naming the game it was trained on."""
    path = tmp_path / "other.py"
    path.write_text("from scope_envs.train.act_ppo import PPOConfig, PPOTrainer\n"
                    "def other_game(ctx):\n"
                    "    return PPOTrainer(PPOConfig(env_id='tau2-frozen', total_steps=0, num_envs=2))\n")
    with pytest.raises(PluginError, match="method 'other_game''s policy was trained on tau2-frozen, a game other "
                                          "than p4g"):
        run_one("p4g", "other_game", 0, **TINY, plugin=f"{path}:other_game")


def test_run_method_takes_what_method_takes_from_python(plugin_file):
    """The page's "a function train(ctx) is a method too" held for --method only: run_method(function) was an
    AttributeError ('function' object has no attribute 'train_envs'), a class without `name` another, and a
    negative budget was accepted."""
    from scope_envs.bench.plugins import run_method

    def first_legal(ctx):
        return lambda obs, mask: mask.argmax(1)

    record = run_method(first_legal, "p4g", seed=0, **{k: v for k, v in TINY.items()})
    assert record["method"] == "first_legal" and 0 <= record["metrics"]["heldout_success"]

    class NoName:
        def train_envs(self, game):
            return [f"{game}-frozen"]

        def train(self, ctx):
            return UniformPolicy()

    with pytest.raises(PluginError, match="method NoName: NoName is not a method: it has no `name`"):
        run_method(NoName(), "p4g", seed=0, **TINY)
    for bad, message in (({"steps": -5}, "steps must be a positive int, got -5"),
                         ({"curve_points": -1}, "curve_points must be an int >= 0"),
                         ({"curve_episodes": 0}, "curve_episodes must be a positive int, got 0")):
        with pytest.raises(ValueError, match=message):
            run_method(first_legal, "p4g", seed=0, **{**TINY, **bad})
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 999\]"):
        run_method(first_legal, "p4g", seed=-1, **TINY)
