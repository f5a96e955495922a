"""``make_vec``: a user asked slot by slot gets the scalar env's view; a pool's snapshots answer all their slots
at once; auto-reset keeps the finished episode's final info; illegal acts raise and change nothing; the Gymnasium
vector view. (That the batched episodes are drawn as the scalar envs draw
theirs: tests/test_vec_distribution.py.)"""

import zlib

import numpy as np
import pytest
import torch

import scope_envs
from scope_envs.core.simulator import Simulator
from scope_envs.vec import BatchedVecEnv, GymVectorEnv, LoopVecEnv, vectorize

torch.set_num_threads(1)

def play(vec, steps: int, seed: int, options=None) -> list:
    """Random legal play, the act of slot i from its own generator; everything observed, in order."""
    n = vec.num_envs
    pick = [np.random.default_rng([7, i]) for i in range(n)]
    obs, infos = vec.reset(seed=seed, options=options)
    trace = []
    for _ in range(steps):
        acts = {}
        for a in vec.possible_agents:
            live = infos["live"][a]
            trace.append((a, obs[a]["observation"][live], obs[a]["action_mask"][live], infos["active"][a], live))
            acts[a] = np.zeros(n, np.int64)
            for i in np.flatnonzero(infos["active"][a]):
                acts[a][i] = pick[i].choice(np.flatnonzero(obs[a]["action_mask"][i]))
        obs, rewards, terms, truncs, infos = vec.step(acts)
        trace.append((rewards, terms, truncs, infos["member"]))
        done = infos["_final_info"]
        if done.any():
            final = infos["final_info"]
            trace.append([(i, {k: v[i] for k, v in final["outcome"].items()}, final["user_acts"][i],
                           final["persona"][i], final["member"][i], final["agent_score"][i], final["return"][i])
                          for i in np.flatnonzero(done)])
    return trace


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert x == y
            continue
        for u, v in zip(x, y):
            if isinstance(u, dict):
                assert u.keys() == v.keys() and all(np.array_equal(u[k], v[k]) for k in u)
            elif isinstance(u, np.ndarray):
                np.testing.assert_array_equal(u, v)
            else:
                assert u == v


@pytest.mark.parametrize("game", ["p4g", "cooperbench"])
def test_a_view_reads_the_scalar_game_of_the_episode_dealt(game):
    """A slot dealt from indices resets no scalar game (``deal_many``); its view brings the slot's scalar game to
    the episode (``sync_scalar``): the instructions are this episode's persona card and task, as a fresh scalar
    game reset on them words them."""
    from scope_envs.core.game import Drawn

    batched = scope_envs.make_vec(f"{game}-cotrain", num_envs=8)
    batched.reset(seed=3)
    role = batched.role_names[1]
    legal = np.ones(batched.batch.n_acts[1], bool)
    texts = [batched.view(i, 1, legal).instructions for i in range(batched.num_envs)]
    want = []
    for i in range(batched.num_envs):
        fresh = scope_envs.make(f"{game}-cotrain").unwrapped.game
        fresh.reset(batched.persona[i], Drawn(int(batched.task_index[i])) if game == "cooperbench" else None)
        want.append(fresh.instructions(role))
    assert texts == want
    assert len(set(texts)) > 1


def canonical(value):
    if isinstance(value, dict):
        return sorted((k, canonical(v)) for k, v in value.items())
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    return value


class ViewReader(Simulator):
    """A user whose reply is its legal act of highest weight in a table hashed from its whole view: any difference
    in a view changes the play, and nothing else does (it draws nothing)."""

    wants_observation = True

    def distribution(self, view):
        key = repr((view.role, getattr(view.persona, "id", None), [(t.role, t.act, t.text) for t in view.history],
                    view.legal.tolist(), canonical(view.public), canonical(view.private), view.instructions,
                    view.observation.tobytes()))
        w = np.random.default_rng(zlib.crc32(key.encode())).random(len(view.legal)) * view.legal
        out = np.zeros(len(w))
        out[int(np.argmax(w))] = 1.0
        return out


