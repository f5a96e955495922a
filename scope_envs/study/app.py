"""The study's web server: a FastAPI app, server-rendered pages, served by uvicorn on 127.0.0.1.

The participant's path: ``/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..`` → ``/consent`` → ``/role`` →
``/chat`` → ``/survey`` → ``/done``. Every page looks the session up by its secret cookie and sends the
person to the stage they are at, so a reload resumes and no page can be skipped. The admin pages
(``/admin``, ``/admin/export.csv``, ``/admin/export.jsonl``) need the admin token (``?token=`` or the
``X-Admin-Token`` header; else 403, saying whether it is missing or wrong). An unexpected error shows a short
page (the progress is saved) and goes to the server log, never to the participant.

Every response, error pages included, carries the same security headers (no framing, no sniffing, no referrer,
no caching, a content security policy under which no inline script runs: the chat's script is
``/static/chat.js``). Form fields are UTF-8 text or the request is refused (400: a file sent in a form field
is never a message, and bytes that are not UTF-8 are never stored as mojibake); new sessions are rate limited
per client address (``arrival_limit`` per ``arrival_window_s``: 429, with ``Retry-After``: the seconds until
the window frees a place; a session's messages likewise, with ``rate_window_s``); a request body is at most 64
KiB (413) and arrives within ``BODY_TIMEOUT`` seconds (408; late headers: ``scope_envs.serve.protocol``); the
survey is saved once (a second submit is answered 409 and changes nothing). A message the game did not accept
is shown with a note in the person's words (``games.participant_note``), never the engine's error. In
``sessions.csv`` a text cell that a spreadsheet would run as a formula (it starts with ``= + - @``, a tab or a
carriage return) is prefixed with ``'``, as OWASP recommends.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import logging
import math
import secrets
import threading
import time
from urllib.parse import quote, unquote_to_bytes

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from scope_envs.serve.protocol import read_body, replaying
from scope_envs.study.engine import (
    ID_RULE,
    DuplicateParticipant,
    NotYourTurn,
    Refused,
    Study,
    StudyFull,
    participant_id,
)
from scope_envs.study.games import participant_note
from scope_envs.study.pages import SCRIPTS, render

COOKIE = "scope_study"
STAGE_PAGE = {"consent": "/consent", "role": "/role", "chat": "/chat", "survey": "/survey", "complete": "/done",
              "declined": "/declined"}
MAX_ID = 64
log = logging.getLogger("scope_envs.study")
# no framing, no sniffing, no referrer (admin URLs carry the token), nothing cached between people; scripts
# only as this server's files (/static/chat.js: no inline script runs, so one slipped into a page would not),
# styles from the page itself, forms only to this server
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' "
                               "'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; form-action 'self'; "
                               "base-uri 'none'; object-src 'none'",
}
NOT_UTF8 = "Your browser sent characters that are not valid text (UTF-8); please type your answer again."
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MAX_BODY = 64 * 1024  # bytes of a request body: every form here is a few hundred
BODY_TIMEOUT = 30.0  # seconds a request body may take to arrive (uvicorn waits for a stalled one forever)


def page(name: str, status: int = 200, headers: dict | None = None, **context) -> HTMLResponse:
    return HTMLResponse(render(name, **context), status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def spreadsheet_safe(value):
    """A CSV cell that no spreadsheet runs as a formula: text starting with ``= + - @``, a tab or a carriage
    return gets a leading ``'`` (OWASP's CSV injection advice); numbers and other text are kept."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class NotText(ValueError):
    """A form field that is not text (a file upload)."""


def text_fields(form, names) -> dict[str, str]:
    """The form's fields as text ('' when absent); ``NotText`` when one is a file."""
    out = {}
    for name in names:
        value = form.get(name)
        if value is not None and not isinstance(value, str):
            raise NotText(name)
        out[name] = value or ""
    return out


class NotUTF8(ValueError):
    """A form whose bytes are not UTF-8 (a browser always sends UTF-8 here): refused, never stored as mojibake."""


def utf8_form(body: bytes, content_type: str) -> dict[str, str] | None:
    """The fields of a form body decoded strictly as UTF-8: a dict for ``application/x-www-form-urlencoded``
    (percent-escapes decoded to bytes first), None for other kinds (multipart is checked whole; Starlette
    parses it). ``NotUTF8`` when any byte sequence is not UTF-8 (Starlette would put U+FFFD or Latin-1
    mojibake in its place)."""
    kind = content_type.split(";")[0].strip().lower()
    try:
        if kind == "application/x-www-form-urlencoded":
            fields = {}
            for pair in body.split(b"&"):
                if pair:
                    name, _, value = pair.partition(b"=")
                    fields[unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8")] = \
                        unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8")
            return fields
        if kind == "multipart/form-data":
            body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotUTF8() from None
    return None


