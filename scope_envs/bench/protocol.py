"""The benchmark's evaluation protocol, written down once: ``evaluate_policy(policy, game, seed)``.

Every row of ``scope-envs bench`` — built-in or plug-in (``scope_envs.bench.plugins``) — and every policy
scored by ``scope-envs score`` is evaluated by this function, on four sides, with the same seeds and
episode counts (common random numbers: every method meets the same episodes):

=============  ==========================================  =====================================================
side           what plays the user seat                     episodes and seeds (run seed ``s``)
=============  ==========================================  =====================================================
train          the method's training simulator(s)           ``eval_episodes`` (the preset's: 500) per simulator;
               (``train_envs``; default ``<game>-frozen``)  env ``i`` reset with ``TRAIN_SEED + 1000 s + i``
held-out       ``<game>-heldout``, the held-out human       ``heldout_episodes = max(eval_episodes,
               proxies on held-out personas/tasks           EVAL_EPISODES_MIN[game])`` (p4g 4,672; the others
                                                            500); seeds ``HELDOUT_SEED + 1000 s + i``
reference      ``<game>-heldout`` with ``behaviour=          the held-out side's episodes and seeds (the same
               "reference"``: the training-side reference   held-out cards and tasks as that side)
               model on held-out personas/tasks
panel          the six held-out simulator families         ``ceil(heldout_episodes / 6)`` per family; family j:
               (``agents.families.panel``, each seated by   ``PANEL_SEED + 1000 s + PANEL_STRIDE j + i``
               ``panel_env`` on held-out scenarios)
=============  ==========================================  =====================================================

* **The reference side splits the gap** (``scope_envs.bench.split``): ``collapse_gap = train − reference``
  (what the training simulator's defects cost, measured inside the training-side world: the same reference
  model, without sharpening, modal card or cooperation bias, on unseen cards) and ``misspecification_gap =
  reference − held-out`` (the reference model against the held-out proxies on the very same scenarios: what no
  simulator-side remedy can fix); ``gap`` is their sum. Nothing of the held-out behaviour model plays there.
* **The rule that sizes the episodes** (``EVAL_EPISODES_MIN``, derived by
  ``benchmarks/eval_episodes.py`` before the runs that use it): the held-out side and the panel play enough
  episodes that one run's held-out standard error is at most ``EVAL_SE_FRACTION`` (10%) of the game's band
  (ceiling − floor); the train side, which measures the exploit, keeps the preset's count.
* **Evaluation envs** (``eval_envs``): a side of ``LARGE_EVAL`` (2,048) episodes or more runs on 256
  envs, a smaller one on 64. The count decides which episode each env is dealt, so it is part of the protocol.
* **Each side draws from its own stream**: for side seed ``t``, the seats' policies are ``players(t)``
  (``plugins.Trained``; the package's networks draw from ``rollout.evaluation_rng(t)``, the floor from
  ``UniformPolicy(t)``, an SB3 model from its adapter's ``[SB3_KEY, t]``). So an evaluation never depends on
  what was evaluated before it, and a policy trained outside the benchmark scores what the benchmark scored.
* **Train side of a method with several training simulators** (a declared definition): each simulator plays
  the whole train side (the same episodes count and seeds), and ``train_success``, ``policy_entropy``,
  ``sim_entropy`` and ``train_zero_score_frac`` are the unweighted means over the simulators, whatever share
  of training each had; the record's ``train_simulators`` holds each one's ``success``. A co-trained user
  (``Trained.seats``) plays the user seat on the train side only; the held-out side and the panel meet
  ``agent_0`` alone.
* **Learning curves** (``Curve``): at 0 decisions and at ``curve_points`` evenly spaced marks of the budget,
  ``curve_episodes`` episodes on the (first) training simulator and on the held-out proxies, seeds
  ``TRAIN_SEED + 1000 s + 500 + i`` and ``HELDOUT_SEED + 1000 s + 500 + i``: disjoint from the final
  evaluation's first 500.
* **Metrics** (``metrics`` of the run record): ``train_success``, ``heldout_success``, ``gap`` (train −
  held-out), ``policy_entropy`` (agent_0's per-decision entropy on the train side, nats; NaN for a policy
  that gives none), ``sim_entropy`` (of the user's act frequencies there), ``train_zero_score_frac``,
  ``panel_success`` (the six families' mean), ``panel_per_family``, ``reference_success`` (the reference side),
  ``collapse_gap`` and ``misspecification_gap``. **normalized** and **recovered** are
  computed from a game's rows, not from one run (``stats.normalize``): ``normalized = (x − mean(random)) /
  (mean(oracle) − mean(random))``, ``recovered = (x − mean(frozen)) / (mean(oracle) − mean(frozen))``, x the
  held-out success of a seed, or the mean over seeds.

    >>> from scope_envs.train.policy import UniformPolicy
    >>> record = evaluate_policy(UniformPolicy(), "p4g", seed=0, eval_episodes=16, heldout_episodes=12)  # doctest: +SKIP
    >>> sorted(record["metrics"])  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.checks import check_int
from scope_envs.games import game_names, game_spec, load

TRAIN_SEED, HELDOUT_SEED = 1_000_000, 2_000_000  # the two sides' seed bases (the panel's: PANEL_SEED)
SEED_STRIDE = 1000  # run seed s evaluates from base + SEED_STRIDE * s
MAX_RUN_SEED = (HELDOUT_SEED - TRAIN_SEED) // SEED_STRIDE - 1  # above it a train side would play held-out seeds
CURVE_OFFSET = 500  # learning-curve points start 500 seeds into each side's range
EVAL_EPISODES = 500  # the train side's episodes (the default preset's eval_episodes)
# the held-out side and the panel play max(the preset's eval_episodes, EVAL_EPISODES_MIN[game]) episodes, so that one
# run's held-out evaluation SE is at most EVAL_SE_FRACTION of the game's band (rule and inputs:
# benchmarks/eval_episodes.py; rule declared, and these numbers derived, before the run that uses them); the train
# side, which measures the exploit (many times the band), keeps the preset's
EVAL_SE_FRACTION = 0.10
EVAL_EPISODES_MIN = {name: game_spec(name).eval_episodes_min for name in game_names()}  # GameSpec.eval_episodes_min


def heldout_episodes_for(game: str, eval_episodes: int) -> int:
    """The held-out side's and the panel's episodes at a preset's ``eval_episodes``: the preset's, raised to the
    game's floor by the evaluation rule (``EVAL_EPISODES_MIN``)."""
    return max(eval_episodes, EVAL_EPISODES_MIN.get(game, 0))
