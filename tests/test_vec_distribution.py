"""``make_vec``: the batched engine draws its slots from their streams' generators, so its episodes are not those
of N scalar envs, but they must come from the same distribution. 16,000 batched episodes per id and 2,000 of the
scalar envs (``LoopVecEnv``: the env itself, one slot at a time) are compared with chi-square tests on each
episode's outcome, length and the user's acts; the same comparison rejects a perturbed engine, so it has the power
to fail. The engine is reproducible from its seed, keeps the vec API (shapes, masks, final info, auto-reset) and
its streams independent."""

import functools

import numpy as np
import pytest
from scipy.stats import chi2_contingency

import scope_envs
from scope_envs.core.simulator import Simulator
from scope_envs.vec import BatchedVecEnv, LoopVecEnv, vectorize

EPISODES = 16_000
SCALAR_EPISODES = 2_000  # (the scalar envs play an episode a hundred times slower: the batched side takes the larger sample)
NUM_ENVS = 256
ALPHA = 1e-3  # per comparison of two engines, over all its statistics (Bonferroni); the perturbed ones land below 1e-6


def random_acts(vec, obs, infos, rng) -> dict:
    """A uniformly random legal act in every slot, for every agent (drawn for all slots at once)."""
    return {a: np.argmax(rng.random(obs[a]["action_mask"].shape) * obs[a]["action_mask"], 1)
            for a in vec.possible_agents}


def collect(vec, episodes: int, seed: int) -> dict[str, np.ndarray]:
    """Exactly ``episodes`` episodes (each slot starts new ones until the count is reached, so short episodes
    are not favoured): per episode the outcome keys, the member, and the user's act count, first and last act."""
    started = min(vec.num_envs, episodes)

    def next_episode(slot):
        nonlocal started
        if started >= episodes:
            return None
        started += 1
        return {}

    vec.next_episode = next_episode
    rng = np.random.default_rng(1000 + seed)
    obs, infos = vec.reset(seed=seed, slots=range(started))
    rows: dict[str, list] = {}
    while infos["live"]["agent_0"].any():
        obs, _, _, _, infos = vec.step(random_acts(vec, obs, infos, rng))
        done = infos["_final_info"]
        if not done.any():
            continue
        final = infos["final_info"]
        for k, v in final["outcome"].items():
            rows.setdefault(k, []).extend(v[done].tolist())
        rows.setdefault("member", []).extend(final["member"][done].tolist())
        acts = final["user_acts"][done]
        rows.setdefault("user_acts", []).extend(len(a) for a in acts)
        rows.setdefault("first_user_act", []).extend(a[0] if a else -1 for a in acts)
        rows.setdefault("last_user_act", []).extend(a[-1] if a else -1 for a in acts)
    out = {k: np.array(v) for k, v in rows.items()}
    assert len(out["member"]) == episodes
    return out


@functools.cache
def episodes_of(env_id: str, seed: int, **kwargs) -> dict[str, np.ndarray]:
    """The batched engine's episodes."""
    return collect(scope_envs.make_vec(env_id, num_envs=NUM_ENVS, **kwargs), EPISODES, seed)


@functools.cache
def scalar_episodes(env_id: str, seed: int, **kwargs) -> dict[str, np.ndarray]:
    """The scalar envs' episodes (the loop engine)."""
    vec = vectorize([scope_envs.make(env_id, **kwargs) for _ in range(NUM_ENVS)], batched=False)
    assert isinstance(vec, LoopVecEnv)
    return collect(vec, SCALAR_EPISODES, seed)


def binned(x: np.ndarray) -> np.ndarray:
    """A continuous statistic (cooperbench's message share) in tenths; discrete ones stay as they are."""
    return np.round(x, 1) if len(np.unique(x)) > 30 else x


