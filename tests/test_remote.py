"""``scope_envs.remote``: the package's client against a real server passes the in-process env's
conformance (docs/architecture.md §6), gives the in-process episodes for the same seeds, and reports lost sessions."""

import os
import signal
import time
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

import scope_envs
from conftest import play_episode
from serve_fixtures import free_port, needs_openenv, serving, start, stop

needs_openenv()
from scope_envs.remote import RemoteParallelEnv, RemoteVecEnv, SessionLost  # noqa: E402
from scope_envs.serve.codec import jsonable  # noqa: E402

SERVED = [("p4g-cotrain", "act"), ("cooperbench-population", "act"), ("tau2-cotrain", "text")]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No agents present but not all possible_agents")
        yield


@pytest.fixture(scope="module", params=SERVED, ids=[f"{i}-{s}" for i, s in SERVED])
def served(request):
    env_id, surface = request.param
    with serving(env_id, "--surface", surface) as url:
        yield env_id, surface, url


def same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def test_conformance(served):
    env_id, surface, url = served
    env = RemoteParallelEnv(url)
    parallel_api_test(env, num_cycles=100)
    api_test(parallel_to_aec(RemoteParallelEnv(url)), num_cycles=100)
    assert env.observation_space("agent_0") is env.observation_space("agent_0")
    env.close()


def test_multi_episode_determinism_and_the_in_process_episodes(served):
    env_id, surface, url = served
    runs = []
    for _ in range(2):  # a fresh session each time, as the conformance test makes a fresh env (a member
        env, rng = RemoteParallelEnv(url), np.random.default_rng(3)  # schedule spans episodes by design)
        runs.append([play_episode(env, rng, seed=11 if ep == 0 else None) for ep in range(3)])
        env.close()
    assert same(runs[0], runs[1])
    env, rng = RemoteParallelEnv(url), np.random.default_rng(3)
    other = [play_episode(env, rng, seed=12 if ep == 0 else None) for ep in range(3)]
    env.close()
    assert not same(runs[0], other), "a different seed should give different episodes"
    local, rng = scope_envs.make(env_id, surface=surface), np.random.default_rng(3)
    here = [play_episode(local, rng, seed=11 if ep == 0 else None) for ep in range(3)]
    strip = lambda run: [[(acts, obs, rew, term, trunc) for acts, obs, rew, term, trunc, _ in ep] for ep in run]
    assert same(strip(runs[0]), strip(here))
    assert [[jsonable(s[5]) for s in ep] for ep in here] == [[s[5] for s in ep] for ep in runs[0]]


def test_one_seat_driven(served):
    env_id, surface, url = served
    env = RemoteParallelEnv(url, agents=["agent_0"])
    assert env.possible_agents == ["agent_0"]
    parallel_api_test(env, num_cycles=50)
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["agent_0"] and infos["agent_0"]["active"]
    with pytest.raises(ValueError, match="user_0"):
        env.step({"user_0": 0})
    with pytest.raises(ValueError, match="agents must name"):
        RemoteParallelEnv(url, agents=["user_7"])
    env.close()


def test_one_agent_named_as_a_string_is_refused_before_the_server_is_asked():
    """``agents="agent_0"`` once failed as 'unknown: ['a', 'g', 'e', ...]'; no server is needed to say so."""
    with pytest.raises(ValueError, match=r"agents is a list of agent names, got the string 'agent_0': "
                                         r"agents=\['agent_0'\]"):
        RemoteParallelEnv(f"http://127.0.0.1:{free_port()}", agents="agent_0")


def test_bad_actions_are_value_errors(served):
    env_id, surface, url = served
    env = RemoteParallelEnv(url)
    with pytest.raises(ValueError, match="before reset"):
        env.step({"agent_0": 0})
    obs, infos = env.reset(seed=0)
    with pytest.raises(ValueError, match="an int act or a string"):
        env.step({"agent_0": 1.5})
    if surface == "act":
        speaker = next(a for a in env.agents if infos[a]["active"])
        masked = int(np.flatnonzero(obs[speaker]["action_mask"] == 0)[0])
        with pytest.raises(ValueError, match=speaker):
            env.step({speaker: masked})
    env.close()


@pytest.fixture(scope="module")
def frozen_url():
    with serving("p4g-frozen", "--max-num-envs", "64") as url:
        yield url