class BodyTimeout:
    """ASGI middleware: a request body (at most ``MAX_BODY`` bytes, declared) is read whole before the app runs;
    one that does not arrive within ``timeout`` seconds (shorter than its Content-Length) is answered
    ``answer`` (a 408 page) and the connection closed. uvicorn waits for a stalled body forever, and the page
    reading it held the connection with it. A body too long or chunked goes on unread: the app refuses it (413)."""

    def __init__(self, app, timeout: float, answer):
        self.app, self.timeout, self.answer = app, timeout, answer

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers", [])) if scope["type"] == "http" else {}
        length = headers.get(b"content-length", b"")
        if not (length.isdigit() and 0 < int(length) <= MAX_BODY) or b"chunked" in headers.get(b"transfer-encoding", b""):
            return await self.app(scope, receive, send)
        raw, first, stopped = await read_body(receive, self.timeout)  # first: the client left
        if stopped:
            return await self.answer()(scope, receive, send)
        await self.app(scope, replaying(raw, first, receive), send)


class ArrivalLimit:
    """At most ``limit`` new sessions per client address within ``window`` seconds (in memory)."""

    def __init__(self, limit: int, window: float, max_clients: int = 100_000):
        self.limit, self.window, self.max_clients = limit, window, max_clients
        self.seen: dict[str, collections.deque] = {}
        self.guard = threading.Lock()

    def wait(self, client: str) -> float:
        """0 when ``client`` may start a session now (counted), else the seconds until its window frees one."""
        now = time.monotonic()
        with self.guard:
            if len(self.seen) >= self.max_clients:  # forget clients with nothing in the window
                self.seen = {k: q for k, q in self.seen.items() if q and q[-1] > now - self.window}
            times = self.seen.setdefault(client, collections.deque())
            while times and times[0] <= now - self.window:
                times.popleft()
            if len(times) >= self.limit:
                return max(times[len(times) - self.limit] + self.window - now, 0.001)
            times.append(now)
            return 0.0

    def allow(self, client: str) -> bool:
        return self.wait(client) == 0.0