def chi2_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square homogeneity of two samples of one categorical statistic; categories with under 10
    episodes in both samples together are pooled (the test's expected counts stay large)."""
    a, b = binned(a), binned(b)
    values = np.unique(np.concatenate([a, b]))
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    rare = table.sum(0) < 10
    if rare.any():
        table = np.column_stack([table[:, ~rare], table[:, rare].sum(1)])
    table = table[:, table.sum(0) > 0]
    if table.shape[1] < 2:
        return 1.0  # one category in both samples: nothing differs
    return float(chi2_contingency(table)[1])


def compare(batched: dict, scalar: dict) -> dict[str, float]:
    assert batched.keys() == scalar.keys()
    return {k: chi2_p(batched[k], scalar[k]) for k in scalar}


def alike(p: dict[str, float], alpha: float = ALPHA) -> bool:
    """No statistic of ``compare``'s differs at level ``alpha`` for the comparison as a whole (each at
    ``alpha / len(p)``: a comparison reads about ten statistics, the suite a few hundred)."""
    return min(p.values()) > alpha / len(p)


@pytest.mark.parametrize("env_id", [f"{g}-{r}" for g in ("p4g", "cooperbench")
                                    for r in ("frozen", "heldout", "rotation", "vs", "population")])
def test_the_batched_engine_draws_episodes_from_the_scalar_envs_distribution(env_id):
    batched, scalar = episodes_of(env_id, 0), scalar_episodes(env_id, 0)
    p = compare(batched, scalar)
    assert alike(p), p
    # and the comparison is not vacuous: the outcomes vary within each engine
    success = "actual" if env_id.startswith("p4g") else "success"
    assert len(np.unique(scalar[success])) > 1 and len(np.unique(scalar["user_acts"])) > 1


@pytest.mark.parametrize("game", ["p4g", "cooperbench"])
def test_the_held_out_panel_draws_as_its_scalar_envs(game):
    """The benchmark's panel: held-out families seated by ``panel_env`` on held-out scenarios, batched."""
    from scope_envs.agents.families import panel, panel_env

    for member in panel(game)[:2]:
        def factory(m=member):
            return panel_env(scope_envs.make(f"{game}-heldout").unwrapped.game, m)

        vec = vectorize([factory() for _ in range(NUM_ENVS)])
        assert isinstance(vec, BatchedVecEnv)
        batched = collect(vec, EPISODES, 0)
        scalar = collect(vectorize([factory() for _ in range(NUM_ENVS)], batched=False), SCALAR_EPISODES, 0)
        p = compare(batched, scalar)
        assert alike(p), (member, p)


class Leaning(Simulator):
    """A custom user (asked slot by slot) that favours its legal act at ``end`` (0: the first, -1: the last)."""

    def __init__(self, end: int):
        self.end = end

    def distribution(self, view):
        w = view.legal.astype(float)
        w[np.flatnonzero(view.legal)[self.end]] *= 20
        return w / w.sum()


@pytest.mark.parametrize("game,users", [("p4g", "snapshots"), ("tau2", "snapshots"), ("p4g", "custom"),
                                        ("cooperbench", "custom"), ("tau2", "custom")])
def test_the_engine_asks_each_slots_drawn_pool_member(game, users):
    """Two different users join each env's checkpoint pool: snapshots (answering all their slots at once,
    ``BatchedVecEnv._observed``) or custom simulators (asked slot by slot, ``_ask``). The engine asks the member
    it drew for the slot's episode (``BatchedVecEnv.seated``, not the scalar env's stale ``simulator``): the
    episodes are the scalar envs' alike."""
    from test_vec import snapshots

    samples = []
    for batched in (True, False):
        vec = vectorize([scope_envs.make(f"{game}-population", pool_size=3) for _ in range(NUM_ENVS)],
                        batched=batched)
        pool = snapshots(vec.envs[0], seed=3) if users == "snapshots" else [Leaning(0), Leaning(-1)]
        for env in vec.envs:
            for s in pool:
                env.add_snapshot(s)
        samples.append(collect(vec, (EPISODES if users == "snapshots" else 4000) if batched else SCALAR_EPISODES, 0))
    p = compare(*samples)
    assert alike(p), p
    assert len(np.unique(samples[1]["member"])) == 3  # the live user and both pool entries played


def test_the_comparison_rejects_a_perturbed_engine():
    """The same test, against the engine with a more cooperative frozen simulator (p4g), and with the held-out
    partner on train styles and tasks instead of held-out ones (cooperbench): both are rejected."""
    from scope_envs.agents.p4g import CollapsedPersuadee

    cooperative = collect(scope_envs.make_vec("p4g-frozen", num_envs=NUM_ENVS,
                                              user=CollapsedPersuadee(cooperation=1.3)), EPISODES, 0)
    p = compare(cooperative, scalar_episodes("p4g-frozen", 0))
    assert min(p.values()) < 1e-6, p
    train_split = episodes_of("cooperbench-heldout", 0, personas="train")
    p = compare(train_split, scalar_episodes("cooperbench-heldout", 0))
    assert min(p.values()) < 1e-6, p


def trace(vec, steps: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    obs, infos = vec.reset(seed=seed)
    out = []
    for _ in range(steps):
        obs, rewards, _, _, infos = vec.step(random_acts(vec, obs, infos, rng))
        out.append((obs["agent_0"]["observation"].copy(), rewards["agent_0"].copy(), infos["member"].copy()))
        if infos["_final_info"].any():
            out.append((infos["final_info"]["persona"][infos["_final_info"]].tolist(),))
    return out


def same(a, b) -> bool:
    return len(a) == len(b) and all(all(np.array_equal(np.asarray(u, object), np.asarray(v, object))
                                        for u, v in zip(x, y)) for x, y in zip(a, b))


@pytest.mark.parametrize("env_id", ["p4g-frozen", "cooperbench-heldout", "p4g-vs"])
def test_the_engine_is_reproducible_from_its_seed(env_id):
    vec = scope_envs.make_vec(env_id, num_envs=16)
    first = trace(vec, 30, seed=4)
    assert same(first, trace(vec, 30, seed=4))  # reset(seed) reseeds the shared generator
    assert same(first, trace(scope_envs.make_vec(env_id, num_envs=16), 30, seed=4))
    assert not same(first, trace(vec, 30, seed=5))


@pytest.mark.parametrize("env_id,kwargs", [
    ("p4g-frozen", {}), ("p4g-heldout", {}), ("p4g-cotrain", {}), ("p4g-vs", {"k": 3}),
    ("p4g-rotation", {"families": 3, "schedule": "index"}), ("p4g-population", {"members": 3}),
    ("p4g-population", {"pool_size": 3}), ("cooperbench-frozen", {}), ("cooperbench-heldout", {}),
    ("cooperbench-rotation", {}), ("cooperbench-cotrain", {}),
])
def test_the_engine_keeps_the_vec_api(env_id, kwargs):
    """Shapes, dtypes, masks, info and final-info keys as the loop over scalar envs gives them; every act it
    offers is legal (the env raises otherwise); a finished slot restarts in the same step; the schedules keep
    their state."""
    batched = scope_envs.make_vec(env_id, num_envs=8, **kwargs)
    scalar = vectorize([scope_envs.make(env_id, **kwargs) for _ in range(8)], batched=False)
    assert isinstance(batched, BatchedVecEnv) and isinstance(scalar, LoopVecEnv)
    assert batched.possible_agents == scalar.possible_agents
    rng = np.random.default_rng(0)
    (fo, fi), (eo, ei) = batched.reset(seed=1), scalar.reset(seed=1)
    finals = 0
    for _ in range(40):
        for a in batched.possible_agents:
            for k in ("observation", "action_mask"):
                assert fo[a][k].shape == eo[a][k].shape and fo[a][k].dtype == eo[a][k].dtype
            idle = ~fi["live"][a]
            assert (fo[a]["action_mask"][idle, 1:] == 0).all() and (fo[a]["observation"][idle] == 0).all()
        assert fi.keys() - {"final_info"} == ei.keys() - {"final_info"}
        fa, ea = random_acts(batched, fo, fi, rng), random_acts(scalar, eo, ei, rng)
        fo, fr, ft, _, fi = batched.step(fa)
        eo, er, _, _, ei = scalar.step(ea)
        assert fr.keys() == er.keys() and all(fr[a].shape == (8,) for a in fr)
        done = fi["_final_info"]
        if done.any():
            finals += int(done.sum())
            final = fi["final_info"]
            assert final.keys() == {"outcome", "agent_score", "return", "member", "persona", "user_acts"}
            if ei["_final_info"].any():
                assert all(final[k].dtype == ei["final_info"][k].dtype for k in final if k != "outcome")
            assert final["outcome"].keys() == set(batched.batch.outcome(np.arange(1)))
            assert all(isinstance(final["persona"][i], str) and isinstance(final["user_acts"][i], list)
                       for i in np.flatnonzero(done))
            assert (fi["turn"][done] == 0).all() and fi["live"]["agent_0"][done].all()  # restarted at once
            assert ft["agent_0"][done].all()
    assert finals > 0
    if env_id.endswith("rotation"):  # "index": the per-slot schedules count their episodes
        assert sum(env.unwrapped.schedule.episode_index for env in batched.envs) == 8 + finals


@pytest.mark.parametrize("env_id,kwargs", [("p4g-vs", {"k": 3}), ("p4g-rotation", {"families": 3}),
                                            ("cooperbench-rotation", {}), ("tau2-rotation", {}), ("tau2-heldout", {})])
def test_a_stream_plays_as_a_vec_env_of_its_own(env_id, kwargs):
    """``reset(streams=)``: the slots of a stream draw from its own generator, seeded by their seeds, so that
    stream 4's slots play the episodes a vec env of those slots alone plays, whatever the other stream's seeds."""
    def trace_of(vec, seeds, streams, slots):
        obs, infos = vec.reset(seed=seeds, streams=streams)
        out = []
        for t in range(60):
            # each slot's act from its own mask and turn, so that the acts depend on no other slot
            acts = {a: np.array([np.flatnonzero(m)[(t + i % 4) % max(1, np.count_nonzero(m))]
                                 for i, m in enumerate(o["action_mask"])]) for a, o in obs.items()}
            obs, rewards, _, _, infos = vec.step(acts)
            out.append((obs["agent_0"]["observation"][slots].copy(), rewards["agent_0"][slots].copy(),
                        infos["member"][slots].copy(), infos["_final_info"][slots].copy()))
        return out

    alone = trace_of(scope_envs.make_vec(env_id, num_envs=4, **kwargs), [50, 51, 52, 53], None, slice(None))
    shared = scope_envs.make_vec(env_id, num_envs=8, **kwargs)
    for others in ([0, 1, 2, 3], [7, 7, 7, 7]):
        assert same(alone, trace_of(shared, others + [50, 51, 52, 53], [0] * 4 + [4] * 4, slice(4, 8)))
    assert not same(alone, trace_of(shared, [0, 1, 2, 3, 60, 61, 62, 63], [0] * 4 + [4] * 4, slice(4, 8)))
    with pytest.raises(ValueError, match="streams must be 8 labels"):
        shared.reset(seed=0, streams=[0] * 7)


def test_the_engine_options_and_stopping_slots():
    """``scenario_seed`` deals the same card to every episode given it; ``next_episode`` returning None
    leaves the slot idle; ``reset(slots=...)`` starts only those."""
    vec = scope_envs.make_vec("cooperbench-heldout", num_envs=4)
    vec.reset(seed=0, options={"scenario_seed": 7})
    assert len(set(vec.persona_id.tolist())) == 1
    obs, infos = vec.reset(seed=0, slots=[1, 2])
    assert infos["live"]["agent_0"].tolist() == [False, True, True, False]
    vec.next_episode = lambda slot: None
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, _, _, _, infos = vec.step(random_acts(vec, obs, infos, rng))
    assert not infos["live"]["agent_0"].any()