def test_actions_that_are_not_a_dict_are_the_in_process_value_error(frozen_url):
    """``step([1])``, ``step(5)``, ``step(None)`` raised AttributeError ('list' object has no attribute 'items'),
    where the in-process env (and make_vec) raise a ValueError saying actions are a dict; the client raises that
    ValueError, word for word, before anything is sent, and plays on."""
    remote, local = RemoteParallelEnv(frozen_url), scope_envs.make("p4g-frozen")
    remote_vec, local_vec = RemoteVecEnv(frozen_url, num_envs=2), scope_envs.make_vec("p4g-frozen", num_envs=2)
    try:
        first = {env: env.reset(seed=0)[0] for env in (remote, local, remote_vec, local_vec)}
        for ours, theirs in ((remote, local), (remote_vec, local_vec)):
            for bad in ([1], 5, None, "agent_0", (("agent_0", 1),)):
                with pytest.raises(ValueError, match="actions must be a dict") as got:
                    ours.step(bad)
                with pytest.raises(ValueError) as wanted:
                    theirs.step(bad)
                assert str(got.value) == str(wanted.value), (bad, got.value, wanted.value)
        remote.step({"agent_0": int(np.flatnonzero(first[remote]["agent_0"]["action_mask"])[0])})  # plays on
        remote_vec.step({"agent_0": np.array([np.flatnonzero(m)[0] for m in first[remote_vec]["agent_0"]["action_mask"]])})
    finally:
        remote.close()
        remote_vec.close()


def test_vec_env_is_make_vec(frozen_url):
    remote, local = RemoteVecEnv(frozen_url, num_envs=8), scope_envs.make_vec("p4g-frozen", num_envs=8)
    for vec in (remote, local):
        vec._final_obs = True
    assert remote.observation_space("agent_0") is remote.observation_space("agent_0")
    (ro, ri), (lo, li) = remote.reset(seed=4), local.reset(seed=4)
    assert same(ro, lo)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(40):
        acts = {"agent_0": np.array([rng.choice(np.flatnonzero(m)) for m in lo["agent_0"]["action_mask"]])}
        r, l = remote.step(acts), local.step(acts)
        assert same(r[:4], l[:4])
        assert same(r[4]["_final_info"], l[4]["_final_info"])
        if l[4]["_final_info"].any():
            finished += 1
            np.testing.assert_array_equal(r[4]["final_info"]["return"], l[4]["final_info"]["return"])
        lo = l[0]
    assert finished > 0
    with pytest.raises(ValueError, match="must be 8 ints"):
        remote.step({"agent_0": np.zeros(3, np.int64)})
    remote.close()
    with pytest.raises(SessionLost):
        remote.step(acts)


def test_vec_env_refuses_what_make_vec_refuses(frozen_url):
    """As make_vec: a step before reset is a ValueError (not SessionLost: no episode was lost), and float or bool
    acts are refused, never cast (1.7 was played as act 1), as are a list holding a bool (numpy's cast played True as
    act 1) and a ragged list (numpy's error named no agent)."""
    remote, local = RemoteVecEnv(frozen_url, num_envs=2), scope_envs.make_vec("p4g-frozen", num_envs=2)
    try:
        for vec in (remote, local):
            with pytest.raises(ValueError, match="before reset"):
                vec.step({"agent_0": np.ones(2, np.int64)})
            obs, _ = vec.reset(seed=0)
            act = np.array([np.flatnonzero(m)[0] for m in obs["agent_0"]["action_mask"]])
            for bad in (act + 0.7, act.astype(float), np.ones(2, bool), [True, 0], [[1], [1, 2]]):
                with pytest.raises(ValueError, match="agent_0"):
                    vec.step({"agent_0": bad})
        assert same(remote.step({"agent_0": act}), local.step({"agent_0": act}))  # the refusals moved nothing
    finally:
        remote.close()


