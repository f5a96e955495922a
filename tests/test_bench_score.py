"""scope-envs score: a saved policy, an SB3 .zip, a file.py:NAME factory and an LLM endpoint, each scored by one
command, by the benchmark's protocol, in a band; a learned user (--seat user_0) diagnosed, with what is and is not
measured said (scope_envs.bench.score)."""

import json
import subprocess
import sys
import textwrap

import pytest
from bench_fixtures import tiny_reference  # noqa: F401

from scope_envs.bench.policies import SB3Policy
from scope_envs.bench.protocol import evaluate_policy
from scope_envs.cli import main
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

SERVER = textwrap.dedent('''
    import json, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def _send(self, payload):
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # /v1/models: the reachability check
            self._send({"data": [{"id": "persuader"}]})

        def do_POST(self):  # /v1/chat/completions: always the same appeal
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send({"choices": [{"message": {"role": "assistant", "content":
                        "Children in need benefit from every dollar. Would you donate $1 to Save the Children?"},
                        "finish_reason": "stop"}]})

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    server.serve_forever()
''')


def score(*argv):
    main(["score", *argv])


def test_a_saved_trainer_is_scored_by_the_protocol_against_the_reference(tiny_reference, tmp_path,  # noqa: F811
                                                                          capsys):
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=3, total_steps=400))
    trainer.train()
    trainer.save(tmp_path / "saved")
    score("--policy", str(tmp_path / "saved"), "--game", "p4g", "--seeds", "2", "--episodes", "24",
          "--against", str(tiny_reference), "--out", str(tmp_path / "out"))
    result = json.loads((tmp_path / "out" / "score.json").read_text())
    direct = [evaluate_policy(trainer, "p4g", s, eval_episodes=24, heldout_episodes=24) for s in (0, 1)]
    assert [r["metrics"] for r in result["records"]] == [d["metrics"] for d in direct]
    assert set(result["rows"]) == {"random", "oracle", "untrained", "frozen", "rotation"}
    lo, hi = result["rows"]["random"]["heldout_success"], result["rows"]["oracle"]["heldout_success"]
    if hi > lo:
        assert result["normalized"] == pytest.approx((result["heldout_success"] - lo) / (hi - lo))
    else:
        assert "normalized" not in result
    assert result["reference_matches"] in (True, False) and "score.md" in [p.name for p in (tmp_path / "out").iterdir()]
    # the reference played 24 episodes a side, as this score did; at the default 500 the counts are said
    assert result["episodes_match"] and result["episodes"]["reference"]["eval_episodes"] == 24
    score("--policy", str(tmp_path / "saved"), "--game", "p4g", "--seeds", "1", "--against", str(tiny_reference),
          "--out", str(tmp_path / "other"))
    other = json.loads((tmp_path / "other" / "score.json").read_text())
    assert not other["episodes_match"] and other["episodes"]["score"] == {"eval_episodes": 500,
                                                                          "heldout_episodes": 4672}
    assert "Other episode counts than the reference's" in (tmp_path / "other" / "score.md").read_text()
    assert "Held-out and panel: mean donation ($)." in (tmp_path / "other" / "score.md").read_text()  # the unit
    assert (tmp_path / "other" / "score.md").read_text().count("Seed 0, the benchmark's") == 1  # one seed: no "0..0"
    assert "Seeds 0..1, the benchmark's" in (tmp_path / "out" / "score.md").read_text()
    (tmp_path / "mine.py").write_text("def make():\n    return lambda obs, mask: mask.argmax(1)\n")
    err = refused(capsys, "--policy", f"{tmp_path / 'mine.py'}:make", "--game", "tau2", "--against",
                  str(tiny_reference), "--out", str(tmp_path / "o"))
    assert f"argument --against: {tiny_reference} has no rows of tau2" in err


