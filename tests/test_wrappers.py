"""Wrappers: one concern each, docstring examples that run, the invariants they promise."""

import doctest
import importlib
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import scope_envs
from scope_envs.agents.p4g import EmpiricalPersuader, ScriptedPersuader
from scope_envs.core.env import LEARNABLE
from scope_envs.wrappers import (CheckpointPool, LegalActions, RecordTranscripts, SimulatorPopulation,
                                 SingleAgentView, VerbalizedSampling, read_transcripts)
from conftest import play_episode

GAMES = sorted({spec.game for spec in scope_envs.registry.values()})
SINGLE = ("frozen", "vs", "rotation", "heldout")  # the regimes in which only agent_0 acts

pytestmark = pytest.mark.filterwarnings("ignore:.*alternative render modes.*")


def make_act(env_id, **kwargs):
    try:
        return scope_envs.make(env_id, **kwargs)
    except ValueError as e:
        if "no act surface" not in str(e):
            raise
        pytest.skip(str(e))


@pytest.mark.parametrize("module", ["verbalized", "population", "pool", "single_agent", "record", "legal"])
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"scope_envs.wrappers.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def masked_random(rng):
    return lambda obs: int(rng.choice(np.flatnonzero(obs["action_mask"])))


def run_view(env, policy, seed):
    obs, info = env.reset(seed=seed)
    total, steps, done = 0.0, [], False
    while not done:
        a = policy(obs)
        obs, r, term, trunc, info = env.step(a)
        total += r
        steps.append((a, r))
        done = term or trunc
    return total, steps, info


# -- SingleAgentView -------------------------------------------------------------------


@pytest.mark.parametrize("regime", SINGLE)
@pytest.mark.parametrize("game", GAMES)
def test_single_agent_view_passes_gymnasium_check_env(game, regime):
    check_env(SingleAgentView(make_act(f"{game}-{regime}", render_mode="ansi")), skip_render_check=False)


@pytest.mark.parametrize("regime", SINGLE)
@pytest.mark.parametrize("game", GAMES)
def test_single_agent_view_and_recording_on_the_text_surface_of_every_game(game, regime, tmp_path):
    env = SingleAgentView(RecordTranscripts(scope_envs.make(f"{game}-{regime}", surface="text"), tmp_path / "t.jsonl"))
    for ep in range(2):
        total, steps, info = run_view(env, lambda obs: "Hello, how can I help you today?", seed=ep)
        assert isinstance(total, float) and info["messages"][0]["role"] == "system"
    lines = read_transcripts(tmp_path / "t.jsonl")
    assert [x["seed"] for x in lines] == [0, 1] and all(x["game"] == game and x["finished"] for x in lines)
    assert lines[0]["turns"][0]["text"] == "Hello, how can I help you today?"


def test_single_agent_view_of_the_user_against_a_fixed_persuader():
    env = SingleAgentView(scope_envs.make("p4g-cotrain"), role="user_0", others={"agent_0": ScriptedPersuader()})
    check_env(env)
    assert env.action_space.n == 28
    total, steps, info = run_view(env, masked_random(np.random.default_rng(0)), seed=3)
    assert info["active"] is False or info["turn"] > 0
    # the user's reward arrives at the end, on its own last step (the persuader's closing turn is folded in)
    assert all(r == 0.0 for _, r in steps[:-1]) and total == steps[-1][1]


def test_single_agent_view_plays_every_other_role_with_a_callable_policy():
    rng = np.random.default_rng(1)
    env = SingleAgentView(scope_envs.make("p4g-cotrain"), others={"user_0": masked_random(rng)})
    total, steps, info = run_view(env, masked_random(np.random.default_rng(2)), seed=0)
    assert total == pytest.approx(info["actual"])  # the persuader earns the donation
    assert len(steps) == info["persuader_turns"]  # one step per persuader turn, the user's turns played through


def test_single_agent_view_return_is_the_donation_and_is_deterministic():
    runs = [run_view(SingleAgentView(scope_envs.make("p4g-rotation")), masked_random(np.random.default_rng(0)), 7)
            for _ in range(2)]
    assert runs[0][:2] == runs[1][:2]
    assert runs[0][0] == pytest.approx(runs[0][2]["actual"])


