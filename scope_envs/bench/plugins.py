"""Methods as plug-ins: what a benchmark row trains, written as one small protocol.

A **method** is an object with a ``name``, the training simulators it uses, and ``train``::

    class MyMethod:
        name = "my-method"                      # the row's name in the report (letters, digits, - and _)

        def train_envs(self, game: str) -> list:
            # the simulators it trains with: env ids, or (env id, make() kwargs) pairs. They are also its
            # "train" side in the evaluation (scope_envs.bench.protocol).
            return [f"{game}-frozen", f"{game}-vs"]

        def train(self, ctx: TrainContext):
            ...                                  # train within ctx.budget decisions of agent_0, seeded by ctx.seed
            ctx.progress(decisions_so_far, policy)   # after each iteration: the curve points, the budget check
            return policy                        # a Policy (scope_envs.train.policy), or a Trained

``ctx`` (``TrainContext``) holds the ``game``, the ``seed``, the ``budget`` in decisions of ``agent_0`` (the
benchmark's currency: equal across methods, whatever a method's env steps are), ``options`` (the run's
``user_reward``, ``advantage``, ``group_size``) and ``progress``. A method calls ``ctx.progress(decisions,
policy)`` with ``decisions = 0`` before it trains (the learning curve's first point) and after each
iteration; the benchmark evaluates the learning curve from those calls (``curve_points`` evenly spaced
marks of the budget, ``curve_episodes`` episodes on the train side and on the held-out side, seeds of
their own) exactly as for a built-in row. **Budget rule**: the iteration that reaches the budget may
cross it; a ``progress`` call after one that reported ``decisions >= budget`` raises ``BudgetExceeded``,
and so does a returned ``Trained`` whose ``agent_steps`` exceed the last reported count.

A plain function ``train(ctx) -> policy`` is a method too (``FunctionMethod``): its name is the function's,
its training simulator ``<game>-frozen`` unless the function has a ``train_envs`` attribute (a list of ids
with ``{game}`` in them, or a callable of the game).

Where a method comes from (``load``), as ``scope-envs bench --method SPEC`` takes it:

* ``path/to/file.py:NAME`` — ``NAME`` in a Python file (a class is instantiated with no arguments);
* ``package.module:NAME`` — an importable module;
* ``NAME`` — a built-in row (``BUILTIN``) or an installed package's entry point in the group
  ``scope_envs.methods`` (``[project.entry-points."scope_envs.methods"] my-method = "pkg.mod:MyMethod"``).

The built-in rows are plug-ins of this same protocol (``methods.PPOMethod``: the package's act-level PPO on the
method's regime, ``scope_envs.bench.methods.method_setup``), and ``scope_envs.bench.methods.run_one`` runs
every row, built-in or not, through ``run_method``: the same budget accounting, seeds, curve evaluations,
evaluation protocol, per-run files, ``--resume``, executors and failure handling. A plug-in that raises,
returns something that is not a policy, or overruns its budget fails its run with a ``PluginError`` naming
it (where its code raised: ``PluginFailure``, with the file and line); such a failure is the same at every try,
so it is not retried, and its traceback is kept in ``OUT/runs/<run>.error.txt``; the rest of the grid runs and
is written (``scope_envs.bench.executors``).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scope_envs.bench.loading import PluginError, is_file_spec, load_object
from scope_envs.bench.policies import Trained, agent_problem, check_policy, reseeded
from scope_envs.core import seal
from scope_envs.core.checks import check_int
from scope_envs.train.groups import GROUP_FRACTIONS
from scope_envs.train.realism import REALISM_LOG

ENTRY_POINT_GROUP = "scope_envs.methods"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # a row name is also part of a file name
__all__ = ["BudgetExceeded", "FunctionMethod", "Method", "PluginError", "PluginFailure", "TrainContext", "Trained",
           "check_policy",
           "load", "reseeded", "run_method", "source_digest"]


class BudgetExceeded(PluginError):
    """A method kept training after it had reported the budget reached."""


class PluginFailure(PluginError):
    """A method's own code raised in ``train`` (or exited), or its policy failed while played: the message names
    where (the full traceback is the exception's cause). Deterministic for a seed, so the benchmark does not retry
    it."""


def source_file(method) -> str | None:
    """The file that defines ``method`` (its class, or its function), or None (built in C, typed in a shell)."""
    target = getattr(method, "fn", None) or type(method)
    try:
        return str(Path(inspect.getsourcefile(target)).resolve())
    except (TypeError, OSError):
        return None


def source_digest(method) -> str | None:
    """The sha256 of the file that defines a plug-in ``method``: what ``--resume`` holds a plug-in's records to (a
    built-in row's code is the fingerprint's); None for a built-in row or a method with no file."""
    import hashlib

    path = None if getattr(method, "builtin", False) else source_file(method)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


def raised_at(error: BaseException, method, own_file_only: bool = False) -> str | None:
    """``file:line`` where ``error`` left the plug-in's own code: the last frame of its traceback in the file
    that defines ``method`` (its class, or its function), else the last frame outside this package.
    ``own_file_only``: that file's frame or None (a policy's act refused by the benchmark raises in the package)."""
    import traceback

    own = source_file(method)
    frames = traceback.extract_tb(error.__traceback__)
    package = str(Path(__file__).resolve().parents[1])
    mine = [f for f in frames if own and str(Path(f.filename).resolve()) == own]
    if own_file_only:
        return f"{mine[-1].filename}:{mine[-1].lineno}" if mine else None
    mine = mine or [f for f in frames if not str(Path(f.filename).resolve()).startswith(package)] or frames
    return f"{mine[-1].filename}:{mine[-1].lineno}" if mine else "?"


@dataclass
class TrainContext:
    """What a method's ``train`` gets: see the module docstring."""

    game: str
    seed: int
    budget: int  # decisions of agent_0
    progress: Callable[[int, Any], None] = lambda decisions, policy: None
    options: dict = field(default_factory=dict)  # user_reward, advantage, group_size of the run