def test_an_sb3_zip_and_a_factory_file(tmp_path):
    sb3 = pytest.importorskip("sb3_contrib")
    from scope_envs.integrations.sb3 import sb3_vec_env

    model = sb3.MaskablePPO("MlpPolicy", sb3_vec_env("p4g-frozen", num_envs=4), n_steps=16, batch_size=64, seed=0,
                            device="cpu").learn(64)
    model.save(tmp_path / "model.zip")
    score("--policy", str(tmp_path / "model.zip"), "--game", "p4g", "--episodes", "16", "--against", "none",
          "--out", str(tmp_path / "zip"))
    result = json.loads((tmp_path / "zip" / "score.json").read_text())
    direct = evaluate_policy(SB3Policy(model), "p4g", 0, eval_episodes=16, heldout_episodes=16)
    assert result["records"][0]["metrics"] == direct["metrics"] and "no band" in result["band"]
    factory = tmp_path / "mine.py"
    factory.write_text("def make():\n    return lambda obs, mask: mask.argmax(1)\n")
    score("--policy", f"{factory}:make", "--game", "cooperbench", "--episodes", "16", "--against", "none",
          "--out", str(tmp_path / "fn"))
    assert 0.0 <= json.loads((tmp_path / "fn" / "score.json").read_text())["heldout_success"] <= 1.0


def test_text_floor_and_ceiling_on_the_same_episodes(tmp_path):
    score("--policy", "floor", "--surface", "text", "--game", "p4g", "--episodes", "4", "--ceiling-steps", "400",
          "--out", str(tmp_path / "a"))
    score("--policy", "floor", "--surface", "text", "--game", "p4g", "--episodes", "4", "--ceiling-steps", "400",
          "--out", str(tmp_path / "b"))
    a, b = (json.loads((tmp_path / d / "score.json").read_text()) for d in ("a", "b"))
    assert set(a["rows"]) == {"floor", "ceiling"} and a["rows"] == b["rows"]  # the same episodes, the same words
    for row in a["rows"].values():
        assert len(row["heldout_per_episode"]) == 4 and len(row["panel_per_family"]) == 6
    assert a["rows"]["floor"]["heldout_per_episode"] != a["rows"]["ceiling"]["heldout_per_episode"] or \
        a["rows"]["floor"]["panel_per_family"] != a["rows"]["ceiling"]["panel_per_family"]
    assert "ceiling = the act-level oracle (400 decisions)" in (tmp_path / "a" / "score.md").read_text()
    from scope_envs.bench.score import markdown

    a["rows"]["ceiling"]["decisions"] = None  # as --ceiling DIR records it: the page names the trainer given
    assert "ceiling = the saved trainer given by --ceiling" in markdown(a)
    assert "Held-out and panel: mean donation ($)." in markdown(a)  # the band's unit, not eval-llm's
    a["llm_panels"] = {"panel.yaml": {"score": 0.25, "success": 0.5}}
    assert "score 0.250 (the agent's score in [0, 1]), success 0.500 (the share of episodes scoring above 0)" \
        in markdown(a)


def test_an_llm_endpoint_is_scored_in_the_text_band(tmp_path):
    """A real OpenAI-compatible server process on 127.0.0.1; the policy is openai:URL#MODEL."""
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        score("--policy", f"openai:http://127.0.0.1:{port}/v1#persuader", "--surface", "text", "--game", "p4g",
              "--episodes", "3", "--ceiling-steps", "400", "--max-new-tokens", "32", "--out", str(tmp_path / "llm"))
    finally:
        proc.kill()
        proc.wait()
    result = json.loads((tmp_path / "llm" / "score.json").read_text())
    spec = f"openai:http://127.0.0.1:{port}/v1#persuader"
    row = result["rows"][spec]
    assert set(result["rows"]) == {spec, "floor", "ceiling"}
    assert len(row["heldout_per_episode"]) == 3 and 0.0 <= row["heldout_success"] <= 2.0
    assert len(row["panel_per_family"]) == 6
    assert "floor" in (tmp_path / "llm" / "score.md").read_text()


def test_bad_input_is_an_argparse_error(tmp_path, capsys):
    trainer = tmp_path / "trainer"  # what --ceiling's type looks for
    trainer.mkdir()
    (trainer / "config.json").write_text("{}")
    (trainer / "model.pt").write_bytes(b"")
    for argv, message in ((["--policy", str(tmp_path / "nope.zip"), "--game", "p4g"], "argument --policy"),
                          (["--policy", str(tmp_path / "gone"), "--game", "p4g"], "gone: no such file or folder"),
                          (["--policy", "floor", "--surface", "text", "--game", "tau2"], "another game"),
                          # tau2's text score has no ceiling row: --ceiling was ignored (and not checked)
                          (["--policy", "hf:x", "--surface", "text", "--game", "tau2", "--ceiling", str(trainer)],
                           "argument --ceiling: tau2's text score has no floor or ceiling row"),
                          (["--policy", "floor", "--game", "p4g", "--panel", "builtin"], "argument --panel"),
                          (["--policy", f"openai:http://127.0.0.1:9/v1#m", "--surface", "text", "--game", "p4g"],
                           "argument --policy"),
                          # hf:DIR, as diagnose and serve take a model folder, was read as module:NAME
                          (["--policy", f"hf:{tmp_path}", "--surface", "text", "--game", "p4g"],
                           f"argument --policy: {str(tmp_path)!r} holds no")):
        with pytest.raises(SystemExit) as e:
            score(*argv, "--out", str(tmp_path / "o"))
        assert e.value.code == 2
        assert message in capsys.readouterr().err


