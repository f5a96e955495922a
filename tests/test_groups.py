"""SCOPE's group math has one home (scope_envs.train.groups): its definitions, and that no copy is left."""

import doctest
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import scope_envs
from scope_envs.core.rewards import curriculum_reward
from scope_envs.train import groups
from scope_envs.train.groups import (
    by_group,
    curriculum_setting,
    curriculum_values,
    derive_seed,
    group_advantages,
    group_diagnostics,
    scenario_options,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_module_examples_run():
    assert doctest.testmod(groups).failed == 0


def test_the_std_normalized_advantage_uses_torchs_sample_std_as_verl_and_trl():
    returns, g = [3.0, 1.0, 0.0, 2.0, 5.0, 5.0, 1.0], [0, 0, 0, 0, 1, 1, 2]
    got = group_advantages(returns, g, std_norm=True)
    first = torch.tensor(returns[:4])
    expected = (first - first.mean()) / (first.std() + 1e-6)  # torch.std: unbiased (ddof 1)
    np.testing.assert_allclose(got[:4], expected.numpy(), rtol=1e-6)
    assert got[4:].tolist() == [0.0, 0.0, 0.0]  # equal returns, and a group of one, get 0
    np.testing.assert_allclose(group_advantages(returns, g)[:4], first.numpy() - 1.5)


def test_groups_are_keyed_by_any_hashable_in_first_seen_order():
    assert list(by_group([{"group": 2}, {"group": 0}, {"group": 2}])) == [2, 0]
    assert by_group(["ab", "c", "de"], key=len) == {2: ["ab", "de"], 1: ["c"]}
    adv = group_advantages([1.0, 3.0, 0.0], [("agent", 0), ("user", 0), ("agent", 0)])
    assert adv.tolist() == [0.5, 0.0, -0.5]
    with pytest.raises(ValueError, match="one entry each"):
        group_advantages([1.0], [0, 1])


def test_the_diagnostics_definitions():
    d = group_diagnostics(
        returns=[0.0, 0.0, 1.0, 1.0, 1.0, 0.0, -1.0, -2.0, 7.0],
        scores=[0.0, 0.0, 1.0, 1.0 - 1e-12, 0.5, 0.0, None, None, 1.0],
        groups=[0, 0, 1, 1, 2, 2, 3, 3, 4])  # group 4 has one episode: left out
    assert set(d) == set(groups.DIAGNOSTICS)
    assert d["zero_std_group_frac"] == 0.5  # groups 0 and 1
    assert d["all_fail_group_frac"] == 0.5  # group 0 (scores 0) and group 3 (no score, returns <= 0)
    assert d["all_success_group_frac"] == 0.25  # group 1; an episode without a score is never a success
    assert d["group_reward_var"] == pytest.approx(np.mean([0.0, 0.0, 0.25, 0.25]))
    empty = group_diagnostics([1.0], [1.0], [0])
    assert all(np.isnan(v) for v in empty.values())


def test_curriculum_values_skip_missing_scores_and_groups_of_one():
    values = curriculum_values([1.0, 0.0, None, 1.0, None, 0.5], ["a", "a", "a", "b", "b", "c"], 0.25, 0.02)
    assert values == {"a": curriculum_reward([1.0, 0.0])}


def test_the_curriculum_setting_is_the_games_own():
    game = scope_envs.make("p4g-cotrain", user_reward="curriculum", target_var=0.1, width=0.05).unwrapped.game
    assert curriculum_setting(game) == (0.1, 0.05)

    class Scoreless(type(game)):
        agent_score = scope_envs.core.game.Game.agent_score
    game.__class__ = Scoreless
    assert groups.agent_score(game) is None
    with pytest.raises(ValueError, match="agent_score"):
        curriculum_setting(game)


def test_seeds_and_scenario_options():
    assert derive_seed(1, 2) == derive_seed(1, 2) != derive_seed(2, 1)
    assert 0 <= derive_seed(-1, 2**70) < 2**32
    assert scenario_options(5, 7, 1) == {}
    assert scenario_options(5, 7, 4) == scenario_options(5, 4, 4) == {"scenario_seed": derive_seed(5, 1)}


def test_one_definition_each():
    """grep finds one definition of each group quantity in the package (the old copies are gone)."""
    names = ["group_advantages", "grpo_advantages", "group_diagnostics", "assign_curriculum_values", "agent_score",
             "derive_seed", "by_group", "curriculum_values"]
    found = {n: [] for n in names}
    for folder in ("scope_envs", "agents", "wrappers"):
        for path in (ROOT / folder).rglob("*.py"):
            for n in names:
                if re.search(rf"^def {n}\(", path.read_text(), re.M):
                    found[n].append(str(path.relative_to(ROOT)))
    copies = {n: paths for n, paths in found.items() if len(paths) > 1 or (paths and "groups.py" not in paths[0])}
    assert not copies, copies
