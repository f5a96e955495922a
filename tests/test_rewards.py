"""SCOPE's simulator rewards on every game: ``agent_score``, ``user_reward`` = ``adversarial`` /
``cooperative`` / ``curriculum``, the renamed v0 ``adversarial`` (``zero_sum``), the curriculum options."""

import inspect
import math

import numpy as np
import pytest

import scope_envs
from conftest import random_actions
from scope_envs.core.rewards import SIMULATOR_REWARDS, TARGET_VAR, WIDTH, UnknownUserReward, curriculum_reward
from scope_envs.games.cooperbench.game import OWN_BONUS, TEAM_BONUS
from scope_envs.games.p4g import dialogue_acts
from scope_envs.games.p4g.dialogue_acts import PERSUADER_INDEX
from scope_envs.games.p4g.game import P4GGame
from scope_envs.regimes import make_cooperbench, make_p4g, make_tau2

GAMES = ("p4g", "cooperbench", "tau2")
DEFAULTS = {"p4g": "mixed", "cooperbench": "persona", "tau2": "shared"}
OLD_MODES = {"p4g": ("mixed", "persona", "zero_sum"), "cooperbench": ("persona", "mixed", "zero_sum"),
             "tau2": ("shared", "zero", "persona", "zero_sum", "mixed")}
EPISODES = 40
FORMULA = {"adversarial": lambda s: 1.0 - s, "cooperative": lambda s: s, "curriculum": lambda s: 0.0}


def play(game_id, user_reward=None, episodes=EPISODES, seed=0, **kwargs):
    """Random legal play on ``<game>-cotrain``: per episode (terminal rewards, agent_score, final infos,
    truncated). On tau2 the agent plays the gold calls (``oracle_act``) in every other episode: a write needs the
    customer's yes, and random agents against random customers solved none of 300 episodes."""
    from scope_envs.agents.tau2 import oracle_act

    if user_reward is not None:
        kwargs["user_reward"] = user_reward
    env = scope_envs.make(f"{game_id}-cotrain", **kwargs)
    rng = np.random.default_rng(seed)
    out = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=ep)
        while env.agents:
            acts = random_actions(env, obs, rng)
            if game_id == "tau2" and ep % 2 and obs["agent_0"]["action_mask"][1:].any():  # agent_0's turn
                acts["agent_0"] = oracle_act(env.unwrapped.game)
            obs, rew, term, trunc, infos = env.step(acts)
        assert all(term.values()) or all(trunc.values())
        out.append((rew, env.unwrapped.game.agent_score(), infos, any(trunc.values())))
    return out


def outcome_score(game_id, rew, infos):
    """The agent's normalised score recomputed from the game's outcome, independently of ``agent_score``."""
    if game_id == "p4g":
        return min(infos["agent_0"]["actual"] / 2.0, 1.0)
    if game_id == "cooperbench":
        i = infos["agent_0"]
        return (TEAM_BONUS * i["success"] + OWN_BONUS * i["teammate_feature"]) / (TEAM_BONUS + OWN_BONUS)
    return infos["agent_0"]["reward"]


# -- the curriculum reward itself ------------------------------------------------------------------
def test_curriculum_reward_on_groups_of_eight():
    got = [round(curriculum_reward([1.0] * k + [0.0] * (8 - k)), 3) for k in range(5)]
    assert got == [0.044, 0.372, 0.823, 0.988, 1.0]
    for k in range(9):
        var = (k / 8) * (1 - k / 8)  # population variance of k successes out of 8
        expected = math.exp(-((var - 0.25) ** 2) / 0.02)
        assert curriculum_reward([1.0] * k + [0.0] * (8 - k)) == pytest.approx(expected, abs=1e-12)
    # symmetric in successes / failures; custom target and width
    assert curriculum_reward([1.0] * 6 + [0.0] * 2) == pytest.approx(curriculum_reward([1.0] * 2 + [0.0] * 6))
    scores = [0.1, 0.4, 0.9, 0.3]
    assert curriculum_reward(scores, target_var=0.1, width=0.05) == pytest.approx(
        math.exp(-((np.var(scores) - 0.1) ** 2) / 0.05))