def test_every_option_of_score_says_what_it_does():
    """--surface, which switches between the two ways of scoring, had no help at all in score --help."""
    import argparse

    from scope_envs.bench.score import add_parser

    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    parser = sub.choices["score"]
    silent = [a.option_strings[0] for a in parser._actions if a.option_strings and not a.help]
    assert silent == [], silent


def refused(capsys, *argv):
    """``score *argv``: exit 2, one line on stderr, no traceback; returns stderr."""
    with pytest.raises(SystemExit) as e:
        score(*argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err, err
    return err


@pytest.fixture
def nothing_played(monkeypatch):
    """Any episode played fails the test: the refusals come before the first."""
    from scope_envs.bench import protocol, score as score_module

    monkeypatch.setattr(protocol, "evaluate_policy", lambda *a, **k: pytest.fail("an episode was played"))
    monkeypatch.setattr(score_module, "text_sides", lambda *a, **k: pytest.fail("an episode was played"))


def test_a_ceiling_that_is_not_a_saved_trainer_is_refused_before_any_episode(tmp_path, capsys, nothing_played):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{bad")
    (bad / "model.pt").write_bytes(b"")
    for ceiling, why in ((tmp_path / "nosuch", "no such directory"), (tmp_path / "empty", "has no config.json"),
                         (tmp_path / "file", "no such directory"), (bad, f"{bad / 'config.json'} is not valid JSON")):
        err = refused(capsys, "--surface", "text", "--policy", "floor", "--game", "p4g", "--ceiling", str(ceiling),
                      "--episodes", "1", "--out", str(tmp_path / "o"))
        assert "argument --ceiling: " in err and why in err, err


def test_a_saved_ceiling_is_loaded_once_and_plays_as_saved(tmp_path, monkeypatch):
    """--ceiling DIR was loaded twice (once to check it, once to play it): the same model.pt read and unpickled
    twice. Loaded once now, and the ceiling row plays the saved trainer's agent_0 on its evaluation generator."""
    from scope_envs.bench import score as score_module
    from scope_envs.train.rollout import evaluation_policies

    saved = tmp_path / "saved"
    PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=0, total_steps=64)).save(saved)
    loads = []
    real_load = PPOTrainer.load.__func__
    counted = classmethod(lambda cls, *a, **k: loads.append(a) or real_load(cls, *a, **k))
    monkeypatch.setattr(PPOTrainer, "load", counted)
    score("--surface", "text", "--policy", "floor", "--game", "p4g", "--ceiling", str(saved), "--episodes", "2",
          "--panel", "builtin", "--out", str(tmp_path / "o"))
    assert len(loads) == 1, loads
    result = json.loads((tmp_path / "o" / "score.json").read_text())
    assert result["rows"]["ceiling"]["decisions"] is None
    ceiling = evaluation_policies(real_load(PPOTrainer, saved), 0)["agent_0"]
    direct = score_module.text_sides(score_module.ActInWords(ceiling, "ceiling"), "p4g", 0, 2, True)
    assert result["rows"]["ceiling"]["heldout_per_episode"] == direct["heldout_per_episode"]
    assert result["rows"]["ceiling"]["panel_per_family"] == direct["panel_per_family"]


