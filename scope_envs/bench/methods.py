"""The benchmark's methods: what each trains on, and one (game, method, seed) run.

The first two rows of every game are its band (docs/architecture.md §4, "The benchmark is an instrument"):

* ``random`` — the floor: ``agent_0`` plays uniformly at random over its legal acts
  (``evaluate(..., uniform=True)``, ``scope_envs.train.policy.UniformPolicy``); no training (0 decisions),
  the network is built but never read. Its "train" side is ``<game>-frozen``, as for ``untrained``.
* ``oracle`` — the ceiling, human-aware RL's "PPO with the human proxy": PPO with ``frozen``'s config and
  its own plateau budget (``presets.ceiling_steps``), on ``<game>-heldout`` with ``personas="train"``
  (the held-out human-proxy behaviour model in the user seat, dealing *train* personas/tasks only). It is an upper bound for measurement only and the
  one place where anything is trained against the held-out behaviour model; no held-out persona or task is
  ever dealt to it (tests/test_bench_rows.py), and it is no candidate method: the methods are compared with
  each other and placed in the band ``normalized = (x - random) / (oracle - random)``. Its "train" side is
  that env (the proxies on train scenarios); its "held-out" side is ``<game>-heldout`` as for every method.

A third measurement row, ``uncollapsed``, is PPO with ``frozen``'s config and budget against the users' own
training-side model (``<game>-frozen`` with ``user="reference"``: the reference model, sharpening 1, the dealt
train card, no cooperation bias): what frozen would reach if its simulator had no defect. It is the top of the
*collapse* part of the gap (``scope_envs.bench.split``); like the floor and the ceiling it is never judged.

The row ``grounded``, in the default grid of a game with real dialogues to fit (``available``: p4g), is PPO with
``frozen``'s config and budget against ``<game>-grounded``: the frozen simulator fitted to the *training part* of the
game's real dialogues (p4g's ``GroundedPersuadee``, ``scope_envs/games/p4g/grounded.py``; asked of a game without
one, a ``ValueError``). It is a candidate method like ``frozen``: what training against logs of real people, rather than a
collapsed prompted simulator, buys on the held-out side.

The rows ``cotrain-realism`` and ``population-realism``, in the default grid of a game with real dialogues to ground
in (``GameSpec.realism``: p4g), are ``cotrain`` and ``population`` with the user paid for realism
(``user_reward="realism"``, ``scope_envs.train.realism``): a discriminator, trained as training goes on the training
part's real reply pairs, pays each reply its log-odds of being a real person's. Their run records add the
discriminator's accuracies over training (``REALISM_LOG``) and the user's distance to the real pairs at the start
and the end of training, against the game's probe agent (``bench.realism.realism_metrics``).

Every run is evaluated on four sides (``scope_envs.bench.protocol``), the same seeds for every method (common
random numbers): ``train_success`` against the training simulator (seeds ``1_000_000 + 1000 * seed + i``),
``heldout_success`` against the held-out human proxies (``2_000_000 + 1000 * seed + i``), ``reference_success``
against the training-side reference model on those same held-out scenarios, and the held-out
simulator panel: the six held-out families of ``scope_envs.agents.families.panel(game)``, each seated by
``panel_env`` on held-out scenarios, ``panel_episodes(heldout_episodes) = ceil(heldout_episodes / 6)`` episodes
per family, family ``j`` with seeds ``PANEL_SEED + 1000 * seed + PANEL_STRIDE * j + i`` (``i`` < 64, the eval envs), a
stream disjoint from the other two. Only ``agent_0`` meets the panel (a trained user network is not used).
Metrics ``panel_per_family`` (the six families' success, in panel order) and ``panel_success`` (their mean).
"""

from __future__ import annotations

import contextlib
import gc

import numpy as np

from scope_envs.bench.protocol import (  # the evaluation protocol's constants live with it (one definition)
    EVAL_EPISODES,
    EVAL_EPISODES_MIN,
    EVAL_SE_FRACTION,
    LARGE_EVAL,
    PANEL_SEED,
    PANEL_STRIDE,
    eval_envs,
    heldout_episodes_for,
    panel_episodes,
    panel_seeds,
    variants,
)
from scope_envs.bench.presets import GAMES, ORACLE_BUDGET, PRESETS, ceiling_steps, preset_steps  # noqa: F401
from scope_envs.games import game_spec
from scope_envs.train.groups import GROUP_FRACTIONS

# the floor and the ceiling first (measurement rows: see the module docstring), then the methods
# (``grounded`` only on a game with real dialogues to fit: ``available``)
METHODS = ("random", "oracle", "uncollapsed", "untrained", "frozen", "grounded", "vs", "rotation", "cotrain",
           "population", "cotrain-realism", "population-realism", "selfplay")
