"""The benchmark's band rows (``random``, the floor; ``oracle``, the ceiling) and its held-out simulator panel."""

import json
from pathlib import Path

import numpy as np
import pytest
from scope_envs.agents.families import PANEL_SIZE

import scope_envs
from scope_envs.bench import methods
from scope_envs.bench.methods import (
    METHODS,
    evaluate_panel,
    method_setup,
    panel_episodes,
    panel_seeds,
    run_one,
)
from scope_envs.games import game_spec
from scope_envs.train.act_ppo import NetworkPolicy, PPOConfig, PPOTrainer, evaluate
from scope_envs.train import seeds

GAMES = ("p4g", "cooperbench", "tau2")
TOP = {"p4g": 2.0, "cooperbench": 1.0, "tau2": 1.0}
TINY = {"steps": 100, "eval_episodes": 12, "curve_points": 1, "curve_episodes": 8}


def test_the_band_rows_come_first():
    assert METHODS[:2] == ("random", "oracle")
    assert "random" in methods.UNTRAINED and "oracle" not in methods.UNTRAINED


@pytest.mark.parametrize("game", GAMES)
def test_method_setup_of_the_band_rows(game):
    frozen_id, frozen_kw, frozen_over = method_setup(game, "frozen")
    assert method_setup(game, "random") == (frozen_id, frozen_kw, frozen_over)  # frozen's env, never trained
    # oracle: frozen's config, against the held-out behaviour model on TRAIN personas/tasks
    assert method_setup(game, "oracle") == (f"{game}-heldout", {"personas": "train"}, frozen_over)
    # grouped/GRPO runs reach the oracle as they reach frozen; a learned user's reward does not (it has none)
    assert method_setup(game, "oracle", "adversarial", "grpo", 4)[2] == method_setup(game, "frozen", None, "grpo", 4)[2]
    assert "user_reward" not in method_setup(game, "oracle", "adversarial")[1]


def test_heldout_regime_personas_option():
    from scope_envs.agents.p4g import HumanProxyPersuadee

    assert scope_envs.make("p4g-heldout").unwrapped.split == "heldout"
    env = scope_envs.make("p4g-heldout", personas="train")
    assert env.unwrapped.split == "train" and isinstance(env.unwrapped.members[0], HumanProxyPersuadee)
    with pytest.raises(ValueError, match="personas"):
        scope_envs.make("p4g-heldout", personas="test")
    with pytest.raises(ValueError, match="personas"):
        scope_envs.make("p4g-frozen", personas="train")


def heldout_ids(game):
    """The held-out persona/card ids and held-out task ids of a game (docs/architecture.md §4.1)."""
    if game == "p4g":
        from scope_envs.games.p4g import personas

        return {personas.persona("heldout", i).id for i in range(personas.SPLIT_SIZES["heldout"])}, set()
    if game == "cooperbench":
        from scope_envs.games.cooperbench import styles, world

        return ({styles.persona("heldout", i).id for i in range(styles.SPLIT_SIZES["heldout"])},
                {t.id for t in world.tasks("heldout")})
    from scope_envs.games.tau2 import behaviour

    return {behaviour.card("heldout", i).id for i in range(behaviour.SPLIT_SIZES["heldout"])}, None


@pytest.mark.parametrize("game", GAMES)
def test_oracle_trains_on_train_personas_and_tasks_only(game, monkeypatch):
    """The ceiling meets the held-out behaviour model, but every training episode deals a train card/task (read
    from the batched engine as it starts each episode: it deals from indices, not through the scalar game)."""
    from scope_envs.vec.batched import BatchedVecEnv

    env_id, kwargs, overrides = method_setup(game, "oracle")
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=0, total_steps=1, num_envs=4,
                                   episodes_per_iter=16, **overrides))
    for env in trainer.envs:
        assert env.unwrapped.split == "train" and env.unwrapped.members[0].name == "human_proxy"
    dealt = []
    begun = BatchedVecEnv._begun

    def spy(self, idx):
        begun(self, idx)
        tasks = getattr(self, "task_id", np.full(self.num_envs, None))
        dealt.extend((self.persona_id[i], tasks[i]) for i in np.asarray(idx).tolist())

    monkeypatch.setattr(BatchedVecEnv, "_begun", spy)
    trainer.train()
    assert trainer.agent_steps > 0 and len(dealt) >= 16
    held_personas, held_tasks = heldout_ids(game)
    for persona_id, task in dealt:
        if game == "tau2":  # a scenario's id: "<domain>/<task id>|<card id>"
            head, card = persona_id.split("|")
            domain, task_id = head.split("/", 1)
            data = trainer.envs[0].unwrapped.game.data[domain]
            assert card not in held_personas and card.startswith("train")
            assert task_id in data.split_ids("train") and task_id not in data.split_ids("test")
        else:
            assert persona_id.startswith("train-") and persona_id not in held_personas
        if game == "cooperbench":
            assert task not in held_tasks