LARGE_EVAL = 2048  # from this many episodes a side is evaluated on 256 envs (eval_envs)
PANEL_SEED = 3_000_000  # the panel's evaluation seeds: PANEL_SEED + 1000 * seed + PANEL_STRIDE * family + env index
PANEL_STRIDE = 100  # > evaluate's 64 envs, so the six families' seeds never overlap


def variants(game: str) -> list[str]:
    """The game's non-default variants of its proxies' assumptions, in their declared order ([]: no switches;
    ``bench.sensitivity``)."""
    spec = game_spec(game)
    return [] if spec.variants is None else [v for v in load(spec.variants) if v != "default"]


def panel_episodes(eval_episodes: int) -> int:
    """Episodes per panel family: ceil(eval_episodes / 6), so the panel plays at least ``eval_episodes``."""
    from scope_envs.agents.families import PANEL_SIZE

    return -(-eval_episodes // PANEL_SIZE)


def panel_seeds(seed: int) -> list[int]:
    """Each panel family's evaluation seed (``evaluate`` resets its env ``i`` with seed + i, i < 64)."""
    from scope_envs.agents.families import PANEL_SIZE

    return [PANEL_SEED + 1000 * seed + PANEL_STRIDE * j for j in range(PANEL_SIZE)]


def eval_envs(episodes: int) -> int:
    """Evaluation envs for a side of ``episodes`` episodes: 256 from ``LARGE_EVAL`` episodes on (one forward pass
    and one batched step serve 4x the slots; p4g's held-out side takes half the time), else ``evaluate``'s 64 (a
    smaller side would spend its last waves on a few long episodes)."""
    return 256 if episodes >= LARGE_EVAL else 64


def check_run_seed(seed) -> int:
    """A run seed: an int from 0 to ``MAX_RUN_SEED``, so that its train side never plays another seed's held-out
    episodes (a ``ValueError`` naming ``seed``)."""
    return check_int("seed", seed, 0, MAX_RUN_SEED)


def check_counts(**counts) -> None:
    """Each of ``counts`` (episodes, decisions) an int >= 1, or None for the default (a ``ValueError`` naming it)."""
    for name, value in counts.items():
        if value is not None:
            check_int(name, value, 1)


def side_seeds(seed: int) -> dict:
    """The first env seed of each side for run seed ``seed`` (env ``i`` adds ``i``)."""
    return {"train": TRAIN_SEED + SEED_STRIDE * seed, "heldout": HELDOUT_SEED + SEED_STRIDE * seed,
            "panel": panel_seeds(seed)}


def play(trained, env, episodes: int, seed: int, num_envs: int = 64, evaluate=None, **env_kwargs) -> dict:
    """One side: ``episodes`` episodes of ``env`` (an id, or a factory of envs) with ``trained.players(seed)``;
    ``evaluate``'s summary (success, outcome, policy_entropy, sim_entropy, zero_score_frac, returns).
    ``evaluate``: the function that plays them (default ``scope_envs.train.rollout.evaluate``)."""
    return play_seeds([trained], env, episodes, [seed], num_envs, evaluate, **env_kwargs)[0]


def play_seeds(trained: list, env, episodes: int, seeds: list[int], num_envs: int = 64, evaluate=None,
               **env_kwargs) -> list[dict]:
    """``play`` of each (trained, seed) pair, in order: by default all as one computation
    (``rollout.evaluate_seeds``, each summary the one it gets alone); with ``evaluate``, one call each."""
    from scope_envs.train.rollout import evaluate_seeds

    if evaluate is not None:
        return [evaluate(t.players(s), env, episodes, seed=s, num_envs=num_envs, **env_kwargs)
                for t, s in zip(trained, seeds)]
    return evaluate_seeds([t.players(s) for t, s in zip(trained, seeds)], env, episodes, list(seeds), num_envs,
                          **env_kwargs)


def evaluate_panel(trained, game: str, episodes: int, seed: int, evaluate=None) -> dict:
    """``agent_0`` against each of the six held-out panel families, ``episodes`` episodes each (the table above)."""
    return evaluate_panels([trained], game, episodes, [seed], evaluate)[0]


def evaluate_panels(trained: list, game: str, episodes: int, seeds: list[int], evaluate=None) -> list[dict]:
    """``evaluate_panel`` of each (trained, seed) pair, in order, each family's sides played together
    (``play_seeds``)."""
    import scope_envs
    from scope_envs.agents.families import panel, panel_env

    members = panel(game)  # stateless simulators: one each, shared by that family's eval envs
    per = []  # per family, each seed's success
    for j, member in enumerate(members):
        def factory(member=member):  # a fresh game (default arguments, as <game>-heldout) per env
            return panel_env(scope_envs.make(f"{game}-heldout").unwrapped.game, member)

        per.append([r["success"] for r in play_seeds(trained, factory, episodes, [panel_seeds(s)[j] for s in seeds],
                                                     evaluate=evaluate)])
    return [{"success": float(np.mean(col)), "per_family": list(col), "families": [m.name for m in members]}
            for col in zip(*per)]


def _as_trained(policy):
    from scope_envs.bench.policies import check_policy

    return check_policy(policy, "evaluate_policy")


def _specs(game: str, train_envs) -> list[tuple[str, dict]]:
    if train_envs is None:
        return [(f"{game}-frozen", {})]
    specs = [train_envs] if isinstance(train_envs, (str, tuple)) else list(train_envs)
    return [(s, {}) if isinstance(s, str) else (s[0], dict(s[1])) for s in specs]


def evaluate_policy(policy, game: str, seed: int, *, train_envs=None, eval_episodes: int | None = None,
                    heldout_episodes: int | None = None, sensitivity: bool = False, assumptions: str | None = None,
                    method: str = "policy", evaluate=None) -> dict:
    """Evaluate ``policy`` on the four sides for run seed ``seed`` (the module docstring) and return the run
    record's evaluation part: ``game``, ``method``, ``seed``, ``metrics``, ``outcomes`` (train, heldout, reference),
    ``panel`` (families, episodes per family, seeds); ``train_simulators`` where there are several.

    ``policy``: a ``Policy``, an SB3 model, a function ``f(obs, mask)``, a ``PPOTrainer``, or a method's
    ``Trained`` (``scope_envs.bench.plugins``). ``train_envs``: the train side's simulators (ids or (id, kwargs);
    default ``<game>-frozen``). ``eval_episodes`` (default: the default preset's, 500) and ``heldout_episodes``
    (default: ``max(eval_episodes, EVAL_EPISODES_MIN[game])``). ``sensitivity``: also the held-out side under
    each variant of the proxies' assumptions. ``assumptions``: a sensitivity ceiling's variant (train and
    held-out sides under it; no panel). ``evaluate``: what plays each side's episodes (``play``'s)."""
    return evaluate_policies([policy], game, [seed], train_envs=train_envs, eval_episodes=eval_episodes,
                             heldout_episodes=heldout_episodes, sensitivity=sensitivity, assumptions=assumptions,
                             method=method, evaluate=evaluate)[0]


def evaluate_policies(policies: list, game: str, seeds: list[int], *, train_envs=None,
                      eval_episodes: int | None = None, heldout_episodes: int | None = None,
                      sensitivity: bool = False, assumptions: str | None = None, method: str = "policy",
                      evaluate=None) -> list[dict]:
    """``evaluate_policy`` of each (policy, seed) pair, in order, each side played for all of them at once
    (``play_seeds``): a row's seeds evaluated as one computation, each record the one it gets alone."""
    import scope_envs

    if f"{game}-heldout" not in scope_envs.registry:
        raise ValueError(f"unknown game {game!r}")
    check_counts(eval_episodes=eval_episodes, heldout_episodes=heldout_episodes)
    for seed in seeds:
        check_run_seed(seed)
    trained = [_as_trained(p) for p in policies]
    specs = _specs(game, train_envs)
    n_train = EVAL_EPISODES if eval_episodes is None else eval_episodes
    n_heldout = heldout_episodes_for(game, n_train) if heldout_episodes is None else heldout_episodes
    variant = {} if assumptions is None else {"assumptions": assumptions}
    seeds = list(seeds)
    side = [side_seeds(s) for s in seeds]

    def every_seed(env, episodes, key, **kwargs):  # one side for every seed at once
        return play_seeds(trained, env, episodes, [d[key] for d in side], eval_envs(episodes), evaluate, **kwargs)

    by_sim = [every_seed(env_id, n_train, "train", **kwargs) for env_id, kwargs in specs]  # [simulator][seed]
    hos = every_seed(f"{game}-heldout", n_heldout, "heldout", **variant)
    if not variant:
        refs = every_seed(f"{game}-heldout", n_heldout, "heldout", behaviour="reference")
        n_panel = panel_episodes(n_heldout)
        panels = evaluate_panels(trained, game, n_panel, seeds, evaluate)
        if sensitivity:  # the same policy and held-out seeds under each named variant of the proxies' assumptions
            by_variant = {v: every_seed(f"{game}-heldout", n_heldout, "heldout", assumptions=v)
                          for v in variants(game)}
    records = []
    for k, seed in enumerate(seeds):
        sides, ho = [sim[k] for sim in by_sim], hos[k]
        tr = sides[0] if len(sides) == 1 else {
            "success": float(np.mean([s["success"] for s in sides])),
            "outcome": {key: float(np.mean([s["outcome"][key] for s in sides])) for key in sides[0]["outcome"]},
            **{key: float(np.mean([s[key] for s in sides]))
               for key in ("policy_entropy", "sim_entropy", "zero_score_frac")}}
        if variant:  # a sensitivity ceiling: its held-out score under its own variant is all that is read
            records.append({"game": game, "method": method, "seed": seed, "assumptions": assumptions,
                            "metrics": {"train_success": tr["success"], "heldout_success": ho["success"]}})
            continue
        ref, pa = refs[k], panels[k]
        metrics = {"train_success": tr["success"], "heldout_success": ho["success"],
                   "gap": tr["success"] - ho["success"],
                   "policy_entropy": tr["policy_entropy"], "sim_entropy": tr["sim_entropy"],
                   "train_zero_score_frac": tr["zero_score_frac"],
                   "panel_success": pa["success"], "panel_per_family": pa["per_family"],
                   "reference_success": ref["success"], "collapse_gap": tr["success"] - ref["success"],
                   "misspecification_gap": ref["success"] - ho["success"]}
        if sensitivity:
            metrics["sensitivity"] = {v: by_variant[v][k]["success"] for v in variants(game)}
        record = {"game": game, "method": method, "seed": seed, "metrics": metrics,
                  "outcomes": {"train": tr["outcome"], "heldout": ho["outcome"], "reference": ref["outcome"]},
                  "panel": {"families": pa["families"], "episodes_per_family": n_panel, "seeds": panel_seeds(seed)}}
        if len(sides) > 1:
            record["train_simulators"] = [{"env": env_id, "success": s["success"]}
                                          for (env_id, _), s in zip(specs, sides)]
        records.append(record)
    return records


class Curve:
    """A run's learning curve: ``at(decisions, trained)`` evaluates a point at 0 decisions and at each of
    ``points`` evenly spaced marks of ``budget`` that ``decisions`` has reached (the module docstring).
    ``defer``: where ``trained`` can be copied as it is (``policies.frozen``: the package's networks), keep the
    copy and play the point later, with every other deferred point of the row at once (``play_curves``); the
    same policy and seeds, so the same numbers."""

    def __init__(self, game: str, seed: int, specs: list, budget: int, points: int, episodes: int,
                 heldout_kwargs: dict | None = None, defer: bool = False):
        self.game, self.specs, self.episodes = game, specs, episodes
        self.heldout_kwargs = heldout_kwargs or {}
        seeds = side_seeds(seed)
        self.train_seed, self.heldout_seed = seeds["train"] + CURVE_OFFSET, seeds["heldout"] + CURVE_OFFSET
        self.marks = list(np.linspace(0, budget, points + 1)[1:]) if budget else []
        self.points: list[dict] = []
        self.defer, self.pending, self.started = defer, [], False

    def at(self, decisions: int, trained) -> None:
        due = 0
        if decisions == 0 and not self.started:
            due = 1
        while self.marks and decisions >= self.marks[0] - 1e-9:
            self.marks.pop(0)
            due += 1
        if not due:
            return
        self.started = True
        if self.defer:
            from scope_envs.bench.policies import frozen

            copy = frozen(trained)
            if copy is not None:
                self.pending.append((int(decisions), due, copy))
                return
        self.add(decisions, due, *(play(trained, env_id, self.episodes, seed, **kwargs)
                                   for env_id, kwargs, seed in self.sides()))

    def sides(self) -> list[tuple[str, dict, int]]:
        """The two sides a point plays: (env id, its kwargs, seed) of the train side, then of the held-out side."""
        env_id, kwargs = self.specs[0]
        return [(env_id, kwargs, self.train_seed), (f"{self.game}-heldout", self.heldout_kwargs, self.heldout_seed)]

    def add(self, decisions: int, due: int, tr: dict, ho: dict) -> None:
        point = {"agent_steps": int(decisions), "train": tr["success"], "heldout": ho["success"],
                 "policy_entropy": tr["policy_entropy"]}
        # one point per mark passed (an iteration can cross several): the same policy and seeds, the same numbers
        self.points += [dict(point) for _ in range(due)]


def play_curves(curves: list[Curve]) -> None:
    """Play the points ``curves`` deferred, in order: each side of all of them as one computation per env
    (``play_seeds``), each point the one ``Curve.at`` would have played then."""
    jobs = [(curve, entry) for curve in curves for entry in curve.pending]
    played: dict[tuple[int, int], dict] = {}
    for side in range(2):
        groups: list[tuple[tuple, list]] = []  # (the side's env, its kwargs and episodes; its points)
        for j, (curve, (_, _, trained)) in enumerate(jobs):
            env_id, kwargs, seed = curve.sides()[side]
            setting = (env_id, kwargs, curve.episodes)
            points = next((points for known, points in groups if known == setting), None)
            if points is None:
                groups.append((setting, points := []))
            points.append((j, trained, seed))
        for (env_id, kwargs, episodes), points in groups:
            out = play_seeds([t for _, t, _ in points], env_id, episodes, [s for _, _, s in points], **kwargs)
            played.update({(j, side): r for (j, _, _), r in zip(points, out)})
    for j, (curve, (decisions, due, _)) in enumerate(jobs):
        curve.add(decisions, due, played[j, 0], played[j, 1])
    for curve in curves:
        curve.pending = []