def test_a_seed_that_is_not_an_int_is_refused_as_in_process(frozen_url):
    """The in-process env and make_vec refuse a seed of 1.5, True or "3"; the clients cast it with int() and
    played seed 1, 1 or 3. Now the server gets it as given and refuses it naming seed (ValueError)."""
    env, vec = RemoteParallelEnv(frozen_url), RemoteVecEnv(frozen_url, num_envs=2)
    local, local_vec = scope_envs.make("p4g-frozen"), scope_envs.make_vec("p4g-frozen", num_envs=2)
    try:
        for seed in (1.5, True, "3", np.float64(2.0)):
            for reset in (env.reset, vec.reset, local.reset, local_vec.reset):
                with pytest.raises(ValueError, match="seed"):
                    reset(seed=seed)
        for reset in (vec.reset, local_vec.reset):
            with pytest.raises(ValueError, match="seed"):
                reset(seed=[0, 1.5])
        assert same(env.reset(seed=np.int64(3)), local.reset(seed=3))  # numpy's ints are ints
        assert same(vec.reset(seed=[np.int64(3), 4]), local_vec.reset(seed=[3, 4]))
    finally:
        env.close()
        vec.close()


def test_streams_travel(frozen_url):
    """The slots' streams (``reset(streams=)``) reach the server: two streams of four slots step as they step
    locally, and a bad ``streams`` is refused naming it."""
    remote = RemoteVecEnv(frozen_url, num_envs=8)
    local = scope_envs.make_vec("p4g-frozen", num_envs=8)
    streams = [0] * 4 + [4] * 4
    (ro, _), (lo, _) = remote.reset(seed=list(range(8)), streams=streams), local.reset(seed=list(range(8)),
                                                                                       streams=streams)
    assert remote.engine == "batched" and same(ro, lo)
    rng = np.random.default_rng(0)
    for _ in range(30):
        acts = {"agent_0": np.array([rng.choice(np.flatnonzero(m)) for m in lo["agent_0"]["action_mask"]])}
        r, l = remote.step(acts), local.step(acts)
        assert same(r[:4], l[:4])
        lo = l[0]
    with pytest.raises(ValueError, match="streams"):
        remote.reset(seed=0, streams=[0] * 7 + [9])
    remote.close()


def test_sb3_maskable_ppo_on_the_remote_vec_env(frozen_url):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from scope_envs.integrations.sb3 import SB3VecEnv

    venv = VecMonitor(SB3VecEnv(RemoteVecEnv(frozen_url, num_envs=8)))
    model = MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=1, seed=0).learn(256)
    assert model.num_timesteps >= 256
    venv.close()


def test_snapshot_push_through_the_vec_env():
    torch = pytest.importorskip("torch")
    with serving("p4g-population", "--kwarg", "pool_size=3") as url:
        vec = RemoteVecEnv(url, num_envs=4)
        space = vec.observation_space("user_0")["observation"]
        net = torch.nn.Sequential(torch.nn.Linear(space.shape[0], 16), torch.nn.Tanh(),
                                  torch.nn.Linear(16, vec.action_space("user_0").n))
        assert vec.add_snapshot(net) == 2
        assert vec.add_snapshot(net) == 3 and vec.add_snapshot(net) == 3
        with pytest.raises(ValueError, match="outputs"):
            vec.add_snapshot(torch.nn.Sequential(torch.nn.Linear(space.shape[0], 3)))
        n_in, n_out, nn = space.shape[0], vec.action_space("user_0").n, torch.nn
        for other, said in ((nn.GELU(), "GELU"), (nn.Sigmoid(), "Sigmoid")):  # never silently played as tanh
            with pytest.raises(ValueError, match=said):
                vec.add_snapshot(nn.Sequential(nn.Linear(n_in, 16), other, nn.Linear(16, n_out)))
        with pytest.raises(ValueError, match="no activation between"):
            vec.add_snapshot(nn.Sequential(nn.Linear(n_in, 16), nn.Linear(16, n_out)))
        with pytest.raises(ValueError, match="Softmax"):
            vec.add_snapshot(nn.Sequential(nn.Linear(n_in, 16), nn.Tanh(), nn.Linear(16, n_out), nn.Softmax(-1)))
        assert vec.add_snapshot(nn.Sequential(nn.Linear(n_in, 16, bias=False), nn.ReLU(), nn.Linear(16, n_out))) == 3
        obs, infos = vec.reset(seed=0)
        members = set()
        for _ in range(30):
            acts = {a: np.array([np.flatnonzero(m)[0] for m in obs[a]["action_mask"]]) for a in vec.possible_agents}
            obs, *_, infos = vec.step(acts)
            members.update(np.asarray(infos["member"]).tolist())
        assert len(members) > 1, "the pushed snapshots play some episodes"
        vec.close()