def test_single_agent_view_text_surface():
    env = SingleAgentView(scope_envs.make("p4g-vs", surface="text"),)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and "messages" in info
    total, steps, info = run_view(env, lambda o: "Would you donate to Save the Children?", seed=0)
    assert total == pytest.approx(info["actual"]) and "[DONATE $" in info["messages"][-1]["content"]
    # a persuader simulator in the user's place on the text surface speaks through the realizer
    user = SingleAgentView(scope_envs.make("p4g-cotrain", surface="text"), role="user_0",
                           others={"agent_0": EmpiricalPersuader()})
    total, steps, info = run_view(user, lambda o: "Okay, I'll give something. [DONATE $0.25]", seed=1)
    assert info["intended"] == pytest.approx(0.25) and info["stated"] == 1.0


def test_single_agent_view_illegal_acts():
    env = SingleAgentView(scope_envs.make("p4g-frozen"))
    env.reset(seed=0)
    assert not env.action_masks()[0]
    _, _, _, _, info = env.step(0)  # the no-op is masked for the speaker: replaced, and counted
    assert info["illegal_actions"] == 1
    strict = SingleAgentView(scope_envs.make("p4g-frozen"), illegal="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0: act 0"):
        strict.step(0)


def test_single_agent_view_counts_the_other_seats_masked_acts():
    """A policy in ``others`` that sends a masked act had it replaced and counted only in the other seat's info,
    which the view never returns: the episode ended as if nothing happened. It is counted in the viewed role's
    info now (replacement on), and refused with ``illegal="raise"``."""
    def sends_masked(obs):
        return int(np.flatnonzero(obs["action_mask"] == 0)[0])

    def first_legal(obs):
        return int(np.flatnonzero(obs["action_mask"])[0])

    counts = []
    for user in (sends_masked, first_legal):
        env = SingleAgentView(scope_envs.make("p4g-cotrain"), others={"user_0": user})
        obs, info = env.reset(seed=0)
        assert info["others_illegal_actions"] == 0
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(first_legal(obs))
            done = term or trunc
        assert info["illegal_actions"] == 0
        counts.append(info["others_illegal_actions"])
    assert counts[0] >= 1 and counts[1] == 0
    strict = SingleAgentView(scope_envs.make("p4g-cotrain"), others={"user_0": sends_masked}, illegal="raise")
    obs, _ = strict.reset(seed=0)
    with pytest.raises(ValueError, match="user_0: act 0"):
        strict.step(first_legal(obs))
    assert "others_illegal_actions" not in strict.reset(seed=0)[1]


def test_single_agent_view_clear_errors():
    with pytest.raises(ValueError, match="role 'user_0' is not an agent"):
        SingleAgentView(scope_envs.make("p4g-frozen"), role="user_0")
    with pytest.raises(ValueError, match="others: 'user_7'"):
        SingleAgentView(scope_envs.make("p4g-cotrain"), others={"user_7": ScriptedPersuader()})
    with pytest.raises(ValueError, match="Simulator or a callable"):
        SingleAgentView(scope_envs.make("p4g-cotrain"), others={"user_0": 3})
    with pytest.raises(ValueError, match=r"user_0 plays beside agent_0 but has no policy: pass others=\{'user_0': \.\.\.\}"):
        SingleAgentView(scope_envs.make("p4g-cotrain"))
    with pytest.raises(ValueError, match=r"user_1, user_2 play beside agent_0 but have no policy"):  # every seat named
        SingleAgentView(scope_envs.make("p4g-population", members=3), others={"user_0": ScriptedPersuader()})
    with pytest.raises(ValueError, match=r"agent_0 plays beside user_0 but has no policy"):
        SingleAgentView(scope_envs.make("p4g-cotrain"), role="user_0")
    pop = SingleAgentView(scope_envs.make("p4g-population", members=3, schedule="round_robin"), role="user_2",
                          others={"agent_0": ScriptedPersuader()})
    with pytest.raises(ValueError, match="'user_2' is not live this episode"):
        pop.reset(seed=0)
    with pytest.raises(ValueError, match="before reset"):  # as the env itself says
        SingleAgentView(scope_envs.make("p4g-frozen")).step(1)
    view = SingleAgentView(scope_envs.make("p4g-frozen"))
    obs, _ = view.reset(seed=0)
    done = False
    while not done:
        *_, term, trunc, _ = view.step(int(np.flatnonzero(view.action_masks())[-1]))
        done = term or trunc
    with pytest.raises(ValueError, match="finished episode"):
        view.step(1)
    for seed in ("1", 1.5, -1, True):
        with pytest.raises(ValueError, match="^seed must be"):
            view.reset(seed=seed)


