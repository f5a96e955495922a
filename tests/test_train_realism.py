"""The realism user reward (``scope_envs.train.realism``): its discriminator, its distance, and a co-trained
p4g persuadee paid by it."""

import numpy as np
import pytest

import scope_envs
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
from scope_envs.train.realism import Discriminator, distance, table


def test_the_discriminator_learns_which_reply_follows_which_context():
    rng = np.random.default_rng(0)
    real = np.zeros((3, 2, 4))
    for context in range(3):  # people answer context c with reply c; the simulator answers uniformly
        real[context, :, context] = 20
    fake = np.full((3, 2, 4), 5.0)
    d = Discriminator(real.shape)
    assert d.accuracy(real, fake) == pytest.approx(0.5)  # untrained: every cell at log-odds 0, called simulated
    for _ in range(30):
        d.fit(real, fake)
    assert d.accuracy(real, fake) > 0.8
    rewards = d.rewards(np.ravel_multi_index(([0, 0], [1, 1], [0, 3]), real.shape))
    assert rewards[0] > 0 > rewards[1]
    assert np.all(np.abs(d.rewards(rng.integers(real.size, size=50))) <= 5.0)


def test_distance_is_zero_for_the_same_replies_and_one_for_disjoint_ones():
    real = np.zeros((2, 3))
    real[0, 0] = real[1, 1] = 4
    assert distance(real, 2 * real) == 0.0
    other = np.zeros((2, 3))
    other[:, 2] = 1
    assert distance(real, other) == pytest.approx(1.0)
    assert np.isnan(distance(real, np.zeros((2, 3))))  # no shared context: no distance
    assert table([np.array([0, 0, 5])], (2, 3)).tolist() == [[2, 0, 0], [0, 0, 1]]


def test_a_game_without_real_dialogues_refuses_the_realism_reward():
    with pytest.raises(ValueError, match="user_reward"):
        scope_envs.make("cooperbench-cotrain", user_reward="realism")


def test_a_realism_paid_user_started_from_the_collapsed_simulator_ends_closer_to_real_people():
    """Issue 49's known answer R2, at a test's budget and one seed: the co-trained persuadee starts as a clone of
    p4g's frozen (collapsed) simulator and, paid only for realism, its replies to the probe agent move towards the
    training part's real ones; the discriminator tells the real held-back persuadees from it better than chance."""
    from scope_envs.bench.realism import user_distance

    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", env_kwargs={"user_reward": "realism"}, seed=0,
                                   total_steps=8000))
    start = user_distance(trainer, "p4g", seed=0, episodes=300, start=True)
    rows = trainer.train()
    end = user_distance(trainer, "p4g", seed=0, episodes=300)
    assert end < start - 0.02, (start, end)
    assert rows[0]["discriminator_held_back_accuracy"] == 0.5  # scored before its first fit: every cell at 0
    assert np.mean([r["discriminator_held_back_accuracy"] for r in rows[1:]]) > 0.6
    assert all(np.isfinite(r["realism_distance"]) for r in rows)


def test_the_mixed_realism_reward_keeps_half_of_the_games_default():
    """``realism_mixed``: the env pays half the default (``mixed``) user reward, ``realism`` none of it; the
    persuader's reward does not depend on the user's."""
    from scope_envs.games.p4g import personas
    from scope_envs.games.p4g.game import P4GGame

    paid = {}
    for mode in ("mixed", "realism_mixed", "realism"):
        game, rng = P4GGame(user_reward=mode), np.random.default_rng(7)
        game.reset(personas.persona("train", 5), np.random.default_rng(0))
        while not game.done:
            role = game.active_role()
            game.apply(role, int(rng.choice(np.flatnonzero(game.legal(role)))))
        paid[mode] = game.rewards()
    assert paid["mixed"]["persuadee"] != 0.0
    assert paid["realism_mixed"]["persuadee"] == pytest.approx(0.5 * paid["mixed"]["persuadee"])
    assert paid["realism"]["persuadee"] == 0.0
    assert paid["mixed"]["persuader"] == paid["realism"]["persuader"] == paid["realism_mixed"]["persuader"]