def test_a_trainer_of_another_game_is_refused_on_the_text_surface_before_any_episode(tmp_path, capsys,
                                                                                      nothing_played):
    """A cooperbench trainer as p4g's --ceiling (or as the text surface's --policy) ended, after the other rows had
    played, in exit 1 with a numpy matmul error (its network reads cooperbench's observation width); the act
    surface refused it by name. Now both surfaces do, before any episode; and --ceiling-steps beside --ceiling,
    which it never read, is refused."""
    other = tmp_path / "coop"
    PPOTrainer(PPOConfig(env_id="cooperbench-frozen", seed=0, total_steps=64)).save(other)
    mine = tmp_path / "p4g"
    PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=0, total_steps=64)).save(mine)
    for argv, argument in ((["--policy", "floor", "--ceiling", str(other)], "--ceiling"),
                           (["--policy", str(other), "--ceiling", str(mine)], "--policy")):
        err = refused(capsys, "--surface", "text", *argv, "--game", "p4g", "--episodes", "1",
                      "--out", str(tmp_path / "o"))
        assert f"argument {argument}: {other} was trained on cooperbench-frozen, a game other than --game p4g" \
            in err.strip().splitlines()[-1], err
    err = refused(capsys, "--surface", "text", "--policy", "floor", "--ceiling", str(mine), "--ceiling-steps", "400",
                  "--game", "p4g", "--episodes", "1", "--out", str(tmp_path / "o"))
    assert "argument --ceiling-steps: not with --ceiling" in err.strip().splitlines()[-1], err


def test_a_policy_folder_with_a_broken_config_names_the_file(tmp_path, capsys, nothing_played):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{bad")
    (bad / "model.pt").write_bytes(b"")
    err = refused(capsys, "--policy", str(bad), "--game", "p4g", "--against", "none", "--out", str(tmp_path / "o"))
    assert f"argument --policy: {bad / 'config.json'} is not valid JSON: Expecting property name" in err
    (bad / "config.json").write_text('{"env_id": "p4g-frozen", "nope": 1}')
    err = refused(capsys, "--policy", str(bad), "--game", "p4g", "--against", "none", "--out", str(tmp_path / "o"))
    assert f"{bad / 'config.json'} has keys PPOConfig does not know: nope" in err


def test_more_seeds_than_the_reference_has_are_refused(tiny_reference, tmp_path, capsys, nothing_played):  # noqa: F811
    """The band compares on the same seeds: a 2-seed reference cannot place seeds 0..4."""
    factory = tmp_path / "mine.py"
    factory.write_text("def make():\n    return lambda obs, mask: mask.argmax(1)\n")
    err = refused(capsys, "--policy", f"{factory}:make", "--game", "p4g", "--seeds", "5", "--against",
                  str(tiny_reference), "--out", str(tmp_path / "o"))
    assert "argument --seeds: the reference has 2 seeds of p4g" in err and "--seeds 2 or fewer" in err


def test_an_option_of_the_other_surface_is_refused(tmp_path, capsys, nothing_played):
    for argv, argument, surface in ((["--surface", "text", "--policy", "floor", "--seeds", "3"], "--seeds", "act"),
                                    (["--surface", "text", "--policy", "floor", "--against", "none"], "--against",
                                     "act"),
                                    (["--policy", "floor", "--seed", "4"], "--seed", "text"),
                                    (["--policy", "floor", "--seed", "0"], "--seed", "text"),
                                    (["--policy", "floor", "--max-new-tokens", "9"], "--max-new-tokens", "text"),
                                    (["--policy", "floor", "--ceiling-steps", "9"], "--ceiling-steps", "text")):
        err = refused(capsys, *argv, "--game", "p4g", "--out", str(tmp_path / "o"))
        assert f"argument {argument}: only with --surface {surface}" in err, err


def test_panel_env_honours_the_surface_of_the_env_it_is_given():
    import scope_envs
    from scope_envs.agents.families import panel, panel_env

    for game in ("p4g", "tau2"):
        text = scope_envs.make(f"{game}-heldout", surface="text")
        env = panel_env(text, panel(game)[0])
        assert env.unwrapped.surface.name == "text" and env.unwrapped.game is text.unwrapped.game
        obs, infos = env.reset(seed=0)
        assert isinstance(obs["agent_0"], str) and "messages" in infos["agent_0"]
    assert panel_env(scope_envs.make("p4g-heldout").unwrapped.game, panel("p4g")[0]).unwrapped.surface.name == "act"


MISTAKES = '''
import numpy as np
from scope_envs.train.policy import Decisions

def broken():
    raise RuntimeError("factory broke")

class ReturnsArray:
    def act(self, obs, mask, greedy=False):
        return mask.argmax(1)

class NoGreedy:
    def act(self, obs, mask):
        return Decisions(mask.argmax(1))

class NanEntropy:
    def act(self, obs, mask, greedy=False):
        return Decisions(mask.argmax(1), entropy=np.full(len(mask), np.nan))

def nan_acts():
    return lambda obs, mask: np.full(len(mask), np.nan)

def act_999():
    return lambda obs, mask: np.full(len(mask), 999)

def fractional():
    return lambda obs, mask: mask.argmax(1) + 0.4
'''


def test_a_mistake_in_the_users_policy_is_said_in_one_line(tmp_path, capsys):
    """A factory that raises, an ``act`` of another signature or answer, acts that are NaN, fractional or out of
    range, a NaN entropy: one line naming what is wrong, never a traceback from inside a rollout."""
    (tmp_path / "mine.py").write_text(MISTAKES)
    for name, said in (("ReturnsArray", "act returned a ndarray, not scope_envs.train.policy.Decisions"),
                       ("NoGreedy", "act(obs, mask, greedy) raised TypeError"),
                       ("NanEntropy", "Decisions.entropy that is not"),
                       ("nan_acts", "returned nan in row 0: acts are integers"),
                       ("act_999", "returned act 999 in row 0: acts are 0..17"),
                       ("fractional", "in row 0: acts are integers")):
        with pytest.raises(SystemExit) as e:
            score("--policy", f"{tmp_path / 'mine.py'}:{name}", "--game", "p4g", "--episodes", "4", "--against",
                  "none", "--out", str(tmp_path / "o"))
        assert isinstance(e.value.code, str) and said in e.value.code, (name, e.value.code)
    err = refused(capsys, "--policy", f"{tmp_path / 'mine.py'}:broken", "--game", "p4g", "--against", "none",
                  "--out", str(tmp_path / "o"))
    assert "calling it raised RuntimeError: factory broke" in err
    PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=0, total_steps=64)).save(tmp_path / "p4g-trainer")
    err = refused(capsys, "--policy", str(tmp_path / "p4g-trainer"), "--game", "cooperbench", "--against", "none",
                  "--out", str(tmp_path / "o"))
    assert "was trained on p4g-frozen, a game other than --game cooperbench" in err