@runtime_checkable
class Method(Protocol):
    """A benchmark row: see the module docstring."""

    name: str

    def train_envs(self, game: str) -> list: ...

    def train(self, ctx: TrainContext) -> Any: ...


def env_specs(method, game: str) -> list[tuple[str, dict]]:
    """A method's training simulators as (env id, kwargs) pairs, checked: registered ids of ``game``."""
    import scope_envs

    specs = method.train_envs(game)
    if isinstance(specs, (str, tuple)):
        specs = [specs]
    out = []
    for spec in specs:
        env_id, kwargs = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))
        if env_id not in scope_envs.registry:
            raise PluginError(f"method {method.name!r}: train_envs({game!r}) names {env_id!r}, not a registered "
                              f"env id (scope-envs list)")
        if scope_envs.registry[env_id].game != game:
            raise PluginError(f"method {method.name!r}: train_envs({game!r}) names {env_id!r}, an env of another game")
        if scope_envs.registry[env_id].regime == "heldout":
            raise PluginError(f"method {method.name!r}: train_envs({game!r}) names {env_id!r}, the held-out side "
                              "every method is evaluated on; a method trains on the training regimes")
        out.append((env_id, kwargs))
    if not out:
        raise PluginError(f"method {method.name!r}: train_envs({game!r}) is empty")
    return out


class FunctionMethod:
    """A function ``train(ctx) -> policy`` as a method (see the module docstring)."""

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn, self.name = fn, name or fn.__name__

    def train_envs(self, game: str) -> list:
        envs = getattr(self.fn, "train_envs", ["{game}-frozen"])
        envs = envs(game) if callable(envs) else envs
        return [e.format(game=game) if isinstance(e, str) else (e[0].format(game=game), e[1]) for e in envs]

    def train(self, ctx: TrainContext):
        return self.fn(ctx)


# ------------------------------------------------------------------------------------------------ loading
def _entry_point(name: str):
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        return None
    try:
        return found[0].load()
    except Exception as e:  # noqa: BLE001
        raise PluginError(f"--method {name}: loading the entry point {found[0].value} failed: "
                          f"{type(e).__name__}: {e}") from e


