"""tau2 text surface with the built-in act-level users: realizer, NLU, oracle over text, splits."""

import json
from pathlib import Path

import numpy as np
import pytest

import scope_envs
from scope_envs.core.simulator import Simulator
from scope_envs.agents.tau2 import oracle_text
from scope_envs.core.game import Persona
from scope_envs.games.tau2 import human_proxy
from scope_envs.games.tau2.data import load_domain

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tau2" / "domains"
HAS_REAL = (REAL / "airline" / "tasks.json").exists()


def make(regime="frozen", domain="retail", **kw):
    return scope_envs.make(f"tau2-{regime}", surface="text", domain=domain, **kw)


def pin(env, task_id, seed=0):
    """Reset onto a given task with the regime's user (the env draws tasks itself; tests pin one)."""
    env.reset(seed=seed)
    game = env.unwrapped.game
    game.reset(Persona(f"{game.domain}/{task_id}", "train", {}, {"domain": game.domain, "task_id": task_id}),
               np.random.default_rng(seed))
    env.unwrapped._run_simulator()  # the agent speaks first; a task may open mid-conversation
    return game


def oracle_pass_rate(domain, data_dir=None, regime="frozen"):
    env = make(regime, domain, data_dir=data_dir)
    env.reset(seed=0)
    tasks = env.unwrapped.game.data[domain].tasks
    wins = []
    for i, task in enumerate(tasks):
        game = pin(env, task["id"], seed=i)
        r = 0.0
        while env.agents:
            _, rew, *_ = env.step({"agent_0": oracle_text(game)})
            r = rew["agent_0"]
        wins.append(r >= 1.0)
    return float(np.mean(wins)), len(wins)


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_oracle_over_text_reaches_reward_one_against_the_frozen_text_user(domain):
    rate, n = oracle_pass_rate(domain)
    assert n > 0 and rate >= 0.9, (domain, rate)


@pytest.mark.skipif(not HAS_REAL, reason=f"real tau2 data not found at {REAL}")
@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_oracle_over_text_on_the_real_tasks(domain):
    rate, n = oracle_pass_rate(domain, str(REAL))
    assert n >= 20 and rate >= 0.9, (domain, rate)


def test_random_text_agent_does_far_worse():
    env = make("frozen", "retail")
    rng, wins = np.random.default_rng(0), []
    pool = ("Hello!", "Could you give me your email?", "Shall I proceed?", "###STOP###")
    for seed in range(10):
        env.reset(seed=seed)
        r = 0.0
        while env.agents:
            _, rew, *_ = env.step({"agent_0": pool[int(rng.integers(len(pool)))]})
            r = rew["agent_0"]
        wins.append(r)
    assert np.mean(wins) <= 0.3


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_user_messages_carry_the_values_their_goal_discloses(domain):
    env = make("frozen", domain)
    env.reset(seed=0)
    for task in env.unwrapped.game.data[domain].tasks:
        game = pin(env, task["id"])
        _, _, _, _, infos = env.step({"agent_0": "Hello! How can I help you today?"})
        first = infos["agent_0"]["messages"][-1]["content"]  # the collapsed user tells everything at once
        g = game.goal
        for vals in g.identity.values():
            for v in vals.values():
                assert str(v) in first, (task["id"], v, first)
        for v in g.details.values():
            assert str(v) in first, (task["id"], v, first)
        from scope_envs.games.tau2.goals import tokens
        for c in g.requests:
            for v in tokens(c.arguments):
                if c.name != "transfer_to_human_agents":
                    assert str(v) in first, (task["id"], v, first)


def test_asked_identity_is_answered_with_its_value_and_a_slip_is_a_typo():
    from scope_envs.games.tau2 import realize
    from scope_envs.games.tau2.dialogue_acts import USER_INDEX

    env = make("frozen", "retail")
    game = pin(env, "syn_ret_0")
    game.asked_slot = "email"
    email = game.goal.identity["email"]["email"]
    texts = {realize.user_says(game, USER_INDEX["inform_identity"], np.random.default_rng(s)) for s in range(12)}
    assert len(texts) > 1 and all(email in t for t in texts), "varied words, the same value"
    air = make("frozen", "airline")
    agame = pin(air, "syn_air_1")
    agame.asked_slot = "user_id"
    uid = agame.goal.identity["user_id"]["user_id"]  # holds digits: a slip changes one
    assert uid in realize.user_says(agame, USER_INDEX["inform_identity"], np.random.default_rng(0))
    slip = realize.user_says(agame, USER_INDEX["inform_slip"], np.random.default_rng(0))
    assert uid not in slip and uid[:-1] in slip


