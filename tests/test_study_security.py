"""The study server as a hostile user and an unlucky operator meet it: no token means
no start, the config is typed, every page carries the security headers, exports never hold a live formula,
participant ids have one form, only text is a message, the survey is saved once, a committed message is
never lost to a kill -9, and slots are held only by people who consented.

In-process tests use FastAPI's TestClient on the real app; the concurrency and kill -9 tests start the real
server (``scope-envs study serve``) on 127.0.0.1 and talk to it over HTTP."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import threading

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from scope_envs.study import build
from scope_envs.study.app import create_app
from scope_envs.study.config import TOKEN_ENV, ConfigError, load
from tests.study_fixtures import free_port, save_policies, start_server, stop_server, write_study

TOKEN = "admin-token-for-tests"
MIN_TOKEN = 16
# every response's headers (scope_envs.study.app.SECURITY_HEADERS, spelled out: the test holds the contract)
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Cache-Control": "no-store"}


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    return save_policies(tmp_path_factory.mktemp("policies"))


def client_for(folder, **kwargs):
    study = build(load(folder))
    return study, TestClient(create_app(study), **kwargs)


def start(client, pid="p1"):
    r = client.get(f"/?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x1")
    assert r.url.path == "/consent", r.text
    client.post("/consent", data={"agree": "yes"})
    return client.post("/role")


def to_survey(client, page, limit=20):
    for _ in range(limit):
        if page.url.path != "/chat":
            return page
        data = {"text": "Tell me more about the charity."}
        if 'name="amount"' in page.text:
            data["amount"] = "0.50"
        page = client.post("/chat", data=data)
    raise AssertionError("the chat did not end")


def no_server(*a, **k):
    raise AssertionError("the server started")


class Served(Exception):
    """Raised where uvicorn's server would run: the start got that far, and no server holds the test."""


def served(*a, **k):
    raise Served