def takes_one_argument(fn) -> bool:
    """Whether ``fn`` can be called with one positional argument (True where Python cannot tell: a builtin)."""
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def as_method(obj, spec: str, given: str = "--method"):
    """A loaded object as a method: an instance with ``train`` and ``train_envs``, a class of one (built with
    no arguments), or a function ``train(ctx)``. ``given``: what the errors say the object came in (``--method
    SPEC``; ``run_method``'s ``method``)."""
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise PluginError(f"{given} {spec}: {obj.__name__}() failed: {type(e).__name__}: {e}") from e
    elif inspect.isfunction(obj):
        obj = FunctionMethod(obj)
    missing = [a for a in ("name", "train_envs", "train") if not hasattr(obj, a)]
    if missing:
        needs = {"name": "name (the row's name)", "train_envs": "train_envs(game)", "train": "train(ctx)"}
        lacks = " and no ".join(f"`{a}`" for a in missing)
        raise PluginError(f"{given} {spec}: {type(obj).__name__} is not a method: it has no {lacks} "
                          f"(a method needs {', '.join(needs[a] for a in needs)}; see scope_envs.bench.plugins)")
    for attr in ("train_envs", "train"):
        if not callable(getattr(obj, attr)):
            raise PluginError(f"{given} {spec}: {type(obj).__name__}.{attr} is not a method (it needs "
                              f"{attr}({'game' if attr == 'train_envs' else 'ctx'}))")
    train = obj.fn if isinstance(obj, FunctionMethod) else obj.train
    for attr, fn, called in (("train", train, "train(ctx), ctx the TrainContext"),
                             ("train_envs", obj.train_envs, "train_envs(game)")):
        if not takes_one_argument(fn):
            shown = getattr(fn, "__name__", attr)
            raise PluginError(f"{given} {spec}: {shown}{inspect.signature(fn)} cannot be called as {called}"
                              + (" (act(obs, mask) is the policy that train returns)" if attr == "train" else ""))
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise PluginError(f"{given} {spec}: its name {name!r} must be 1-64 letters, digits, '.', '-' or '_'")
    return obj