# ------------------------------------------------------------------------------------------------ a learned user
USER_DESIGN = ("--episodes", "16", "--probe-episodes", "4", "--bootstrap", "20", "--seed", "3")


@pytest.fixture(scope="module")
def sb3_models(tmp_path_factory):
    """A user_0 model of p4g-cotrain trained for a few hundred steps on its SingleAgentView (the persuader
    uniform), and an untrained agent_0 model: ``(user.zip, agent.zip)``."""
    import numpy as np

    sb3 = pytest.importorskip("sb3_contrib")
    import scope_envs
    from scope_envs.integrations.sb3 import sb3_vec_env
    from scope_envs.wrappers import SingleAgentView

    folder = tmp_path_factory.mktemp("sb3")
    rng = np.random.default_rng(0)
    view = SingleAgentView(scope_envs.make("p4g-cotrain"), "user_0",
                           others={"agent_0": lambda obs: int(rng.choice(np.flatnonzero(obs["action_mask"])))})
    sb3.MaskablePPO("MultiInputPolicy", view, n_steps=64, batch_size=64, learning_rate=3e-3, seed=0,
                    device="cpu").learn(320).save(folder / "user.zip")
    sb3.MaskablePPO("MlpPolicy", sb3_vec_env("p4g-frozen", num_envs=2), n_steps=16, batch_size=32, seed=0,
                    device="cpu").save(folder / "agent.zip")
    return folder / "user.zip", folder / "agent.zip"


