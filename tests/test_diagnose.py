"""``scope-envs diagnose``: its known answers, its black-box route, its errors and its files."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from scope_envs.diagnose import DiagnoseError, SpecError, diagnose, names, resolve, write
from scope_envs.diagnose import measures
from llm_fixtures import ChatStandIn

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "p4g"
SMALL = dict(probe_episodes=8, episodes=400, bootstrap=40, persona_states=12, cards=4)
GAMES = ("p4g", "cooperbench", "tau2")


@pytest.fixture(scope="module")
def reports():
    """One small diagnosis per (game, built-in) that several tests read."""
    out = {}
    for game in GAMES:
        for spec in ("reference", "sharpened:3", "frozen"):
            out[game, spec] = diagnose(game, spec, **SMALL)
    return out


@pytest.mark.parametrize("game", GAMES)
def test_a_sharpened_reference_is_diagnosed_at_its_sharpening(reports, game):
    for spec, truth in (("sharpened:3", 3.0), ("reference", 1.0)):
        s = reports[game, spec]["sharpening"]
        assert reports[game, spec]["fit"] == "exact"
        assert s["value"] == pytest.approx(truth, abs=1e-3), (game, spec, s)
        assert s["ci"][0] <= truth + 1e-3 and s["ci"][1] >= truth - 1e-3
        assert s["kl_fitted"] == pytest.approx(0.0, abs=1e-6)
    assert reports[game, "sharpened:3"]["sharpening"]["explained"] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("game, truth", [("p4g", 3.0), ("p4g", 1.0), ("tau2", 3.0)])
def test_the_black_box_fit_finds_the_sharpening_from_sampled_answers(game, truth):
    r = diagnose(game, f"sharpened:{truth:g}", sampled=True, samples=8, **SMALL)
    s = r["sharpening"]
    assert r["fit"] == "sampled"
    assert s["ci"][0] <= truth <= s["ci"][1], s
    assert abs(s["value"] - truth) < 0.35 * truth, s
    if truth == 1.0:  # the reference itself, asked as a black box: no persona difference beyond noise
        # over seeds, not one interval: since the reference's replies move with the card (p4g's decision lean),
        # one small run's 40-replicate interval over 12 states excluded 0 in 2 of 6 seeds, centred on 0
        d = [r["persona_sensitivity"]["difference"]["value"]] + [
            diagnose(game, "sharpened:1", sampled=True, samples=8, seed=k, **SMALL)["persona_sensitivity"]
            ["difference"]["value"] for k in (1, 2, 3)]
        assert abs(np.mean(d)) < 2 * np.std(d, ddof=1) / np.sqrt(len(d)) + 1e-3, d


@pytest.mark.parametrize("game", GAMES)
def test_the_reference_covers_itself(reports, game):
    c = reports[game, "reference"]["coverage"]
    assert c["acts"]["value"] == 1.0 and c["acts"]["missing"] == []
    assert c["paths"]["value"] == 1.0 and c["paths"]["modes"]
    assert c["entropy_ratio"]["value"] == pytest.approx(1.0)
    assert c["path_entropy_ratio"]["value"] == pytest.approx(1.0)
    p = reports[game, "reference"]["persona_sensitivity"]
    assert p["difference"]["value"] == pytest.approx(0.0, abs=1e-12) and p["value"] > 0
    assert reports[game, "reference"]["cooperation"]["bias"]["value"] == pytest.approx(0.0)


@pytest.mark.parametrize("game", GAMES)
def test_the_collapsed_simulator_has_the_signs_it_was_built_with(reports, game):
    r = reports[game, "frozen"]
    assert r["cooperation"]["bias"]["value"] > 0 and r["cooperation"]["bias"]["ci"][0] > 0  # over-cooperative
    p = r["persona_sensitivity"]  # one modal card: the dealt card changes nothing
    assert p["value"] == pytest.approx(0.0, abs=1e-12)
    assert p["difference"]["ci"][1] < 0
    # sharpened: less varied than the reference, read on the reference sharpened alone (the frozen simulator's modal
    # card can be more varied than cooperbench's population, whose quiet and committed cards answer the same way)
    assert reports[game, "sharpened:3"]["coverage"]["entropy_ratio"]["value"] < 1


def test_a_sharpened_reference_on_a_fixed_card_is_found_against_its_own_card():
    from scope_envs.agents.p4g import ReferencePersuadee
    from scope_envs.games.p4g import personas

    r = diagnose("p4g", ReferencePersuadee(sharpening=3.0, persona=personas.persona("train", 5)), **SMALL)
    own, dealt = r["sharpening_own_card"], r["sharpening"]
    assert own["value"] == pytest.approx(3.0, abs=1e-3) and own["explained"] == pytest.approx(1.0, abs=1e-4)
    assert dealt["explained"] < 0.95  # against the dealt cards, the fixed card is a misfit sharpening cannot explain
    assert r["persona_sensitivity"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert diagnose("p4g", "reference", **SMALL)["sharpening_own_card"] is None


def test_a_cooperation_dial_alone_shows_as_cooperation_not_as_persona_loss():
    r = diagnose("p4g", "cooperative:1", **SMALL)
    assert r["cooperation"]["bias"]["ci"][0] > 0
    assert r["persona_sensitivity"]["value"] > 0.5 * r["persona_sensitivity"]["reference"]["value"]


def test_the_mle_is_the_root_of_a_concave_likelihood():
    rng = np.random.default_rng(0)
    ref = rng.dirichlet(np.ones(6), size=300)
    for s_true in (0.5, 2.0, 5.0):
        q = ref ** s_true
        q /= q.sum(1, keepdims=True)
        counts = np.array([rng.multinomial(50, p) for p in q], float)
        keep, logr, on, off = measures.prepare(ref, counts)
        assert off == 0.0
        s = measures.sharpening(logr, on, np.ones(len(on)))
        assert s == pytest.approx(s_true, rel=0.1)
        assert measures._score(s * 0.9, logr, on, np.ones(len(on))) > 0 > measures._score(s * 1.1, logr, on,
                                                                                             np.ones(len(on)))


def test_names_resolve_and_bad_specs_say_why(tmp_path):
    base = tmp_path / "base.py"  # the base class itself answers nothing: it was diagnosed to "NotImplementedError:"
    base.write_text("from scope_envs.core.simulator import Simulator\n")
    with pytest.raises(SpecError, match=r"Simulator implements none of distribution\(view\), act\(view, rng\)"):
        resolve("p4g", f"{base}:Simulator")
    for game in GAMES:
        for spec in names(game):
            sim, kind = resolve(game, spec)
            assert kind == "builtin" and sim is not None
    for bad, words in (("sharpened:0.5", "in [1"), ("panel:9", "0..5"), ("nope", "unknown simulator"),
                       ("missing.py:Sim", "no such file"), ("openai:http://127.0.0.1:9/v1", "BASE_URL#MODEL"),
                       ("hf:/nonexistent/model", "no model directory")):
        with pytest.raises(SpecError, match=words.replace("[", r"\[")):
            resolve("p4g", bad)


USER_FILE = '''
import numpy as np
from scope_envs.agents.p4g import ReferencePersuadee
from scope_envs.core.simulator import Simulator


class ActOnly(Simulator):
    """A black box: only act(), the reference sharpened by 3 underneath."""
    def __init__(self):
        self.inner = ReferencePersuadee(sharpening=3.0)

    def act(self, view, rng):
        return self.inner.act(view, rng)


class Flaky(ActOnly):
    calls = 0

    def act(self, view, rng):
        Flaky.calls += 1
        if Flaky.calls % 3 == 0:
            raise RuntimeError("flaky simulator")
        if Flaky.calls % 7 == 0:
            return 999  # not an act
        return super().act(view, rng)


class Broken(Simulator):
    def act(self, view, rng):
        raise RuntimeError("always broken")


class Uniform(Simulator):
    """Exact: uniform over the legal acts, whatever the card."""
    def distribution(self, view):
        legal = np.asarray(view.legal, float)
        return legal / legal.sum()


class SometimesRaises(Uniform):
    """Uniform, raising on every third question (the probe states' and the persona cards' alike)."""
    def __init__(self):
        self.n = 0

    def distribution(self, view):
        self.n += 1
        if self.n % 3 == 0:
            raise ValueError("every third call")
        return super().distribution(view)


class RaisesInEpisodes(Uniform):
    """Answers every probe state (distribution) but raises at its first turn of every episode (act)."""
    def act(self, view, rng):
        raise RuntimeError("no episode for me")


class RaisesOnProbeCards(Uniform):
    """Raises under any of the persona probe's cards: the persona probe has no usable answer at all."""
    def distribution(self, view):
        from scope_envs.diagnose.probes import train_cards

        if view.persona.id in {c.id for c in train_cards("p4g", 4, 0)}:
            raise ValueError("not under that card")
        return super().distribution(view)