def load(spec: str, builtin: dict | None = None):
    """The method named by ``spec`` (see the module docstring); ``builtin``: the built-in rows by name
    (``scope_envs.bench.methods.builtin()``, which is what the benchmark passes). Raises ``PluginError`` naming
    what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"--method: expected FILE.py:NAME, package.module:NAME or a name, got {spec!r}")
    methods = builtin or {}
    if spec in methods:
        return methods[spec]
    if ":" in spec:
        return as_method(load_object(spec), spec)
    obj = _entry_point(spec)
    if obj is None:
        raise PluginError(f"--method {spec}: not a built-in row ({', '.join(methods)}), not FILE.py:NAME or "
                          f"module:NAME, and no installed entry point {spec!r} in the group {ENTRY_POINT_GROUP!r}")
    return as_method(obj, spec)


def absolute(spec: str) -> str:
    """``spec`` with a file path made absolute, so a worker process (or a Ray task) finds the same file."""
    where, sep, attr = spec.rpartition(":")
    if sep and is_file_spec(where):
        return f"{Path(os.path.expanduser(where)).resolve()}:{attr}"
    return spec


# ------------------------------------------------------------------------------------------------ one run
class Budget:
    """The budget rule of the module docstring: counts what ``progress`` reports, raises past the budget."""

    def __init__(self, method: str, budget: int):
        self.method, self.budget = method, budget
        self.reported, self.reached = 0, budget == 0

    def report(self, decisions: int) -> None:
        if isinstance(decisions, bool) or not isinstance(decisions, (int, np.integer)) or decisions < 0:
            raise PluginError(f"method {self.method!r}: progress() needs the decisions of agent_0 so far (an int "
                              f">= 0), got {decisions!r}")
        if decisions > self.reported and self.reached:
            raise BudgetExceeded(f"method {self.method!r} overran its budget: it reported {self.reported:_} of "
                                 f"{self.budget:_} decisions of agent_0, then trained on to {decisions:_} (the "
                                 "iteration that reaches the budget may cross it, no later one)")
        self.reported = max(self.reported, int(decisions))
        self.reached = self.reported >= self.budget

    def close(self, trained: Trained) -> Trained:
        if trained.agent_steps is None:
            trained.agent_steps = self.reported
        elif trained.agent_steps > max(self.reported, self.budget):
            raise BudgetExceeded(f"method {self.method!r} overran its budget: it trained {trained.agent_steps:_} "
                                 f"decisions of agent_0 against a budget of {self.budget:_} (reported: "
                                 f"{self.reported:_})")
        return trained


def run_method(method, game: str, seed: int, steps: int, eval_episodes: int, curve_points: int, curve_episodes: int,
               heldout_episodes: int | None = None, options: dict | None = None, sensitivity: bool = False,
               assumptions: str | None = None) -> dict:
    """Train ``method`` (an object of the protocol) for one (game, seed) and evaluate it by the protocol
    (``scope_envs.bench.protocol``): the run record ``methods.run_one`` returns."""
    return run_method_seeds(method, game, [seed], steps, eval_episodes, curve_points, curve_episodes,
                            heldout_episodes, options, sensitivity, assumptions)[0]


def run_method_seeds(method, game: str, seeds: list[int], steps: int, eval_episodes: int, curve_points: int,
                     curve_episodes: int, heldout_episodes: int | None = None, options: dict | None = None,
                     sensitivity: bool = False, assumptions: str | None = None) -> list[dict]:
    """``run_method`` for each of ``seeds``, one record each, in order. A method with ``train_seeds(ctxs)`` (the
    built-in rows: ``methods.PPOMethod``, ``scope_envs.train.seeds``) trains them as one computation, each seed
    exactly as alone; any other trains them one after another. A seed's record then says ``"trained_with"`` (the
    seeds trained together) and its ``wall_s`` counts its share of their training and evaluation. Their
    evaluation is one computation too (``protocol.evaluate_policies``)."""
    from scope_envs.bench import protocol

    t0 = time.perf_counter()
    options = dict(options or {})
    builtin_row = getattr(method, "builtin", False)  # a built-in row (methods.PPOMethod): its options, its budget
    if not builtin_row:  # what --method takes, from Python too: a function train(ctx), a class, checked
        method = as_method(method, getattr(method, "__name__", type(method).__name__), given="method")
    protocol.check_counts(steps=steps, eval_episodes=eval_episodes, curve_episodes=curve_episodes,
                          heldout_episodes=heldout_episodes)
    check_int("curve_points", curve_points, 0)
    for seed in seeds:
        protocol.check_run_seed(seed)
    if assumptions is not None:
        if not (builtin_row and method.name == "oracle"):
            raise ValueError(f"assumptions= is for the oracle row only, got method {method.name!r}")
        options["env_kwargs"] = {"assumptions": assumptions}
    specs = method.train_envs(game, options) if builtin_row else env_specs(method, game)
    if assumptions is not None:
        specs = [(env_id, {**kwargs, "assumptions": assumptions}) for env_id, kwargs in specs]
    budget = method.budget(game, steps) if builtin_row else steps

    def context(seed: int) -> tuple[TrainContext, Budget, protocol.Curve]:
        books = Budget(method.name, budget)
        curve = protocol.Curve(game, seed, specs, budget, curve_points, curve_episodes,
                               heldout_kwargs={"assumptions": assumptions} if assumptions else {}, defer=builtin_row)

        def progress(decisions, policy):
            books.report(decisions)
            with seal.unsealed():  # the point is the benchmark's own evaluation, on the held-out side too
                curve.at(int(decisions), check_policy(policy, method.name, "progress() was given"))

        return TrainContext(game=game, seed=seed, budget=budget, progress=progress, options=options), books, curve

    def guarded(call, arg, stage: str | None = None):
        """``call(arg)``; what a plug-in's own code raises (its ``train``, or its policy while played: ``stage``)
        is that method's failure, not the benchmark's: named, and not retried. A plug-in trains (``stage`` None)
        with the held-out side sealed (``scope_envs.core.seal``)."""
        try:
            with seal.sealed() if stage is None and not builtin_row else contextlib.nullcontext():
                return call(arg)
        except PluginError:
            raise
        except (Exception, SystemExit) as e:  # a plug-in's sys.exit() ends its own runs, not the benchmark
            if builtin_row:
                raise
            if stage is None:
                what = f" raised in {call.__name__} at {raised_at(e, method)}"
            else:
                where = raised_at(e, method, own_file_only=True)
                what = f": its policy failed {stage}" + (f" at {where}" if where else "")
            raise PluginFailure(f"method {method.name!r}{what}: {type(e).__name__}: {e}") from e

    runs = [context(seed) for seed in seeds]
    together = len(seeds) > 1 and callable(getattr(method, "train_seeds", None))
    if together:
        results = list(guarded(method.train_seeds, [ctx for ctx, _, _ in runs]))
        if len(results) != len(seeds):
            raise PluginError(f"method {method.name!r}: train_seeds returned {len(results)} results for "
                              f"{len(seeds)} seeds")
        guarded(protocol.play_curves, [curve for _, _, curve in runs], "in a learning-curve evaluation")
        train_times = [(time.perf_counter() - t0) / len(seeds)] * len(seeds)
    else:
        results, train_times = [], []
        for ctx, _, curve in runs:
            t1 = time.perf_counter()
            results.append(guarded(method.train, ctx))
            guarded(protocol.play_curves, [curve], "in a learning-curve evaluation")
            train_times.append(time.perf_counter() - t1 + (t1 - t0 if not train_times else 0.0))
    from scope_envs.bench.reference import fingerprint

    t1 = time.perf_counter()
    trained = [books.close(check_policy(result, method.name)) for (_, books, _), result in zip(runs, results)]
    if not builtin_row:
        check_seats(method.name, trained, specs)
        for done in trained:  # another game's network meets this game's observations: numpy's matmul error
            problem = agent_problem(done.policy, f"method {method.name!r}'s policy", game)
            if problem:
                raise PluginError(problem)
    records = guarded(lambda policies: protocol.evaluate_policies(
        policies, game, list(seeds), train_envs=specs, eval_episodes=eval_episodes, heldout_episodes=heldout_episodes,
        sensitivity=sensitivity, assumptions=assumptions, method=method.name), trained, "in evaluation")
    eval_time = (time.perf_counter() - t1) / len(seeds)
    code = None if builtin_row else source_digest(method)
    for (ctx, _, curve), done, record, train_time in zip(runs, trained, records, train_times):
        if assumptions is None:
            training_record(record, done, curve, ctx.budget, train_time)
        record["wall_s"] = train_time + eval_time
        if assumptions is None:
            record["fingerprint"] = fingerprint(game)  # what determined these episodes (--against checks it)
        if code:  # and the method's own code (--resume checks it)
            record["plugin_code"] = code
        if together:
            record["trained_with"] = len(seeds)
    return records


def check_seats(method: str, trained: list[Trained], specs: list[tuple[str, dict]]) -> None:
    """Each seat a method's ``Trained.seats`` names must be a learned user's seat of its training envs: another (a
    ``user_0`` on ``-frozen``, whose user is the env's simulator; ``agent_0``, which ``policy`` plays) was left
    unplayed without a word. ``PluginError`` naming it and the seats there are."""
    asked = sorted({seat for t in trained for seat in t.seats})
    if not asked:
        return
    import scope_envs

    seats = sorted({a for env_id, kwargs in specs for a in scope_envs.make(env_id, **kwargs).possible_agents
                    if a != "agent_0"})
    wrong = [seat for seat in asked if seat not in seats]
    if wrong:
        there = ", ".join(seats) if seats else "none: their users are simulators, played inside the env"
        raise PluginError(f"method {method!r}: Trained(seats=...) names {', '.join(map(repr, wrong))}, not a learned "
                          f"user's seat of its training envs ({', '.join(env_id for env_id, _ in specs)}; their "
                          f"seats: {there}); agent_0 is Trained.policy")


def training_record(record: dict, trained: Trained, curve, budget: int, train_time: float) -> None:
    """Add to a seed's evaluation record what its training says: the collapse diagnostics, the learning curve, the
    training log, the row's own figures and the counts."""
    history = trained.history
    last = history[-max(1, len(history) // 4):]  # collapse diagnostics: the final quarter of training
    record["metrics"].update({k: float(np.mean([r[k] for r in last])) for k in GROUP_FRACTIONS
                              if last and k in last[0]})
    record["curve"] = curve.points
    kept = ("agent_steps", "return", "policy_entropy", "user_entropy", *GROUP_FRACTIONS, *REALISM_LOG)
    record["training"] = [{k: r[k] for k in kept if k in r} for r in history]
    if history and REALISM_LOG[0] in history[0]:  # a realism-paid user: its discriminator at the end of training
        record["metrics"].update({f"{k}_end": float(np.mean([r[k] for r in last])) for k in REALISM_LOG
                                  if k.startswith("discriminator")})  # the user's distance: ``Trained.metrics``
    record["metrics"].update({k: float(v) for k, v in trained.metrics.items()})
    record["agent_steps"] = trained.agent_steps
    record["env_steps"] = trained.env_steps
    record["env_steps_per_s"] = trained.env_steps / max(train_time, 1e-9) if budget and trained.env_steps else 0.0