# -- the new modes pay SCOPE's formulas, in agent_score ----------------------------------------------
@pytest.mark.parametrize("mode", SIMULATOR_REWARDS)
@pytest.mark.parametrize("game_id", GAMES)
def test_user_reward_is_the_scope_formula_of_agent_score(game_id, mode):
    episodes = play(game_id, mode)
    scores = []
    for rew, score, infos, _ in episodes:
        assert 0.0 <= score <= 1.0
        assert score == pytest.approx(outcome_score(game_id, rew, infos), abs=1e-12)
        assert rew["user_0"] == pytest.approx(FORMULA[mode](score), abs=1e-12)
        scores.append(score)
    # random play reaches both failures and (partial) successes, so the check is not vacuous
    assert min(scores) == 0.0 and max(scores) > 0.0


@pytest.mark.parametrize("game_id", GAMES)
def test_agent_score_matches_each_games_outcome(game_id):
    for rew, score, infos, truncated in play(game_id, "adversarial"):
        agent = rew["agent_0"]
        if game_id == "p4g":  # the gift over $2
            assert agent == infos["agent_0"]["actual"] and score == pytest.approx(agent / 2.0)
        elif game_id == "cooperbench":  # the teammate's reward over its maximum 1.5
            assert score == pytest.approx(agent / 1.5)
        else:  # the task reward, 0 or 1, 0 when truncated
            assert score == agent and score in (0.0, 1.0)
            assert not truncated or score == 0.0


def test_p4g_agent_score_on_a_scripted_gift():
    game = P4GGame(user_reward="adversarial")
    game.reset(game.sample_persona(np.random.default_rng(0), "train"), np.random.default_rng(0))
    game.apply("persuader", PERSUADER_INDEX["close"])
    game.apply("persuadee", dialogue_acts.FIRST_AMOUNT + dialogue_acts.AMOUNT_BINS.index(1.5))
    assert game.agent_score() == 0.75
    assert game.rewards() == {"persuader": 1.5, "persuadee": 0.25}


def test_tau2_truncated_episode_scores_zero():
    cut = [(rew, score) for rew, score, _, truncated in play("tau2", "adversarial", episodes=20, max_steps=2)
           if truncated]
    assert cut, "max_steps=2 should truncate some random episodes"
    for rew, score in cut:  # the agent is paid 0 and so scores 0: the adversarial user gets 1
        assert score == 0.0 and rew == {"agent_0": 0.0, "user_0": 1.0}


# -- old modes: unchanged, v0's adversarial renamed ----------------------------------------------------
@pytest.mark.parametrize("game_id", GAMES)
def test_zero_sum_is_v0_adversarial_and_old_modes_keep_their_formulas(game_id):
    runs = {mode: play(game_id, mode) for mode in OLD_MODES[game_id] + SIMULATOR_REWARDS}
    # the user's reward never changes the dynamics: the same seeds give the same episodes in every mode
    agent = [r["agent_0"] for r, *_ in runs["zero_sum"]]
    for mode, episodes in runs.items():
        assert [r["agent_0"] for r, *_ in episodes] == agent, mode
    for (zs, *_), (mixed, *_), (persona, *_) in zip(runs["zero_sum"], runs["mixed"], runs["persona"]):
        assert zs["user_0"] == -zs["agent_0"]  # v0's adversarial: minus the agent's reward, exactly
        assert mixed["user_0"] == pytest.approx(0.5 * persona["user_0"] + 0.5 * zs["user_0"], abs=1e-12)
    if game_id == "tau2":  # shared is the task reward, i.e. cooperative
        for (shared, *_), (coop, *_), (zero, *_) in zip(runs["shared"], runs["cooperative"], runs["zero"]):
            assert shared["user_0"] == coop["user_0"] == shared["agent_0"] and zero["user_0"] == 0.0


def test_p4g_zero_sum_on_a_scripted_gift():
    game = P4GGame(user_reward="zero_sum")
    game.reset(game.sample_persona(np.random.default_rng(0), "train"), np.random.default_rng(0))
    game.apply("persuader", PERSUADER_INDEX["close"])
    game.apply("persuadee", dialogue_acts.FIRST_AMOUNT + dialogue_acts.AMOUNT_BINS.index(1.0))
    assert game.rewards() == {"persuader": 1.0, "persuadee": -1.0}


