"""The public evaluation protocol (scope_envs.bench.protocol.evaluate_policy): one path for every row and every
policy, the same numbers as a benchmark run, each side on its own stream."""

import numpy as np
import pytest

import scope_envs
from scope_envs.bench import protocol
from scope_envs.bench.methods import run_one
from scope_envs.bench.policies import SB3Policy, TrainerPlayers, as_policy, load
from scope_envs.bench.protocol import evaluate_policy
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
from scope_envs.train.policy import UniformPolicy

TINY = {"steps": 600, "eval_episodes": 32, "curve_points": 2, "curve_episodes": 16}


def test_evaluate_policy_reproduces_the_benchmark_run_of_a_frozen_policy(tmp_path):
    """The protocol's own check: a frozen policy trained outside the benchmark, scored by evaluate_policy,
    has exactly the run's per-seed held-out and panel numbers (and the whole metrics), also once saved and
    loaded (the package's save format, through scope-envs score's loader)."""
    held = []
    for seed in (0, 1):
        record = run_one("p4g", "frozen", seed, **TINY, heldout_episodes=40)
        held.append(record["metrics"]["heldout_success"])
        trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=seed, total_steps=TINY["steps"]))
        trainer.train()  # no curve evaluations here: they never touch the trainer's stream
        mine = evaluate_policy(trainer, "p4g", seed, eval_episodes=32, heldout_episodes=40)
        assert mine["metrics"]["heldout_success"] == record["metrics"]["heldout_success"]
        assert mine["metrics"]["panel_per_family"] == record["metrics"]["panel_per_family"]
        assert mine["metrics"] == record["metrics"] and mine["outcomes"] == record["outcomes"]
        assert mine["panel"] == record["panel"]
        trainer.save(tmp_path / f"frozen-{seed}")
        saved = evaluate_policy(load(str(tmp_path / f"frozen-{seed}")), "p4g", seed, eval_episodes=32,
                                heldout_episodes=40)
        assert saved["metrics"] == record["metrics"]
    assert held[0] != held[1]  # two seeds, two policies and two evaluations: the equality above is no constant


def test_the_floor_is_uniform_play_through_the_same_path():
    """The random row is the protocol applied to UniformPolicy: the same record."""
    record = run_one("p4g", "random", 2, **TINY, heldout_episodes=40)
    mine = evaluate_policy(UniformPolicy(), "p4g", 2, eval_episodes=32, heldout_episodes=40)
    assert mine["metrics"] == record["metrics"]


def test_sides_draw_from_their_own_streams():
    """Evaluating twice, or after another evaluation, gives the same numbers: no side depends on what came before."""
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=4, total_steps=300))
    trainer.train()
    first = evaluate_policy(trainer, "p4g", 0, eval_episodes=24, heldout_episodes=24)
    evaluate_policy(trainer, "p4g", 1, eval_episodes=24, heldout_episodes=24)
    again = evaluate_policy(trainer, "p4g", 0, eval_episodes=24, heldout_episodes=24)
    assert first["metrics"] == again["metrics"]
    other = evaluate_policy(trainer, "p4g", 1, eval_episodes=24, heldout_episodes=24)
    assert other["metrics"]["heldout_success"] != first["metrics"]["heldout_success"]


def test_defaults_follow_the_evaluation_rule():
    """Unless told, the train side plays the preset's 500 episodes and the held-out side the rule's minimum."""
    from scope_envs.bench.methods import EVAL_EPISODES_MIN, PRESETS, panel_episodes

    calls = []

    def counting(players, env, episodes, seed, num_envs=64, **kwargs):  # plays nothing, counts what is asked
        calls.append((env if isinstance(env, str) else "panel", episodes, num_envs))
        return {"success": 0.0, "outcome": {"x": 0.0}, "policy_entropy": 0.0, "sim_entropy": 0.0,
                "zero_score_frac": 0.0}

    record = evaluate_policy(UniformPolicy(), "cooperbench", 0, evaluate=counting)
    n = PRESETS["default"]["eval_episodes"]
    assert calls[0] == ("cooperbench-frozen", n, 64)
    assert calls[1] == ("cooperbench-heldout", max(n, EVAL_EPISODES_MIN["cooperbench"]), 64)
    assert calls[2] == calls[1]  # the reference side plays the held-out side's episodes
    assert calls[3:] == [("panel", panel_episodes(n), 64)] * 6
    assert record["panel"]["episodes_per_family"] == panel_episodes(n)


def test_several_training_simulators_score_the_mean_of_their_sides():
    """The declared train side of a method with several simulators: each plays the whole side, the mean is scored."""
    policy = as_policy(lambda obs, mask: mask.argmax(1))
    both = evaluate_policy(policy, "p4g", 0, train_envs=["p4g-frozen", "p4g-vs"], eval_episodes=24,
                           heldout_episodes=24)
    each = [evaluate_policy(policy, "p4g", 0, train_envs=[e], eval_episodes=24, heldout_episodes=24)
            for e in ("p4g-frozen", "p4g-vs")]
    assert both["metrics"]["train_success"] == pytest.approx(np.mean([e["metrics"]["train_success"] for e in each]))
    assert [s["env"] for s in both["train_simulators"]] == ["p4g-frozen", "p4g-vs"]
    assert both["metrics"]["heldout_success"] == each[0]["metrics"]["heldout_success"]
    assert np.isnan(both["metrics"]["policy_entropy"])  # a function gives no entropies


