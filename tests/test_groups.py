"""SCOPE's group math has one home (scope_envs.train.groups): its definitions, and that no copy of it, or of
GAE (scope_envs.train.advantage), is left."""

import ast
import doctest
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


HOMES = ("scope_envs/train/groups.py", "scope_envs/train/advantage.py")  # SCOPE's group math; GAE
GAME_RULES = {"agent_score"}  # a game's own method, the rule that groups.agent_score reads: not a copy


def definitions(source: str) -> list[tuple[str, bool]]:
    """Every function defined in ``source``, at any depth (nested functions, methods), as (name, is a method)."""
    found = []

    def visit(node, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((child.name, in_class))
            visit(child, isinstance(child, ast.ClassDef))  # a method: a function in a class's body

    visit(ast.parse(source), False)
    return found


def test_the_definition_reader_sees_nested_functions_and_methods():
    source = "def f():\n    def g(): pass\nclass C:\n    def h(self):\n        def k(): pass\n"
    assert definitions(source) == [("f", False), ("g", False), ("h", True), ("k", False)]


def test_one_definition_each():
    """Each function of the group math (groups.py) and GAE (advantage.py), by the names they have today, is
    defined in its home only: no function, nested function or method of its name elsewhere in the package."""
    names = {node.name for home in HOMES for node in ast.parse((ROOT / home).read_text()).body
             if isinstance(node, ast.FunctionDef)}  # the homes' own functions, as they are named today
    assert {"gae", "group_advantages", "group_diagnostics", "derive_seed", "curriculum_values"} <= names
    found = {n: [] for n in names}
    for folder in ("scope_envs", "agents", "wrappers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for n, method in definitions(path.read_text()):
                if n in names and not (method and n in GAME_RULES):
                    found[n].append(str(path.relative_to(ROOT)))
    copies = {n: paths for n, paths in found.items() if len(paths) > 1 or paths[0] not in HOMES}
    assert not copies, copies