def test_random_is_uniform_play_and_never_trains(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("random read or trained the network")

    monkeypatch.setattr(PPOTrainer, "train", forbidden)
    monkeypatch.setattr(NetworkPolicy, "act", forbidden)  # the networks' forward pass in rollouts
    r = run_one("p4g", "random", 0, **TINY)
    m = r["metrics"]
    assert r["training"] == [] and r["env_steps"] == 0 and all(c["agent_steps"] == 0 for c in r["curve"])
    assert len(r["curve"]) == 1  # one evaluation: drawn as a level, like untrained
    assert 0 <= m["heldout_success"] <= TOP["p4g"] and 0 <= m["panel_success"] <= TOP["p4g"]
    assert len(m["panel_per_family"]) == PANEL_SIZE
    assert m["panel_success"] == pytest.approx(np.mean(m["panel_per_family"]))
    # uniform over the legal acts: its per-decision entropy is the mean log of the number of legal acts
    assert m["policy_entropy"] > 1.0
    assert run_one("p4g", "random", 0, **TINY)["metrics"] == m  # its own seeded generator: reproducible


def test_oracle_run_reports_the_panel():
    r = run_one("p4g", "oracle", 0, **TINY)
    m = r["metrics"]
    assert r["curve"][-1]["agent_steps"] >= TINY["steps"] and r["training"]  # a curve, not a level
    assert 0 <= m["panel_success"] <= TOP["p4g"] and len(m["panel_per_family"]) == PANEL_SIZE
    assert all(0 <= x <= TOP["p4g"] for x in m["panel_per_family"])
    assert r["panel"]["episodes_per_family"] == panel_episodes(TINY["eval_episodes"]) == 2
    assert len(r["panel"]["families"]) == PANEL_SIZE and all(f.startswith("heldout-") for f in r["panel"]["families"])


def test_the_held_out_sides_take_their_own_episode_count(monkeypatch):
    """``heldout_episodes`` sizes the held-out side, the reference side and the panel; the train side keeps its
    own; a side of ``LARGE_EVAL`` episodes or more runs on 256 envs."""
    from scope_envs.bench import protocol
    from scope_envs.train.rollout import evaluate

    calls = []

    def counting(players, env_id, episodes=500, seed=12345, num_envs=64, **kwargs):
        calls.append((env_id if isinstance(env_id, str) else "panel", episodes, num_envs))
        return evaluate(players, env_id, episodes, seed, num_envs, **kwargs)

    monkeypatch.setattr(protocol, "LARGE_EVAL", 30)  # the protocol's constant (methods re-exports it)
    r = protocol.evaluate_policy(lambda obs, mask: mask.argmax(1), "p4g", 0, eval_episodes=12,
                                 heldout_episodes=30, evaluate=counting)
    assert calls[:3] == [("p4g-frozen", 12, 64), ("p4g-heldout", 30, 256), ("p4g-heldout", 30, 256)]
    assert calls[3:] == [("panel", 5, 64)] * PANEL_SIZE and r["panel"]["episodes_per_family"] == 5


def test_panel_episodes_and_seeds():
    assert panel_episodes(500) == 84 and panel_episodes(3000) == 500 and panel_episodes(6) == 1
    for seed in range(3):
        panel = {s + i for s in panel_seeds(seed) for i in range(64)}  # evaluate resets env i with seed + i
        assert len(panel) == 64 * PANEL_SIZE  # the families' seeds do not overlap
        other = {base + 1000 * seed + off + i for base in (1_000_000, 2_000_000) for off in (0, 500)
                 for i in range(64)}  # run_one's train / held-out seeds (final evaluation and curve)
        assert not panel & other
    assert panel_seeds(0) == panel_seeds(0) and panel_seeds(0) != panel_seeds(1)


def test_the_panel_never_meets_a_trained_user(monkeypatch):
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", user_init="random", total_steps=0, seed=0))

    def forbidden(*a, **k):
        raise AssertionError("a trained user network played on the panel")

    monkeypatch.setattr(trainer.learners["user_0"], "dist", forbidden)
    out = evaluate_panel(trainer, "p4g", 2, seed=0)
    assert len(out["per_family"]) == PANEL_SIZE and out["success"] == pytest.approx(np.mean(out["per_family"]))


def test_evaluate_takes_an_env_factory():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=0, seed=0))
    by_id = evaluate(trainer, "p4g-heldout", 20, seed=5, greedy=True)
    by_factory = evaluate(trainer, lambda: scope_envs.make("p4g-heldout"), 20, seed=5, greedy=True)
    assert by_id["success"] == by_factory["success"] and by_id["outcome"] == by_factory["outcome"]
    with pytest.raises(ValueError, match="env_kwargs"):
        evaluate(trainer, lambda: scope_envs.make("p4g-heldout"), 4, max_turns=4)