def hashed_play(vec, options) -> list:
    """``play`` of each slot's first episode, where the agent's act in a slot is a function of its observation
    alone, and every slot is dealt its scenario by a seed: two engines that give a user the same views play the
    same episodes."""
    n = vec.num_envs
    vec.next_episode = lambda slot: None
    obs, infos = vec.reset(seed=0, options=options)
    trace = []
    while infos["live"]["agent_0"].any():
        mask, x, live = obs["agent_0"]["action_mask"], obs["agent_0"]["observation"], infos["live"]["agent_0"]
        acts = np.zeros(n, np.int64)
        for i in np.flatnonzero(infos["active"]["agent_0"]):
            legal = np.flatnonzero(mask[i])
            acts[i] = legal[zlib.crc32(x[i].tobytes()) % len(legal)]
        obs, rewards, _, _, infos = vec.step({"agent_0": acts})
        trace.append((x[live], rewards["agent_0"], infos["turn"][live]))
        if infos["_final_info"].any():
            final = infos["final_info"]
            trace.append([(i, final["user_acts"][i], final["persona"][i], final["return"][i])
                          for i in np.flatnonzero(infos["_final_info"])])
    return trace


def test_other_simulators_are_asked_slot_by_slot_with_the_scalar_envs_view():
    """A user that is not a built-in simulator gets the view the scalar env would give it, history, public and
    private facts and the act observation included: with its replies a function of its view and every slot's
    scenario dealt by a seed, the batched engine plays the scalar envs' episodes exactly."""
    options = [{"scenario_seed": 20 + i} for i in range(8)]
    vec = scope_envs.make_vec("p4g-frozen", num_envs=8, user=ViewReader())
    scalar = vectorize([scope_envs.make("p4g-frozen", user=ViewReader()) for _ in range(8)], batched=False)
    assert isinstance(vec, BatchedVecEnv) and isinstance(scalar, LoopVecEnv)
    trace = hashed_play(vec, options)
    assert_same(trace, hashed_play(scalar, options))
    assert len({p for t in trace if isinstance(t, list) for (_, _, p, _) in t}) == 8


def snapshots(env, seed: int, selfplay: bool = False) -> list:
    """Two checkpoint-pool snapshots of random networks for ``env``'s user seat (weights pushed away from their
    near-uniform initial actor); with ``selfplay``, of a shared network over both roles."""
    from scope_envs.train.act_ppo import ActorCritic, PolicySnapshot

    x_dim = env.observation_space("user_0")["observation"].shape[0]
    n_acts = env.action_space("user_0").n
    if selfplay:
        x_dim, n_acts = 2 + max(x_dim, env.observation_space("agent_0")["observation"].shape[0]), \
            max(n_acts, env.action_space("agent_0").n)
    torch.manual_seed(seed)
    out = []
    for _ in range(2):
        net = ActorCritic(x_dim, n_acts)
        with torch.no_grad():
            for w in net.parameters():
                w.add_(torch.randn_like(w) * 0.5)
        out.append(PolicySnapshot(net, selfplay=selfplay))
    return out


@pytest.mark.parametrize("game,selfplay", [("p4g", False), ("cooperbench", False), ("tau2", False), ("p4g", True)])
def test_a_pools_snapshots_answer_all_their_slots_at_once_as_the_scalar_envs(game, selfplay):
    """A checkpoint pool's snapshots answer from the observation alone (``Simulator.distributions``): the batched
    engine asks each snapshot once for all the slots it plays, never slot by slot (whose episodes draw as the
    scalar envs': tests/test_vec_distribution.py)."""
    vec = scope_envs.make_vec(f"{game}-population", num_envs=8, pool_size=3)
    pool = snapshots(vec.envs[0], seed=len(game), selfplay=selfplay)
    for env in vec.envs:
        for s in pool:
            env.add_snapshot(s)
    asked, answered = [], []
    vec._ask = lambda i, legal: asked.append(i)
    for s in pool:
        s.distributions = (lambda f: lambda x, legal: answered.append(len(x)) or f(x, legal))(s.distributions)
    trace = play(vec, 80, seed=4)
    members = {m for t in trace if isinstance(t, list) for (*_, m, _, _) in t}
    assert not asked and answered and members == {0, 1, 2}
    assert max(answered) > 1  # a call answered several slots


