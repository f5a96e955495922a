"""``scope_envs.regimes``: the frozen regime's built-in simulator follows the game's declared collapse design."""

import numpy as np
import pytest

import scope_envs
from scope_envs.bench import calibration
from scope_envs.games import game_names, game_spec, load
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer


@pytest.mark.parametrize("game", game_names())
def test_the_frozen_seat_holds_the_declared_design(game):
    """0 frozen cards: the collapsed simulator on the modal card; k: the collapsed simulator on the first k train
    cards, each dealt in some episode, and vs verbalizes the same members."""
    spec = game_spec(game)
    env = scope_envs.make(f"{game}-frozen")
    members = env.unwrapped.members
    collapsed = load(spec.collapsed)
    assert all(type(m) is collapsed for m in members)
    if not spec.frozen_cards:
        assert len(members) == 1
        return
    card = load(spec.card)
    assert [getattr(m, spec.card_keyword).id for m in members] == [card("train", i).id
                                                                   for i in range(spec.frozen_cards)]
    seen = set()
    for seed in range(20):
        env.reset(seed=seed)
        seen.add(env.unwrapped.game.persona.id)
    assert seen == {getattr(m, spec.card_keyword).id for m in members}
    vs = scope_envs.make(f"{game}-vs")
    assert [m.name for m in vs.unwrapped.members] == [m.name for m in members]


def test_p4g_frozen_is_the_calibrations_homogeneous_design():
    """p4g declares the homogeneous design (the modal card's collapse costs nothing at its plateau): its frozen
    row trains exactly as the calibration's ``frozen@homogeneous`` cell, and differently from ``combined``."""
    assert game_spec("p4g").frozen_cards == 3

    def trained(env_id, kwargs):
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=4, total_steps=1500))
        trainer.train()
        return np.concatenate([p.detach().numpy().ravel() for p in trainer.learners["agent_0"].parameters()])

    frozen = trained("p4g-frozen", {})
    assert np.array_equal(frozen, trained(*calibration.train_env("p4g", "frozen", "homogeneous")))
    assert not np.array_equal(frozen, trained(*calibration.train_env("p4g", "frozen", "combined")))


def test_a_users_simulator_replaces_the_whole_design():
    user = load(game_spec("p4g").reference)()
    env = scope_envs.make("p4g-frozen", user=user)
    assert env.unwrapped.members == [user]


def test_a_group_meets_one_member_and_so_one_card():
    """A scenario seed picks the member as well as the card (``core.env.member_generator``): on p4g-frozen, whose
    members hold a card each, every episode of a group plays one card, scalar and batched alike, and groups differ."""
    def cards(env, seed):
        env.reset(seed=seed, options={"scenario_seed": 77})
        return env.unwrapped.game.persona.id

    one = {cards(scope_envs.make("p4g-frozen"), seed) for seed in range(12)}
    assert len(one) == 1
    vec = scope_envs.make_vec("p4g-frozen", num_envs=12)
    vec.reset(seed=0, options=[{"scenario_seed": 77}] * 12)
    assert set(vec.persona_id.tolist()) == one
    vec.reset(seed=0, options=[{"scenario_seed": s} for s in range(12)])
    assert len(set(vec.persona_id.tolist())) > 1


@pytest.mark.parametrize("game", game_names())
def test_a_sharpening_past_its_bound_is_refused_when_the_env_is_made(game):
    """``make(id, sharpening=s)`` for s past ``MAX_SHARPENING`` (100): the simulator's ``p ** s`` underflowed to 0
    on every act, and the scalar env stopped mid-episode with numpy's "Probabilities contain NaN" (p4g and tau2 at
    500, cooperbench at 1e4; the batched engine drew from NaN weights). The bound itself plays cleanly."""
    from scope_envs.agents.base import MAX_SHARPENING

    assert MAX_SHARPENING == 100
    for regime in ("frozen", "vs"):
        for s in (101, 500, 1e4, 1e308):
            with pytest.raises(ValueError, match=r"^sharpening must be >= 1 and <= 100, a finite number"):
                scope_envs.make(f"{game}-{regime}", sharpening=s)
    env = scope_envs.make(f"{game}-frozen", sharpening=MAX_SHARPENING)
    with np.errstate(invalid="raise", over="raise"):  # (acts of tiny probability underflow to 0, as they should)
        for seed in range(10):
            obs, _ = env.reset(seed=seed)
            rng = np.random.default_rng(seed)
            while env.agents:
                obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})


def test_numpy_integers_are_counts_as_python_ints_are():
    """families, family_seed, pool_size, snapshot_every and the text surface's max_message_chars refused a numpy
    integer ("must be an int, got np.int64(2)") where members, k and every other count take one; the same env
    comes out as with the Python int."""
    import numpy as np

    for env_id, kwargs in (("p4g-rotation", {"families": 2, "family_seed": 1}),
                           ("p4g-population", {"pool_size": 3, "snapshot_every": 2})):
        episodes = []
        for env in (scope_envs.make(env_id, **{k: np.int64(v) for k, v in kwargs.items()}),
                    scope_envs.make(env_id, **kwargs)):
            obs, _ = env.reset(seed=3)
            seen, rng = [], np.random.default_rng(0)
            while env.agents:
                seen.append({a: o["observation"].tolist() for a, o in obs.items()})
                obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()})
            episodes.append(seen)
        assert episodes[0] == episodes[1] and len(episodes[0]) > 1
    text = scope_envs.make("p4g-frozen", surface="text", max_message_chars=np.int64(10))
    assert text.action_space("agent_0").max_length == 10