def test_the_ceiling_trains_to_its_own_larger_budget(monkeypatch):
    """Below the plateau the oracle gets ORACLE_BUDGET x the methods' budget; every method gets the budget."""
    budgets = {}

    def train_seeds(trainers, callback=None):
        budgets.update({t.cfg.env_id: t.cfg.total_steps for t in trainers})
        return [[] for _ in trainers]

    monkeypatch.setattr(seeds, "train_seeds", train_seeds)
    for m in ("oracle", "frozen"):
        run_one("p4g", m, 0, **TINY)
    assert methods.ORACLE_BUDGET > 1 and TINY["steps"] < game_spec("p4g").budget
    assert budgets == {"p4g-heldout": methods.ORACLE_BUDGET * TINY["steps"], "p4g-frozen": TINY["steps"]}


@pytest.mark.parametrize("game", GAMES)
def test_the_default_preset_trains_at_the_plateau_rules_budgets(game):
    """The default preset's budgets are the plateau rule's committed answers (benchmarks/plateau_budget.py): the
    methods' where the rule found a plateau (below it where it found none: a game that defers the switch), the
    ceiling its own plateau budget, never below the methods'; the full preset's ceiling follows the same rule."""
    data = json.loads((Path(__file__).parents[1] / "benchmarks" / "results" / "plateau_budget" /
                       "plateau_budget.json").read_text())
    rows = {a["row"]: a for a in data["answers"] if a["game"] == game}
    steps = methods.preset_steps(game)
    if rows["uncollapsed"]["at_plateau"]:
        assert steps == rows["uncollapsed"]["plateau_budget"]
    else:
        assert steps <= rows["uncollapsed"]["highest_judged"]
    own = rows["oracle"]["plateau_budget"] or rows["oracle"]["highest_judged"]
    assert methods.ceiling_steps(game, steps) == max(own, steps)
    full = methods.preset_steps(game, "full")
    assert methods.ceiling_steps(game, full) == max(own, full)


def test_evaluation_episodes_follow_the_declared_rule():
    """``EVAL_EPISODES_MIN`` is what ``benchmarks/eval_episodes.py``'s rule gives on its committed measurement:
    one run's held-out evaluation SE at most ``EVAL_SE_FRACTION`` of the band, from the largest per-episode sd
    of the band's rows."""
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("eval_episodes", root / "benchmarks" / "eval_episodes.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    measured = json.loads((root / "benchmarks" / "results" / "eval_episodes" / "eval_episodes.json").read_text())
    assert measured["fraction"] == methods.EVAL_SE_FRACTION
    assert set(measured["games"]) == set(GAMES) == set(methods.EVAL_EPISODES_MIN)
    for game, row in measured["games"].items():
        sd = max(row["sd_episode"].values())
        n = script.required(sd, row["band"])
        assert methods.EVAL_EPISODES_MIN[game] == row["eval_episodes"] == n, game
        assert n % 64 == 0 and sd / n**0.5 <= methods.EVAL_SE_FRACTION * row["band"] < sd / (n - 64) ** 0.5, game


def test_a_row_runs_with_fewer_collections_and_gives_the_threshold_back(monkeypatch):
    import gc

    from scope_envs.bench import plugins

    seen = []
    real = plugins.run_method_seeds

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return real(*args, **kwargs)

    before = gc.get_threshold()
    monkeypatch.setattr(plugins, "run_method_seeds", spy)
    record = run_one("p4g", "random", 0, **TINY)
    assert seen[0][0] == methods.ROW_COLLECTION_THRESHOLD > before[0] and seen[0][1:] == before[1:]
    assert gc.get_threshold() == before and record["method"] == "random"

    def fails(*args, **kwargs):
        raise RuntimeError("a row that fails")

    monkeypatch.setattr(plugins, "run_method_seeds", fails)
    with pytest.raises(RuntimeError):
        run_one("p4g", "random", 0, **TINY)
    assert gc.get_threshold() == before  # given back however the row ends
