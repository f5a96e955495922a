"""RLlib (issue 3): multi-agent PPO, one policy per role (``cotrain``) and per member (``population``).

Ray pins its own gymnasium, so CI runs this in ``.venv-rllib`` (``.ci/integrations.sh``);
elsewhere it skips.
"""

import numpy as np
import pytest

import scope_envs

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule  # noqa: E402
from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

from scope_envs.wrappers.rllib import RLlibMultiAgentEnv  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_docstring_example_runs():
    import doctest

    import scope_envs.wrappers.rllib as mod

    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0


def test_adapter_declares_every_possible_agent_and_passes_rllib_checks():
    env = RLlibMultiAgentEnv(scope_envs.make("p4g-population", members=3))
    check_multiagent_environments(env)
    assert set(env.observation_spaces) == {"agent_0", "user_0", "user_1", "user_2"}
    obs, _ = env.reset(seed=0)
    assert set(obs) == set(env.agents) and len(env.agents) == 2
    for a, o in obs.items():
        assert env.observation_spaces[a].contains(o)
    while env.agents:
        acts = {a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in obs.items()}
        obs, rew, term, trunc, infos = env.step(acts)
    assert term["__all__"] or trunc["__all__"]
    with pytest.raises(ValueError, match="act surface"):
        RLlibMultiAgentEnv(scope_envs.make("p4g-cotrain", surface="text"))


def train(env_id, env_config, policies, mapping):
    register_env(env_id, lambda cfg: RLlibMultiAgentEnv(scope_envs.make(env_id, **cfg)))
    config = (
        PPOConfig()
        .environment(env_id, env_config=env_config)
        .multi_agent(policies=set(policies), policy_mapping_fn=mapping)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            p: RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config={"fcnet_hiddens": [32]})
            for p in policies}))
        .env_runners(num_env_runners=0)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=50, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        before = {p: algo.get_module(p).get_state() for p in policies}
        result = algo.train()
        after = {p: algo.get_module(p).get_state() for p in policies}
    finally:
        algo.stop()
    return result, before, after


def changed(a, b):
    return any(not np.allclose(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def test_cotrain_one_policy_per_role():
    policies = ["persuader", "persuadee"]
    result, before, after = train("p4g-cotrain", {}, policies,
                                  lambda aid, *a, **k: "persuader" if aid == "agent_0" else "persuadee")
    for p in policies:
        assert result["learners"][p]["num_module_steps_trained"] > 0
        assert changed(before[p], after[p]), f"{p} was not updated"


def test_population_one_policy_per_member():
    policies = ["persuader", "user_0", "user_1"]
    result, before, after = train("p4g-population", {"members": 2, "schedule": "round_robin"}, policies,
                                  lambda aid, *a, **k: "persuader" if aid == "agent_0" else aid)
    assert result["env_runners"]["num_episodes"] >= 2
    for p in policies:
        assert result["learners"][p]["num_module_steps_trained"] > 0
        assert changed(before[p], after[p]), f"{p} was not updated"