def test_a_learned_user_is_diagnosed_and_says_what_it_measures(sb3_models, tmp_path, capsys):
    """``score --seat user_0`` on a trained SB3 user: the diagnosis's numbers in range, the fixed agent's success on
    four sides, what is and is not measured said on stdout and in both files; beside a uniform random user's
    diagnosis on the same design, the user's own numbers differ and the reference's are the very same."""
    import numpy as np

    from scope_envs.bench.score import measure_user
    from scope_envs.core.simulator import Simulator
    from scope_envs.diagnose import measures

    user_zip, _ = sb3_models
    score("--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", *USER_DESIGN, "--out", str(tmp_path / "u"))
    stdout = capsys.readouterr().out
    result = json.loads((tmp_path / "u" / "score.json").read_text())
    md = (tmp_path / "u" / "score.md").read_text()
    for text in (stdout, md):
        assert "diagnosed, not scored against human proxies" in text and "What it does not:" in text
        assert "no persona sensitivity" in text and "| sharpening (vs reference model) |" in text
    assert result["seat"] == "user_0" and result["not_measured"] and result["measures"]
    d = result["diagnosis"]
    assert d["fit"] == "exact" and d["design"]["episodes"] == 16 and d["design"]["probe_episodes"] == 4
    assert measures.S_MIN <= d["sharpening"]["value"] <= measures.S_MAX
    for block in (d["coverage"]["acts"], d["coverage"]["paths"], d["cooperation"]["rate"],
                  d["cooperation"]["outcome"]["rate"]):
        assert 0.0 <= block["value"] <= 1.0 and block["ci"][0] <= block["value"] <= block["ci"][1]
    assert d["coverage"]["entropy_ratio"]["value"] > 0 and -1.0 <= d["cooperation"]["bias"]["value"] <= 1.0
    assert d["persona_sensitivity"] is None and "real" not in d
    sides = result["fixed_agent"]["success"]
    assert set(sides) == {"learned user", "reference model", "frozen simulator", "held-out human proxies"}
    assert all(v["mean"] >= 0.0 and v["se"] >= 0.0 for v in sides.values())

    class Uniform(Simulator):
        name = "uniform"

        def distribution(self, view):
            return np.asarray(view.legal, float) / np.sum(view.legal)

    rand = measure_user(Uniform(), "p4g", episodes=16, probe_episodes=4, bootstrap=20, seed=3)
    r = rand["diagnosis"]
    # the simulator's own numbers move with the user
    assert d["coverage"]["entropy_ratio"]["value"] != r["coverage"]["entropy_ratio"]["value"]
    assert d["sharpening"]["kl_reference"] != r["sharpening"]["kl_reference"]
    assert (d["cooperation"]["rate"]["value"], sides["learned user"]["mean"]) != \
        (r["cooperation"]["rate"]["value"], rand["fixed_agent"]["success"]["learned user"]["mean"])
    # the reference's side is played on the same seeds whoever is diagnosed: the very same numbers
    assert d["cooperation"]["reference_rate"] == r["cooperation"]["reference_rate"]
    assert d["coverage"]["acts"]["modes"] == r["coverage"]["acts"]["modes"]
    for side in ("reference model", "frozen simulator", "held-out human proxies"):
        assert sides[side] == rand["fixed_agent"]["success"][side]


def test_an_sb3_model_of_another_seat_is_refused_on_the_text_surface_too(sb3_models, tmp_path, capsys,
                                                                        nothing_played):
    """The act surface refused a user_0 model as agent_0 by its shapes; the text surface took it and failed in its
    first episode (exit 1). Now it is refused as on the act surface, before any episode."""
    user_zip, _ = sb3_models
    err = refused(capsys, "--surface", "text", "--policy", str(user_zip), "--game", "p4g", "--episodes", "1",
                  "--out", str(tmp_path / "o"))
    assert "argument --policy: " in err and "p4g's agent_0 has 77 and 18" in err.strip().splitlines()[-1], err


def test_a_saved_cotrain_trainer_gives_its_user(tmp_path):
    """A saved trainer's user_0 network as a Simulator: its distribution is the network's masked softmax."""
    import numpy as np

    import scope_envs
    from scope_envs.bench.policies import load_user

    PPOTrainer(PPOConfig(env_id="p4g-cotrain", seed=0, total_steps=64, user_init="random")).save(tmp_path / "co")
    user = load_user(str(tmp_path / "co"), "p4g", "user_0")
    env = scope_envs.make("p4g-frozen", user=user)
    env.reset(seed=0)
    view = env.unwrapped.view(env.unwrapped.game.user_role, observation=True)
    p = user.distribution(view)
    assert p.shape == view.legal.shape and np.isclose(p.sum(), 1.0) and not p[~view.legal].any()