@pytest.mark.parametrize("game", ["p4g", "cooperbench", "tau2"])
def test_a_batched_vec_env_lets_go_of_the_snapshots_that_left_the_pool(game):
    """A long run adds a snapshot to the pool every few updates and the oldest leaves: the batched engine keeps
    only the simulators some slot's roster still holds (it had kept every snapshot ever added, one entry per
    slot, for as long as the vec env lived)."""
    import gc
    import weakref

    vec = scope_envs.make_vec(f"{game}-population", num_envs=4, pool_size=3)
    alive, sizes = [], []
    for k in range(12):
        snap = snapshots(vec.envs[0], seed=k)[0]
        alive.append(weakref.ref(snap))
        for env in vec.envs:
            env.add_snapshot(snap)
        del snap
        play(vec, 6, seed=k)
        sizes.append(len(vec._kind_of))
    gc.collect()
    assert sum(r() is not None for r in alive) <= 2  # the pool's two frozen entries (pool_size 3: and the live user)
    assert max(sizes[4:]) <= 2 * vec.num_envs  # (snapshot, slot) pairs of the entries in the rosters


@pytest.mark.parametrize("env_id", ["cooperbench-frozen", "cooperbench-heldout", "tau2-frozen", "tau2-heldout"])
def test_replies_declared_by_row_are_the_same_for_any_part_of_the_slots(env_id):
    """``replies_by_row``: the engine computes every stream's replies in one call, which is right only if each
    row's weights are those of a call on any part of the slots holding it (its stream's), bit for bit."""
    vec = scope_envs.make_vec(env_id, num_envs=64)
    assert vec.replies_by_row and not scope_envs.make_vec("p4g-frozen", num_envs=2).replies_by_row
    rng = np.random.default_rng(0)
    obs, _ = vec.reset(seed=3)
    checked = 0
    for _ in range(40):
        acts = np.argmax(rng.random(obs["agent_0"]["action_mask"].shape) * obs["agent_0"]["action_mask"], 1)
        # the agent's half by hand, then the replies the user seat would draw from
        active = vec.batch.active()
        idx = (~vec.idle & (active == 0)).nonzero()[0]
        vec._apply(0, idx, acts[idx])
        active = vec.batch.active()
        todo = (~vec.idle & (active == 1) & (vec.seat < 0)).nonzero()[0]
        todo = todo[vec.kind[todo] == vec.kind[todo[0]]] if len(todo) else todo
        if len(todo) > 4:
            legal, kind = vec.batch.legal(1, active), vec._kinds[vec.kind[todo[0]]]
            whole = vec.reply_weights(kind, todo, legal[todo])
            for part in (todo[::2], todo[1::3], todo[:1], todo[-3:]):
                mine = vec.reply_weights(kind, part, legal[part])
                assert np.array_equal(mine, whole[np.searchsorted(todo, part)])
                checked += len(part)
        vec._run_simulators()
        obs = vec._observe()
        if vec.batch.done[~vec.idle].any():  # (stepped by hand: no auto-reset)
            obs, _ = vec.reset(seed=int(rng.integers(100)))
    assert checked > 500


def test_a_non_default_held_out_assumption_loops_over_the_scalar_envs():
    vec = scope_envs.make_vec("p4g-heldout", num_envs=3, assumptions="no_wear_out")
    assert isinstance(vec, LoopVecEnv)
    assert isinstance(scope_envs.make_vec("p4g-heldout", num_envs=3), BatchedVecEnv)
    assert isinstance(scope_envs.make_vec("p4g-frozen", num_envs=3, surface="text"), LoopVecEnv)