def test_nlu_maps_typical_agent_phrasings_to_agent_acts():
    from scope_envs.games.tau2 import nlu

    env = make("frozen", "retail")
    game = pin(env, "syn_ret_0")
    env.step({"agent_0": "Hi there! How may I assist you today?"})  # the user states its request
    cases = {
        "Hello! How can I help you today?": "greet",
        "Could you please provide the email address associated with your account?": "request:email",
        "What is your user ID?": "request:user_id",
        "Can I have your first and last name, and your zip code?": "request:name_zip",
        "Please tell me the order number.": "request:record_id",
        "Which items would you like to return, and what is the reason?": "request:details",
        "I'm sorry, but according to our policy I cannot cancel an order that has already shipped.": "deny",
        "Unfortunately that is not possible.": "deny",
        "I'll transfer you to a human agent now.": "transfer",
        "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.": "transfer",
        "Thanks for contacting us, goodbye! ###STOP###": "end",
        '{"name": "get_order_details", "arguments": {"order_id": "#S0000001"}}': "tool_call",
        "Your order has been cancelled.": "answer",
    }
    g = game.goal
    write = next(c for c in g.requests if c.name != "transfer_to_human_agents")
    vals = " ".join(str(v) for k, v in write.arguments.items())
    cases[f"To confirm, I will {write.name.replace('_', ' ')} ({vals}). Shall I proceed (yes/no)?"] = "confirm"
    cases[f"Do you want me to go ahead and {write.name.split('_')[0]} {vals}?"] = "confirm"
    for text, want in cases.items():
        got = nlu.read_agent(game, text)
        assert got.act == want, (text, got)
    assert nlu.read_agent(game, f"Shall I proceed with {vals}?").target == write

    tel = make("frozen", "telecom")
    tgame = pin(tel, "syn_tel_0")
    tel.step({"agent_0": "Hello, how can I help?"})
    phone = tgame.goal.phone_actions[0]
    words = phone.name.replace("_", " ")
    for text in (f"Could you please {words} on your phone?", f"Let's try this: {words}."):
        got = nlu.read_agent(tgame, text)
        assert got.act == "instruct" and got.target == phone, (text, got)
    got = nlu.read_agent(tgame, "Please restart your phone.")
    assert got.act == "instruct" and got.target.name == "reboot_device"


def test_the_frozen_text_user_follows_the_agent_acts():
    env = make("frozen", "retail")
    game = pin(env, "syn_ret_0")
    _, _, _, _, infos = env.step({"agent_0": "Hello! How can I help you today?"})
    assert game.last["user"] and game.stated
    _, _, _, _, infos = env.step({"agent_0": "Could you give me your email, please?"})
    assert game.goal.identity["email"]["email"] in infos["agent_0"]["messages"][-1]["content"]
    write = next(c for c in game.goal.requests)
    vals = ", ".join(str(v) for v in write.arguments.values())
    env.step({"agent_0": f"To confirm: {write.name.replace('_', ' ')} ({vals}). Shall I proceed?"})
    assert write.key() in game.confirmed, "the collapsed user confirms"
    env.step({"agent_0": json.dumps({"name": write.name, "arguments": write.arguments})})
    obs, rew, term, trunc, infos = env.step({"agent_0": "Done, your order is cancelled."})
    assert term["agent_0"] and "###STOP###" in infos["agent_0"]["messages"][-1]["content"]


@pytest.mark.parametrize("regime", ["frozen", "vs", "rotation", "cotrain", "population"])
def test_training_text_regimes_never_call_the_heldout_model(regime, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the held-out model was called in a training regime")

    monkeypatch.setattr(human_proxy, "distribution", boom)
    env = scope_envs.make(f"tau2-{regime}", surface="text")
    rng = np.random.default_rng(0)
    pool = ("Hello, how can I help?", "Could you give me your user id?", "Shall I proceed?",
            "I'm sorry, policy does not allow that.", "Thanks, bye ###STOP###")
    train = {d: set(load_domain(d).split_ids("train")) for d in ("airline", "retail", "telecom")}
    for seed in range(4):
        obs, infos = env.reset(seed=seed)
        assert infos["agent_0"]["task_id"] in train[infos["agent_0"]["domain"]]
        while env.agents:
            actions = {a: pool[int(rng.integers(len(pool)))] if infos[a]["active"] else "" for a in env.agents}
            obs, _, _, _, infos = env.step(actions)


def test_heldout_text_users_play_test_tasks_with_the_human_proxy(monkeypatch):
    calls = []
    real = human_proxy.distribution
    monkeypatch.setattr(human_proxy, "distribution", lambda *a: calls.append(1) or real(*a))
    env = scope_envs.make("tau2-heldout", surface="text")
    test = {d: set(load_domain(d).split_ids("test")) for d in ("airline", "retail", "telecom")}
    for seed in range(6):
        obs, infos = env.reset(seed=seed)
        assert infos["agent_0"]["task_id"] in test[infos["agent_0"]["domain"]]
        assert env.unwrapped.game.persona.attributes["card"].startswith("heldout-")
        game = env.unwrapped.game
        while env.agents:
            obs, *_ = env.step({"agent_0": oracle_text(game)})
    assert calls


def test_text_players_keep_the_user_seat_verbatim():
    class Parrot(Simulator):
        plays_text = True
        name = "parrot"

        def reply(self, view, rng):
            mine = [t for t in view.history if t.role == "user"]
            return "I'd like help with my phone." if not mine else (
                '{"name": "toggle_airplane_mode", "arguments": {}}' if len(mine) == 1 else "Thanks ###STOP###")

    env = make("frozen", "telecom", user=Parrot())
    game = pin(env, "syn_tel_0")
    _, _, _, _, infos = env.step({"agent_0": "Hello! How can I help?"})
    assert infos["agent_0"]["messages"][-1]["content"] == "I'd like help with my phone."
    env.step({"agent_0": "Please toggle airplane mode."})
    assert any(t.call and t.call["name"] == "toggle_airplane_mode" and t.role == "user" for t in game.history)
    assert not env.agents and game.termination == "user_stop"


@pytest.mark.parametrize("regime", ["frozen", "vs", "rotation", "heldout"])
def test_text_episodes_are_deterministic(regime):
    def run(seed):
        env = scope_envs.make(f"tau2-{regime}", surface="text")
        out = []
        for ep in range(3):
            env.reset(seed=seed if ep == 0 else None)
            game = env.unwrapped.game
            while env.agents:
                env.step({"agent_0": oracle_text(game)})
            out.append([(t.role, t.act, t.text) for t in game.history])
        return out

    assert run(5) == run(5)
    assert run(5) != run(6)