# a learned user paid for realism (``GameSpec.realism`` games only): the row -> its regime
REALISM_ROWS = {"cotrain-realism": "cotrain", "population-realism": "population"}
# runnable by name, not in the default grid: K co-trained users with a diversity term (this benchmark's population
# before SCOPE's checkpoint pool, kept so its old results can be reproduced)
EXTRA_METHODS = ("population_members",)
LEARNED_USER = ("cotrain", "population", "population_members", "selfplay", *REALISM_ROWS)
# the default run gives each game max(the preset's seeds, SEEDS_MIN[game]) seeds, so that its confirmatory MDE (power
# 0.8, Holm over the family) is at most SEEDS_MDE_FRACTION of its band, from the per-seed sd of the committed default
# runs (rule and inputs: benchmarks/seeds_rule.py; declared, and these numbers derived, before the run that uses
# them); --seeds is exact, and a smoke run or the full preset keeps its own
SEEDS_MDE_FRACTION = 0.15
SEEDS_MIN = {g: game_spec(g).seeds_min for g in GAMES}  # GameSpec.seeds_min
POPULATION_MEMBERS = 4
POOL = {"pool_size": 5, "snapshot_every": 4}  # SCOPE's checkpoint pool (wrappers/pool.py)
DIVERSITY_COEF = 0.02  # set a priori, never tuned (docs/architecture.md §4)
DIAGNOSTICS = GROUP_FRACTIONS  # grouped runs only: the fractions of groups (scope_envs.train.groups)
METRICS = ("train_success", "heldout_success", "gap", "policy_entropy", "sim_entropy", "train_zero_score_frac",
           "panel_success", "reference_success", "collapse_gap", "misspecification_gap")
# run metrics also hold ``panel_per_family`` (a list of six: not averaged here), and a realism row's own figures
REALISM_METRICS = ("realism_distance_start", "realism_distance_end", "discriminator_accuracy_end",
                   "discriminator_held_back_accuracy_end")
# rough relative run time, to start the slow runs first
COST = {"oracle": 5, "population": 4, "population-realism": 4, "vs": 1.3, "random": 0.1}
UNTRAINED = ("random", "untrained")  # no training: total_steps = 0


def available(game: str, method: str) -> bool:
    """Whether ``method`` is a row of ``game``: ``grounded`` needs a simulator fitted to the game's real dialogues
    (``GameSpec.grounded``), the realism rows real reply pairs to tell users from (``GameSpec.realism``); every other
    row exists on every game."""
    if method == "grounded":
        return game_spec(game).grounded is not None
    if method in REALISM_ROWS:
        return game_spec(game).realism is not None
    return True


def require_row(method: str, games) -> None:
    """A ``ValueError`` unless ``method`` is a row of at least one of ``games`` (``available``)."""
    if not any(available(g, method) for g in games):
        having = [g for g in GAMES if available(g, method)]
        need = "a user simulator fitted to" if method == "grounded" else "real reply pairs from"
        field = "GameSpec.grounded" if method == "grounded" else "GameSpec.realism"
        raise ValueError(f"method {method!r} is a row of none of {list(games)}: it needs {need} the game's real "
                         f"dialogues ({field}): {', '.join(games)} has none (only {', '.join(having) or 'no game'} "
                         f"has)")