def test_auto_reset_keeps_the_final_info_and_next_episode_can_stop_a_slot():
    vec = scope_envs.make_vec("p4g-frozen", num_envs=4)
    obs, infos = vec.reset(seed=0)
    close = scope_envs.make("p4g-frozen").unwrapped.game.acts("persuader").index("close")
    stop = {1, 3}
    vec.next_episode = lambda slot: None if slot in stop else {}
    obs, rewards, terms, truncs, infos = vec.step({"agent_0": np.full(4, close)})  # the persuadee's final reply
    assert infos["_final_info"].all() and terms["agent_0"].all() and not truncs["agent_0"].any()
    final = infos["final_info"]
    np.testing.assert_array_equal(rewards["agent_0"], final["outcome"]["actual"])
    np.testing.assert_array_equal(final["return"], final["outcome"]["actual"])
    assert all(len(acts) == 1 for acts in final["user_acts"]) and final["outcome"]["persuader_turns"].tolist() == [1] * 4
    assert infos["live"]["agent_0"].tolist() == [True, False, True, False]  # 0 and 2 started their next episode
    assert infos["turn"][[0, 2]].tolist() == [0, 0] and obs["agent_0"]["observation"][[0, 2], 0].tolist() == [0, 0]
    obs, rewards, *_ = vec.step({"agent_0": np.array([1, 0, 1, 0])})  # idle slots are not read
    assert infos["live"]["agent_0"].sum() == 2


def test_illegal_or_malformed_actions_raise():
    vec = scope_envs.make_vec("p4g-frozen", num_envs=3)
    with pytest.raises(ValueError, match="before reset"):
        vec.step({"agent_0": np.ones(3, np.int64)})
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="illegal"):
        vec.step({"agent_0": np.array([1, 0, 1])})  # the no-op is masked on turn
    with pytest.raises(ValueError, match="illegal"):
        vec.step({"agent_0": np.array([1, 99, 1])})
    with pytest.raises(ValueError, match="shape"):
        vec.step({"agent_0": np.array([1, 1])})
    with pytest.raises(ValueError, match="num_envs"):
        scope_envs.make_vec("p4g-frozen", num_envs=0)


def test_the_gymnasium_vector_view_runs_a_cleanrl_style_loop():
    import gymnasium

    env = GymVectorEnv(scope_envs.make_vec("p4g-heldout", num_envs=5))
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    rng, finished, returns = np.random.default_rng(0), 0, []
    for _ in range(40):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        assert acts in env.action_space
        obs, rew, term, _, info = env.step(acts)
        assert obs in env.observation_space and rew.shape == (5,)
        if term.any():
            assert (info["_final_obs"] == term).all()
            for i in np.flatnonzero(term):
                assert info["final_obs"][i] in env.single_observation_space
                returns.append(info["final_info"]["return"][i])
                assert rew[i] == info["final_info"]["return"][i] == info["final_info"]["actual"][i]
            finished += int(term.sum())
    assert finished >= 10 and min(returns) >= 0
    with pytest.raises(ValueError, match="single-agent"):
        GymVectorEnv(scope_envs.make_vec("p4g-cotrain", num_envs=2))


def test_batched_tables_follow_set_params():
    """Swapping the fitted parameters (the fitting and out-of-sample scripts do) reaches the batched rules too."""
    import copy

    from scope_envs.games.p4g import batched, personas

    shipped = personas.params("train")
    new = copy.deepcopy(shipped)
    new["strategy_effects"]["coef"]["thank"] += 1.0
    with personas.params_kept():
        personas.set_params(new, "train")
        want = shipped["strategy_effects"]["coef"]["thank"] + 1.0
        assert batched.tables("train")["coef"]["thank"] == pytest.approx(want)
    assert batched.tables("train")["coef"]["thank"] == shipped["strategy_effects"]["coef"]["thank"]