@pytest.mark.parametrize("wrapper", [SingleAgentView, LegalActions, lambda env: RecordTranscripts(env, "x.jsonl"),
                                     VerbalizedSampling, lambda env: SimulatorPopulation(env, [LEARNABLE] * 2),
                                     CheckpointPool])
def test_a_wrapper_of_one_env_refuses_an_id_or_a_vec_env_saying_what_to_pass(wrapper, tmp_path, monkeypatch):
    # (VerbalizedSampling took a make_vec env and changed nothing of it; SimulatorPopulation and CheckpointPool
    # failed with an AttributeError on an id or a make_vec env)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match=r"not an id: \w+\(scope_envs.make\('p4g-frozen'\)\)"):
        wrapper("p4g-frozen")
    with pytest.raises(TypeError, match="got a P4GVecEnv; a make_vec env batches"):
        wrapper(scope_envs.make_vec("p4g-frozen", num_envs=2))


@pytest.mark.parametrize("wrapper", [VerbalizedSampling, lambda env: SimulatorPopulation(env, [LEARNABLE]),
                                     CheckpointPool])
def test_a_wrapper_that_sets_the_user_seat_refuses_an_env_it_cannot_set(wrapper):
    """A remote env (or anything else whose ``unwrapped`` is not an env of this process) has no user seat here to
    set: VerbalizedSampling set an attribute nothing read."""
    class Elsewhere:  # the shape of scope_envs.remote.RemoteParallelEnv: its own unwrapped, a surface
        possible_agents = ["agent_0", "user_0"]
        surface = scope_envs.make("p4g-frozen").unwrapped.surface

        @property
        def unwrapped(self):
            return self

    with pytest.raises(TypeError, match=r"gives its part to an env of scope_envs.make\(id\) in this process, got a "
                                        r"Elsewhere"):
        wrapper(Elsewhere())


@pytest.mark.parametrize("exploration", ["1", None, float("nan"), float("inf"), -0.5, True])
def test_a_bandits_exploration_is_checked_when_the_population_is_made(exploration):
    """A str failed at the bandit's first pick past the unplayed members (numpy's UFuncTypeError), NaN made every pick
    member 0, a negative width turned the lower confidence bound into an upper one."""
    from scope_envs.agents.p4g import CollapsedPersuadee

    for schedule in ("bandit", "uniform"):
        with pytest.raises(ValueError, match=r"^exploration must be a finite number >= 0 \(the bandit's confidence "
                                             r"width\), got"):
            SimulatorPopulation(scope_envs.make("p4g-frozen"), [CollapsedPersuadee()] * 2, schedule=schedule,
                                exploration=exploration)
    for fine in (0, 0.5, np.float64(2.0), 3):
        SimulatorPopulation(scope_envs.make("p4g-frozen"), [CollapsedPersuadee()] * 2, schedule="bandit",
                            exploration=fine)


# -- RecordTranscripts -------------------------------------------------------------------


def test_record_transcripts_one_line_per_finished_episode(tmp_path):
    path = tmp_path / "t.jsonl"
    env = RecordTranscripts(scope_envs.make("p4g-rotation"), path)
    rng = np.random.default_rng(0)
    traces = [play_episode(env, rng, seed=5 if ep == 0 else None) for ep in range(3)]
    lines = read_transcripts(path)
    assert [x["episode"] for x in lines] == [0, 1, 2] and {x["seed"] for x in lines} == {5}
    for line, trace in zip(lines, traces):
        assert line["regime"] == "rotation" and line["finished"] and line["persona"]
        assert line["simulator"].startswith("collapsed-")
        assert line["returns"]["agent_0"] == pytest.approx(sum(t[2]["agent_0"] for t in trace))
        assert line["outcome"]["actual"] == line["returns"]["agent_0"]
        assert all(t["text"] and t["act_name"] for t in line["turns"])
        assert [t["role"] for t in line["turns"][:2]] == ["persuader", "persuadee"]
    assert len({x["id"] for x in lines}) == 3