'''


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sims") / "my_sims.py"
    path.write_text(USER_FILE)
    return path


def test_a_simulator_class_in_a_file_is_fitted_black_box(user_file):
    r = diagnose("p4g", f"{user_file}:ActOnly", samples=8, **SMALL)
    assert r["kind"] == "file" and r["fit"] == "sampled"
    assert r["sharpening"]["ci"][0] <= 3.0 <= r["sharpening"]["ci"][1]


def test_a_simulator_that_raises_is_counted_not_a_traceback(user_file):
    r = diagnose("p4g", f"{user_file}:Flaky", **SMALL)
    e = r["errors"]
    assert e["probe_errors"] > 0 and any("flaky simulator" in m for m in e["messages"])
    assert any("not legal" in m for m in e["messages"])
    assert e["episodes_raised"] > 0 and r["sharpening"]["value"] is not None
    with pytest.raises(DiagnoseError, match="no usable answer.*always broken"):
        diagnose("p4g", f"{user_file}:Broken", **SMALL)


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "scope_envs.cli", "diagnose", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_cli_writes_json_markdown_and_png(tmp_path):
    out = tmp_path / "d"
    p = cli("--game", "cooperbench", "--simulator", "frozen", "--out", str(out), "--probe-episodes", "5",
            "--episodes", "40", "--bootstrap", "20", "--no-progress")
    assert p.returncode == 0, p.stderr
    report = json.loads((out / "diagnose.json").read_text())
    assert report["game"] == "cooperbench" and report["sharpening"]["value"] is not None
    card = (out / "diagnose.md").read_text()
    assert "| sharpening (vs reference model) |" in card and "Command: `scope-envs diagnose" in card
    assert (out / "diagnose.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(f.name for f in out.iterdir()) == ["diagnose.json", "diagnose.md", "diagnose.png"]  # no temp


QUICK = ["--probe-episodes", "2", "--episodes", "2", "--bootstrap", "0", "--no-progress"]


@pytest.mark.parametrize("args, words", [
    (["--samples", "1001"], "--samples: expected an integer from 1 to 1_000"),
    (["--episodes", "0"], "--episodes: expected an integer from 1 to 100_000"),
    (["--seed", "99999999999999999999"], "--seed"),
    (["--bootstrap", "100001"], "--bootstrap"),
    (["--cards", "65"], "--cards"),
    (["--cards", "1"], "--cards: the persona probe needs at least 2 cards, or 0 for none"),
    (["--simulator", "sharpened:999"], "--simulator"),
    (["--data", "."], "--data: only p4g"),
    (["--timeout", "601"], "--timeout: expected seconds in (0, 600], got 601.0"),
    (["--connect-timeout", "0"], "--connect-timeout: expected seconds in (0, 600], got 0.0"),
    # either at 0 turns the persona probe off: the other, given, was ignored without a word
    (["--cards", "0", "--persona-states", "5", *QUICK], "argument --persona-states: not used with --cards 0"),
    (["--persona-states", "0", "--cards", "4", *QUICK], "argument --cards: not used with --persona-states 0"),
    # an LLM's options with a built-in simulator were accepted and ignored
    (["--max-new-tokens", "5", *QUICK], "argument --max-new-tokens: only for an LLM simulator"),
    (["--timeout", "5", *QUICK], "argument --timeout: only for an LLM simulator"),
])
def test_cli_bounds_every_count(tmp_path, args, words):
    base = ["--game", "cooperbench", "--out", str(tmp_path)]
    if "--simulator" not in args:
        base += ["--simulator", "frozen"]
    p = cli(*base, *args)
    assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_help_states_the_range_of_every_count_and_duration():
    """--timeout and --connect-timeout refused anything above 600 s and their help did not say so: every bounded
    option of diagnose (and of its table) says its maximum in its --help."""
    import argparse

    from scope_envs.diagnose.command import LIMITS, SECONDS_MAX, add_parser

    parser = add_parser(argparse.ArgumentParser().add_subparsers())
    checked = set()
    for action in parser._actions:
        if getattr(action.type, "maximum", None) is not None:
            said = (f"{action.type.maximum:_}", "2**32-1")
            assert action.help and any(s in action.help for s in said), (action.option_strings, action.help)
            checked.add(action.option_strings[0])
    assert {"--timeout", "--connect-timeout", "--seed", "--cards"} | {"--" + n.replace("_", "-") for n in LIMITS} \
        <= checked, checked
    for option in ("--timeout", "--connect-timeout"):
        text = next(a.help for a in parser._actions if option in a.option_strings)
        assert f"at most {SECONDS_MAX}" in text and "more than 0" in text, text
    p = cli("--help")
    assert p.returncode == 0 and "at most 600" in " ".join(p.stdout.split())
    helps = subprocess.run([sys.executable, "-m", "scope_envs.diagnose.table", "--help"], capture_output=True,
                           text=True, timeout=120, cwd=ROOT).stdout
    assert "0 to 100_000" in " ".join(helps.split()) and "2**32-1" in helps


@pytest.mark.parametrize("data, words", [("", "an empty folder name"), ("{tmp}", "has no full_info.csv")])
def test_the_tables_data_folder_is_checked_before_any_row(tmp_path, data, words):
    """``--data`` of a folder without the P4G files was a DataError traceback after minutes of rows; '' read the
    working folder."""
    p = subprocess.run([sys.executable, "-m", "scope_envs.diagnose.table", "--games", "p4g", "--data",
                        data.format(tmp=tmp_path), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2 and "argument --data: " in p.stderr and words in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and not (tmp_path / "out").exists()


def test_list_says_the_range_each_parametrised_name_takes():
    """--list showed family:0..2 while family:I takes 0..999: the list and docs/diagnose.md say the range."""
    from scope_envs.diagnose.specs import FAMILIES

    p = cli("--game", "p4g", "--list")
    assert p.returncode == 0 and "family:0" in p.stdout, p.stderr
    assert f"family:I       I from 0 to {FAMILIES - 1}" in p.stdout and "sharpened:S    S from 1 to 100" in p.stdout
    assert f"any `I` in 0..{FAMILIES - 1}" in (ROOT / "docs" / "diagnose.md").read_text()
    with pytest.raises(SpecError, match=f"0..{FAMILIES - 1}"):
        resolve("p4g", f"family:{FAMILIES}")


def test_cli_broken_simulator_is_one_line(tmp_path, user_file):
    p = cli("--game", "p4g", "--simulator", f"{user_file}:Broken", "--out", str(tmp_path), "--probe-episodes", "2",
            "--episodes", "3", "--bootstrap", "0", "--no-progress")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "always broken" in p.stderr


def test_an_llm_endpoint_is_diagnosed_on_the_text_surface_and_garbage_is_counted():
    server = ChatStandIn(["That sounds good, I will help. [DONATE $0.50]", "", "What does the charity do?",
                           "\x00\x01", "Sure. [DONATE $1.00] Goodbye!"])
    try:
        r = diagnose("p4g", f"openai:{server.url}#stand-in", probe_episodes=3, episodes=4, samples=1, cards=2,
                     persona_states=3, bootstrap=20)
    finally:
        server.close()
    assert r["surface"] == "text" and r["fit"] == "sampled" and r["kind"] == "llm"
    assert len(server.requests) > 20
    e = r["errors"]
    assert e["probe_errors"] > 0 and any("empty message" in m for m in e["messages"])
    assert r["sharpening"]["value"] is not None
    # three readable messages in turn: an LLM that says the same few things is diagnosed as collapsed
    assert r["coverage"]["acts"]["value"] <= 0.2 and r["coverage"]["entropy_ratio"]["value"] < 0.6


def test_an_unreachable_endpoint_is_a_clear_cli_error(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    p = cli("--game", "p4g", "--simulator", f"openai:http://127.0.0.1:{port}/v1#m", "--out", str(tmp_path),
            "--connect-timeout", "2")
    assert p.returncode == 2 and "unreachable" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/p4g (the real P4G data)")
def test_p4g_against_the_real_persuadees():
    ref = diagnose("p4g", "reference", data=DATA, real_dialogues=80, **SMALL)
    frozen = diagnose("p4g", "frozen", data=DATA, real_dialogues=80, **SMALL)
    real_ref, real_frozen = ref["real"], frozen["real"]
    assert real_ref["states"] > 500
    # the reference model is the real response table tilted by willingness: close to sharpening 1 against it
    assert 0.8 < real_ref["sharpening"]["value"] < 1.2
    assert real_frozen["sharpening"]["value"] > real_ref["sharpening"]["value"] + 0.5
    ll = real_ref["log_likelihood"]
    assert ll["value"] == pytest.approx(ll["reference_model"]["value"])
    assert real_frozen["log_likelihood"]["value"] < ll["value"]  # SCOPE's check: the collapsed fits people worse
    assert real_frozen["cooperation"]["bias"]["value"] > real_ref["cooperation"]["bias"]["value"]


def test_the_table_rows_carry_the_numbers(reports):
    from scope_envs.diagnose.table import HEADER, line

    row = line(reports["tau2", "frozen"])
    assert row.count("|") == HEADER.count("|") and "`frozen`" in row
    assert f"{reports['tau2', 'frozen']['sharpening_own_card']['value']:.2f}" in row


def test_write_refuses_a_file_in_the_way(tmp_path, reports):
    from scope_envs.files import OutputError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError):
        write(reports["p4g", "frozen"], blocker)


def test_the_docs_code_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "diagnose.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in text.split("```python")[1:]]
    assert blocks
    for block in blocks:
        exec(compile(textwrap.dedent(block.split("```")[0]), "docs/diagnose.md", "exec"), {})


def test_a_local_model_directory_plays_the_text_surface():
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    import torch
    from llm_fixtures import tiny_model_dir

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        r = diagnose("p4g", f"hf:{tiny_model_dir()}", probe_episodes=2, episodes=2, samples=1, cards=2,
                     persona_states=2, bootstrap=10, llm_options={"max_new_tokens": 8})
    finally:
        torch.set_num_threads(threads)
    assert r["kind"] == "llm" and r["surface"] == "text" and r["fit"] == "sampled"
    e = r["errors"]
    assert e["asked"] >= r["design"]["probe_states"] and e["episodes_raised"] == 0  # random text: read or counted


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/p4g (the real P4G data)")
def test_an_llm_is_scored_on_the_real_histories():
    server = ChatStandIn(["That sounds good, I will help. [DONATE $0.50]", "What does the charity do?"])
    try:
        r = diagnose("p4g", f"openai:{server.url}#stand-in", probe_episodes=2, episodes=2, samples=1, cards=2,
                     persona_states=2, bootstrap=20, data=DATA, real_dialogues=5)
    finally:
        server.close()
    real = r["real"]
    assert real["dialogues"] == 5 and real["states"] > 20 and real["errors"] == 0
    ll = real["log_likelihood"]
    assert ll["estimator"].startswith("sampled") and ll["value"] < real["log_likelihood"]["reference_model"]["value"]
    assert real["cooperation"]["rate"]["value"] < real["cooperation"]["real_rate"]["value"]  # it never agrees


def test_an_endpoint_that_stops_answering_is_one_error():
    server = ChatStandIn(["What does the charity do?"])
    try:
        import scope_envs.diagnose.specs as specs_module

        sim, _ = specs_module.resolve("p4g", f"openai:{server.url}#stand-in")
        sim.backend.backoff, sim.backend.timeout = 0.01, 2
        server.close()  # gone after the reachability check
        with pytest.raises(DiagnoseError, match="stopped answering.*could not reach"):
            diagnose("p4g", sim, probe_episodes=2, episodes=2, samples=1, cards=2, persona_states=2, bootstrap=0)
    finally:
        try:
            server.server.server_close()
        except OSError:
            pass


TINY = dict(probe_episodes=4, episodes=20, bootstrap=20, persona_states=4)


def test_failed_persona_cards_are_dropped_not_read_as_spread(user_file):
    """A uniform simulator that raised on some cards showed persona sensitivity 0.222 (the failed cards' zero rows
    entered the TV spread) where the plain uniform one shows 0: failed cards are dropped, and counted."""
    from scope_envs.diagnose.report import rows

    flaky = diagnose("p4g", f"{user_file}:SometimesRaises", **TINY)
    plain = diagnose("p4g", f"{user_file}:Uniform", **TINY)
    p, q = flaky["persona_sensitivity"], plain["persona_sensitivity"]
    assert q["value"] == pytest.approx(0.0, abs=1e-12)
    assert p["value"] == pytest.approx(0.0, abs=1e-12), p  # it was 0.222
    assert q["dropped_cards"] == 0 and q["dropped_states"] == 0
    assert p["dropped_cards"] > 0 and p["states"] + p["dropped_states"] == flaky["design"]["persona_states"]
    assert p["reference"]["value"] > 0  # the reference's spread, on the same cards, is still there
    reading = dict((a, c) for a, _, c in rows(flaky))["persona sensitivity"]
    assert f"{p['dropped_cards']} failed cards dropped" in reading
    assert "dropped" not in dict((a, c) for a, _, c in rows(plain))["persona sensitivity"]


def test_a_persona_probe_of_errors_only_is_na_not_zero(user_file, tmp_path):
    r = diagnose("p4g", f"{user_file}:RaisesOnProbeCards", cards=4, **TINY)
    p = r["persona_sensitivity"]
    assert p["value"] is None and p["difference"]["value"] is None and p["ratio"] is None, p
    assert p["states"] == 0 and p["dropped_states"] == r["design"]["persona_states"] > 0
    write(r, tmp_path)
    assert json.loads((tmp_path / "diagnose.json").read_text())["persona_sensitivity"]["value"] is None
    assert "| persona sensitivity | n/a |" in (tmp_path / "diagnose.md").read_text()


def test_no_usable_episode_stops_even_when_the_probes_answered(user_file, tmp_path):
    """The stop applies to the episodes on their own: answering the probes does not make 0.00 path numbers."""
    with pytest.raises(DiagnoseError, match=r"no usable answer in any of its 20 episodes.*no episode for me"):
        diagnose("p4g", f"{user_file}:RaisesInEpisodes", **TINY)
    p = cli("--game", "p4g", "--simulator", f"{user_file}:RaisesInEpisodes", "--out", str(tmp_path / "d"),
            "--probe-episodes", "2", "--episodes", "3", "--bootstrap", "0", "--no-progress")
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stderr.strip().count("\n") == 0, p.stderr
    assert "no episode for me" in p.stderr and not (tmp_path / "d" / "diagnose.json").exists()


def test_an_llm_that_only_sends_empty_messages_stops_at_the_probes():
    """It got exit 0 and coverage 0.00, entropy ratio 0.00, persona 0.000: now one error, before any episode."""
    server = ChatStandIn([""])
    try:
        with pytest.raises(DiagnoseError, match="no usable answer at any of the .* probe states.*empty message"):
            diagnose("p4g", f"openai:{server.url}#stand-in", probe_episodes=2, episodes=3, samples=1, cards=2,
                     persona_states=2, bootstrap=0)
        asked = len(server.requests)
    finally:
        server.close()
    assert 0 < asked < 200  # the probe states only: no episode was played


def _p4g_files(folder, dialog_rows=()):
    from scope_envs.games.p4g.fit import COLUMNS

    folder.mkdir()
    for name, columns in COLUMNS.items():
        lines = [",".join(columns)] + (list(dialog_rows) if name == "300_dialog.csv" else [])
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("kind", ["no dialogue", "cut mid-row", "real cut to 3 KB"])
def test_truncated_data_is_an_argparse_error_not_a_traceback(tmp_path, kind):
    """diagnose --data ended in an IndexError or int(None) traceback on truncated csv files; it now reads them
    before playing, under validate's check (scope_envs.validate.p4g.data_errors): exit 2 naming --data."""
    folder = tmp_path / "p4g"
    if kind == "no dialogue":
        _p4g_files(folder)
    elif kind == "cut mid-row":
        _p4g_files(folder, ["d1,0,0,greeting,", "d1,1"])
    else:
        if not DATA.is_dir():
            pytest.skip("needs ../shared/data/p4g (the real P4G data)")
        folder.mkdir()
        for f in DATA.glob("*.csv"):
            (folder / f.name).write_bytes(f.read_bytes()[:3000])
    with pytest.raises(ValueError, match="P4G csv files") as raised:  # not an IndexError or a TypeError
        diagnose("p4g", "frozen", data=folder, **TINY)
    from scope_envs.diagnose import DataError

    assert isinstance(raised.value, DataError)
    p = cli("--game", "p4g", "--simulator", "frozen", "--data", str(folder), "--out", str(tmp_path / "d"),
            "--probe-episodes", "2", "--episodes", "3", "--bootstrap", "0", "--no-progress")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "error: argument --data: the P4G csv files in" in p.stderr and "truncated" in p.stderr


def test_one_card_is_refused_zero_and_the_bound_are_kept():
    """--cards 1 silently dropped the persona probe; from Python too, cards=1 is refused."""
    import argparse

    with pytest.raises(ValueError, match="at least 2 cards"):
        diagnose("p4g", "frozen", cards=1, **TINY)
    from scope_envs.diagnose.command import cards

    assert cards("0") == 0 and cards("2") == 2 and cards("64") == 64
    for bad in ("1", "65", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            cards(bad)


@pytest.mark.parametrize("bad", [{"bootstrap": -1}, {"episodes": 0}, {"probe_episodes": 0}, {"samples": 1001},
                                 {"real_dialogues": 0}, {"seed": -1}, {"episodes": 2.5}])
def test_the_python_call_takes_the_command_lines_ranges(bad):
    """bootstrap=-1 came back with every CI None; episodes=0 blamed the simulator ("no usable answer in any of its
    0 episodes"); each is the command line's range now, refused before anything is played."""
    (name, value), = bad.items()
    with pytest.raises(ValueError, match=f"^{name} must be"):
        diagnose("p4g", "frozen", **{**TINY, **bad})


def test_the_card_shows_no_negative_zero():
    from scope_envs.diagnose.report import fmt

    assert fmt({"value": -0.0, "ci": [0.0, -0.0]}, 2) == "0.00 [0.00, 0.00]"  # it printed "-0.00 [0.00, -0.00]"
    assert fmt({"value": -0.001, "ci": [-0.004, 0.002]}, 2) == "0.00 [0.00, 0.00]"
    assert fmt({"value": -0.5, "ci": None}, 2) == "-0.50"
    from scope_envs.diagnose.report import number

    assert number(None) == "n/a" and number(-0.0001, 3) == "0.000"


def test_the_card_and_the_table_show_no_negative_zero_explained():
    """`explained` (1 - KL to the fit / KL to the reference) was printed with :.2f, so a fit a hair worse than
    s = 1 (sampled answers) showed "explained -0.00" on the card, which docs/diagnose.md says never happens."""
    from scope_envs.diagnose.report import clean, markdown
    from scope_envs.diagnose.table import line

    r = clean(diagnose("p4g", "frozen", probe_episodes=2, episodes=3, bootstrap=0, cards=0, persona_states=0))
    r["sharpening"]["explained"] = r["sharpening_own_card"]["explained"] = -0.001
    assert "explained 0.00" in markdown(r) and "-0.00" not in markdown(r)
    assert "-0.00" not in line(r)


def test_the_sharpened_references_cooperation_bias_is_documented_as_a_confound():
    """sharpened:S has no cooperation dial, yet its modal replies concede: the docs' known answers say so."""
    r = diagnose("p4g", "sharpened:3", probe_episodes=2, episodes=200, bootstrap=0, cards=0)
    assert r["cooperation"]["bias"]["value"] > 0
    text = (ROOT / "docs" / "diagnose.md").read_text()
    known = text.split("## Known answers")[1].split("\n## ")[0]
    assert "`sharpened:S` has no cooperation bias built in, yet shows a positive one" in known
    assert "confound of the measure" in known and "not a bug" in known


def test_a_persona_probe_that_found_no_state_is_na_not_left_out(tmp_path):
    """With one probe episode the persona probe (from the second episode on) asks nothing: the number was left out
    of the card and the printed table as if --cards 0 had been given; it is now n/a, with the reason."""
    from scope_envs.diagnose.report import clean, rows

    r = diagnose("p4g", "frozen", probe_episodes=1, episodes=3, bootstrap=0, persona_states=5, cards=2)
    p = r["persona_sensitivity"]
    assert p is not None and p["value"] is None and p["states"] == 0 and p["difference"]["value"] is None
    row = next(x for x in rows(clean(r)) if x[0] == "persona sensitivity")
    assert row[1] == "n/a" and "--probe-episodes 2 or more" in row[2]
    write(r, tmp_path)  # the figure draws an n/a bar
    assert diagnose("p4g", "frozen", probe_episodes=1, episodes=3, bootstrap=0, cards=0)["persona_sensitivity"] \
        is None  # no persona probe asked: no row