def test_the_module_example_runs():
    import doctest

    import scope_envs.vec

    result = doctest.testmod(scope_envs.vec, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0



def assert_a_refused_step_changes_nothing(twins, which: int = 0):
    """Two vec envs of tau2 (whose slots are at different turns) reset and stepped alike until the agent is to move
    in some slots and the user in others; a step of the first whose user acts are illegal raises, and then the
    same legal step gives both the same observations, turns and rewards (the agent's acts were not applied)."""
    outs = [v.reset(seed=11) for v in twins]
    rng = np.random.default_rng(0)
    for _ in range(40):
        obs, infos = outs[0]
        if infos["active"]["agent_0"].any() and infos["active"]["user_0"].any():
            break
        acts = {a: np.array([rng.choice(np.flatnonzero(m)) for m in obs[a]["action_mask"]]) for a in obs}
        outs = [v.step(acts)[::4] for v in twins]
    else:
        pytest.fail("no step found with the agent to move in some slots and the user in others")
    legal = {a: np.array([rng.choice(np.flatnonzero(m)) for m in obs[a]["action_mask"]]) for a in obs}
    masked = legal["user_0"].copy()
    j = int(np.flatnonzero(infos["active"]["user_0"])[which])  # which of the user's slots gets a masked act
    masked[j] = int(np.flatnonzero(obs["user_0"]["action_mask"][j] == 0)[0])
    with pytest.raises(ValueError, match="user_0"):
        twins[0].step({**legal, "user_0": masked})
    a, b = (v.step(legal) for v in twins)
    np.testing.assert_array_equal(a[4]["turn"], b[4]["turn"])
    for agent in twins[0].possible_agents:
        np.testing.assert_array_equal(a[0][agent]["observation"], b[0][agent]["observation"])
        np.testing.assert_array_equal(a[1][agent], b[1][agent])
        np.testing.assert_array_equal(a[4]["active"][agent], b[4]["active"][agent])


def test_a_refused_step_leaves_the_batch_as_it_was():
    """Every seat's acts are checked before any is applied (``BatchedVecEnv.step``); over the server:
    tests/test_remote.py."""
    assert_a_refused_step_changes_nothing([scope_envs.make_vec("tau2-cotrain", num_envs=16) for _ in range(2)])


def test_a_refused_step_leaves_the_loop_of_scalar_envs_as_it_was():
    """The loop over scalar envs (``LoopVecEnv``, the path for what the batched engines do not cover) checks every
    slot's acts before it steps any slot, as the batched engine does."""
    from scope_envs.vec import LoopVecEnv, vectorize

    twins = [vectorize([scope_envs.make("tau2-cotrain") for _ in range(16)], batched=False) for _ in range(2)]
    assert all(isinstance(v, LoopVecEnv) for v in twins)
    assert_a_refused_step_changes_nothing(twins, which=-1)  # the last: the loop reaches it after the others


# the persuader's words for a few acts (the game's own realizations); the last one closes the episode
P4G_MESSAGES = ("Hi there, nice to meet you.", "Do you usually donate to charities?",
                "Millions of children are suffering in war zones right now; they need someone to care.",
                "Would you like to make a donation to Save the Children today?", "Have a great day, bye!")


def test_the_text_surface_steps_strings_and_each_slot_is_the_scalar_env_seeded_alike():
    """``make_vec(..., surface="text")`` runs on ``LoopVecEnv``: an agent's observations are Gymnasium's batch of a
    ``Text`` space (a tuple of N transcripts) and its actions N strings; slot ``i`` of ``reset(seed=s)`` plays the
    episodes of the scalar env reset with seed ``s + i`` (auto-reset included)."""
    from gymnasium.vector.utils import batch_space

    n = 2
    vec = scope_envs.make_vec("p4g-frozen", num_envs=n, surface="text")
    assert isinstance(vec, LoopVecEnv)
    batched_space = batch_space(vec.observation_space("agent_0"), n)
    scalars = [scope_envs.make("p4g-frozen", surface="text") for _ in range(n)]
    obs, infos = vec.reset(seed=3)
    want = [env.reset(seed=3 + i)[0] for i, env in enumerate(scalars)]
    assert isinstance(obs["agent_0"], tuple) and obs["agent_0"] in batched_space
    assert list(obs["agent_0"]) == [w["agent_0"] for w in want]
    assert infos["active"]["agent_0"].all()
    ended = 0
    for t in range(8):
        said = [P4G_MESSAGES[min(t, 3)], P4G_MESSAGES[t % len(P4G_MESSAGES)]]  # slot 1 says goodbye at step 4
        obs, rewards, terms, truncs, infos = vec.step({"agent_0": said})
        assert isinstance(obs["agent_0"], tuple) and obs["agent_0"] in batched_space
        for i, env in enumerate(scalars):
            o, r, te, tr, _ = env.step({"agent_0": said[i]})
            assert rewards["agent_0"][i] == r["agent_0"] and terms["agent_0"][i] == te["agent_0"]
            assert truncs["agent_0"][i] == tr["agent_0"]
            if not env.agents:  # the vec env's auto-reset: the scalar env's next episode, on its generator
                ended += 1
                assert infos["_final_info"][i] and infos["final_info"]["return"][i] == r["agent_0"]
                o, _ = env.reset()
            assert obs["agent_0"][i] == o["agent_0"], (t, i)
    assert ended >= 1
    with pytest.raises(ValueError, match="sequence of 2 strs"):
        vec.step({"agent_0": "one string for every slot"})
    with pytest.raises(ValueError, match="must be a str"):
        vec.step({"agent_0": [P4G_MESSAGES[0], 1]})


@pytest.mark.parametrize("surface", ["act", "text"])
def test_an_action_for_an_unknown_agent_is_refused(surface):
    """As the scalar env, ``RemoteParallelEnv`` and the batched endpoint refuse it (both engines)."""
    vec = scope_envs.make_vec("p4g-frozen", num_envs=2, surface=surface)
    assert isinstance(vec, LoopVecEnv if surface == "text" else BatchedVecEnv)
    vec.reset(seed=0)
    acts = np.array([1, 1]) if surface == "act" else [P4G_MESSAGES[0]] * 2
    with pytest.raises(ValueError, match=r"unknown agent 'ghost'; possible agents are \['agent_0'\]"):
        vec.step({"agent_0": acts, "ghost": acts})
    _, _, _, _, infos = vec.step({"agent_0": acts})  # nothing was applied: the episodes are at their first move
    assert infos["turn"].tolist() == [2, 2]


@pytest.mark.parametrize("batched", [True, False])
def test_a_bad_seed_names_the_argument_and_what_it_takes(batched):
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(3)], batched=batched)
    expected = r"seed must be an int >= 0 or a sequence of 3 of them \(one per slot\)"
    for seed in (-1, np.int64(-2), "x", b"x", 1.5, True, {"a": 1}, [0, 1]):
        with pytest.raises(ValueError, match=expected):
            vec.reset(seed=seed)
    for seed, i in (([0, -1, 2], 1), ([0, 1, "2"], 2), ([True, 1, 2], 0), ([0, 1.0, 2], 1)):
        with pytest.raises(ValueError, match=rf"seed\[{i}\] must be None or an int >= 0"):
            vec.reset(seed=seed)
    for seed in (None, 0, np.int64(5), [4, 5, 6], np.array([4, 5, 6]), (None, 1, None)):  # still taken
        vec.reset(seed=seed)