def test_a_learned_user_that_cannot_be_scored_is_refused(sb3_models, tmp_path, capsys, nothing_played,
                                                         monkeypatch):
    """A model of the other seat or game, a seat the game's ids lack, a policy of another kind, a trainer without
    the seat, an option a learned user does not read: one line, exit 2, before anything is played."""
    from scope_envs.bench import score as score_module

    monkeypatch.setattr(score_module, "measure_user", lambda *a, **k: pytest.fail("the user was diagnosed"))
    user_zip, agent_zip = sb3_models
    PPOTrainer(PPOConfig(env_id="p4g-frozen", seed=0, total_steps=64)).save(tmp_path / "frozen")
    out = ("--out", str(tmp_path / "o"))
    for argv, said in (
            (["--seat", "user_0", "--policy", str(agent_zip), "--game", "p4g"],
             "argument --policy: " + f"{agent_zip} reads observations of width 77 and has 18 acts; p4g's user_0 "
                                     "has 93 and 28 (the shape of agent_0: a model of that seat?)"),
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "tau2"],
             "tau2's user_0 has 60 and 14 (no seat of this game has it: a model of another game?)"),
            (["--policy", str(user_zip), "--game", "p4g"], "a learned user is scored with --seat user_N"),
            (["--seat", "user_9", "--policy", str(user_zip), "--game", "p4g"],
             "argument --seat: p4g's ids have the seats agent_0, user_0, user_1, user_2, user_3; 'user_9' is none"),
            (["--seat", "user_0", "--policy", "mine.py:make", "--game", "p4g"],
             "argument --policy: mine.py:make: a learned user is an SB3 .zip"),
            (["--seat", "user_0", "--policy", str(tmp_path / "frozen"), "--game", "p4g"],
             "was trained on p4g-frozen, whose learned seats are agent_0: it has no user_0"),
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", "--seeds", "3"],
             "argument --seeds: only with --surface act and --seat agent_0 (this is --seat user_0)"),
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", "--against", "none"],
             "a learned user is diagnosed, not placed in a band"),
            # given at their defaults they were taken, and ignored, without a word
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", "--against", "reference"],
             "a learned user is diagnosed, not placed in a band"),
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", "--seeds", "1"],
             "argument --seeds: only with --surface act and --seat agent_0 (this is --seat user_0)"),
            (["--seat", "user_0", "--policy", str(user_zip), "--game", "p4g", "--surface", "text"],
             "argument --seat: --surface text scores agent_0 only"),
            (["--policy", str(agent_zip), "--game", "p4g", "--bootstrap", "5"],
             "argument --bootstrap: only with a user seat (--seat user_0, ...)")):
        err = refused(capsys, *argv, *out)
        assert said in err.strip().splitlines()[-1], err  # the usage, then the one line that says why


def test_a_saved_trainer_whose_model_cannot_be_loaded_is_one_line(tmp_path, capsys, nothing_played):
    """A truncated model.pt (or another run's) in a saved trainer folder ended in a traceback from torch.load (a
    KeyError, a RuntimeError); as --policy, a learned user's --policy or --ceiling it is now one line, exit 2,
    before any episode."""
    saved = tmp_path / "saved"
    PPOTrainer(PPOConfig(env_id="p4g-cotrain", seed=0, total_steps=64, user_init="random")).save(saved)
    (saved / "model.pt").write_bytes((saved / "model.pt").read_bytes()[:300])
    for argv, argument in ((["--policy", str(saved), "--against", "none"], "--policy"),
                           (["--seat", "user_0", "--policy", str(saved)], "--policy"),
                           (["--surface", "text", "--policy", "floor", "--ceiling", str(saved), "--episodes", "1"],
                            "--ceiling")):
        err = refused(capsys, *argv, "--game", "p4g", "--out", str(tmp_path / "o"))
        assert f"argument {argument}: {saved}: cannot load the saved trainer" in err.strip().splitlines()[-1], err


def test_an_act_score_shows_its_progress_and_a_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    """An act score played its seats' protocol (minutes for a network and 12 seeds) without a word, and a score
    it could not write (a full disk) ended in a traceback after the whole run."""
    import errno

    from scope_envs import files

    factory = tmp_path / "mine.py"
    factory.write_text("def make():\n    return lambda obs, mask: mask.argmax(1)\n")
    argv = ("--policy", f"{factory}:make", "--game", "p4g", "--seeds", "2", "--episodes", "4", "--against", "none")
    score(*argv, "--out", str(tmp_path / "o"))
    err = capsys.readouterr().err
    assert "score p4g" in err and "2/2" in err, err

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(files, "write_atomic", full)
    with pytest.raises(SystemExit) as e:
        score(*argv, "--out", str(tmp_path / "full"))
    assert str(e.value.code).startswith("scope-envs score: error: cannot write score.json / score.md in ")
    assert "no space left on device" in str(e.value.code) and "Traceback" not in capsys.readouterr().err


