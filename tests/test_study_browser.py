"""The study as people use it: headless Chromium (Debian's ``chromium``, driven by Playwright) through a whole
session on a server started here on 127.0.0.1, killed and restarted mid-chat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)

from tests.study_fixtures import (
    free_port,
    save_policies,
    start_server,
    stop_server,
    write_study,
)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def server(tmp_path):
    folder = write_study(tmp_path / "study", save_policies(tmp_path / "policies"), max_turns=4)
    port = free_port()
    box = {"proc": start_server(folder, port), "folder": folder, "base": f"http://127.0.0.1:{port}", "port": port}
    yield box
    stop_server(box["proc"])


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def say(page, text):
    page.fill("#text", text)
    if page.locator("#amount").count():
        page.select_option("#amount", "0.25")
    page.click("#sendbtn")
    page.wait_for_load_state()


def test_a_whole_session_in_chromium_survives_a_server_restart(server, browser):
    from scope_envs.study.config import load
    from scope_envs.study.store import Store

    page = browser.new_context().new_page()
    page.goto(f"{server['base']}/?PROLIFIC_PID=browser1&STUDY_ID=st&SESSION_ID=se")
    page.click("text=I agree to take part")
    assert "$2 bonus" in page.inner_text(".card")
    page.click("text=Start the conversation")
    assert page.url.endswith("/chat") and page.locator(".msg.agent").count() == 1

    say(page, "<script>window.pwned = 1</script> Who runs this charity?")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator(".msg.user").first.inner_text() == "<script>window.pwned = 1</script> Who runs this charity?"

    other = browser.new_context().new_page()  # another person's browser: no cookie, nothing to see
    other.goto(f"{server['base']}/chat")
    assert other.locator(".msg").count() == 0 and "Prolific ID" in other.content()

    before = page.locator(".msg").all_inner_texts()
    stop_server(server["proc"])  # killed mid-chat
    server["proc"] = start_server(server["folder"], server["port"])
    page.reload()
    assert page.locator(".msg").all_inner_texts() == before  # nothing lost, the person continues

    for _ in range(10):
        if not page.url.endswith("/chat"):
            break
        say(page, "I see. What else should I know?")
    assert page.url.endswith("/survey")
    page.fill("input[name=donation]", "0.25")
    for item in ("naturalness", "satisfaction", "talk_again"):
        page.check(f"input[name={item}][value='6']")
    page.click("text=Submit")
    assert page.inner_text("#code") == "TESTCODE"

    store = Store(load(server["folder"]).database_url)
    row = store.session_by_pid("browser1")
    msgs = store.messages(row.id)
    assert row.stage == "complete" and json.loads(row.outcome)["intended"] == 0.25
    assert [m.seq for m in msgs] == list(range(len(msgs)))
    assert msgs[1].text.startswith("<script>") and len(msgs) == 8  # 4 agent turns, 4 replies
    assert store.answers()[row.id]["naturalness"] == 6