def test_a_restarted_server_reports_the_episode_lost():
    port = free_port()
    url, proc = start("p4g-frozen", port=port)
    try:
        env, vec = RemoteParallelEnv(url), RemoteVecEnv(url, num_envs=2)
        obs, _ = env.reset(seed=0)
        vec.reset(seed=0)
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown: the server dies mid-episode
        proc.wait(timeout=30)
        url, proc = start("p4g-frozen", port=port)
        with pytest.raises(SessionLost, match="lost"):
            env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[0])})
        assert env.agents == []
        with pytest.raises(SessionLost):  # never a silent new episode in the lost one's place
            env.step({"agent_0": 1})
        with pytest.raises(SessionLost, match="restarted"):
            vec.step({"agent_0": np.ones(2, np.int64)})
        obs, _ = env.reset(seed=0)  # a new episode, asked for
        assert env.agents == ["agent_0"]
        env.close()
    finally:
        stop(proc)


def test_docs_serving_snippets(frozen_url):
    """docs/serving.md: every Python block runs against the server its comment names; every `scope-envs
    serve` line parses."""
    import argparse
    import re
    import shlex
    from pathlib import Path

    from scope_envs.serve import add_parser

    text = (Path(__file__).resolve().parents[1] / "docs" / "serving.md").read_text()
    parser = argparse.ArgumentParser(prog="scope-envs")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    lines = [ln for block in re.findall(r"```bash\n(.*?)```", text, re.S) for ln in block.splitlines()
             if ln.startswith("scope-envs serve")]
    assert len(lines) >= 3
    for line in lines:
        parser.parse_args(shlex.split(line)[1:])
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if not b.startswith("# verifiers")]
    assert len(blocks) >= 5  # the verifiers block runs in its own virtualenv (tests/test_verifiers_env.py)
    with serving("p4g-cotrain") as cotrain, serving("p4g-population", "--kwarg", "pool_size=3") as pool:
        for code in blocks:
            url = pool if "p4g-population" in code else frozen_url if "p4g-frozen" in code else cotrain
            exec(compile(code.replace("http://127.0.0.1:8000", url), "docs/serving.md", "exec"), {"__name__": "docs"})


def test_single_agent_view_over_the_remote_env(frozen_url):
    """The package's wrappers take the remote env: SingleAgentView (+ LegalActions) gives the in-process
    view's episode, and SB3's MaskablePPO trains on it."""
    from scope_envs.wrappers import SingleAgentView

    remote, local = SingleAgentView(RemoteParallelEnv(frozen_url)), SingleAgentView(scope_envs.make("p4g-frozen"))
    (ro, _), (lo, _) = remote.reset(seed=9), local.reset(seed=9)
    done = False
    while not done:
        assert same(ro, lo)
        act = int(np.flatnonzero(lo["action_mask"])[-1])
        ro, rr, rt, rtr, _ = remote.step(act)
        lo, lr, lt, ltr, _ = local.step(act)
        assert (rr, rt, rtr) == (lr, lt, ltr)
        done = lt or ltr
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    model = MaskablePPO("MultiInputPolicy", remote, n_steps=32, batch_size=32, n_epochs=1, seed=0).learn(64)
    assert model.num_timesteps >= 64
    remote.close()


def test_mlp_wire_says_exactly_the_module_or_refuses_it():
    """mlp_wire: the wire's policy is the module's (same logits), and what the wire cannot say is refused."""
    torch = pytest.importorskip("torch")
    from scope_envs.serve.snapshot import MLPSnapshot, mlp_wire

    nn = torch.nn
    torch.manual_seed(0)
    x = torch.randn(5)
    for act in (nn.Tanh(), nn.ReLU()):
        for net in (nn.Sequential(nn.Linear(5, 8, bias=False), act, nn.Linear(8, 3)),
                    nn.Sequential(nn.Sequential(nn.Linear(5, 8), act), nn.Linear(8, 3)), nn.Linear(5, 3)):
            policy = MLPSnapshot.from_wire(mlp_wire(net), 5, 3)
            np.testing.assert_allclose(policy.logits(x.numpy()), net(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    for net, said in ((nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 3)), "GELU"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Sigmoid(), nn.Linear(8, 3)), "Sigmoid"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Linear(8, 3)), "no activation between"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3), nn.Softmax(-1)), "Softmax"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3), nn.Tanh()), "last layer"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.ReLU(), nn.Linear(8, 3)), "another activation"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3)), "both"),
                      (nn.Sequential(nn.Linear(5, 8), nn.Dropout(), nn.Linear(8, 3)), "Dropout"),
                      (nn.Sequential(), "empty"), (nn.Module(), "Module")):
        with pytest.raises(ValueError, match=said):
            mlp_wire(net)