def test_record_transcripts_makes_the_folder_of_its_path(tmp_path, monkeypatch):
    """docs/trainers.md's ``RecordTranscripts(env, "runs/x.jsonl")`` where no ``runs/`` exists yet."""
    monkeypatch.chdir(tmp_path)
    env = RecordTranscripts(scope_envs.make("p4g-frozen"), "runs/x.jsonl")
    assert (tmp_path / "runs").is_dir()
    play_episode(env, np.random.default_rng(0), seed=0)
    assert len(read_transcripts(tmp_path / "runs" / "x.jsonl")) == 1
    (tmp_path / "afile").write_text("")
    for path, match in [("afile/x.jsonl", "path 'afile/x.jsonl'.*afile"), (None, "^path must be"),
                        (3, "^path must be"), ("runs", "path 'runs' must name a file.*got a folder"),
                        (tmp_path, "must name a file.*got a folder"), ("", "path '' must name a file.*empty")]:
        with pytest.raises(ValueError, match=match):
            RecordTranscripts(scope_envs.make("p4g-frozen"), path)
    with pytest.raises(ValueError, match="^seed must be"):
        env.reset(seed="2")
    assert env._seed == 0  # refused before it was recorded


def test_record_transcripts_seed_and_episode_reproduce_the_episode(tmp_path):
    rng = np.random.default_rng(0)
    env = RecordTranscripts(scope_envs.make("p4g-vs"), tmp_path / "a.jsonl")
    for ep in range(3):
        play_episode(env, rng, seed=9 if ep == 0 else None)
    third = read_transcripts(tmp_path / "a.jsonl")[2]
    rng = np.random.default_rng(0)
    again = RecordTranscripts(scope_envs.make("p4g-vs"), tmp_path / "b.jsonl")
    for ep in range(3):
        play_episode(again, rng, seed=third["seed"] if ep == 0 else None)
    assert read_transcripts(tmp_path / "b.jsonl")[2]["turns"] == third["turns"]


def test_record_transcripts_text_surface_and_population(tmp_path):
    env = RecordTranscripts(scope_envs.make("p4g-population", members=2, surface="text"), tmp_path / "t.jsonl")
    rng = np.random.default_rng(0)
    for ep in range(2):
        play_episode(env, rng, seed=0 if ep == 0 else None)
    lines = read_transcripts(tmp_path / "t.jsonl")
    assert lines[0]["surface"] == "text" and lines[0]["simulator"] in ("user_0", "user_1")
    assert set(lines[0]["returns"]) == {"agent_0", lines[0]["simulator"]}
    sent = {"Hello!", "Would you donate? [DONATE $0.50]", "bye"}  # conftest's random text actions
    assert {t["text"] for x in lines for t in x["turns"]} <= sent


CRASH = """
import os, sys, numpy as np, scope_envs
from scope_envs.wrappers import RecordTranscripts
env = RecordTranscripts(scope_envs.make("p4g-frozen"), sys.argv[1])
rng = np.random.default_rng(0)
for ep in range(3):
    obs, _ = env.reset(seed=1 if ep == 0 else None)
    while env.agents:
        if ep == 2 and obs["agent_0"]["observation"][0] > 0:  # in the middle of the third episode
            os._exit(1)
        obs, *_ = env.step({"agent_0": int(rng.choice(np.flatnonzero(obs["agent_0"]["action_mask"])))})
"""


def test_record_transcripts_survive_an_interrupted_process(tmp_path):
    path = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-c", CRASH, str(path)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert [x["episode"] for x in read_transcripts(path)] == [0, 1]