@pytest.mark.parametrize("game_id", GAMES)
def test_default_user_reward_is_unchanged(game_id):
    factory = {"p4g": make_p4g, "cooperbench": make_cooperbench, "tau2": make_tau2}[game_id]
    assert inspect.signature(factory).parameters["user_reward"].default == DEFAULTS[game_id]
    for regime in ("cotrain", "frozen"):
        game = scope_envs.make(f"{game_id}-{regime}").unwrapped.game
        assert game.user_reward == DEFAULTS[game_id]
        assert (game.target_var, game.width) == (TARGET_VAR, WIDTH)
    default = play(game_id, episodes=10)
    explicit = play(game_id, DEFAULTS[game_id], episodes=10)
    assert [r for r, *_ in default] == [r for r, *_ in explicit]


@pytest.mark.parametrize("game_id", [*GAMES, "cooperbench-code"])
def test_an_unknown_user_reward_names_what_the_game_pays(game_id):
    """Every game refuses a reward it does not pay with one exception type, carrying its list, so a command reads
    the list rather than the message."""
    from scope_envs.games.cooperbench.code.game import CodeGame

    with pytest.raises(UnknownUserReward) as e:
        if game_id == "cooperbench-code":
            CodeGame(tasks="demo", user_reward="kind")
        else:
            scope_envs.make(f"{game_id}-cotrain", user_reward="kind")
    assert e.value.given == "kind" and "cooperative" in e.value.accepted and "kind" not in e.value.accepted
    assert isinstance(e.value, ValueError) and str(e.value).startswith("user_reward must be one of")


# -- curriculum options --------------------------------------------------------------------------
@pytest.mark.parametrize("game_id", GAMES)
def test_curriculum_options_reach_the_game(game_id):
    game = scope_envs.make(f"{game_id}-cotrain", user_reward="curriculum", target_var=0.2).unwrapped.game
    assert (game.user_reward, game.target_var, game.width) == ("curriculum", 0.2, WIDTH)
    game = scope_envs.make(f"{game_id}-cotrain", user_reward="curriculum", width=0.05).unwrapped.game
    assert (game.target_var, game.width) == (TARGET_VAR, 0.05)
    game = scope_envs.make(f"{game_id}-population", user_reward="curriculum", target_var=0.0,
                           width=1).unwrapped.game
    assert (game.target_var, game.width) == (0.0, 1.0)
    game = scope_envs.make(f"{game_id}-cotrain", user_reward="curriculum", target_var=0.25).unwrapped.game
    assert game.target_var == 0.25


@pytest.mark.parametrize("game_id", GAMES)
def test_curriculum_options_with_another_user_reward_are_an_error(game_id):
    for mode in (None, "adversarial", "cooperative") + OLD_MODES[game_id]:
        extra = {} if mode is None else {"user_reward": mode}
        with pytest.raises(ValueError, match="target_var"):
            scope_envs.make(f"{game_id}-cotrain", target_var=0.2, **extra)
        with pytest.raises(ValueError, match="width"):
            scope_envs.make(f"{game_id}-cotrain", width=0.05, **extra)
    with pytest.raises(ValueError, match="target_var and width"):
        scope_envs.make(f"{game_id}-cotrain", user_reward="adversarial", target_var=0.2, width=0.05)


@pytest.mark.parametrize("game_id", GAMES)
def test_bad_curriculum_options(game_id):
    for bad in (0, 0.0, -0.01, float("nan"), float("inf"), "0.02", True):
        with pytest.raises(ValueError, match="width"):
            scope_envs.make(f"{game_id}-cotrain", user_reward="curriculum", width=bad)
    for bad in (-0.01, 0.26, 1.0, float("nan"), "0.2", False):
        with pytest.raises(ValueError, match="target_var"):
            scope_envs.make(f"{game_id}-cotrain", user_reward="curriculum", target_var=bad)


@pytest.mark.parametrize("game_id", GAMES)
def test_unknown_user_reward_lists_the_allowed_values(game_id):
    with pytest.raises(ValueError, match="user_reward") as e:
        scope_envs.make(f"{game_id}-cotrain", user_reward="kind")
    for mode in OLD_MODES[game_id] + SIMULATOR_REWARDS:
        assert repr(mode) in str(e.value)


def test_tau2_text_surface_takes_the_new_modes():
    env = scope_envs.make("tau2-cotrain", surface="text", domain="mock", user_reward="curriculum", target_var=0.1)
    game = env.unwrapped.game
    assert (game.user_reward, game.target_var, game.width) == ("curriculum", 0.1, WIDTH)
    env.reset(seed=0)
    assert 0.0 <= game.agent_score() <= 1.0