def retry_after(seconds: float) -> dict[str, str]:
    """The ``Retry-After`` header of a 429: whole seconds, rounded up, at least 1."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def create_app(study: Study) -> FastAPI:
    cfg = study.cfg
    token = cfg.token()  # ConfigError for a short, empty or blank token: there is no "no token"
    arrivals = ArrivalLimit(cfg.arrival_limit, cfg.arrival_window_s)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.study = study

    def too_slow():
        return page("message.html", 408, {"Connection": "close"}, title=cfg.title, heading="Please try again",
                    text="Your browser took too long to send this form; please go back and send it again.")

    @app.middleware("http")
    async def headers(request: Request, call_next):
        length = request.headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY or "chunked" in request.headers.get("transfer-encoding", ""):
            return page("message.html", 413, title=cfg.title, heading="Too long",
                        text="This request is longer than any answer here; please go back and try again.")
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    app.add_middleware(BodyTimeout, timeout=BODY_TIMEOUT, answer=too_slow)  # outermost: before any page reads a body

    def current(request: Request):
        return study.store.session_by_secret(request.cookies.get(COOKIE))

    def go(row, here: str):
        """A redirect to the session's stage when it is not ``here`` (None when it is)."""
        if row is None:
            return RedirectResponse("/", 303)
        target = STAGE_PAGE[row.stage]
        return None if target == here else RedirectResponse(target, 303)

    def admin_refusal(request: Request) -> str | None:
        """Why the request may not see the admin pages (no token, or a wrong one); None when it may."""
        given = request.query_params.get("token") or request.headers.get("x-admin-token") or ""
        if not given:
            return "The admin token is missing."
        return None if secrets.compare_digest(given.encode(), token.encode()) else "The admin token is wrong."

    def not_text():
        return page("message.html", 400, title=cfg.title, heading="Please try again",
                    text="Only text can be sent in this form; please go back and type your answer.")

    async def form_fields(request: Request, names) -> dict[str, str]:
        """The form's fields as text ('' when absent): ``NotText`` for a file, ``NotUTF8`` for bytes that are
        not UTF-8."""
        body = await request.body()  # first: Starlette's form parser then reads the cached body
        strict = utf8_form(body, request.headers.get("content-type", ""))
        form = text_fields(await request.form(), names)
        return form if strict is None else {name: strict.get(name, "") for name in names}

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception):
        log.exception("error on %s", request.url.path)
        return page("message.html", 500, title=cfg.title, heading="Something went wrong",
                    text="Sorry, something went wrong on our side. Your answers so far are saved: please reload the "
                         "page in a moment.")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return page("message.html", exc.status_code, title=cfg.title, heading="Not found" if exc.status_code == 404
                    else "Not allowed", text="This page does not exist." if exc.status_code == 404 else str(exc.detail))

    @app.exception_handler(NotText)
    async def file_in_form(request: Request, exc: NotText):
        return not_text()

    @app.exception_handler(NotUTF8)
    async def not_utf8(request: Request, exc: NotUTF8):
        if request.url.path == "/chat" and (row := await run_in_threadpool(current, request)) is not None \
                and row.stage == "chat":
            return await run_in_threadpool(chat_page, row, NOT_UTF8, 400)
        return page("message.html", 400, title=cfg.title, heading="Please try again", text=NOT_UTF8)

    @app.exception_handler(RequestValidationError)
    async def bad_form(request: Request, exc: RequestValidationError):
        return page("message.html", 400, title=cfg.title, heading="Please try again",
                    text="The form was not complete; please go back and fill it in.")

    @app.get("/", response_class=HTMLResponse)
    def arrive(request: Request):
        row = current(request)
        q = request.query_params
        pid = (q.get("PROLIFIC_PID") or "").strip()
        if row is not None and participant_id(pid) in (None, row.prolific_pid):
            return go(row, None)  # a reload, the link again: this browser's session resumes (another id: its own)
        if not pid:
            return page("message.html", title=cfg.title, heading=cfg.title,
                        text="Please open this study from its Prolific link, or enter your Prolific ID.", form=True)
        wait = arrivals.wait(request.client.host if request.client else "?")
        if wait:
            return page("message.html", 429, headers=retry_after(wait), title=cfg.title, heading="Please wait a moment",
                        text="Too many new sessions were started from your connection; please try again in a minute.")
        try:
            _, secret = study.arrive(pid, q.get("STUDY_ID") or None, q.get("SESSION_ID") or None)
        except ValueError:
            return page("message.html", 400, title=cfg.title, heading="Invalid link",
                        text=f"The ids in this link are not valid: we accept {ID_RULE}.")
        except DuplicateParticipant:
            return page("message.html", 409, title=cfg.title, heading="Already started",
                        text="This Prolific ID already has a session. Please continue in the browser where you "
                             "started it; each person can take part once.")
        except StudyFull:
            return page("message.html", 410, title=cfg.title, heading="The study is full",
                        text="Thank you for your interest: every place in this study is taken.")
        response = RedirectResponse("/consent", 303)
        response.set_cookie(COOKIE, secret, httponly=True, samesite="lax", secure=cfg.secure_cookie,
                            max_age=7 * 24 * 3600)
        return response

    @app.get("/consent", response_class=HTMLResponse)
    def consent(request: Request):
        row = current(request)
        return go(row, "/consent") or page("consent.html", title=cfg.title, max_chars=cfg.max_message_chars)

    @app.post("/consent")
    async def consent_post(request: Request):
        row = await run_in_threadpool(current, request)
        if (r := go(row, "/consent")) is not None:
            return r
        answer = (await form_fields(request, ["agree"]))["agree"]
        if answer not in ("yes", "no"):  # an empty or odd form is no answer: asked again, never a refusal
            return page("consent.html", 400, title=cfg.title, max_chars=cfg.max_message_chars,
                        notice="Please choose one of the two buttons below.")
        agree = answer == "yes"
        try:
            await run_in_threadpool(study.consent, row.id, agree)
        except StudyFull:
            return page("message.html", 410, title=cfg.title, heading="The study is full",
                        text="Thank you for your interest: every place in this study was taken a moment ago.")
        return RedirectResponse("/role" if agree else "/declined", 303)

    @app.get("/declined", response_class=HTMLResponse)
    def declined(request: Request):
        row = current(request)
        return go(row, "/declined") or page("message.html", title=cfg.title, heading="Thank you",
                                            text="You chose not to take part. You can close this page.")

    @app.get("/role", response_class=HTMLResponse)
    def role(request: Request):
        row = current(request)
        return go(row, "/role") or page("role.html", title=cfg.title, card=study.card(row.id))

    @app.post("/role")
    def role_post(request: Request):
        row = current(request)
        if (r := go(row, "/role")) is not None:
            return r
        study.store.update_session(row.id, stage="chat")
        study.advance(row.id)  # the agent speaks first
        return RedirectResponse("/chat", 303)

    def chat_page(row, notice: str | None = None, status: int = 200):
        study.advance(row.id)  # a reply owed from before a restart
        st = study.state(row.id)
        if st["stage"] != "chat":
            return RedirectResponse(STAGE_PAGE[st["stage"]], 303)
        return page("chat.html", status, title=cfg.title, messages=st["messages"], your_turn=st["your_turn"],
                    owed=not st["your_turn"], final=st["final"], amounts=study.spec.amounts, notice=notice,
                    max_chars=cfg.max_message_chars, hint=study.spec.hint, game=cfg.game)

    @app.get("/chat", response_class=HTMLResponse)
    def chat(request: Request):
        row = current(request)
        return go(row, "/chat") or chat_page(row)

    def chat_step(row, text: str, form: dict):
        try:
            error = study.say(row.id, text, form)
        except Refused as e:
            if e.retry_after is None:
                return chat_page(row, str(e), 400)
            response = chat_page(row, str(e), 429)
            response.headers.update(retry_after(e.retry_after))
            return response
        except NotYourTurn:
            return RedirectResponse(STAGE_PAGE[study.store.session(row.id).stage], 303)
        if error is not None:  # the engine's wording stays in the database; the person reads theirs
            return chat_page(row, "Not sent to your partner. " + participant_note(error), 200)
        return RedirectResponse("/chat", 303)

    @app.post("/chat")
    async def chat_post(request: Request):
        row = await run_in_threadpool(current, request)
        if (r := go(row, "/chat")) is not None:
            return r
        fields = await form_fields(request, ("text", "amount", "end"))
        return await run_in_threadpool(chat_step, row, fields.pop("text"), fields)

    @app.get("/survey", response_class=HTMLResponse)
    def survey(request: Request):
        row = current(request)
        return go(row, "/survey") or page("survey.html", title=cfg.title, items=cfg.survey, game=cfg.game)

    def replay():
        return page("message.html", 409, title=cfg.title, heading="Already saved",
                    text="Your answers were saved already; this second submission changed nothing. "
                         f"Your completion code is {cfg.completion_code}.")

    @app.post("/survey")
    async def survey_post(request: Request):
        row = await run_in_threadpool(current, request)
        if row is not None and row.stage == "complete":
            return replay()
        if (r := go(row, "/survey")) is not None:
            return r
        outcome = study.spec.outcome_item
        form = await form_fields(request, [outcome, *[item["id"] for item in cfg.survey]])
        values = {}
        try:
            values[outcome] = float(form[outcome])
            if not (0 <= values[outcome] <= 2 if outcome == "donation" else values[outcome] in (0, 1)):
                raise ValueError
            for item in cfg.survey:
                values[item["id"]] = int(form[item["id"]])
                if not 1 <= values[item["id"]] <= 7:
                    raise ValueError
        except (TypeError, ValueError):
            return page("survey.html", 400, title=cfg.title, items=cfg.survey, game=cfg.game,
                        notice="Please answer every question (" + ("an amount from $0 to $2" if outcome == "donation"
                                                                   else "yes or no") + "; 1 to 7 for the others).")
        if not await run_in_threadpool(study.finish, row.id, values):
            return replay()  # another submit of this session was saved first
        return RedirectResponse("/done", 303)

    @app.get("/done", response_class=HTMLResponse)
    def done(request: Request):
        row = current(request)
        # the code percent-encoded in the link (a '&', '#', '?' or space would cut it short or add a parameter);
        # the page shows it as written
        return go(row, "/done") or page("done.html", title=cfg.title, code=cfg.completion_code,
                                        url=cfg.completion_url.format(code=quote(cfg.completion_code, safe="")))

    @app.get("/static/{name}")
    def static(name: str):
        if name not in SCRIPTS:
            raise StarletteHTTPException(404)
        return Response(SCRIPTS[name], media_type="text/javascript; charset=utf-8")

    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request):
        if refused := admin_refusal(request):
            return page("message.html", 403, title=cfg.title, heading="Not allowed", text=refused)
        # the export links carry the token that opened the page, whether it came as ?token= or as the header
        # (admin_refusal matched it: it is the study's token)
        return page("admin.html", title=cfg.title, progress=study.progress(), per_condition=cfg.per_condition,
                    baseline=cfg.baseline, token=token)

    @app.get("/admin/export.csv")
    def export_csv(request: Request):
        if refused := admin_refusal(request):
            return PlainTextResponse(refused, 403)
        rows = study.rows()
        buf = io.StringIO()
        fields = list(dict.fromkeys(k for r in rows for k in r)) or ["slot"]
        writer = csv.DictWriter(buf, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: spreadsheet_safe(v) for k, v in r.items()} for r in rows)
        return Response(buf.getvalue(), media_type="text/csv",
                        headers={"Content-Disposition": "attachment; filename=sessions.csv"})

    @app.get("/admin/export.jsonl")
    def export_jsonl(request: Request):
        if refused := admin_refusal(request):
            return PlainTextResponse(refused, 403)
        body = "".join(json.dumps(t) + "\n" for t in study.transcripts())
        return Response(body, media_type="application/x-ndjson",
                        headers={"Content-Disposition": "attachment; filename=transcripts.jsonl"})

    return app