# ---------------------------------------------------------------------------- 1. the admin token
@pytest.mark.parametrize("where", ["file-empty", "file-short", "env-blank", "env-empty", "config-short"])
def test_an_empty_blank_or_short_admin_token_never_starts_the_server(tmp_path, policies, monkeypatch, capsys, where):
    from scope_envs.cli import main

    fields = {} if where != "config-short" else {"admin_token": "short"}
    folder = write_study(tmp_path / "study", policies, **fields)
    if where != "config-short":
        raw = (folder / "study.yaml").read_text().replace(f"admin_token: {TOKEN}\n", "")
        (folder / "study.yaml").write_text(raw)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    if where == "file-empty":
        (folder / "admin_token").write_text("")
    elif where == "file-short":
        (folder / "admin_token").write_text("abc\n")
    elif where == "env-blank":
        monkeypatch.setenv(TOKEN_ENV, "   ")
    elif where == "env-empty":
        monkeypatch.setenv(TOKEN_ENV, "")
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", no_server)
    with pytest.raises(SystemExit) as e:
        main(["study", "serve", "--config", str(folder)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "admin_token" in err and f"at least {MIN_TOKEN}" in err, err
    with pytest.raises(ConfigError):  # a library user cannot build the app around no token either
        create_app(build(load(folder)))


def test_a_missing_token_is_generated_and_the_start_says_so(tmp_path, policies, monkeypatch, capsys):
    from scope_envs.cli import main

    folder = write_study(tmp_path / "study", policies)
    (folder / "study.yaml").write_text((folder / "study.yaml").read_text().replace(f"admin_token: {TOKEN}\n", ""))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", served)
    with pytest.raises(Served):
        main(["study", "serve", "--config", str(folder), "--port", "0"])
    out = capsys.readouterr().out
    token = (folder / "admin_token").read_text().strip()
    assert len(token) >= MIN_TOKEN and f"generated now in {folder / 'admin_token'}" in out and token in out
    assert oct((folder / "admin_token").stat().st_mode & 0o777) == "0o600"
    _, client = client_for(folder)
    assert client.get("/admin?token=").status_code == 403 and client.get("/admin").status_code == 403
    assert client.get(f"/admin?token={token}").status_code == 200


@pytest.mark.parametrize("where", ["config", "env", "file", "generated"])
def test_the_start_says_where_the_token_came_from_in_a_sentence(tmp_path, policies, monkeypatch, capsys, where):
    """The start-up line names the token's place in words that read as a sentence, for each place the token
    can come from (it said "from generated now in ...")."""
    import uvicorn

    from scope_envs.cli import main

    folder = write_study(tmp_path / "study", policies)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    if where != "config":
        (folder / "study.yaml").write_text((folder / "study.yaml").read_text().replace(f"admin_token: {TOKEN}\n", ""))
    if where == "env":
        monkeypatch.setenv(TOKEN_ENV, TOKEN)
    elif where == "file":
        (folder / "admin_token").write_text(TOKEN + "\n")
    monkeypatch.setattr(uvicorn.Server, "run", served)
    with pytest.raises(Served):
        main(["study", "serve", "--config", str(folder), "--port", "0"])
    said = {"config": "from study.yaml's admin_token", "env": f"from the environment's {TOKEN_ENV}",
            "file": f"from {folder / 'admin_token'}", "generated": f"generated now in {folder / 'admin_token'}"}
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("admin token:")]
    assert lines == [f"admin token:  {said[where]}"], lines


def test_port_0_prints_the_port_the_server_listens_on(tmp_path, policies):
    """``--port 0`` (any free port): the participants' and the admin URL carry the port the OS chose, and the
    admin URL printed opens the admin page (they said ``:0``)."""
    import queue
    import re
    import subprocess
    import sys

    from tests.study_fixtures import ROOT

    folder = write_study(tmp_path / "study", policies)
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "study", "serve", "--config", str(folder),
                             "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = queue.Queue()  # read aside, so that a server that never says its URLs fails at the timeout
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        urls = {}
        while "admin" not in urls:
            line = lines.get(timeout=60)
            said = re.match(r"(participants|admin): +(http://127\.0\.0\.1:(\d+)/\S*)", line)
            if said:
                urls[said.group(1)] = (said.group(2), int(said.group(3)))
        (_, participants), (admin, port) = urls["participants"], urls["admin"]
        assert port != 0 and participants == port, urls
        r = httpx.get(admin, timeout=30)
        assert r.status_code == 200 and "Test study" in r.text, (r.status_code, r.text[:500])
    finally:
        stop_server(proc)


def test_a_request_whose_headers_or_body_never_end_is_not_held_open(tmp_path, policies):
    """``GET / HTTP/1.1\\r\\nHost: x\\r\\n`` and nothing more, or a form shorter than its Content-Length, held a
    connection of ``scope-envs study serve`` open forever (slowloris). Late headers close the connection (``serve_on``'s
    bound, 30 s as shipped), a late body is answered 408 and the connection closed (``BODY_TIMEOUT``, 30 s): 2 s
    each in this server. Whole requests are still answered, and the stalled consent recorded nothing."""
    import socket
    import subprocess
    import sys
    import time

    from tests.study_fixtures import ROOT

    folder, port = write_study(tmp_path / "study", policies), free_port()
    run = ("import scope_envs.serve.protocol as p, scope_envs.study.app as a; p.DEFAULT_HEADER_TIMEOUT = "
           "a.BODY_TIMEOUT = 2.0; from scope_envs.cli import main; main()")
    proc = subprocess.Popen([sys.executable, "-c", run, "study", "serve", "--config", str(folder), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            try:
                httpx.get(base + "/", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            start = time.monotonic()
            assert s.recv(65536) == b""  # closed, nothing answered
            assert 1.5 < time.monotonic() - start < 20
        with httpx.Client(base_url=base, timeout=30) as person:
            assert person.get("/?PROLIFIC_PID=slow1&STUDY_ID=s1&SESSION_ID=x1", follow_redirects=True).url.path == "/consent"
            cookie = "; ".join(f"{k}={v}" for k, v in person.cookies.items()).encode()
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"POST /consent HTTP/1.1\r\nHost: x\r\nCookie: " + cookie + b"\r\nContent-Type: "
                          b"application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nagree=")
                start, answer = time.monotonic(), b""
                while more := s.recv(65536):
                    answer += more
            assert answer.startswith(b"HTTP/1.1 408") and b"took too long" in answer, answer[:300]
            assert 1.5 < time.monotonic() - start < 20
            assert person.get("/consent").status_code == 200  # nothing was recorded: consent is still asked
            assert person.post("/consent", data={"agree": "yes"}).headers["location"] == "/role"
    finally:
        stop_server(proc)


# ---------------------------------------------------------------------------- 2. typed config, headers
@pytest.mark.parametrize("key, value", [("admin_token", 123456), ("title", 5), ("completion_code", ["a"]),
                                        ("secure_cookie", "yes"), ("database", 3), ("completion_url", "{nope}"),
                                        ("per_condition", 10**30), ("arrival_limit", 0), ("conditions", 7)])
def test_config_values_are_checked_with_their_types_naming_the_key(tmp_path, policies, key, value):
    folder = write_study(tmp_path / "study", policies, **{key: value})
    with pytest.raises(ConfigError, match=key):
        load(folder)


def test_error_pages_carry_the_security_headers(tmp_path, policies):
    study, client = client_for(write_study(tmp_path / "study", policies))
    start(client)

    def broken(*_):
        raise RuntimeError("internal detail")

    study.say = broken
    crashing = TestClient(client.app, raise_server_exceptions=False, cookies=client.cookies)
    pages = [crashing.post("/chat", data={"text": "hi"}), client.get("/nowhere"), client.get("/admin"),
             client.post("/chat", files={"text": ("a.txt", b"x", "text/plain")})]
    assert [p.status_code for p in pages] == [500, 404, 403, 400]
    for p in pages:
        for header, value in SECURITY_HEADERS.items():
            assert p.headers.get(header) == value, (p.status_code, header)
        assert "frame-ancestors 'none'" in p.headers.get("content-security-policy", ""), p.status_code


def test_no_inline_script_runs_the_chats_script_is_a_file_of_the_server(tmp_path, policies):
    """The policy allowed inline scripts ('unsafe-inline', for the chat's one inline script), so a script that
    slipped into a page would have run; the chat's script is /static/chat.js and script-src is 'self' alone."""
    import re

    _, client = client_for(write_study(tmp_path / "study", policies))
    chat = start(client)
    assert chat.url.path == "/chat" and 'id="send"' in chat.text
    policy = dict(part.strip().split(" ", 1) for part in chat.headers["content-security-policy"].split(";"))
    assert policy["script-src"] == "'self'", policy
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", chat.text, re.S)
    assert scripts == [(' src="/static/chat.js"', "")], scripts  # no inline body
    js = client.get("/static/chat.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert 'getElementById("send")' in js.text and js.headers["x-content-type-options"] == "nosniff"
    assert client.get("/static/nope.js").status_code == 404


def test_a_wrong_admin_token_is_called_wrong_and_no_token_missing(tmp_path, policies):
    """A wrong token was answered "The admin token is missing.", the words for no token at all."""
    _, client = client_for(write_study(tmp_path / "study", policies))
    for path in ("/admin", "/admin/export.csv", "/admin/export.jsonl"):
        for query, headers, said in (("", {}, "missing"), ("?token=", {}, "missing"),
                                     ("?token=not-the-token-0123456789", {}, "wrong"),
                                     ("", {"X-Admin-Token": "not-the-token-0123456789"}, "wrong")):
            r = client.get(path + query, headers=headers)
            assert r.status_code == 403 and f"The admin token is {said}." in r.text, (path, query, headers, r.text)
        assert client.get(f"{path}?token={TOKEN}").status_code == 200


def test_the_admin_page_opened_with_the_header_links_exports_that_carry_the_token(tmp_path, policies):
    """The admin page opened with ``X-Admin-Token`` (no ``?token=``) wrote its export links with an empty token,
    so they answered 403; they carry the token that opened the page, URL-encoded, as with ``?token=``."""
    import html
    import re

    odd = "tok+en #&?=%-0123456789"
    _, client = client_for(write_study(tmp_path / "study", policies, admin_token=odd))
    page = client.get("/admin", headers={"X-Admin-Token": odd})
    assert page.status_code == 200
    links = [html.unescape(h) for h in re.findall(r'href="(/admin/export[^"]*)"', page.text)]
    assert len(links) == 2
    for link in links:
        assert client.get(link).status_code == 200, link  # the link alone, no header


# ---------------------------------------------------------------------------- 3. CSV, participant ids
FORMULAS = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "-2-3", "+1", "\tx", "\rx"]


def test_the_csv_export_holds_no_live_formula(tmp_path, policies):
    study, client = client_for(write_study(tmp_path / "study", policies))
    for i, bad in enumerate(FORMULAS):  # as a database written before ids were checked could hold them
        study.store.create_session(prolific_pid=bad, study_id=bad, prolific_session_id=bad, secret_hash=f"h{i}",
                                   stage="declined")
    text = client.get("/admin/export.csv", headers={"X-Admin-Token": TOKEN}).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(FORMULAS)
    for row, bad in zip(rows, FORMULAS):
        for key in ("prolific_pid", "study_id", "prolific_session_id"):
            assert row[key] == "'" + bad, (key, row[key])
    from scope_envs.study.app import spreadsheet_safe

    assert spreadsheet_safe("plain") == "plain" and spreadsheet_safe(-2.5) == -2.5


@pytest.mark.parametrize("query", ["PROLIFIC_PID=%3Dcmd%7C%27%20%2FC%20calc%27%21A0", "PROLIFIC_PID=ok&STUDY_ID=%40SUM(1%2B1)",
                                   "PROLIFIC_PID=ok&SESSION_ID=-2-3", "PROLIFIC_PID=a%00b",
                                   "PROLIFIC_PID=%D9%A3%D9%A4%D9%A5", "PROLIFIC_PID=" + "a" * 65])
def test_ids_not_of_the_accepted_form_are_refused_saying_what_is_accepted(tmp_path, policies, query):
    study, client = client_for(write_study(tmp_path / "study", policies))
    r = client.get(f"/?{query}")
    assert r.status_code == 400 and "we accept 1 to 64 letters" in r.text
    assert study.store.all_sessions() == []


def test_one_person_has_one_id_whatever_its_case_or_width(tmp_path, policies):
    study, client = client_for(write_study(tmp_path / "study", policies))
    start(client, "ABC")
    for variant in ("abc", "%EF%BC%A1%EF%BC%A2%EF%BC%A3", "%20Abc%20"):  # abc, fullwidth ＡＢＣ, spaces
        assert TestClient(client.app).get(f"/?PROLIFIC_PID={variant}").status_code == 409
    assert [r.prolific_pid for r in study.store.all_sessions()] == ["abc"]
    from scope_envs.study.engine import participant_id

    assert participant_id("5f8a1b2c3d4e5f6a7b8c9d0e") == "5f8a1b2c3d4e5f6a7b8c9d0e"
    assert participant_id("٣٤٥") is None and participant_id("a\x00") is None


# ---------------------------------------------------------------------------- 4. only text is a message
def test_a_file_in_the_chat_form_is_refused_and_never_stored(tmp_path, policies):
    study, client = client_for(write_study(tmp_path / "study", policies))
    start(client)
    sid = study.store.session_by_pid("p1").id
    before = study.store.messages(sid)
    r = client.post("/chat", files={"text": ("evil.html", b"<script>x</script>", "text/html")})
    assert r.status_code == 400 and "Only text" in r.text
    assert study.store.messages(sid) == before and "UploadFile" not in client.get("/chat").text
    newcomer = TestClient(client.app)
    newcomer.get("/?PROLIFIC_PID=p2")
    assert newcomer.post("/consent", files={"agree": ("a.txt", b"yes", "text/plain")}).status_code == 400
    assert study.store.session_by_pid("p2").stage == "consent"  # a file is not an answer


def test_a_request_body_larger_than_any_form_is_refused(tmp_path, policies):
    study, client = client_for(write_study(tmp_path / "study", policies))
    start(client)
    sid = study.store.session_by_pid("p1").id
    before = study.store.messages(sid)
    r = client.post("/chat", data={"text": "x" * 200_000})
    assert r.status_code == 413 and r.headers["x-frame-options"] == "DENY"
    assert study.store.messages(sid) == before


# ---------------------------------------------------------------------------- 5. the survey, once
def test_concurrent_survey_submits_are_saved_once_the_others_are_replays(tmp_path, policies):
    folder = write_study(tmp_path / "study", policies)
    port = free_port()
    proc = start_server(folder, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as c:
            c.get("/?PROLIFIC_PID=racer")
            c.post("/consent", data={"agree": "yes"})
            page = to_survey(c, c.post("/role"))
            assert page.url.path == "/survey"
            cookies = dict(c.cookies)
        statuses: dict[int, int] = {}
        go = threading.Barrier(10)

        def submit(k):
            with httpx.Client(base_url=base, cookies=cookies, follow_redirects=False, timeout=60) as c:
                go.wait()
                r = c.post("/survey", data={"donation": f"{k / 10:.1f}", "naturalness": str(1 + k % 7),
                                            "satisfaction": "4", "talk_again": "4"})
                statuses[k] = r.status_code

        threads = [threading.Thread(target=submit, args=(k,)) for k in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        saved = [k for k, s in statuses.items() if s == 303]
        assert len(statuses) == 10 and len(saved) == 1 and sorted(statuses.values()).count(409) == 9, statuses
        again = httpx.post(f"{base}/survey", cookies=cookies, data={"donation": "2"}, timeout=30)
        assert again.status_code == 409 and "Already saved" in again.text
    finally:
        stop_server(proc)
    study = build(load(folder))
    (k,) = saved
    assert study.store.answers()[study.store.session_by_pid("racer").id] == {
        "donation": k / 10, "naturalness": 1 + k % 7, "satisfaction": 4, "talk_again": 4}


# ---------------------------------------------------------------------------- 6. nothing committed is lost
def test_a_message_committed_but_never_read_is_replayed_at_start_and_exported(tmp_path, policies):
    """The window of the earlier version: the person's message committed, the server killed before the game
    read it. The next start replays it into the game (it gets its act and its reply) before anyone asks."""
    folder = write_study(tmp_path / "study", policies, max_turns=5)
    study, client = client_for(folder)
    page = start(client)
    page = client.post("/chat", data={"text": "Why this charity?"})
    sid = study.store.session_by_pid("p1").id
    n = len(study.store.messages(sid))
    study.store.add_message(sid, n, "user", "And how is the money used?")  # act None: never read
    restarted = build(load(folder))  # a new process; nobody opens the chat page
    msgs = restarted.store.messages(sid)
    assert msgs[n].text == "And how is the money used?" and msgs[n].act is not None
    assert len(msgs) == n + 2 and msgs[-1].role == "agent"  # its reply, once
    exported = next(t for t in restarted.transcripts() if t["id"] == f"session-{sid}")
    assert "And how is the money used?" in [t["text"] for t in exported["turns"]] and "unread" not in exported
    assert len(exported["turns"]) == n + 2


@pytest.mark.slow
def test_kill_9_mid_chat_loses_no_acknowledged_message(tmp_path, policies):
    """Three participants chat; the server is killed with SIGKILL twice mid-chat and restarted; every message
    whose page came back is in the database and in transcripts.jsonl, once, in order."""
    folder = write_study(tmp_path / "study", policies, max_turns=6)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(folder, port)
    sent: dict[str, list[str]] = {}
    clients = {}
    try:
        for pid in ("k1", "k2", "k3"):
            c = httpx.Client(base_url=base, follow_redirects=True, timeout=30)
            c.get(f"/?PROLIFIC_PID={pid}")
            c.post("/consent", data={"agree": "yes"})
            c.post("/role")
            clients[pid], sent[pid] = c, []
        for round_ in range(6):
            if round_ in (2, 4):
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
                stop_server(proc)
                proc = start_server(folder, port)
            for pid, c in clients.items():
                page = c.get("/chat")
                if page.url.path != "/chat" or 'name="text"' not in page.text:
                    continue
                text = f"{pid} message {round_}"
                data = {"text": text, **({"amount": "0.50"} if 'name="amount"' in page.text else {})}
                if c.post("/chat", data=data).status_code == 200:
                    sent[pid].append(text)
        export = httpx.get(f"{base}/admin/export.jsonl", headers={"X-Admin-Token": TOKEN}, timeout=30).text
    finally:
        for c in clients.values():
            c.close()
        stop_server(proc)
    records = {r["prolific_pid"]: r for r in map(json.loads, export.splitlines())}
    for pid, texts in sent.items():
        assert texts, pid
        turns = [t["text"].split(" [DONATE")[0] for t in records[pid]["turns"] if t["role"] == "persuadee"]
        assert turns == texts, (pid, turns, texts)


# ---------------------------------------------------------------------------- 7. slots and arrivals
def test_arrivals_without_consent_take_no_slot_and_declining_frees_nothing_it_held(tmp_path, policies):
    folder = write_study(tmp_path / "study", policies, per_condition=1, arrival_limit=1000)
    study, client = client_for(folder)
    for i in range(60):  # one client opens 60 sessions and never consents
        assert TestClient(client.app).get(f"/?PROLIFIC_PID=flood{i}").url.path == "/consent"
    for i in range(3):
        c = TestClient(client.app)
        c.get(f"/?PROLIFIC_PID=no{i}")
        assert c.post("/consent", data={"agree": "no"}).url.path == "/declined"
    assert start(TestClient(client.app), "real1").url.path == "/chat"  # real people still get the two slots
    assert start(TestClient(client.app), "real2").url.path == "/chat"
    assert study.store.held_slots() == {0, 1}
    late = TestClient(client.app)
    late.get("/?PROLIFIC_PID=flood0x")
    assert TestClient(client.app).get("/?PROLIFIC_PID=late").status_code == 410


def test_a_flood_of_arrivals_from_one_client_is_rate_limited(tmp_path, policies):
    folder = write_study(tmp_path / "study", policies, arrival_limit=5, arrival_window_s=60)
    study, client = client_for(folder)
    codes = [TestClient(client.app).get(f"/?PROLIFIC_PID=f{i}").status_code for i in range(8)]
    assert codes == [200] * 5 + [429] * 3
    other = TestClient(client.app, client=("203.0.113.9", 5000))  # another address is not limited by the first
    assert other.get("/?PROLIFIC_PID=someone").url.path == "/consent"
    assert len(study.store.all_sessions()) == 6


def test_the_documented_config_is_a_valid_config(tmp_path):
    """docs/study/security.md's study.yaml parses as it says (its token is long enough, its keys typed)."""
    import re
    from pathlib import Path

    import yaml

    from scope_envs.study.config import parse

    doc = (Path(__file__).resolve().parents[1] / "docs" / "study" / "security.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", doc, re.DOTALL)
    cfg = parse(yaml.safe_load(block), tmp_path)
    assert cfg.arrival_limit == 20 and cfg.token() == "a-long-random-admin-token-0123"


def test_a_database_of_the_version_that_took_slots_at_arrival_is_refused_with_its_reason(tmp_path, policies):
    import sqlite3

    from scope_envs.study.store import StoreError

    folder = write_study(tmp_path / "study", policies)
    with sqlite3.connect(folder / "study.db") as db:
        db.execute("CREATE TABLE sessions (id INTEGER PRIMARY KEY, slot INTEGER NOT NULL UNIQUE, prolific_pid TEXT)")
    with pytest.raises(StoreError, match="earlier version of the study server"):
        build(load(folder))


# ---------------------------------------------------------------------------- 8. bytes, waits
def test_a_form_that_is_not_utf8_is_refused_and_never_stored(tmp_path, policies):
    """The real server: invalid UTF-8 in the chat form (percent-escaped, raw, or in a multipart body) is a 400
    saying so, and nothing is stored (it was stored as U+FFFD or Latin-1 mojibake); valid UTF-8 is kept as typed."""
    folder = write_study(tmp_path / "study", policies, max_turns=8)
    port = free_port()
    proc = start_server(folder, port)
    form = {"content-type": "application/x-www-form-urlencoded"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=True, timeout=60) as c:
            c.get("/?PROLIFIC_PID=bytes1")
            c.post("/consent", data={"agree": "yes"})
            c.post("/role")
            for body, headers in ((b"text=caf%E9+ok", form), (b"text=caf\xe9 ok", form), (b"text=%ff%fe", form),
                                  (b"--b\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\ncaf\xe9\r\n--b--\r\n",
                                   {"content-type": "multipart/form-data; boundary=b"})):
                r = c.post("/chat", content=body, headers=headers)
                assert r.status_code == 400 and "not valid text (UTF-8)" in r.text, (body, r.status_code)
                assert r.headers["x-frame-options"] == "DENY" and 'name="text"' in r.text  # asked again
            newcomer = httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=True, timeout=60)
            newcomer.get("/?PROLIFIC_PID=bytes2")
            assert newcomer.post("/consent", content=b"agree=y%E9s", headers=form).status_code == 400
            newcomer.close()
            ok = c.post("/chat", content="text=caf%C3%A9+%E2%82%AC2+ok".encode(), headers=form)
            assert ok.status_code == 200 and "café €2 ok" in ok.text
    finally:
        stop_server(proc)
    study = build(load(folder))
    texts = [m.text for m in study.store.messages(study.store.session_by_pid("bytes1").id) if m.role == "user"]
    assert texts == ["café €2 ok"]
    assert study.store.session_by_pid("bytes2").stage == "consent"


def test_429_answers_say_when_to_retry(tmp_path, policies):
    """The real server: a refused arrival (arrival_limit) and a refused message (rate_limit) carry Retry-After,
    whole seconds within the window."""
    folder = write_study(tmp_path / "study", policies, arrival_limit=2, arrival_window_s=30, rate_limit=1,
                        rate_window_s=45, max_turns=8)
    port = free_port()
    proc = start_server(folder, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as c:
            c.get("/?PROLIFIC_PID=wait1")
            c.post("/consent", data={"agree": "yes"})
            c.post("/role")
            assert c.post("/chat", data={"text": "first"}).status_code == 200
            r = c.post("/chat", data={"text": "second"})
            assert r.status_code == 429 and r.headers["retry-after"] == "45", r.headers
        # the arrival start_server's probe made (no PROLIFIC_PID) is not one; wait1 was the first
        codes = []
        for i in range(3):
            r = httpx.get(f"{base}/?PROLIFIC_PID=flood{i}", timeout=30)
            codes.append(r.status_code)
        assert codes == [303, 429, 429] and r.headers["x-frame-options"] == "DENY"
        assert 1 <= int(r.headers["retry-after"]) <= 30, r.headers
    finally:
        stop_server(proc)


# ---------------------------------------------------------------------------- 9. slips, on the real server
ODD_TOKEN = "tok+en #&?=%-0123456789"  # printable ASCII a person may choose: + # & ? = % and a space


@pytest.fixture(scope="module")
def odd_server(tmp_path_factory, policies):
    """One real server for the tests below, its admin token holding characters that a URL must escape."""
    import queue
    import re
    import subprocess
    import sys

    from tests.study_fixtures import ROOT

    folder = write_study(tmp_path_factory.mktemp("odd") / "study", policies, admin_token=ODD_TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "study", "serve", "--config", str(folder),
                             "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        admin = None
        while admin is None:
            admin = re.match(r"admin: +(http://127\.0\.0\.1:(\d+)/.*)$", lines.get(timeout=60).rstrip("\n"))
        yield {"folder": folder, "admin": admin.group(1), "base": f"http://127.0.0.1:{admin.group(2)}"}
    finally:
        stop_server(proc)


def exported(server) -> dict[str, dict]:
    text = httpx.get(f"{server['base']}/admin/export.csv", headers={"X-Admin-Token": ODD_TOKEN}, timeout=30).text
    return {row["prolific_pid"]: row for row in csv.DictReader(io.StringIO(text))}


def test_the_admin_url_printed_and_the_export_links_work_whatever_the_tokens_characters(odd_server):
    """The admin URL printed at start-up, pasted as it is, opens the admin page, and the page's export links
    download (the token was written into both unescaped: '#' cut it, '+' became a space: 403)."""
    import html
    import re

    r = httpx.get(odd_server["admin"], timeout=30)
    assert r.status_code == 200 and "progress" in r.text, (odd_server["admin"], r.status_code)
    links = [html.unescape(h) for h in re.findall(r'href="(/admin/export[^"]*)"', r.text)]
    assert len(links) == 2
    for link in links:
        assert httpx.get(odd_server["base"] + link, timeout=30).status_code == 200, link


@pytest.mark.parametrize("body", [b"", b"agree=maybe", b"agree="])
def test_a_consent_form_without_an_answer_declines_nothing(odd_server, body):
    """A consent POST that says neither yes nor no (an empty or odd form) is a 400 that asks again; it was
    recorded as a refusal, and the person could never take part."""
    with httpx.Client(base_url=odd_server["base"], follow_redirects=True, timeout=60) as c:
        pid = f"noanswer{len(body)}"
        c.get(f"/?PROLIFIC_PID={pid}")
        r = c.post("/consent", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 400 and "I agree to take part" in r.text, (r.status_code, r.url.path)
        assert exported(odd_server)[pid]["stage"] == "consent"
        assert c.post("/consent", data={"agree": "yes"}).url.path == "/role"


def test_a_double_submitted_consent_takes_one_slot_and_never_errs(odd_server):
    """Six consent submits of one session at once (a double click, a resent form): each is answered with the
    next page, one slot is taken (the others tried to take a second slot for the same session: 500)."""
    with httpx.Client(base_url=odd_server["base"], timeout=60) as c:
        c.get("/?PROLIFIC_PID=twice")
        cookies = dict(c.cookies)
    go = threading.Barrier(6)
    statuses = []

    def submit():
        with httpx.Client(base_url=odd_server["base"], cookies=cookies, timeout=60) as c:
            go.wait()
            statuses.append(c.post("/consent", data={"agree": "yes"}).status_code)

    threads = [threading.Thread(target=submit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert statuses == [303] * 6, statuses
    row = exported(odd_server)["twice"]
    assert row["stage"] == "role" and row["slot"] != ""


def test_another_prolific_id_in_a_browser_with_a_session_starts_its_own(odd_server):
    """A second person on the same computer (a lab, a shared browser) opens the link with their own id: they
    get their own session, and the first person's chat is not theirs to continue (they were sent into it and
    their id was never recorded)."""
    with httpx.Client(base_url=odd_server["base"], follow_redirects=True, timeout=60) as c:
        c.get("/?PROLIFIC_PID=first_person")
        c.post("/consent", data={"agree": "yes"})
        assert c.post("/role").url.path == "/chat"
        r = c.get("/?PROLIFIC_PID=Second_Person&STUDY_ID=s1")
        assert r.url.path == "/consent", r.url.path
        assert c.get("/?PROLIFIC_PID=second_person").url.path == "/consent"  # the same id resumes
    rows = exported(odd_server)
    assert rows["second_person"]["stage"] == "consent" and rows["first_person"]["stage"] == "chat"


def test_an_in_memory_database_is_refused_at_start(tmp_path, policies, monkeypatch, capsys):
    """``database: sqlite://`` (or ``:memory:``) keeps nothing and is empty in every other connection: the
    server started and answered every page with a 500. It is a one-line error naming the URL."""
    import uvicorn

    from scope_envs.cli import main

    monkeypatch.setattr(uvicorn.Server, "run", no_server)
    for url in ("sqlite://", "sqlite:///:memory:"):
        folder = write_study(tmp_path / "study", policies, database=url)
        with pytest.raises(SystemExit) as e:
            main(["study", "serve", "--config", str(folder), "--port", "0"])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "argument --config: database" in err and "in memory" in err, err
        assert "Traceback" not in err


def test_a_relative_sqlite_path_is_read_from_the_study_folder(tmp_path, policies, monkeypatch):
    """``database: sqlite:///data.db`` is the study folder's file, as a policy's relative ``path`` is: the server
    and ``analyze`` started from different folders read one database (analyze made a new empty one in its own
    working folder and reported no session)."""
    folder = write_study(tmp_path / "study", policies, database="sqlite:///data.db")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    study = build(load(folder))
    study.store.create_session(prolific_pid="someone", secret_hash="x", stage="consent")
    assert (folder / "data.db").exists() and not (elsewhere / "data.db").exists()
    monkeypatch.chdir(tmp_path)
    assert [r.prolific_pid for r in build(load(folder)).store.all_sessions()] == ["someone"]