def method_setup(game: str, method: str, user_reward: str | None = None, advantage: str = "gae",
                 group_size: int = 1) -> tuple[str, dict, dict]:
    """(training env id, env kwargs, PPOConfig overrides) of a method. ``user_reward`` goes to the methods
    with a learned user; ``advantage``/``group_size`` to every trained method (``oracle`` included: it gets
    ``frozen``'s config). ``random`` and ``untrained`` get ``frozen``'s env and are not trained."""
    if method not in METHODS + EXTRA_METHODS:
        raise ValueError(f"method must be one of {METHODS + EXTRA_METHODS}, got {method!r}")
    require_row(method, [game])
    regime = {"random": "frozen", "untrained": "frozen", "selfplay": "cotrain", "population_members": "population",
              "oracle": "heldout", "uncollapsed": "frozen", **REALISM_ROWS}.get(method, method)
    # oracle: the held-out behaviour model on TRAIN personas/tasks (the ceiling; measurement only)
    env_kwargs = {"population": dict(POOL), "population_members": {"members": POPULATION_MEMBERS},
                  "oracle": {"personas": "train"}, "uncollapsed": {"user": "reference"},
                  "population-realism": dict(POOL)}.get(method, {})
    if method in REALISM_ROWS:  # the row is its user reward: --user-reward does not replace it
        env_kwargs["user_reward"] = "realism"
    elif user_reward is not None and method in LEARNED_USER:
        env_kwargs["user_reward"] = user_reward
    overrides = {"selfplay": method == "selfplay",
                 "diversity_coef": DIVERSITY_COEF if method == "population_members" else 0.0}
    if advantage != "gae" or group_size != 1:  # only then: the default config stays the default
        overrides.update(advantage=advantage, group_size=group_size,
                         episodes_per_iter=-(-64 // group_size) * group_size)
    return f"{game}-{regime}", env_kwargs, overrides


def evaluate_panel(trainer, game: str, episodes: int, seed: int, uniform: bool = False) -> dict:
    """``agent_0`` of a ``PPOTrainer`` (``uniform``: uniform play) against each of the six held-out panel
    families, ``episodes`` episodes each: ``scope_envs.bench.protocol.evaluate_panel``. Evaluation only
    (docs/architecture.md §4.1)."""
    from scope_envs.bench.policies import Trained, TrainerPlayers
    from scope_envs.bench.protocol import evaluate_panel as panel_of

    return panel_of(Trained(TrainerPlayers(trainer, uniform)), game, episodes, seed)


class PPOMethod:
    """A built-in row as a plug-in (``scope_envs.bench.plugins``): the package's act-level PPO
    (``scope_envs.train.act_ppo``) on the method's regime (``method_setup``: env id, kwargs, PPOConfig overrides).
    ``random`` and ``untrained`` train for 0 decisions (``random`` then plays ``UniformPolicy``); ``oracle`` gets
    its own plateau budget (``ceiling_steps``). The co-trained user of ``cotrain``/``population`` is a second seat."""

    builtin = True  # run_method gives it the run's options and its own budget

    def __init__(self, name: str):
        self.name = name

    def train_envs(self, game: str, options: dict | None = None) -> list:
        o = options or {}
        env_id, env_kwargs, _ = method_setup(game, self.name, o.get("user_reward"), o.get("advantage", "gae"),
                                             o.get("group_size", 1))
        return [(env_id, env_kwargs)]

    def budget(self, game: str, steps: int) -> int:
        """This row's decisions on ``game`` when the methods train ``steps``: none for the untrained rows, the
        ceiling's own budget for ``oracle`` (``ceiling_steps``)."""
        if self.name in UNTRAINED:
            return 0
        return ceiling_steps(game, steps) if self.name == "oracle" else steps

    def train(self, ctx):
        return self.train_seeds([ctx])[0]

    def train_seeds(self, ctxs: list) -> list:
        """Train the row on each context's seed, all seeds as one computation (``scope_envs.train.seeds``: one
        vec env of their slots, each seed's training exactly its training alone); one ``Trained`` per context."""
        from scope_envs.bench.policies import Trained, TrainerPlayers
        from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
        from scope_envs.train.seeds import train_seeds

        o = ctxs[0].options
        env_id, env_kwargs, overrides = method_setup(ctxs[0].game, self.name, o.get("user_reward"),
                                                     o.get("advantage", "gae"), o.get("group_size", 1))
        env_kwargs.update(o.get("env_kwargs", {}))  # a sensitivity ceiling's assumptions
        trainers = [PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=env_kwargs, seed=ctx.seed, total_steps=ctx.budget,
                                         **overrides)) for ctx in ctxs]
        players = [TrainerPlayers(t, uniform=self.name == "random") for t in trainers]
        for ctx, p in zip(ctxs, players):
            ctx.progress(0, p)
        histories = train_seeds(trainers, lambda k, row: ctxs[k].progress(row["agent_steps"], players[k]))
        return [Trained(policy=p, agent_steps=t.agent_steps, env_steps=t.env_steps, history=h,
                        metrics=self.own_metrics(t, ctx))
                for ctx, t, p, h in zip(ctxs, trainers, players, histories)]

    def own_metrics(self, trainer, ctx) -> dict:
        """The row's own figures for its record: a realism row's user distance (``bench.realism.realism_metrics``)."""
        if self.name not in REALISM_ROWS:
            return {}
        from scope_envs.bench.realism import realism_metrics

        return realism_metrics(trainer, ctx.game, ctx.seed)


def builtin() -> dict[str, PPOMethod]:
    """The built-in rows by name (``METHODS`` and ``EXTRA_METHODS``), each a ``PPOMethod``."""
    return {name: PPOMethod(name) for name in METHODS + EXTRA_METHODS}


