"""Screenshots of every page of ``scope-envs study serve --demo`` (the README's), taken with headless Chromium.

    .venv/bin/python docs/study/screenshots.py        # writes docs/study/*.png

Needs the study extra and Debian's ``chromium`` (``/usr/bin/chromium``); trains the demo's three
policies into a temporary folder first (seconds).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.study_fixtures import free_port, start_server, stop_server

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPLIES = ("Hi! What is this about?", "I don't know much about them. What do they actually do?",
           "That sounds good, but $2 is not much for me either.", "How would the money be used?",
           "Okay, I'll think about it.", "Alright.", "Thanks.", "Sure.", "Go on.", "Okay.")


def main() -> None:
    from playwright.sync_api import sync_playwright

    from scope_envs.study.config import write_demo

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_demo(Path(tmp) / "demo", steps=3000, max_turns=5).parent
        (folder / "study.yaml").write_text((folder / "study.yaml").read_text()
                                           + "admin_token: screenshot\ncompletion_code: C1A2B3C4\n")
        from scope_envs.study import build
        from scope_envs.study.config import load

        build(load(folder))  # train the policies before the server starts
        port = free_port()
        proc = start_server(folder, port, timeout=180)
        base = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                page = browser.new_context(viewport={"width": 900, "height": 760}).new_page()

                def shot(name):
                    page.screenshot(path=str(HERE / f"{name}.png"), full_page=True)

                page.goto(f"{base}/?PROLIFIC_PID=5f3c2a9e7b&STUDY_ID=demo&SESSION_ID=s1")
                shot("consent")
                page.click("text=I agree to take part")
                shot("role")
                page.click("text=Start the conversation")
                for i, text in enumerate(REPLIES):
                    if not page.url.endswith("/chat"):
                        break
                    final = page.locator("#amount").count() > 0
                    page.fill("#text", "I'll give a little. Goodbye!" if final else text)
                    if final:
                        page.select_option("#amount", "0.50")
                        shot("chat")
                    page.click("#sendbtn")
                    page.wait_for_load_state()
                page.fill("input[name=donation]", "0.50")
                for item, v in (("naturalness", 4), ("satisfaction", 5), ("talk_again", 4)):
                    page.check(f"input[name={item}][value='{v}']")
                shot("survey")
                page.click("text=Submit")
                shot("done")
                page.goto(f"{base}/admin?token=screenshot")
                shot("admin")
                browser.close()
        finally:
            stop_server(proc)
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.png"))))


if __name__ == "__main__":
    main()