def test_the_gymnasium_views_refusal_lists_the_single_agent_regimes_of_the_registry():
    from scope_envs.registry import REGIME_AGENTS

    single = [r for r, agents in REGIME_AGENTS.items() if agents == "agent_0"]
    assert "grounded" in single
    with pytest.raises(ValueError, match=r"single-agent id \(" + ", ".join(single) + r"\)"):
        GymVectorEnv(scope_envs.make_vec("p4g-cotrain", num_envs=2))
    for regime in single:  # each one it names has the view
        GymVectorEnv(scope_envs.make_vec(f"p4g-{regime}", num_envs=2)).reset(seed=0)
    with pytest.raises(ValueError, match="act surface"):
        GymVectorEnv(scope_envs.make_vec("p4g-frozen", num_envs=2, surface="text"))


def test_make_vec_refuses_more_slots_than_it_can_build_before_building_any():
    from scope_envs.vec import MAX_NUM_ENVS

    # 10**12 slots would be built one scalar env at a time until memory ran out; the bound is checked first
    for n in (MAX_NUM_ENVS + 1, 10**12, np.int64(10**12)):
        with pytest.raises(ValueError, match=rf"num_envs must be at most {MAX_NUM_ENVS:,}.*got {int(n):,}"):
            scope_envs.make_vec("p4g-frozen", num_envs=n)
    assert MAX_NUM_ENVS >= 16_384  # benchmarks/vec_speed.py --num-envs goes there