def test_an_llm_panel_file_or_a_vllm_policy_is_refused_before_any_episode(tmp_path, capsys, nothing_played,
                                                                          monkeypatch):
    """--panel FILE was read only after every text row had played (the ceiling trained too), and vllm:DIR without
    vLLM was a traceback from the backend: both are now one line, exit 2, before any episode."""
    pytest.importorskip("transformers")
    import socket

    from llm_fixtures import tiny_model_dir

    from scope_envs.train.llm import commands

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again on exit: nothing listens there
    unreachable = tmp_path / "panel.json"
    unreachable.write_text(json.dumps({"simulators": [{"name": "api", "kind": "openai", "model": "m",
                                                       "base_url": f"http://127.0.0.1:{port}/v1"}]}))
    model = tiny_model_dir()
    monkeypatch.setattr(commands, "vllm_installed", lambda: False)
    for policy, panel, argument, why in (
            ("floor", str(unreachable), "--panel", "is unreachable"),
            ("floor", str(tmp_path / "nope.yaml"), "--panel", "no panel file"),
            (model, str(tmp_path / "nope.yaml"), "--panel", "no panel file"),
            (f"vllm:{model}", "builtin", "--policy", "needs vLLM")):
        err = refused(capsys, "--surface", "text", "--policy", policy, "--game", "p4g", "--panel", panel,
                      "--episodes", "1", "--out", str(tmp_path / "o"))
        assert f"argument {argument}: " in err.strip().splitlines()[-1] and why in err, err


def test_an_llm_policy_whose_backend_fails_mid_run_is_one_line(tmp_path, capsys, monkeypatch):
    """An endpoint that goes away mid-run (BackendError) was a traceback; eval-llm says it in one line, so does
    score."""
    pytest.importorskip("transformers")
    from llm_fixtures import tiny_model_dir

    from scope_envs.agents.llm.backends import BackendError
    from scope_envs.train.llm import panel

    class GoneBackend:
        def chat(self, conversations, **kwargs):
            raise BackendError("the endpoint stopped answering")

    monkeypatch.setattr(panel, "policy_backend", lambda spec: GoneBackend())
    with pytest.raises(SystemExit) as e:
        score("--surface", "text", "--policy", tiny_model_dir(), "--game", "p4g", "--episodes", "1",
              "--out", str(tmp_path / "o"))
    assert e.value.code == "scope-envs score: error: the endpoint stopped answering"
    assert "Traceback" not in capsys.readouterr().err


def test_recovered_is_read_only_where_the_ceiling_clears_frozen_as_claims_2a_2b_read_it():
    """On cooperbench's reference-sb3 the oracle was above frozen by 0.006, within noise: score printed
    "recovered -43.000". recovered now needs the 95% CI of oracle − frozen above 0, as the claims do."""
    from scope_envs.bench.score import band_position, markdown

    def seeds(values):
        return {"heldout_success": sum(values) / len(values),
                "per_seed": {i: {"heldout_success": v} for i, v in enumerate(values)}}

    def rows(oracle, frozen):
        return {"random": seeds([0.10, 0.11, 0.09]), "oracle": seeds(oracle), "frozen": seeds(frozen)}

    clear = band_position(0.30, rows([0.50, 0.52, 0.48], [0.20, 0.21, 0.19]))
    assert clear["recovered"] == pytest.approx((0.30 - 0.20) / (0.50 - 0.20))
    assert clear["normalized"] == pytest.approx((0.30 - 0.10) / (0.50 - 0.10))
    noise = band_position(0.10, rows([0.262, 0.30, 0.22], [0.26, 0.28, 0.224]))
    assert "recovered" not in noise and "oracle − frozen is +0.006, 95% CI [" in noise["recovered_not"]
    assert noise["normalized"] == pytest.approx(0.0, abs=1e-9)
    below = band_position(0.5, rows([0.3, 0.3, 0.3], [0.4, 0.4, 0.4]))
    assert "recovered" not in below and "oracle − frozen is -0.100" in below["recovered_not"]
    one_seed = band_position(0.5, rows([0.9], [0.4]))
    assert "fewer than 2 seeds" in one_seed["recovered_not"]
    # score's default --seeds 1 reads one seed of a reference that has more: said as the option to change
    read_one = band_position(0.5, rows([0.9], [0.4]), reference_seeds=12)
    assert "recovered" not in read_one and "the reference has 12; pass --seeds 2 to 12" in read_one["recovered_not"]
    page = markdown({"surface": "act", "policy": "p", "game": "cooperbench", "seeds": 3, "heldout_success": 0.1,
                     "panel_success": None, "rows": {}, **noise})
    assert "recovered (frozen → oracle): not judged, no gap to recover" in page