def test_a_learned_user_plays_only_the_train_side():
    """cotrain's trained user is in the user seat on the train side; the held-out side meets agent_0 alone."""
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", seed=0, total_steps=300))
    trainer.train()
    players = TrainerPlayers(trainer).players(7)
    assert set(players) == {"agent_0", "user_0"}
    record = evaluate_policy(trainer, "p4g", 0, train_envs=["p4g-cotrain"], eval_episodes=24, heldout_episodes=24)
    alone = evaluate_policy(trainer, "p4g", 0, train_envs=["p4g-frozen"], eval_episodes=24, heldout_episodes=24)
    assert record["metrics"]["heldout_success"] == alone["metrics"]["heldout_success"]
    assert record["metrics"]["train_success"] != alone["metrics"]["train_success"]


def test_sb3_models_are_policies_with_their_own_stream():
    """An SB3 MaskablePPO model is scored as it is: legal acts, reproducible per side (its adapter's generator)."""
    sb3 = pytest.importorskip("sb3_contrib")
    from scope_envs.integrations.sb3 import sb3_vec_env

    model = sb3.MaskablePPO("MlpPolicy", sb3_vec_env("p4g-frozen", num_envs=4), n_steps=16, batch_size=64,
                            seed=0, device="cpu")
    policy = as_policy(model)
    assert isinstance(policy, SB3Policy)
    mask = np.zeros((5, 18), bool)
    mask[:, [2, 7]] = True
    d = policy.act(np.zeros((5, 77), np.float32), mask)
    assert set(d.actions.tolist()) <= {2, 7} and d.entropy.shape == (5,) and np.all(d.entropy <= np.log(2) + 1e-9)
    a = evaluate_policy(model, "p4g", 0, eval_episodes=16, heldout_episodes=16)
    b = evaluate_policy(model, "p4g", 0, eval_episodes=16, heldout_episodes=16)
    assert a["metrics"] == b["metrics"] and 0.0 <= a["metrics"]["heldout_success"] <= 2.0
    with pytest.raises(ValueError, match="18 acts"):
        policy.act(np.zeros((1, 5), np.float32), np.ones((1, 9), bool))


def test_an_sb3_model_trained_on_single_agent_view_reads_its_dict_observation():
    """A ``MultiInputPolicy`` model (docs/trainers.md's ``SingleAgentView`` example) is fed the observation and
    the legal mask as the dict it was trained on: its own distribution, masked."""
    sb3 = pytest.importorskip("sb3_contrib")
    import torch

    from scope_envs.wrappers import SingleAgentView

    model = sb3.MaskablePPO("MultiInputPolicy", SingleAgentView(scope_envs.make("p4g-vs")), n_steps=16,
                            batch_size=16, seed=0, device="cpu")
    policy = as_policy(model)
    obs = np.random.default_rng(0).random((3, 77)).astype(np.float32)
    mask = np.zeros((3, 18), bool)
    mask[:, [1, 4, 9]] = True
    d = policy.act(obs, mask, greedy=True)
    x, _ = model.policy.obs_to_tensor({"observation": obs, "action_mask": mask.astype(np.float32)})
    with torch.no_grad():
        probs = model.policy.get_distribution(x).distribution.probs.numpy()
    assert d.actions.tolist() == np.where(mask, probs, -1).argmax(1).tolist()
    assert evaluate_policy(model, "p4g", 0, eval_episodes=8, heldout_episodes=8)["metrics"]["heldout_success"] >= 0


def test_not_a_policy_is_named():
    with pytest.raises(ValueError, match="an int is not a policy"):
        evaluate_policy(42, "p4g", 0)
    with pytest.raises(ValueError, match="unknown game"):
        evaluate_policy(UniformPolicy(), "chess", 0)


@pytest.mark.parametrize("bad, message", [
    ({"eval_episodes": 0}, "eval_episodes must be a positive int, got 0"),  # an IndexError in the rollout
    ({"heldout_episodes": -3}, "heldout_episodes must be a positive int, got -3"),
    ({"eval_episodes": 2.5}, "eval_episodes must be a positive int, got 2.5"),  # played 3 episodes
    ({"seed": -1}, r"seed must be an int in \[0, 999\], got -1"),
    ({"seed": 1000}, r"seed must be an int in \[0, 999\], got 1000"),  # its train side: seed 0's held-out one
])
def test_counts_and_seeds_are_checked_before_anything_plays(bad, message):
    kwargs = {"seed": 0, "eval_episodes": 2, "heldout_episodes": 2, **bad}
    with pytest.raises(ValueError, match=message):
        evaluate_policy(UniformPolicy(), "p4g", **kwargs)
    assert protocol.MAX_RUN_SEED * protocol.SEED_STRIDE + protocol.TRAIN_SEED < protocol.HELDOUT_SEED


@pytest.mark.parametrize("env_id", ["p4g-frozen", "cooperbench-cotrain"])
def test_a_deferred_curve_point_is_the_point_played_at_its_mark(env_id):
    """A built-in row's learning curve is played once the row has trained, from copies of the networks taken at
    each mark (``Curve(defer=True)``, ``play_curves``): every point equals the one played at its mark, a learned
    user's seat included, and the points differ (the copies are not the live networks)."""
    from scope_envs.bench.policies import Trained

    game = env_id.split("-")[0]
    trainer = PPOTrainer(PPOConfig(env_id=env_id, seed=3, total_steps=900, num_envs=8, episodes_per_iter=8))
    now, later = (protocol.Curve(game, 3, [(env_id, {})], 900, 3, 24, defer=d) for d in (False, True))
    for curve in (now, later):
        curve.at(0, Trained(policy=TrainerPlayers(trainer)))
    trainer.train(lambda row: [c.at(row["agent_steps"], Trained(policy=TrainerPlayers(trainer)))
                               for c in (now, later)])
    assert len(later.pending) == len(now.points) == 4 and not later.points
    protocol.play_curves([later])
    assert later.points == now.points and not later.pending
    assert len({(p["train"], p["heldout"]) for p in now.points}) > 1
