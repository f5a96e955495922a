"""The Persuasion-for-Good game: rules, rewards, simulators, text surface."""

import numpy as np
import pytest

import scope_envs
from scope_envs.core.simulator import Simulator
from scope_envs.agents.p4g import CollapsedPersuadee, ReferencePersuadee, rotation_members
from scope_envs.games.p4g import dialogue_acts, language
from scope_envs.games.p4g.dialogue_acts import PERSUADEE_INDEX, PERSUADER_INDEX
from scope_envs.games.p4g.game import P4GGame


def amount(dollars):
    return dialogue_acts.FIRST_AMOUNT + dialogue_acts.AMOUNT_BINS.index(dollars)


def test_cotrain_episode_rules_and_rewards():
    env = scope_envs.make("p4g-cotrain", user_reward="zero_sum")
    obs, infos = env.reset(seed=0)
    assert infos["agent_0"]["active"] and not infos["user_0"]["active"]
    assert obs["user_0"]["action_mask"].tolist() == [1] + [0] * (len(dialogue_acts.PERSUADEE_ACTS) - 1)
    env.step({"agent_0": PERSUADER_INDEX["propose_donation"], "user_0": 0})
    # closing is illegal before an amount is stated
    obs, *_ = env.step({"agent_0": 0, "user_0": PERSUADEE_INDEX["agree_donation"]})
    env.step({"agent_0": PERSUADER_INDEX["ask_donation_amount"], "user_0": 0})
    assert not env.unwrapped.game.legal("persuadee")[PERSUADEE_INDEX["closing"]]
    obs, rew, term, *_ = env.step({"agent_0": 0, "user_0": amount(0.5)})
    assert not any(term.values())
    env.step({"agent_0": PERSUADER_INDEX["thank"], "user_0": 0})
    obs, rew, term, trunc, infos = env.step({"agent_0": 0, "user_0": PERSUADEE_INDEX["closing"]})
    assert all(term.values()) and rew == {"agent_0": 0.5, "user_0": -0.5}
    assert infos["agent_0"]["intended"] == infos["agent_0"]["actual"] == 0.5


def test_turn_limit_forces_a_final_statement():
    env = scope_envs.make("p4g-cotrain", max_turns=2)
    env.reset(seed=0)
    env.step({"agent_0": PERSUADER_INDEX["greeting"], "user_0": 0})
    env.step({"agent_0": 0, "user_0": PERSUADEE_INDEX["greeting"]})
    obs, *_ = env.step({"agent_0": PERSUADER_INDEX["emotion_appeal"], "user_0": 0})
    legal = np.flatnonzero(obs["user_0"]["action_mask"])
    assert legal.min() == dialogue_acts.FIRST_AMOUNT, "the final reply must state an amount"
    obs, rew, term, *_ = env.step({"agent_0": 0, "user_0": amount(2.0)})
    assert all(term.values()) and rew["agent_0"] == 2.0


@pytest.mark.parametrize("mode", ["persona", "mixed", "zero_sum"])
def test_user_reward_modes(mode):
    game = P4GGame(user_reward=mode)
    game.reset(game.sample_persona(np.random.default_rng(0), "train"), np.random.default_rng(0))
    game.apply("persuader", PERSUADER_INDEX["close"])
    game.apply("persuadee", amount(1.0))
    r = game.rewards()["persuadee"]
    from scope_envs.games.p4g.reference import expected_gift

    persona_term = -abs(1.0 - expected_gift(game.persona))
    assert r == pytest.approx({"zero_sum": -1.0, "persona": persona_term, "mixed": 0.5 * persona_term - 0.5}[mode])


def _entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def test_frozen_simulator_is_collapsed_and_vs_recovers_diversity():
    env = scope_envs.make("p4g-cotrain")
    env.reset(seed=0)
    env.step({"agent_0": PERSUADER_INDEX["emotion_appeal"], "user_0": 0})
    view = env.unwrapped.view("persuadee")
    collapsed, ref = CollapsedPersuadee(), ReferencePersuadee(persona=view.persona, cooperation=1.0)
    assert _entropy(collapsed.distribution(view)) < 0.6 * _entropy(ref.distribution(view))
    # over many turns, the vs regime's replies are more diverse than the frozen one's
    def replies(env_id):
        env, seen = scope_envs.make(env_id), []
        for ep in range(30):
            env.reset(seed=ep)
            for a in ("greeting", "emotion_appeal", "credibility_appeal"):
                env.step({"agent_0": PERSUADER_INDEX[a]})
                seen.append(env.unwrapped.game.history[-1].act)
        return len(set(seen))
    assert replies("p4g-vs") > replies("p4g-frozen") + 3


def test_vs_candidates_in_infos():
    env = scope_envs.make("p4g-vs", k=4)
    env.reset(seed=0)
    *_, infos = env.step({"agent_0": PERSUADER_INDEX["greeting"]})
    info = infos["agent_0"]
    cands = info["vs_candidates"]
    assert cands.shape == (4,) and (cands >= 0).all() and len(set(cands.tolist())) == 4
    assert env.unwrapped.game.history[-1].act == cands[info["vs_chosen"]]
    assert np.all(np.diff(info["vs_probs"]) <= 0), "candidates come most probable first"


def test_rotation_members_differ():
    members = rotation_members()
    assert len({m.persona.id for m in members}) == len(members)
    assert len({m.gamma for m in members}) == len(members)