def test_record_transcripts_close_mid_episode_and_a_cut_line(tmp_path):
    path = tmp_path / "t.jsonl"
    env = RecordTranscripts(scope_envs.make("p4g-frozen"), path)
    obs, _ = env.reset(seed=0)
    env.step({"agent_0": 1})
    env.close()
    (line,) = read_transcripts(path)
    assert line["finished"] is False and len(line["turns"]) == 2
    with open(path, "a") as f:
        f.write('{"id": "cut sho')  # what a crash during the write leaves behind
    assert len(read_transcripts(path)) == 1


BIG_WRITER = """
import sys, numpy as np, scope_envs
from scope_envs.wrappers import RecordTranscripts, record
dumps = record.json.dumps
record.json.dumps = lambda r: dumps(dict(r, pad="x" * 3_000_000))  # ~3 MB a line: a kill lands mid-write
env = RecordTranscripts(scope_envs.make("p4g-frozen"), sys.argv[1])
rng = np.random.default_rng(0)
print("writing", flush=True)
while True:
    obs, _ = env.reset()
    while env.agents:
        obs, *_ = env.step({"agent_0": int(rng.choice(np.flatnonzero(obs["agent_0"]["action_mask"])))})
"""


@pytest.mark.slow
def test_record_transcripts_killed_mid_write_stay_readable_and_appendable(tmp_path):
    from scope_envs.wrappers import TornTranscriptWarning

    path = tmp_path / "t.jsonl"
    rng = np.random.default_rng(0)
    for _ in range(10):  # kill -9 at random moments until one lands inside a line
        child = subprocess.Popen([sys.executable, "-c", BIG_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        deadline = time.monotonic() + 60
        while (not path.exists() or path.stat().st_size < 4_000_000) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(float(rng.uniform(0, 0.05)))
        child.kill()
        child.wait()
        if path.read_bytes()[-1:] != b"\n":
            break
    else:  # no kill landed mid-line: cut the last line as such a kill would have
        data = path.read_bytes()
        path.write_bytes(data[:-1_000_000])
    with pytest.warns(TornTranscriptWarning):
        complete = read_transcripts(path)
    assert complete and all(x["finished"] and x["turns"] for x in complete)
    env = RecordTranscripts(scope_envs.make("p4g-frozen"), path)  # a restarted writer
    with pytest.warns(TornTranscriptWarning, match="removed a torn last line"):
        play_episode(env, rng, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing torn is left
        after = read_transcripts(path)
    assert [x["id"] for x in after[:-1]] == [x["id"] for x in complete]
    assert after[-1]["seed"] == 3 and "pad" not in after[-1]


def test_read_transcripts_recovers_a_record_appended_onto_a_torn_line(tmp_path):
    """A file poisoned by an older writer: the next record was appended onto the cut line."""
    from scope_envs.wrappers import TornTranscriptWarning

    path = tmp_path / "t.jsonl"
    env = RecordTranscripts(scope_envs.make("p4g-frozen"), path)
    play_episode(env, np.random.default_rng(0), seed=0)
    first = path.read_text()
    path.write_text(first + first[:40] + first)
    with pytest.warns(TornTranscriptWarning, match=r"line\(s\) \[2\]"):
        lines = read_transcripts(path)
    assert len(lines) == 2 and lines[0] == lines[1]


# -- VerbalizedSampling and SimulatorPopulation --------------------------------------------


VS_KEYS = {"vs_candidates", "vs_probs", "vs_chosen", "vs_fallback"}


@pytest.mark.parametrize("surface", ["act", "text"])
def test_vs_regime_is_the_wrapper_and_reports_candidates_every_step(surface):
    env = scope_envs.make("p4g-vs", surface=surface, k=4)
    assert isinstance(env, VerbalizedSampling) and env.k == 4
    trace = play_episode(env, np.random.default_rng(0), seed=0)
    for *_, infos in trace:
        info = infos["agent_0"]
        assert VS_KEYS <= set(info) and info["vs_candidates"].shape == (4,)
        if info["vs_chosen"] >= 0:
            assert info["vs_candidates"][info["vs_chosen"]] >= 0 and info["vs_probs"][info["vs_chosen"]] > 0
    assert trace[-1][5]["agent_0"]["vs_chosen"] == -1 or trace[-1][3]["agent_0"]


def _user_acts(env, episodes=40):
    rng, acts = np.random.default_rng(0), []
    for ep in range(episodes):
        env.reset(seed=ep)
        play_episode(env, rng)
        acts += [t.act for t in env.unwrapped.game.history if t.role == env.unwrapped.game.user_role]
    return np.bincount(acts, minlength=28) / len(acts)


def test_vs_is_more_diverse_than_the_frozen_simulator():
    def entropy(p):
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    assert entropy(_user_acts(scope_envs.make("p4g-vs"))) > entropy(_user_acts(scope_envs.make("p4g-frozen"))) + 0.3


@pytest.mark.parametrize("regime", ["rotation", "population"])
def test_rotation_and_population_are_the_population_wrapper(regime):
    env = scope_envs.make(f"p4g-{regime}", schedule="round_robin")
    assert isinstance(env, SimulatorPopulation)
    n = len(env.unwrapped.members)
    rng = np.random.default_rng(0)
    members = []
    for ep in range(2 * n):
        trace = play_episode(env, rng, seed=0 if ep == 0 else None)
        members.append(trace[-1][5]["agent_0"]["member"])
    assert members == list(range(n)) * 2
    info = trace[-1][5]["agent_0"]
    assert list(info["member_episodes"]) == [2] * n and info["member_returns"].shape == (n,)


def test_bandit_schedule_meets_the_hardest_member_most():
    from scope_envs.agents.p4g import CollapsedPersuadee

    stingy, generous = CollapsedPersuadee(cooperation=-3.0, name="stingy"), CollapsedPersuadee(name="generous")
    env = SimulatorPopulation(scope_envs.make("p4g-frozen"), [generous, stingy], schedule="bandit", exploration=0.5)
    rng = np.random.default_rng(0)
    for ep in range(60):
        play_episode(env, rng, seed=0 if ep == 0 else None)
    assert env.episodes[1] > env.episodes[0]
    assert env.returns[1] / env.episodes[1] < env.returns[0] / env.episodes[0]


def test_population_of_learnable_slots_by_hand():
    env = SimulatorPopulation(scope_envs.make("p4g-cotrain"), [LEARNABLE] * 2, schedule="uniform")
    assert env.possible_agents == ["agent_0", "user_0", "user_1"]


# -- LegalActions -----------------------------------------------------------------------------


def test_legal_actions_replaces_only_masked_acts_deterministically():
    def run():
        env = LegalActions(scope_envs.make("p4g-cotrain"))
        obs, infos = env.reset(seed=4)
        out = []
        while env.agents:
            obs, rew, term, trunc, infos = env.step({a: 5 for a in env.agents})  # often illegal
            out.append([t.act for t in env.unwrapped.game.history])
        return out, infos

    (a, infos), (b, _) = run(), run()
    assert a == b and infos["agent_0"]["illegal_actions"] + infos["user_0"]["illegal_actions"] > 0
    env = LegalActions(scope_envs.make("p4g-frozen"))
    obs, _ = env.reset(seed=0)
    env.step({"agent_0": 3})
    assert env.unwrapped.game.history[0].act == 3  # a legal act passes untouched
    with pytest.raises(ValueError, match="out of range"):
        env.step({"agent_0": 99})
    with pytest.raises(ValueError, match="act surface"):
        LegalActions(scope_envs.make("p4g-frozen", surface="text"))


@pytest.mark.parametrize("schedule", ["round_robin", "bandit"])
def test_a_schedule_spans_episodes_and_restarts_on_request(schedule):
    env = scope_envs.make("p4g-population", members=4, schedule=schedule)
    rng = np.random.default_rng(0)
    members = []
    for _ in range(4):
        play_episode(env, rng, seed=0)
        members.append(env.unwrapped.member)
    assert members == [0, 1, 2, 3]  # by design: the rotation goes on across reset(seed)
    replay = []
    for _ in range(4):
        env.reset(seed=0, options={"reset_schedule": True})
        replay.append(env.unwrapped.member)
    assert replay == [0, 0, 0, 0] and env.unwrapped.schedule.episodes.sum() == 0