@pytest.mark.parametrize("batched", [True, False])
def test_bad_reset_slots_or_options_name_the_argument_and_reset_nothing(batched):
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(3)], batched=batched)
    vec.reset(seed=0)
    for slots in ([3], [-1], [0, 0], ["a"], [1.0], "01", 2, {0: 1}):
        with pytest.raises(ValueError, match=r"slots must be a sequence of distinct slot indices in \[0, 3\)"):
            vec.reset(seed=1, slots=slots)
    for options in ([1], [{}, {}], "x", 3):
        with pytest.raises(ValueError, match=r"options must be a dict .* or a sequence of 3 of them"):
            vec.reset(seed=1, options=options)
    with pytest.raises(ValueError, match=r"options\[1\] must be a dict .* or None, got int 7"):
        vec.reset(seed=1, options=[{}, 7, None])
    for bad in (-1, "a", 1.5):  # numpy's "expected non-negative integer" in the batched engine
        with pytest.raises(ValueError, match=r"options\['scenario_seed'\] must be None or an int >= 0"):
            vec.reset(seed=1, options={"scenario_seed": bad})
        with pytest.raises(ValueError, match=r"options\[2\]\['scenario_seed'\] must be None or an int >= 0"):
            vec.reset(seed=1, options=[None, {}, {"scenario_seed": bad}])
    with pytest.raises(ValueError, match=r"options\['reset_schedule'\] must be a bool, got 'no'"):
        vec.reset(seed=1, options={"reset_schedule": "no"})
    # the loop of scalar envs took any; numpy read True as label 1 and refused a ragged list naming no argument
    for streams in ([9, 9, 9], [0, 0], [-1, 0, 0], [True, 0, 0], [[1], [1, 2], 0]):
        with pytest.raises(ValueError, match=r"streams must be 3 labels in \[0, 3\], one per slot"):
            vec.reset(seed=[1, 2, 3], streams=streams)
    assert not vec.idle.any()  # every refusal came before any slot was reset
    for slots, options in ((np.array([2, 0]), None), ([], [None, {"scenario_seed": 3}, {}]), (range(3), {})):
        vec.reset(seed=1, slots=slots, options=options)  # still taken


@pytest.mark.parametrize("batched", [True, False])
def test_actions_that_are_not_a_dict_are_refused_by_both_engines(batched):
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(2)], batched=batched)
    vec.reset(seed=0)
    for bad in (None, [1, 1], np.ones(2, np.int64)):
        with pytest.raises(ValueError, match=r"actions must be a dict \{agent: an action per slot\}"):
            vec.step(bad)


@pytest.mark.parametrize("batched", [True, False])
def test_next_episode_options_are_checked_as_resets_are(batched):
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(2)], batched=batched)
    for bad, match in ((3, r"must be a dict .* or None, got int 3"),
                       ({"scenario_seed": -1}, r"\['scenario_seed'\] must be None or an int >= 0")):
        vec.next_episode = lambda slot, bad=bad: bad
        obs, _ = vec.reset(seed=0)
        with pytest.raises(ValueError, match=match):
            for _ in range(40):  # p4g's episodes end within 20 steps
                obs, *_ = vec.step({"agent_0": np.argmax(obs["agent_0"]["action_mask"], 1)})