def test_reset_after_an_idle_timeout_opens_a_new_session():
    """The server closed an idle session: a step is SessionLost (never a silent new episode), and reset() on
    the same object starts a new episode in a new session, as a new client would; so does a reset that finds
    its idle session gone."""
    with serving("p4g-frozen", "--idle-timeout", "2") as url:
        stepper, resetter, fresh = RemoteParallelEnv(url), RemoteParallelEnv(url), RemoteParallelEnv(url)
        try:
            obs, _ = stepper.reset(seed=0)
            resetter.reset(seed=0)
            act = int(np.flatnonzero(obs["agent_0"]["action_mask"])[0])
            time.sleep(8)  # OpenEnv's reaper looks every max(timeout / 4, 5) s: past 2 + 5 s, both are closed
            with pytest.raises(SessionLost, match="closed"):
                stepper.step({"agent_0": act})
            with pytest.raises(SessionLost):  # still no silent new episode
                stepper.step({"agent_0": act})
            expected = fresh.reset(seed=0)
            assert same(stepper.reset(seed=0), expected) and stepper.agents == ["agent_0"]
            stepped = stepper.step({"agent_0": act})
            assert same(stepped, fresh.step({"agent_0": act}))
            assert same(resetter.reset(seed=0), expected)  # its session was reaped too: a reset opens one
            assert same(resetter.step({"agent_0": act}), stepped)
        finally:
            for env in (stepper, resetter, fresh):
                env.close()


def test_a_refused_batched_step_leaves_the_remote_batch_as_it_was():
    """Over the batched endpoint as in process: a step refused (422, ValueError) for one seat's illegal act moved no
    other seat, so the twin that never sent it stays alike (tests/test_vec.py)."""
    from test_vec import assert_a_refused_step_changes_nothing

    with serving("tau2-cotrain") as url:
        twins = [RemoteVecEnv(url, num_envs=16) for _ in range(2)]
        try:
            assert_a_refused_step_changes_nothing(twins)
        finally:
            for v in twins:
                v.close()


def test_an_env_dropped_without_close_lets_go_of_its_connection(frozen_url):
    """A ``RemoteParallelEnv`` dropped without ``close()`` closes its session's client when it is collected: the
    client's event-loop thread holds the client, so each such env had kept a thread, its loop's descriptors and
    its socket (a connection the server kept open) for the life of the process."""
    import gc
    import threading

    def fds():
        return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0

    def dropped(seed):
        env = RemoteParallelEnv(frozen_url)
        obs, _ = env.reset(seed=seed)
        while env.agents:
            obs, *_ = env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[0])})

    dropped(0)  # (imports and first-use caches)
    gc.collect()
    threads, open_fds = set(threading.enumerate()), fds()
    for seed in range(1, 9):
        dropped(seed)
    gc.collect()
    assert not [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    assert fds() <= open_fds + 2


def test_a_vec_env_dropped_without_close_frees_its_server_session():
    """A ``RemoteVecEnv`` dropped without ``close()`` deletes its batched session when it is collected: the server
    had held it, one of its ``--max-vec-sessions``, until the idle timeout (300 s), refusing new ones meanwhile."""
    import gc

    with serving("p4g-frozen", "--max-vec-sessions", "1") as url:
        def dropped(seed):
            vec = RemoteVecEnv(url, num_envs=2)
            vec.reset(seed=seed)

        for seed in range(3):  # each opens the server's only batched session, then lets go of it
            dropped(seed)
            gc.collect()
        vec = RemoteVecEnv(url, num_envs=2)
        vec.close()
        vec.close()  # a second close sends nothing
        with pytest.raises(SessionLost, match="closed"):
            vec.reset(seed=0)