def run_one(game: str, method: str, seed: int, steps: int, eval_episodes: int, curve_points: int,
            curve_episodes: int, user_reward: str | None = None, advantage: str = "gae", group_size: int = 1,
            sensitivity: bool = False, assumptions: str | None = None, heldout_episodes: int | None = None,
            plugin: str | None = None, world: str | None = None) -> dict:
    """Train one (game, method, seed) and evaluate it; the held-out side only ever measures (``oracle``,
    the ceiling, trains against the held-out behaviour model on train scenarios: see the module docstring).

    Every row runs through the same path: the method as a plug-in (``scope_envs.bench.plugins``: a built-in
    row by name, another by ``plugin``, its ``--method`` spec), trained with ``steps`` decisions of agent_0
    and evaluated by the protocol (``scope_envs.bench.protocol.evaluate_policy``).
    ``heldout_episodes`` (default ``eval_episodes``): the held-out side's episodes, and the panel's in all
    (``EVAL_EPISODES_MIN``); the train side plays ``eval_episodes``.
    ``sensitivity``: also evaluate on held-out users under each assumption variant (``bench.sensitivity``).
    ``assumptions`` (``oracle`` only): train and evaluate the ceiling under that variant of the proxies'
    assumptions, the ceiling of the sensitivity run's re-judged claims.
    ``world``: train and evaluate in that variant of the game's training-side world (``GameSpec.worlds``; the
    held-out proxies as shipped); the record says which."""
    return run_row(game, method, [seed], steps, eval_episodes, curve_points, curve_episodes, user_reward, advantage,
                   group_size, sensitivity, assumptions, heldout_episodes, plugin, world)[0]


ROW_COLLECTION_THRESHOLD = 20_000  # net allocations between young collections while a row runs (Python's: 700)


@contextlib.contextmanager
def fewer_collections(threshold: int = ROW_COLLECTION_THRESHOLD):
    """Python's cyclic collector's first threshold raised while a row runs, then restored. A row allocates millions
    of short-lived objects (a dict per decision, each step's arrays) and keeps a growing memo (tau2's states);
    at the default threshold every few hundred steps end in a full collection over all of it, 4-7% of a tau2 row
    (benchmarks/log/trainer-and-batched-rollouts.md). Collecting changes no number, only when garbage is freed."""
    before = gc.get_threshold()
    gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def run_row(game: str, method: str, seeds: list[int], steps: int, eval_episodes: int, curve_points: int,
            curve_episodes: int, user_reward: str | None = None, advantage: str = "gae", group_size: int = 1,
            sensitivity: bool = False, assumptions: str | None = None, heldout_episodes: int | None = None,
            plugin: str | None = None, world: str | None = None) -> list[dict]:
    """``run_one`` for each of ``seeds`` (one record each, in order); a built-in row trains them as one computation
    (``plugins.run_method_seeds``)."""
    import torch
    from threadpoolctl import threadpool_limits

    from scope_envs.bench import plugins

    # one thread per run: the runs are the parallelism (a second BLAS or torch thread per worker only
    # oversubscribes the cores: with numpy's BLAS on 2 threads per worker the oracle runs took ~5x as long)
    torch.set_num_threads(1)
    threadpool_limits(1)
    if plugin is None:
        if method not in METHODS + EXTRA_METHODS:
            raise ValueError(f"method must be one of {METHODS + EXTRA_METHODS}, got {method!r}")
        row = builtin()[method]
    else:
        row = plugins.load(plugin, builtin())
        if row.name != method:
            raise plugins.PluginError(f"--method {plugin}: its name is {row.name!r}, the run's is {method!r}")
    from scope_envs.bench.worlds import use_world

    use_world(game, world)  # (None: as shipped, so that a worker's next run does not inherit this one's)
    try:
        with fewer_collections():
            records = plugins.run_method_seeds(
                row, game, list(seeds), steps, eval_episodes, curve_points, curve_episodes,
                heldout_episodes=eval_episodes if heldout_episodes is None else heldout_episodes,
                options={"user_reward": user_reward, "advantage": advantage, "group_size": group_size},
                sensitivity=sensitivity, assumptions=assumptions)
    finally:
        use_world(game, None)
    return records if world is None else [{**r, "world": world} for r in records]


def together(task: dict) -> bool:
    """Whether a task may train in a block with its row's other seeds (``run_seeds``): a built-in row (not a
    plug-in's), not a sensitivity ceiling, not another grid's cell."""
    return task.get("plugin") is None and task.get("assumptions") is None and "runner" not in task \
        and task.get("method") in METHODS + EXTRA_METHODS


def run_seeds(tasks: list[dict]) -> list[dict]:
    """``run_one`` of each task, in order, where the tasks are one row's seeds (``together``; they differ in
    ``seed`` alone): trained as one computation (``PPOMethod.train_seeds``), each record the one ``run_one`` gives
    but for its timing and ``trained_with``. One task is ``run_one``'s."""
    if len(tasks) == 1:
        return [run_one(**tasks[0])]
    rest = [{k: v for k, v in t.items() if k != "seed"} for t in tasks]
    if any(r != rest[0] for r in rest) or not all(together(t) for t in tasks):
        raise ValueError("run_seeds runs the seeds of one built-in row: its tasks may differ in their seed alone")
    return run_row(seeds=[t["seed"] for t in tasks], **rest[0])
