"""The human-study kit without a browser: assignment, the chat and its persistence, security, exports, analysis."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient

from scope_envs.study import build
from scope_envs.study.app import create_app
from scope_envs.study.config import ConfigError, load, parse
from scope_envs.study.engine import condition_for_slot
from scope_envs.study.store import Store
from tests.study_fixtures import save_policies, write_study


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    return save_policies(tmp_path_factory.mktemp("policies"))


@pytest.fixture
def study_dir(tmp_path, policies):
    return write_study(tmp_path / "study", policies)


def client_for(folder):
    study = build(load(folder))
    return study, TestClient(create_app(study))


def start(client, pid="p1"):
    r = client.get(f"/?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x1")
    assert r.url.path == "/consent"
    client.post("/consent", data={"agree": "yes"})
    return client.post("/role")


def send(client, text, page):
    data = {"text": text}
    if 'name="amount"' in page.text:
        data["amount"] = "0.50"
    return client.post("/chat", data=data)


def chat_to_end(client, page, limit=20):
    for _ in range(limit):
        if page.url.path != "/chat":
            return page
        page = send(client, "Tell me more about the charity.", page)
    raise AssertionError("the chat did not end")


def bubbles(html):
    return re.findall(r'<div class="msg (agent|user)[^"]*">(.*?)</div>', html, re.DOTALL)


def test_blocked_randomisation_balances_every_block(tmp_path, policies):
    cfg = parse({"game": "p4g", "block_repeats": 2, "conditions": [
        {"name": n, "policy": {"path": p}} for n, p in [("a", policies["base"]), ("b", policies["trained"]),
                                                        ("c", policies["base"])]]}, tmp_path)
    slots = [condition_for_slot(cfg, s) for s in range(60)]
    blocks = [slots[i:i + 6] for i in range(0, 60, 6)]
    for block in blocks:
        assert sorted(block) == ["a", "a", "b", "b", "c", "c"]
    assert len({tuple(b) for b in blocks}) > 1  # the order within a block is drawn, not fixed


def test_a_session_from_arrival_to_completion_code(study_dir):
    study, client = client_for(study_dir)
    page = start(client)
    assert page.url.path == "/chat" and bubbles(page.text)[0][0] == "agent"  # the agent speaks first
    page = chat_to_end(client, page)
    assert page.url.path == "/survey"
    done = client.post("/survey", data={"donation": "0.75", "naturalness": "5", "satisfaction": "6",
                                        "talk_again": "2"})
    assert done.url.path == "/done" and "TESTCODE" in done.text
    row = study.store.session_by_pid("p1")
    msgs = study.store.messages(row.id)
    assert [m.seq for m in msgs] == list(range(len(msgs)))
    assert [m.role for m in msgs] == ["agent", "user"] * (len(msgs) // 2)
    assert row.stage == "complete" and row.chat_end == "terminated"
    assert json.loads(row.outcome)["intended"] == 0.5  # the amount chosen in the last message
    assert study.store.answers()[row.id] == {"donation": 0.75, "naturalness": 5, "satisfaction": 6, "talk_again": 2}
    assert client.get("/chat").url.path == "/done"  # a finished session cannot go back to the chat


def test_transcripts_export_in_record_transcripts_format(study_dir, tmp_path):
    from scope_envs.wrappers import RecordTranscripts

    import scope_envs

    path = tmp_path / "t.jsonl"
    env = RecordTranscripts(scope_envs.make("p4g-frozen"), path)
    obs, _ = env.reset(seed=0)
    while env.agents:
        obs, *_ = env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[-1])})
    recorded = json.loads(path.read_text().splitlines()[0])

    _study, client = client_for(study_dir)
    chat_to_end(client, start(client))
    r = client.get("/admin/export.jsonl", headers={"X-Admin-Token": "admin-token-for-tests"})
    exported = json.loads(r.text.splitlines()[0])
    assert set(recorded) <= set(exported)
    assert set(recorded["turns"][0]) == set(exported["turns"][0])
    assert [t["role"] for t in exported["turns"][:2]] == ["persuader", "persuadee"]
    assert exported["finished"] and exported["outcome"]["intended"] == 0.5


def test_a_second_browser_cannot_see_or_write_the_session(study_dir):
    study, client = client_for(study_dir)
    start(client)
    other = TestClient(client.app)
    assert other.get("/chat").url.path == "/"  # no cookie: no session to show
    assert "Conversation" not in other.get("/chat").text
    assert other.get("/?PROLIFIC_PID=p1").status_code == 409  # the same id from elsewhere is refused
    other.cookies.set("scope_study", "forged-secret")
    before = len(study.store.messages(study.store.session_by_pid("p1").id))
    assert other.post("/chat", data={"text": "hello"}).url.path == "/"
    assert len(study.store.messages(study.store.session_by_pid("p1").id)) == before


def test_a_reload_resumes_and_a_restart_loses_no_turn(study_dir):
    study, client = client_for(study_dir)
    page = send(client, "Why this charity?", start(client))
    shown = bubbles(page.text)
    assert bubbles(client.get("/chat").text) == shown  # a reload shows the same conversation
    sid = study.store.session_by_pid("p1").id
    # the server stops after committing the person's next message, before the reply
    n = len(study.store.messages(sid))
    study.store.add_message(sid, n, "user", "And how is the money used?")
    restarted, client2 = client_for(study_dir)  # a new process: nothing in memory
    client2.cookies.update(client.cookies)
    page = client2.get("/chat")
    msgs = restarted.store.messages(sid)
    assert [m.text for m in msgs[:n + 1]][-1] == "And how is the money used?"
    assert len(msgs) == n + 2 and msgs[-1].role == "agent"  # the owed reply, once
    assert len(restarted.store.messages(sid)) == len(bubbles(client2.get("/chat").text)) == n + 2
    assert chat_to_end(client2, page).url.path == "/survey"


def test_replies_are_the_same_when_generated_again(study_dir, tmp_path, policies):
    """A reply regenerated after a restart is the reply the first server would have given."""
    texts = []
    for k in range(2):
        folder = write_study(tmp_path / f"s{k}", policies)
        study, client = client_for(folder)
        page = chat_to_end(client, start(client))
        assert page.url.path == "/survey"
        texts.append([m.text for m in study.store.messages(study.store.session_by_pid("p1").id)])
    assert texts[0] == texts[1]


def test_typed_script_is_shown_as_text(study_dir):
    _, client = client_for(study_dir)
    page = send(client, "<script>window.pwned=1</script><b>bold</b>", start(client))
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page.text
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert "<script>window.pwned" not in page.text and "<b>bold</b>" not in page.text


def test_length_cap_and_rate_limit(tmp_path, policies):
    folder = write_study(tmp_path / "study", policies, max_message_chars=40, rate_limit=2, max_turns=8)
    study, client = client_for(folder)
    page = start(client)
    sid = study.store.session_by_pid("p1").id
    too_long = client.post("/chat", data={"text": "x" * 41})
    assert too_long.status_code == 400 and "under 40 characters" in too_long.text
    assert all(m.role == "agent" for m in study.store.messages(sid))
    send(client, "first", page)
    send(client, "second", page)
    third = client.post("/chat", data={"text": "third"})
    assert third.status_code == 429 and "quickly" in third.text
    assert [m.text for m in study.store.messages(sid) if m.role == "user"] == ["first", "second"]


def test_admin_pages_need_the_token(study_dir):
    _, client = client_for(study_dir)
    chat_to_end(client, start(client))
    assert client.get("/admin").status_code == 403
    assert client.get("/admin?token=wrong").status_code == 403
    assert client.get("/admin/export.csv").status_code == 403
    page = client.get("/admin?token=admin-token-for-tests")
    assert page.status_code == 200 and "<td>base</td>" in page.text or "<td>trained</td>" in page.text
    rows = client.get("/admin/export.csv?token=admin-token-for-tests").text.splitlines()
    assert rows[0].startswith("slot,prolific_pid") and len(rows) == 2 and ",p1," in rows[1]


def test_a_completion_code_with_url_characters_is_encoded_in_the_prolific_link(tmp_path, policies):
    """A completion code holding ``& # ? +`` or a space went into completion_url as written, so the Prolific link
    cut the code short (or added a parameter); it is percent-encoded there, and shown on the page as written."""
    import html

    code = "A&B #1?x=y+z"
    study, client = client_for(write_study(tmp_path / "study", policies, completion_code=code))
    client.get("/?PROLIFIC_PID=p1")
    study.store.update_session(study.store.session_by_pid("p1").id, stage="complete")
    page = client.get("/done")
    href = html.unescape(re.search(r'<a class="button" href="([^"]*)"', page.text).group(1))
    assert href == "https://app.prolific.com/submissions/complete?cc=A%26B%20%231%3Fx%3Dy%2Bz", href
    assert f'<p class="code" id="code">{html.escape(code)}</p>' in page.text


def test_analyze_on_a_folder_never_served_refuses_and_creates_no_database(tmp_path, policies, capsys):
    """``study analyze`` on a study folder whose study was never served made an empty study.db there (and reported
    no session); it is one line saying there is no database yet, and the folder is left as it was."""
    from scope_envs.cli import main

    folder = write_study(tmp_path / "study", policies)
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(SystemExit) as e:
        main(["study", "analyze", str(folder), "--proxy-episodes", "0"])
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]  # argparse's usage, then the error in one line
    assert e.value.code == 2 and "error: argument study_dir: no database yet:" in line, err
    assert "serve the study first" in line and "Traceback" not in err
    assert sorted(p.name for p in folder.iterdir()) == before  # no study.db, no report


@pytest.mark.parametrize("kind", ["empty file", "another database", "a table dropped"])
def test_analyze_refuses_a_database_that_is_not_a_studys_and_writes_nothing_to_it(tmp_path, policies, capsys, kind):
    """``study analyze`` made the study's tables in whatever database it was given (an empty file, another
    program's database, a study database missing a table) and reported a study without sessions; it now says the
    database is not a study's, in one line, and leaves the file's bytes as they were."""
    import sqlite3

    from scope_envs.cli import main

    folder = write_study(tmp_path / "study", policies)
    db = folder / "study.db"
    if kind == "empty file":
        db.write_bytes(b"")
    elif kind == "another database":
        with sqlite3.connect(db) as c:
            c.execute("create table foo(x)")
    else:
        build(load(folder)).store.engine.dispose()
        with sqlite3.connect(db) as c:
            c.execute("drop table messages")
    before = db.read_bytes()
    with pytest.raises(SystemExit) as e:
        main(["study", "analyze", str(folder), "--proxy-episodes", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "is not a study's database" in err.strip().splitlines()[-1], err
    assert "Traceback" not in err and db.read_bytes() == before and not (folder / "report.md").exists()


def one_completed_session(tmp_path, policies):
    """A study folder whose baseline condition has one completed session: (folder, its Study, the session's id)."""
    folder = write_study(tmp_path / "study", policies, baseline="base")
    study = build(load(folder))
    sid = study.store.create_session(slot=0, prolific_pid="one", secret_hash="one", condition="base", seed=0,
                                     stage="survey", outcome=json.dumps({"intended": 2.0, "actual": 2.0,
                                                                         "stated": 1.0, "persuader_turns": 3.0}))
    study.finish(sid, {"donation": 1.0, "naturalness": 4, "satisfaction": 4, "talk_again": 4})
    return folder, study, sid


def test_analyze_names_a_stored_value_that_is_not_a_number(tmp_path, policies, capsys):
    """A survey answer that is not a number (written into the database by something other than the server) was
    a traceback from float(); it is one line naming the session and the item."""
    import sqlite3

    from scope_envs.cli import main

    folder, study, sid = one_completed_session(tmp_path, policies)
    study.store.engine.dispose()
    with sqlite3.connect(folder / "study.db") as c:
        c.execute("update answers set value = '<script>' where item = 'naturalness'")
    with pytest.raises(SystemExit) as e:
        main(["study", "analyze", str(folder), "--proxy-episodes", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err, err
    assert f"session {sid}'s naturalness is '<script>', not a number" in err.strip().splitlines()[-1], err


def test_errors_show_no_stack_trace(study_dir):
    study, client = client_for(study_dir)
    start(client)

    def broken(*_):
        raise RuntimeError("internal detail 1234")

    study.say = broken
    r = TestClient(client.app, raise_server_exceptions=False, cookies=client.cookies).post("/chat",
                                                                                        data={"text": "hi"})
    assert r.status_code == 500 and "Something went wrong" in r.text
    assert "Traceback" not in r.text and "internal detail" not in r.text and "RuntimeError" not in r.text


def test_full_study_declined_and_left_sessions(tmp_path, policies):
    """A slot is held from consent on: declining takes none, a session found idle frees its own, and the next
    person who consents takes the freed slot (its condition: the blocks stay balanced)."""
    folder = write_study(tmp_path / "study", policies, per_condition=1)
    study, client = client_for(folder)
    start(client, "p1")
    c2 = TestClient(client.app)
    c2.get("/?PROLIFIC_PID=p2")
    assert c2.post("/consent", data={"agree": "no"}).url.path == "/declined"
    c3 = TestClient(client.app)
    start(c3, "p3")  # the declined p2 took no slot: p3 gets the second
    assert TestClient(client.app).get("/?PROLIFIC_PID=p4").status_code == 410  # both slots are held
    p1 = study.store.session_by_pid("p1")
    study.cfg.abandon_after_s = 0.001  # p1 and p3 now idle past abandon_after_s mid-chat
    progress = study.progress()
    assert sum(t["left"] for t in progress.values()) == 2 and sum(t["declined"] for t in progress.values()) == 1
    rows = {r["prolific_pid"]: r for r in study.rows()}
    assert rows["p1"]["left"] and rows["p1"]["stage"] == "chat" and not rows["p2"]["left"]
    study.cfg.abandon_after_s = 1800.0
    c5 = TestClient(client.app)
    start(c5, "p5")
    p5 = study.store.session_by_pid("p5")
    assert p5.slot == p1.slot == 0 and p5.condition == p1.condition  # the lowest freed slot, its condition


def fill(study, condition, donations, likert, t0=0):
    for i, (d, lk) in enumerate(zip(donations, likert)):
        sid = study.store.create_session(slot=t0 + i, prolific_pid=f"{condition}{i}", secret_hash=f"{condition}{i}",
                                         condition=condition, seed=i, stage="survey",
                                         outcome=json.dumps({"intended": d, "actual": d}))
        study.finish(sid, {"donation": d, "naturalness": lk, "satisfaction": lk, "talk_again": lk})


def test_analysis_matches_a_hand_computation(tmp_path, policies):
    from scipy import stats

    from scope_envs.bench.stats import holm
    from scope_envs.study.analyze import analyze

    folder = write_study(tmp_path / "study", policies, baseline="base")
    study = build(load(folder))
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 0.6, 30).round(2)
    high = rng.uniform(1.0, 2.0, 30).round(2)
    fill(study, "base", base, rng.integers(1, 8, 30))
    fill(study, "trained", high, rng.integers(1, 8, 30), t0=100)
    text = analyze(load(folder), proxy_episodes=0, resamples=500)
    result = json.loads((folder / "analysis.json").read_text())
    assert result["cells"]["trained"]["donation"]["mean"] == pytest.approx(high.mean())
    lo, hi = result["cells"]["trained"]["donation"]["ci"]
    assert lo < high.mean() < hi
    tests = result["tests"]
    assert len(tests) == 5 and result["family_size"] == 5
    donation = next(t for t in tests if t["measure"] == "donation")
    assert donation["p"] == pytest.approx(stats.ttest_ind(high, base, equal_var=False).pvalue)
    assert [t["p_holm"] for t in tests] == pytest.approx(holm([t["p"] for t in tests]))
    assert donation["d"] == pytest.approx((high.mean() - base.mean()) / np.sqrt((high.var(ddof=1) + base.var(ddof=1)) / 2))
    row = next(line for line in text.splitlines() if line.startswith("| trained |"))
    assert row.split("|")[2].strip().endswith("*")  # the large donation difference survives Holm
    assert (folder / "study_donation.png").stat().st_size > 1000


def test_a_policy_of_another_game_is_refused_with_its_reason(tmp_path, tau2_policies, capsys, monkeypatch):
    """The refusal comes after the database is opened; a refused start leaves no admin token and no database (the
    admin token is generated once the study can start)."""
    from scope_envs.cli import main
    from scope_envs.study.config import TOKEN_ENV

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    folder = write_study(tmp_path / "study", tau2_policies, admin_token=None)  # tau2 agents in a p4g study
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(SystemExit) as e:
        main(["study", "serve", "--config", str(folder), "--port", "0"])
    assert e.value.code == 2 and "argument --config: the policy reads 48 features" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_port_in_use_or_a_demo_option_with_config_is_refused(tmp_path, policies, capsys, monkeypatch):
    import socket

    import uvicorn

    from scope_envs.cli import main

    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: pytest.fail("the server started"))
    folder = write_study(tmp_path / "study", policies)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as e:
            main(["study", "serve", "--config", str(folder), "--port", str(port)])
        captured = capsys.readouterr()
        assert e.value.code == 2 and f"argument --port: 127.0.0.1:{port} is in use" in captured.err
        assert "admin" not in captured.out  # nothing printed as if it served
        with pytest.raises(SystemExit) as e:  # refused before the demo's folder is written
            main(["study", "serve", "--demo", "--dir", str(tmp_path / "demo"), "--port", str(port)])
    assert e.value.code == 2 and "is in use" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()
    for argv, argument in ((["--demo-steps", "10"], "--demo-steps"), (["--dir", str(tmp_path / "d")], "--dir")):
        with pytest.raises(SystemExit) as e:
            main(["study", "serve", "--config", str(folder), *argv])
        err = capsys.readouterr().err
        assert e.value.code == 2 and f"argument {argument}: only with --demo" in err and "Traceback" not in err


def test_config_and_cli_errors(tmp_path, policies, capsys):
    from scope_envs.cli import main

    with pytest.raises(ConfigError, match="unknown field"):
        parse({"game": "p4g", "colour": 1}, tmp_path)
    with pytest.raises(ConfigError, match="game must be one of"):
        parse({"game": "chess"}, tmp_path)
    with pytest.raises(ConfigError, match="method must be one of"):
        parse({"game": "p4g", "conditions": [{"name": "a", "policy": {"method": "random"}}]}, tmp_path)
    with pytest.raises(ConfigError, match="one of path, train or method"):
        parse({"game": "p4g", "conditions": [{"name": "a", "policy": {"method": "frozen", "train": "p4g-vs"}}]},
              tmp_path)
    folder = write_study(tmp_path / "study", policies, per_condition=0)
    for argv, wanted in [(["study", "serve"], "one of the arguments --config --demo"),
                         (["study", "serve", "--config", str(folder)], "argument --config: per_condition"),
                         (["study", "serve", "--demo", "--port", "70000"], "argument --port"),
                         (["study", "analyze", str(tmp_path / "nowhere")], "argument study_dir: no such directory"),
                         (["study", "analyze", str(folder / "study.yaml")], "is a file, not a study folder"),
                         (["study", "analyze", ""], "argument study_dir: no such directory: ''"),  # was the cwd
                         (["study", "analyze", str(write_study(tmp_path / "ok", policies)), "--baseline", ""],
                          "argument --baseline: an empty value")]:  # was the config's baseline
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and wanted in capsys.readouterr().err


def test_every_bounded_option_states_its_bound_in_its_help():
    """A count is refused past its maximum (a typo of many digits fails at once): its help says that maximum,
    for every such option of ``study serve`` and ``study analyze``."""
    import argparse

    from scope_envs.study import add_arguments, port_number

    sub = argparse.ArgumentParser().add_subparsers()
    add_arguments(sub)
    commands = next(a for a in sub.choices["study"]._actions if isinstance(a, argparse._SubParsersAction))
    bounded = []
    for name, parser in commands.choices.items():
        for action in parser._actions:
            if getattr(action.type, "maximum", None) is not None:  # arguments.count
                said = (f"{action.type.maximum:_}", f"{action.type.maximum:,}", str(action.type.maximum))
            elif action.type is port_number:
                said = ("65535",)
            else:
                continue
            bounded.append(f"{name} {action.option_strings[0]}")
            assert action.help and any(s in action.help for s in said), (name, action.option_strings, action.help)
    assert set(bounded) == {"serve --demo-steps", "serve --port", "analyze --proxy-episodes", "analyze --resamples"}


@pytest.fixture(scope="module")
def tau2_policies(tmp_path_factory):
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    path = tmp_path_factory.mktemp("tau2") / "base"
    PPOTrainer(PPOConfig(env_id="tau2-frozen", env_kwargs={"domain": ["airline", "retail"]}, total_steps=0,
                         num_envs=1)).save(path)
    return {"base": str(path), "again": str(path)}


def test_tau2_customer_card_hidden_tool_calls_and_solved_question(tmp_path, tau2_policies):
    """A tau2 customer: the card is a test-split task's scenario; the agent's tool calls run on the task's world
    and are stored but never shown; the end button ends the chat; the survey asks whether the issue was solved."""
    from scope_envs.games.tau2.dialogue_acts import AGENT_INDEX

    folder = write_study(tmp_path / "study", tau2_policies, game="tau2")
    study, client = client_for(folder)
    client.get("/?PROLIFIC_PID=c1")
    client.post("/consent", data={"agree": "yes"})
    role = client.get("/role")
    assert "customer service" in role.text and "Known info" in role.text
    sid = study.store.session_by_pid("c1").id
    speaker = study.speakers[study.store.session(sid).condition]
    plain = speaker.reply

    def look_up_first(game, seeds):  # the agent looks up whenever the dialogue grounds a read call
        mask = speaker.spec.mask(game)
        if mask[AGENT_INDEX["lookup:0"]]:
            return AGENT_INDEX["lookup:0"], speaker.spec.realize(game, AGENT_INDEX["lookup:0"], None)
        return plain(game, seeds)

    speaker.reply = look_up_first
    page = client.post("/role")
    game = study._episode(study.store.session(sid)).env.unwrapped.game
    assert game.persona.split == "heldout" and game.task["id"] in game.data[game.domain].split_ids("test")
    known = next(line for line in study.card(sid) if line.startswith("Known info"))
    page = client.post("/chat", data={"text": f"Hello. {known.split(':', 1)[1]} I need help with my booking."})
    stored = study.store.messages(sid)
    calls = [m for m in stored if m.role == "agent" and not m.visible]
    assert calls and calls[0].text.startswith("{")  # a JSON tool call, run on the world ...
    assert any(t.call is not None and t.result for t in study._episode(study.store.session(sid)).env.unwrapped.game.history)
    assert calls[0].text not in page.text  # ... and never shown
    assert client.post("/chat", data={"text": '{"name": "get_user_details"}'}).status_code == 400
    done = client.post("/chat", data={"end": "yes"})
    assert done.url.path == "/survey" and 'name="solved"' in done.text
    unanswered = client.post("/survey", data={"naturalness": "4"})  # asked again about their issue, not dollars
    assert unanswered.status_code == 400 and "yes or no" in unanswered.text and "$" not in unanswered.text
    assert client.post("/survey", data={"solved": "1", "naturalness": "4", "satisfaction": "4",
                                        "talk_again": "4"}).url.path == "/done"
    row = study.store.session(sid)
    assert row.chat_end == "terminated" and "success" in json.loads(row.outcome)
    assert study.store.answers()[sid]["solved"] == 1
    exported = study.transcripts()[0]
    assert any(t["act_name"] == "lookup:0" for t in exported["turns"])


def test_a_bench_method_is_trained_as_the_benchmark_trains_it(tmp_path):
    """``method: frozen`` trains with the benchmark's setup for that method and is saved, then loaded."""
    import torch

    from scope_envs.study.agents import load_policy

    cfg = parse({"game": "p4g", "max_turns": 4, "conditions": [
        {"name": "base", "policy": {"method": "untrained"}},
        {"name": "rl", "policy": {"method": "frozen", "steps": 300}}]}, tmp_path)
    trained = load_policy(cfg, cfg.condition("rl"))
    saved = json.loads((tmp_path / "policies" / "rl" / "config.json").read_text())
    assert saved["env_id"] == "p4g-frozen" and saved["env_kwargs"] == {"max_turns": 4}
    assert trained.agent_steps >= 300 and load_policy(cfg, cfg.condition("base")).agent_steps == 0
    again = load_policy(cfg, cfg.condition("rl"))  # loaded, not trained again
    assert again.agent_steps == trained.agent_steps
    for a, b in zip(again.learners["agent_0"].parameters(), trained.learners["agent_0"].parameters()):
        assert torch.equal(a, b)


def test_export_jsonl_with_sessions_at_consent_or_declined(study_dir):
    """A session without a seed (at consent, or declined) is exported with seed null, not a 500."""
    _study, client = client_for(study_dir)
    client.get("/?PROLIFIC_PID=p1")  # at the consent stage: no slot, no seed
    c2 = TestClient(client.app)
    c2.get("/?PROLIFIC_PID=p2")
    c2.post("/consent", data={"agree": "no"})
    c3 = TestClient(client.app)
    start(c3, "p3")
    r = client.get("/admin/export.jsonl", headers={"X-Admin-Token": "admin-token-for-tests"})
    assert r.status_code == 200
    records = {rec["prolific_pid"]: rec for rec in map(json.loads, r.text.splitlines())}
    assert records["p1"]["seed"] is None and records["p2"]["seed"] is None
    assert isinstance(records["p3"]["seed"], int)
    assert client.get("/admin/export.csv", headers={"X-Admin-Token": "admin-token-for-tests"}).status_code == 200


def test_a_message_with_a_control_character_is_refused(study_dir):
    study, client = client_for(study_dir)
    start(client)
    sid = study.store.session_by_pid("p1").id
    r = client.post("/chat", data={"text": "hello\x00there"})
    assert r.status_code == 400 and "control character" in r.text
    assert all(m.role == "agent" for m in study.store.messages(sid))


def to_final_turn(c, page, limit=20):
    """Chat (over HTTP) until the page asks for the final reply's amount."""
    for _ in range(limit):
        if 'name="amount"' in page.text:
            return page
        assert page.url.path == "/chat", page.url
        page = c.post("/chat", data={"text": "Tell me more about the charity."})
    raise AssertionError("no final turn")


def test_refused_replies_are_explained_in_the_participants_words(tmp_path, policies):
    """The real server: on the final turn a message without an amount is not sent, and the person reads what to
    do, not the engine's tag syntax or error counter (which stay in the export); an amount that is not one of the
    list's is a 400 saying so and listing the allowed amounts."""
    httpx = pytest.importorskip("httpx")
    from tests.study_fixtures import free_port, start_server, stop_server

    folder = write_study(tmp_path / "study", policies)
    port = free_port()
    proc = start_server(folder, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=True, timeout=60) as c:
            c.get("/?PROLIFIC_PID=final1")
            c.post("/consent", data={"agree": "yes"})
            to_final_turn(c, c.post("/role"))
            r = c.post("/chat", data={"text": "I will give a dollar"})
            assert r.status_code == 200 and r.url.path == "/chat"
            assert "Please choose how much you will donate below, then send." in r.text
            for raw in ("[DONATE", "DONATE $N", "1000000", "final reply", "could not read that message:"):
                assert raw not in r.text, raw
            for amount in ("5", "nan", "-1", "abc", "0.5"):
                r = c.post("/chat", data={"text": "Here you go", "amount": amount})
                assert r.status_code == 400, amount
                assert f"The amount &#39;{amount}&#39; is not one of the amounts offered" in r.text, amount
                assert "$0.00, $0.05" in r.text and "$2.00 from the list" in r.text
            assert c.post("/chat", data={"text": "Here you go", "amount": "0.50"}).url.path == "/survey"
            export = c.get("/admin/export.jsonl", headers={"X-Admin-Token": "admin-token-for-tests"}).text
    finally:
        stop_server(proc)
    (record,) = map(json.loads, export.splitlines())
    assert [x["error"] for x in record["rejected"]] == [
        "this is your final reply: state your gift with [DONATE $N] (1/1000000)"]  # the engine's words, kept
    assert record["outcome"]["intended"] == 0.5


def test_participant_note_covers_the_engines_errors():
    from scope_envs.study.games import DEFAULT_NOTE, participant_note

    assert participant_note("this is your final reply: state your gift with [DONATE $N] (3/1000000)") == \
        "Please choose how much you will donate below, then send."
    for raw in ("could not read the amount in [DONATE x]; write e.g. [DONATE $0.50] (1/9)",
                "unterminated [DONATE ...] tag; write e.g. [DONATE $0.50] (1/9)",
                "a donation can be at most $2.00, got $5.00 (1/9)", "malformed tool call (invalid JSON) (1/9)",
                "message is not printable text (character U+FFFE at 3) (1/9)", "something new (1/9)"):
        note = participant_note(raw)
        assert "DONATE" not in note and "(1/9)" not in note and "U+" not in note and note, raw
    assert participant_note("something new (1/9)") == DEFAULT_NOTE and participant_note(None) == ""


def test_analysis_json_is_strict_json_and_the_in_chat_column_names_its_key(tmp_path, policies, capsys):
    """``--proxy-episodes 0`` with conditions of zero and one session: no NaN in analysis.json (null instead).
    The in-chat column is labelled by the outcome key it reads (outcome_intended, in dollars), not to be
    confused with the export's outcome_stated flag."""
    from scope_envs.cli import main

    folder, study, sid = one_completed_session(tmp_path, policies)
    main(["study", "analyze", str(folder), "--proxy-episodes", "0", "--resamples", "200"])
    capsys.readouterr()
    text = (folder / "analysis.json").read_text()

    def no_constant(name):
        raise AssertionError(f"{name} in analysis.json")

    result = json.loads(text, parse_constant=no_constant)
    assert result["cells"]["trained"]["donation"] == {"n": 0, "mean": None, "ci": [None, None]}
    assert result["cells"]["base"]["stated_in_chat"]["mean"] == 2.0 and result["proxies"] is None
    report = (folder / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| Condition | Donation"))
    assert "Stated in chat ($, outcome_intended)" in header
    row = next(line for line in report.splitlines() if line.startswith("| base (baseline) |"))
    assert row.split("|")[3].strip() == "2.00"  # outcome_intended, the dollars, not the outcome_stated flag (1)
    assert "`outcome_stated` is a 0/1 flag" in report


def test_demo_steps_other_than_the_folders_are_refused(tmp_path, capsys, monkeypatch):
    """``--demo --dir EXISTING --demo-steps N`` on a folder made with other steps is an argparse error naming
    --demo-steps and the folder's steps, and nothing in the folder changes; the same steps, or none given, go
    on to start the study."""
    import scope_envs.study as study_cli
    from scope_envs.cli import main
    from scope_envs.study.config import write_demo

    folder = tmp_path / "demo"
    path = write_demo(folder, steps=500)
    before = path.read_text()

    class Built(Exception):
        pass

    def no_build(cfg):
        raise Built(cfg)

    monkeypatch.setattr(study_cli, "build", no_build)
    with pytest.raises(SystemExit) as e:
        main(["study", "serve", "--demo", "--dir", str(folder), "--demo-steps", "900"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --demo-steps:" in err and "names 500 steps, not 900" in err, err
    assert "delete" in err and "leave --demo-steps out" in err and "Traceback" not in err
    assert path.read_text() == before and not (folder / "policies").exists()
    for argv in ([], ["--demo-steps", "500"]):
        with pytest.raises(Built):
            main(["study", "serve", "--demo", "--dir", str(folder), *argv])
    fresh = tmp_path / "fresh"
    with pytest.raises(Built):  # a new folder takes the steps given
        main(["study", "serve", "--demo", "--dir", str(fresh), "--demo-steps", "900"])
    assert "steps: 900" in (fresh / "study.yaml").read_text()


def test_analysis_json_holds_the_rank_correlations_and_report_md_escapes_the_title(tmp_path, policies, monkeypatch):
    """The Spearman correlations the report states are in analysis.json (null where they do not exist: docs say
    so; they were only in report.md), and the study's title is text in report.md, not HTML."""
    from scipy import stats

    from scope_envs.study import analyze as analysis

    three = {"base": policies["base"], "trained": policies["trained"], "again": policies["trained"]}
    folder = write_study(tmp_path / "study", three, baseline="base", title="Pilot <script>alert(1)</script> & co")
    study = build(load(folder))
    fill(study, "base", [0.2, 0.4], [3, 4])
    fill(study, "trained", [1.0, 1.2], [4, 5], t0=10)
    fill(study, "again", [0.6, 0.8], [5, 6], t0=20)
    proxy = {"base": {"heldout_intended": 0.1, "panel_success": 0.5},
             "trained": {"heldout_intended": 0.9, "panel_success": 0.5},
             "again": {"heldout_intended": 0.3, "panel_success": 0.5}}
    monkeypatch.setattr(analysis, "proxies", lambda cfg, episodes: proxy)
    analysis.analyze(load(folder), proxy_episodes=2, resamples=200)
    result = json.loads((folder / "analysis.json").read_text())
    people = [0.3, 1.1, 0.7]
    assert result["spearman"]["heldout_intended"] == pytest.approx(
        stats.spearmanr(people, [0.1, 0.9, 0.3]).statistic)
    assert result["spearman"]["panel_success"] is None  # a column that does not vary
    report = (folder / "report.md").read_text()
    assert "<script>" not in report and "&lt;script&gt;" in report.splitlines()[0]
    assert "panel_success –" in report and "nan" not in report  # as analysis.json's null, not a float's repr
    analysis.analyze(load(folder), proxy_episodes=0, resamples=200)
    assert json.loads((folder / "analysis.json").read_text())["spearman"] is None


def test_a_policy_folder_that_cannot_be_read_is_one_line(tmp_path, policies, capsys, monkeypatch):
    """A policy ``path`` whose model.pt is not a saved model (a Git LFS pointer, a save cut short) or whose
    config.json is not a PPOConfig: ``serve`` and ``analyze`` say so in one line naming the folder (tracebacks)."""
    import shutil

    import uvicorn

    from scope_envs.cli import main

    broken = tmp_path / "broken"
    shutil.copytree(policies["base"], broken)
    (broken / "model.pt").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    folder = write_study(tmp_path / "study", {"base": str(broken), "trained": policies["trained"]})
    odd = tmp_path / "odd"
    shutil.copytree(policies["base"], odd)
    (odd / "config.json").write_text('{"env_id": 5, "colour": 1}')
    other = write_study(tmp_path / "other", {"base": str(odd), "trained": policies["trained"]})
    Store(load(folder).database_url).engine.dispose()  # analyze reads a served study's database
    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: pytest.fail("the server started"))
    for argv, where in ((["study", "serve", "--config", str(folder), "--port", "0"], broken),
                        (["study", "serve", "--config", str(other), "--port", "0"], odd),
                        (["study", "analyze", str(folder), "--proxy-episodes", "1"], broken)):
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and f"{where}: cannot load this policy" in err and "Traceback" not in err, err


@pytest.mark.parametrize("change", ["rename", "reorder", "seed"])
def test_a_study_yaml_changed_under_its_sessions_is_refused(tmp_path, policies, capsys, monkeypatch, change):
    """A condition renamed, the conditions reordered or the seed changed once people took slots: ``serve``
    refuses with one line naming the slot and the condition (it started, sent a person whose condition it no
    longer knew to a 500 page at every request, and dealt new slots by another randomisation); ``analyze`` refuses
    a renamed condition (its people were silently left out) and reads the others by name."""
    import uvicorn
    import yaml

    from scope_envs.cli import main

    folder = write_study(tmp_path / "study", policies)
    study, client = client_for(folder)
    start(client, "early")
    slot, condition = study.store.session_by_pid("early").slot, study.store.session_by_pid("early").condition
    raw = yaml.safe_load((folder / "study.yaml").read_text())
    if change == "rename":
        raw["conditions"] = [{**c, "name": c["name"] + "_v2"} if c["name"] == condition else c
                             for c in raw["conditions"]]
    elif change == "reorder":
        raw["conditions"] = raw["conditions"][::-1]
    else:
        raw["seed"] = next(s for s in range(1, 100) if condition_for_slot(
            parse({**raw, "seed": s}, folder), slot) != condition)
    (folder / "study.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: pytest.fail("the server started"))
    analyze = ["study", "analyze", str(folder), "--proxy-episodes", "0", "--resamples", "100"]
    for argv in (["study", "serve", "--config", str(folder), "--port", "0"], analyze):
        if argv is analyze and change != "rename":
            main(argv)
            assert "Game `p4g`" in capsys.readouterr().out
            continue
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and f"slot {slot}" in err and repr(condition) in err and "Traceback" not in err, err
