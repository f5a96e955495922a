"""The rollout collector (scope_envs.train.rollout): one loop for training, evaluation and the benchmark;
both engines give the same groups and counts; evaluation draws from its own streams."""

import doctest

import numpy as np
import pytest
import torch

import scope_envs
from scope_envs.train import rollout
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate
from scope_envs.train.policy import UniformPolicy
from scope_envs.train.rollout import collect
from scope_envs.vec import vectorize

torch.set_num_threads(1)


def params(trainer):
    return {n: torch.cat([p.detach().flatten() for p in net.parameters()]) for n, net in trainer.learners.items()}


def test_the_module_example_runs():
    assert doctest.testmod(rollout).failed == 0


@pytest.mark.parametrize("env_id", ["p4g-frozen", "cooperbench-vs"])
def test_both_engines_give_the_same_groups_and_counts(env_id):
    """The batched and the loop engine (whose episodes are drawn alike: tests/test_vec_distribution.py) each give
    12 episodes in 3 groups of 4, a group's episodes on one scenario (its persona), the steps each recorded."""
    for batched in (True, False):
        vec = vectorize([scope_envs.make(env_id) for _ in range(5)], batched=batched)
        episodes, steps = collect(vec, {"agent_0": UniformPolicy(seed=3)}, 12, seed=7, group_size=4, scenario_seed=1)
        assert len(episodes) == 12 and steps == sum(len(e["traj"]["agent_0"]) for e in episodes)
        assert sorted(e["group"] for e in episodes) == [g for g in range(3) for _ in range(4)]
        for g in range(3):
            assert len({e["persona"] for e in episodes if e["group"] == g}) == 1


def test_every_recorded_act_is_legal_and_the_rewards_sum_to_the_return():
    vec = scope_envs.make_vec("p4g-cotrain", num_envs=4)
    policies = {"agent_0": UniformPolicy(seed=0), "user_0": UniformPolicy(seed=1)}
    episodes, _ = collect(vec, policies, 10, seed=2)
    for ep in episodes:
        assert set(ep["traj"]) == {"agent_0", "user_0"}
        for seat, ds in ep["traj"].items():
            assert all(d["m"][d["a"]] and d["user"] == (seat != "agent_0") for d in ds)
        assert ep["return"] == sum(d["r"] for d in ep["traj"]["agent_0"])


def test_bad_calls_say_what_is_wrong():
    vec = scope_envs.make_vec("p4g-cotrain", num_envs=2)
    with pytest.raises(ValueError, match="user_0"):
        collect(vec, {"agent_0": UniformPolicy(seed=0)}, 2, seed=0)
    with pytest.raises(ValueError, match="multiple of group_size"):
        collect(vec, {"agent_0": UniformPolicy(seed=0), "user_0": UniformPolicy(seed=0)}, 3, seed=0, group_size=2)
    with pytest.raises(TypeError, match="policy"):
        evaluate(object(), "p4g-frozen", episodes=2)
    one = {"agent_0": UniformPolicy(seed=0)}
    for bad in (0, -1, 2.5):  # 0 and -1 gave no episodes and no error
        with pytest.raises(ValueError, match=f"n_episodes must be a positive int, got {bad}"):
            collect(scope_envs.make_vec("p4g-frozen", num_envs=2), one, bad, seed=0)
    with pytest.raises(ValueError, match=r"the policy for agent_0 has no act\(obs, mask, greedy=False\)"):
        collect(scope_envs.make_vec("p4g-frozen", num_envs=2), {"agent_0": lambda obs, mask: mask.argmax(1)}, 2)
    with pytest.raises(ValueError, match="the rollouts play the act surface"):  # was a TypeError on a tuple
        collect(scope_envs.make_vec("p4g-frozen", num_envs=2, surface="text"), one, 2)


def test_a_policy_whose_act_returns_bare_acts_is_told_to_return_decisions():
    """``act`` returning the acts as an array, not ``Decisions``, had been numpy's AttributeError ('numpy.ndarray'
    object has no attribute 'actions') from inside the rollout, naming neither the policy nor the protocol."""
    class BareActs:
        def act(self, obs, mask, greedy=False):
            return mask.argmax(1)

    with pytest.raises(TypeError, match=r"BareActs.act returned ndarray, not Decisions: return "
                                        r"scope_envs.train.policy.Decisions\(actions\)"):
        evaluate(BareActs(), "p4g-frozen", episodes=2)


def test_the_scalar_rollout_is_gone():
    assert not hasattr(PPOTrainer, "play_scalar") and not hasattr(PPOTrainer, "play_vec")


def test_evaluate_takes_a_policy_or_a_mapping():
    a = evaluate(UniformPolicy(seed=5), "p4g-heldout", episodes=16, seed=5)
    b = evaluate({"agent_0": UniformPolicy(seed=5)}, "p4g-heldout", episodes=16, seed=5)
    assert a["success"] == b["success"] and np.isfinite(a["policy_entropy"])
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=0, seed=0))
    floor = evaluate(trainer, "p4g-heldout", episodes=16, seed=5, uniform=True)
    assert floor["success"] == a["success"]  # uniform=True is UniformPolicy(seed)


@pytest.mark.parametrize("env_id,kwargs", [("p4g-cotrain", {}), ("cooperbench-frozen", {})])
def test_curve_evaluations_do_not_change_the_trained_policy(env_id, kwargs):
    """The same seed trained with and without evaluations after every iteration gives identical parameters:
    the evaluations draw from their own generators (rollout.evaluation_rng), not the trainer's."""
    runs = []
    for with_curves in (False, True):
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, total_steps=600, seed=2, bc_episodes=20,
                                       bc_steps=5))
        scores = []

        def curve(row, trainer=trainer, scores=scores):
            scores.append(evaluate(trainer, env_id, episodes=20, seed=11, **kwargs)["success"])
            scores.append(evaluate(trainer, f"{env_id.split('-')[0]}-heldout", episodes=20, seed=12)["success"])

        history = trainer.train(curve if with_curves else None)
        runs.append(([r["return"] for r in history], params(trainer)))
        if with_curves:
            assert len(scores) == 2 * len(history)
    (ra, pa), (rb, pb) = runs
    assert ra == rb
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


def test_an_evaluation_is_reproducible_and_leaves_the_trainers_generator_alone():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=0, seed=0, user_init="random"))
    state = trainer.rng.bit_generator.state
    a = evaluate(trainer, "p4g-cotrain", episodes=24, seed=3)
    b = evaluate(trainer, "p4g-cotrain", episodes=24, seed=3)
    assert a["success"] == b["success"] and list(a["returns"]) == list(b["returns"])
    assert trainer.rng.bit_generator.state == state
