"""Integrations against the real libraries: extras ``scope-envs[sb3]`` and ``[torchrl]``.

RLlib pins its own gymnasium, so its tests live in ``tests/integrations/`` and run
in their own virtualenv (``.ci/integrations.sh``). Each test skips when its
library is missing, so the core suite runs without the extras.
"""

import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import scope_envs
from scope_envs.wrappers import LegalActions, SingleAgentView

TRAINERS_DOC = Path(os.environ.get("SCOPE_TRAINERS_DOC", Path(__file__).resolve().parents[1] / "docs" / "trainers.md"))


def _torch_one_thread():
    import torch

    torch.set_num_threads(1)  # tiny networks: threads only add overhead on the 2-core CI machine


def mean_donation(env, policy, seeds):
    out = []
    for s in seeds:
        obs, info = env.reset(seed=s)
        done = False
        while not done:
            obs, r, term, trunc, info = env.step(policy(obs))
            done = term or trunc
        out.append(info["actual"])
    return float(np.mean(out))


@pytest.mark.slow
def test_maskable_ppo_learns_against_the_frozen_simulator():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    _torch_one_thread()
    model = MaskablePPO("MultiInputPolicy", SingleAgentView(scope_envs.make("p4g-frozen")), n_steps=512,
                        batch_size=128, seed=0)
    model.learn(8192)
    seeds = range(10_000, 10_200)  # evaluation seeds the training never reset with
    rng = np.random.default_rng(0)
    random = mean_donation(SingleAgentView(scope_envs.make("p4g-frozen")),
                           lambda o: int(rng.choice(np.flatnonzero(o["action_mask"]))), seeds)
    trained = mean_donation(SingleAgentView(scope_envs.make("p4g-frozen")),
                            lambda o: model.predict(o, action_masks=o["action_mask"].astype(bool),
                                                    deterministic=True)[0], seeds)
    # measured: random ~0.83, trained ~1.84 after 8192 steps on seeds 0-2
    assert trained > random + 0.3, (trained, random)


def test_supersuit_vec_env_and_sb3_ppo():
    ss = pytest.importorskip("supersuit")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed

    _torch_one_thread()
    # SuperSuit's vector env needs every possible agent alive with one shared space: the regimes in
    # which only agent_0 acts. Plain PPO does not mask, hence LegalActions.
    venv = ss.pettingzoo_env_to_vec_env_v1(LegalActions(scope_envs.make("p4g-rotation")))
    venv = ss.concat_vec_envs_v1(venv, 2, num_cpus=0, base_class="stable_baselines3")
    obs = venv.reset()
    assert obs["observation"].shape == (2, 77) and obs["action_mask"].shape == (2, 18)
    set_random_seed(0)  # not PPO(seed=...): SuperSuit's SB3 wrapper has no working seed()
    model = PPO("MultiInputPolicy", venv, n_steps=128, batch_size=64).learn(512)
    assert model.num_timesteps >= 512


@pytest.mark.parametrize("env_id", ["p4g-cotrain", "p4g-vs", "p4g-frozen", "cooperbench-cotrain"])
def test_torchrl_pettingzoo_wrapper(env_id):
    pytest.importorskip("torchrl")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        env = PettingZooWrapper(scope_envs.make(env_id), use_mask=True, seed=0)
    expected = {"agent": ["agent_0"], "user": ["user_0"]} if "cotrain" in env_id else {"agent": ["agent_0"]}
    assert env.group_map == expected  # grouped by the id prefix (docs/architecture.md §5)
    check_env_specs(env)
    # random actions drawn from the masked spec: an illegal one would raise in the env
    td = env.rollout(40, break_when_any_done=False)
    assert td.batch_size == (40,)
    assert td["next", "done"].any()  # episodes finished (and were reset) within the rollout
    if env_id == "p4g-vs":
        assert td["next", "agent", "info", "vs_candidates"].shape == (40, 1, 5)


# -- docs/trainers.md's snippets: every ```python block of the page (tests/test_docs.py leaves the page to us) ----


def readme_snippets():
    if not TRAINERS_DOC.exists():
        return []
    return re.findall(r"```python\n(.*?)```", TRAINERS_DOC.read_text(), re.S)


def run_snippet(code):
    for mod in re.findall(r"^(?:from|import) (\w+(?:\.\w+)*)", code, re.M):  # the whole dotted path: Ray core
        pytest.importorskip(mod)  # (scope-envs[ray]) imports where RLlib does not
    _torch_one_thread()
    exec(compile(code, "docs/trainers.md", "exec"), {"__name__": "docs"})


SNIPPETS = readme_snippets()


def test_readme_has_a_snippet_per_library():
    libraries = ("sb3_contrib", "supersuit", "torchrl", "ray", "benchmarl")
    for lib in libraries:
        assert any(re.search(rf"^(from|import) {lib}\b", s, re.M) for s in SNIPPETS), lib


def test_every_python_block_of_the_page_is_run():
    """The page says its code blocks run in the tests: the sections after "Use with your trainer" too (the
    "Both seats with Stable-Baselines3" recipe was left out when only that section's blocks were run)."""
    if not TRAINERS_DOC.exists():
        pytest.skip(f"no {TRAINERS_DOC}")
    text = TRAINERS_DOC.read_text()
    assert "## Both seats with Stable-Baselines3" in text
    assert len(SNIPPETS) == text.count("```python\n") and any("SB3Player" in s for s in SNIPPETS)


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_readme_snippet_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # what a library writes into the working directory (BenchMARL's run folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_snippet(SNIPPETS[index])