def test_population_schedules():
    env = scope_envs.make("p4g-population", members=3, schedule="round_robin")
    seen = []
    for ep in range(6):
        env.reset(seed=ep)
        seen.append(env.agents[1])
    assert seen == ["user_0", "user_1", "user_2"] * 2

    env = scope_envs.make("p4g-population", members=3, schedule="bandit")
    rng = np.random.default_rng(0)
    for ep in range(30):
        obs, _ = env.reset(seed=ep)
        user = env.agents[1]
        while env.agents:
            actions = {}
            for a in env.agents:
                legal = np.flatnonzero(obs[a]["action_mask"])
                # user_2 always gives nothing, the others give the most they can
                actions[a] = int(legal[0] if a == "user_2" and legal[0] >= dialogue_acts.FIRST_AMOUNT else legal[-1]) if a != "agent_0" else int(rng.choice(legal))
            obs, rew, term, trunc, infos = env.step(actions)
    counts = infos["agent_0"]["member_episodes"]
    assert counts.sum() == 30 and counts[2] == counts.max(), counts


def test_text_surface_roundtrip_of_every_persuader_rendering():
    for name, options in language.PERSUADER_TEXT.items():
        for utterance in options:
            assert dialogue_acts.PERSUADER_ACTS[language.understand_persuader(utterance)] == name, utterance


def test_text_surface_persuadee_rendering_and_donate_tag():
    rng = np.random.default_rng(0)
    game = P4GGame()
    for i in range(40):
        persona = game.sample_persona(rng, "train")
        for a in range(1, len(dialogue_acts.PERSUADEE_ACTS)):
            utterance = language.realize_persuadee(a, persona, rng)
            if a >= dialogue_acts.FIRST_AMOUNT:
                assert language.understand_persuadee(utterance) == a, utterance
    assert language.understand_persuadee("ok [DONATE $0.48]") == amount(0.5)
    assert language.understand_persuadee("[donate 2]") == amount(2.0)


def test_text_frozen_episode_and_messages():
    env = scope_envs.make("p4g-frozen", surface="text")
    obs, infos = env.reset(seed=1)
    assert "Save the Children" in infos["agent_0"]["messages"][0]["content"]
    obs, rew, term, trunc, infos = env.step({"agent_0": "Imagine a child going hungry tonight."})
    assert env.unwrapped.game.history[0].act == PERSUADER_INDEX["emotion_appeal"]
    assert obs["agent_0"].startswith("You: Imagine") and "\nPersuadee: " in obs["agent_0"]
    msgs = infos["agent_0"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "assistant", "user"]


def test_render_ansi():
    env = scope_envs.make("p4g-heldout", render_mode="ansi")
    env.reset(seed=0)
    env.step({"agent_0": PERSUADER_INDEX["credibility_appeal"]})
    out = env.render()
    assert "heldout-" in out and "[credibility_appeal] Save the Children" in out
    assert scope_envs.make("p4g-heldout").render() is None


def test_state_is_a_global_vector():
    env = scope_envs.make("p4g-cotrain")
    env.reset(seed=0)
    s = env.state()
    dims = [env.observation_space(a)["observation"].shape[0] for a in ("agent_0", "user_0")]
    assert s.shape == (sum(dims),) and s.dtype == np.float32


class ScriptedTextUser(Simulator):
    """A text player that says its lines in order (stands in for an LLM user)."""

    plays_text = True

    def __init__(self, lines, candidates=()):
        self.lines, self.candidates, self.seen = list(lines), list(candidates), []

    def reply(self, view, rng):
        self.seen.append(view)
        return self.lines.pop(0) if self.lines else "bye [DONATE $0.10]"

    def verbalize(self, view, k, rng, tail=None):
        return self.candidates[:k]


def test_text_player_in_the_user_seat():
    user = ScriptedTextUser(["", "Sounds great! [DONATE $1]", "Goodbye!"])
    env = scope_envs.make("p4g-frozen", surface="text", user=user)
    env.reset(seed=0)
    obs, rew, term, trunc, infos = env.step({"agent_0": "Would you like to donate to Save the Children?"})
    assert infos["agent_0"]["simulator_errors"] == 1 and user.seen[1].errors == ("empty message",)
    assert "Sounds great!" in obs["agent_0"] and "Save the Children" in user.seen[0].instructions
    obs, rew, term, trunc, infos = env.step({"agent_0": "Thank you so much!"})
    assert all(term.values()) and rew["agent_0"] == 1.0


def test_text_player_errors_truncate():
    env = scope_envs.make("p4g-frozen", surface="text", user=ScriptedTextUser(["", " ", "[DONATE $x]"]), max_errors=3)
    env.reset(seed=0)
    obs, rew, term, trunc, infos = env.step({"agent_0": "Hello!"})
    assert all(trunc.values()) and infos["agent_0"]["simulator_errors"] == 3 and env.agents == []


def test_vs_with_text_candidates_and_fallback():
    cands = [("No thanks. [DONATE $0]", 0.2), ("Sure! [DONATE $0.50]", 0.7), ("Maybe later.", 0.1)]
    env = scope_envs.make("p4g-vs", surface="text", user=ScriptedTextUser([], cands), k=3)
    env.reset(seed=0)
    *_, infos = env.step({"agent_0": "Hello!"})
    info = infos["agent_0"]
    assert info["vs_texts"] == [c for c, _ in cands] and info["vs_fallback"] == 0
    assert env.unwrapped.game.history[-1].text == cands[info["vs_chosen"]][0]
    env = scope_envs.make("p4g-vs", surface="text", user=ScriptedTextUser(["Hi there."], []), k=3)
    env.reset(seed=0)
    *_, infos = env.step({"agent_0": "Hello!"})
    assert infos["agent_0"]["vs_fallback"] == 1 and env.unwrapped.game.history[-1].text == "Hi there."
