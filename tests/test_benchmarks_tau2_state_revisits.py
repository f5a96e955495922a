"""``benchmarks/tau2_state_revisits.py``: its state key holds everything the act game's rules answer from.

The probe's finding (most steps reach a state no earlier step reached) is only as good as its key: a key that
left out a field the rules read would merge states that differ, and undercount new ones. Here every pair of
visits with equal keys must give the same agent features, legal masks, user-state row and outcome.
"""

import numpy as np
import pytest
from bench_fixtures import load_script

import scope_envs
from scope_envs.games.tau2.user_state import state_row


def answers(game) -> tuple:
    from scope_envs.games.tau2.game import AGENT, USER

    # the user's own features read its card, which the key leaves out (the probe counts it apart)
    return (game.features(AGENT).tobytes(), game.legal(AGENT).tobytes(), game.legal(USER).tobytes(),
            tuple(state_row(game.user_state())), tuple(sorted(game.outcome().items())), game.active_role())


def revisits(env_id: str, key, answer, seed: int) -> int:
    """Plays 300 uniform episodes of ``env_id``; every state met again under ``key`` must give the same
    ``answer`` as before. Returns how many revisits were checked."""
    env = scope_envs.make(env_id)
    game = env.unwrapped.game
    rng = np.random.default_rng(seed)
    seen, count = {}, 0
    for ep in range(300):
        obs, _ = env.reset(seed=ep)
        while env.agents:
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
            k, got = key(game), answer(game)
            if k in seen:
                count += 1
                assert seen[k] == got, k
            seen[k] = got
    return count


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-heldout"])
def test_equal_state_keys_give_equal_answers(env_id):
    probe = load_script("tau2_state_revisits")
    assert revisits(env_id, probe.state_key, answers, 0) > 50  # enough revisited states to mean something


def core_answers(game) -> tuple:
    from scope_envs.games.tau2.game import AGENT, USER

    # what the rules answer from the core alone: both masks and the candidates they name (no counter is read)
    return (game.legal(AGENT).tobytes(), game.legal(USER).tobytes(),
            tuple((k, tuple(c.key() for c in v)) for k, v in game.candidates().items()), game.active_role())


def test_equal_core_keys_give_equal_masks_and_candidates():
    probe = load_script("tau2_state_revisits")
    assert revisits("tau2-frozen", probe.core_key, core_answers, 1) > 50


def test_the_probe_counts_new_states():
    probe = load_script("tau2_state_revisits")
    out = probe.revisits("tau2-frozen", lambda x, m: int(np.flatnonzero(m)[0]), 20, 0)
    # the first legal act every time: every episode of a task replays the same states
    assert out["state_nodes"] < out["steps"] and out["history_nodes"] <= out["steps"]
    assert 0 < out["state_new_per_step"] <= out["history_new_per_step"] <= 1
    assert out["state_new_per_step"] <= out["state_and_card_new_per_step"] <= 1
    assert 0 < out["core_new_per_step"] <= out["state_new_per_step"] and 1 <= out["tasks"] <= 20