@pytest.mark.parametrize("batched", [True, False])
def test_malformed_act_arrays_are_refused_alike_by_both_engines_and_the_gymnasium_view(batched):
    """The loop over scalar envs refuses what the batched engine refuses, naming the agent: no action for the agent
    to move (a KeyError there), or not an int array of shape (N,) (a short one was an IndexError, a scalar a
    TypeError, a float array read as truncated acts, a bool one as acts 0 and 1, a long one cut; a list holding a
    bool was read as acts, a ragged one gave numpy's error naming no agent). The Gymnasium view
    passes the acts on as given (its cast to int64 read 1.7 as act 1 on both engines)."""
    vec = vectorize([scope_envs.make("p4g-frozen") for _ in range(3)], batched=batched)
    assert isinstance(vec, BatchedVecEnv if batched else LoopVecEnv)
    obs, _ = vec.reset(seed=0)
    legal = np.argmax(obs["agent_0"]["action_mask"], 1)
    with pytest.raises(ValueError, match=r"agent_0: it is this agent's turn in slots \[0.* but no action was given"):
        vec.step({})
    for bad in (legal.astype(float) + 0.5, legal.astype(bool), np.full(3, np.nan), legal[:2], np.r_[legal, 1],
                legal[:, None], int(legal[0]), "abc", None, [None] * 3, [True, 0, 0], [[1], [2, 3], [0]]):
        with pytest.raises(ValueError, match=r"agent_0: actions must be an int array of shape \(3,\), got"):
            vec.step({"agent_0": bad})
    gym = GymVectorEnv(vec)
    gym.reset(seed=0)
    for bad in (legal.astype(float) + 0.5, legal.astype(bool)):
        with pytest.raises(ValueError, match=r"agent_0: actions must be an int array of shape \(3,\), got"):
            gym.step(bad)
    obs, _, _, _, infos = vec.step({"agent_0": legal.tolist()})  # nothing was applied before: the first move now
    assert infos["turn"].tolist() == [2, 2, 2]
    gym.step(np.argmax(obs["agent_0"]["action_mask"], 1).astype(np.int32))  # any int dtype is taken


@pytest.mark.parametrize("env_id", ["p4g-cotrain", "p4g-population", "cooperbench-population"])
def test_a_finished_episode_keeps_every_seats_last_observation(env_id):
    """``final_info["obs"]`` (kept when a view asks: the Gymnasium and TorchRL views) holds each agent's last
    observation on both engines, a user's zero in the slots where another member was seated."""
    for vec in (scope_envs.make_vec(env_id, num_envs=6), LoopVecEnv([scope_envs.make(env_id) for _ in range(6)])):
        vec._final_obs = True
        obs, infos = vec.reset(seed=1)
        rng, seen = np.random.default_rng(0), 0
        for _ in range(60):
            seated = {a: infos["live"][a].copy() for a in vec.possible_agents}
            acts = {a: np.array([rng.choice(np.flatnonzero(m)) for m in obs[a]["action_mask"]])
                    for a in vec.possible_agents}
            obs, _, _, _, infos = vec.step(acts)
            ended = infos["_final_info"]
            if not ended.any():
                continue
            final = infos["final_info"]["obs"]
            assert sorted(final) == sorted(vec.possible_agents), type(vec).__name__
            for a in vec.possible_agents:
                assert final[a].shape == obs[a]["observation"].shape and final[a].dtype == np.float32
                space = vec.observation_space(a)["observation"]
                for i in np.flatnonzero(ended):
                    assert (final[a][i] != 0).any() == bool(seated[a][i]), (type(vec).__name__, a, i)
                    assert space.contains(final[a][i])
            seen += int(ended.sum())
        assert seen >= 6, type(vec).__name__
