"""``scope_envs.serve.sessions`` and ``serve.rpc``: against a real ``scope-envs serve`` process, a session is held
by the connection that created or attached it (another attach, or an MCP close from anyone else, is refused
``SESSION_IN_USE``), the idle timeout frees attached sessions too, and ``/mcp``'s JSON-RPC errors name the field
without echoing the input."""

import json
import time

import pytest

from serve_fixtures import needs_openenv, post, serving

needs_openenv()
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with serving("p4g-cotrain", "--max-sessions", "6") as url:
        yield url


def ask(ws, message):
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def new_session(url) -> dict:
    """The first answer a new /ws socket gets to a reset (a full server answers CAPACITY_REACHED and closes)."""
    with connect(url.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        try:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        except ConnectionClosed:
            pass  # (closed after its error frame, which is still read)
        return json.loads(ws.recv(timeout=30))


def rpc(method, rid=1, **params):
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": rid}


def refused_attach(url, sid, code, wait: float = 0.0):
    """An attach to ``sid`` is answered one error frame with ``code``, then the socket closes (within ``wait``
    seconds: the server lets go of a session once it sees its socket close)."""
    deadline = time.monotonic() + wait
    while True:
        with connect(url.replace("http", "ws") + f"/ws?session_id={sid}", open_timeout=30) as ws:
            frame = json.loads(ws.recv(timeout=30))
            if frame["type"] == "error" and frame["data"]["code"] == code:
                assert frame["data"]["message"].startswith(code + ":") and sid not in frame["data"]["message"]
                with pytest.raises(ConnectionClosed):
                    ws.recv(timeout=30)
                return
        assert time.monotonic() < deadline, frame
        time.sleep(0.2)


def attach(url, sid):
    return connect(url.replace("http", "ws") + f"/ws?session_id={sid}", open_timeout=30)


def test_a_sockets_own_session_cannot_be_attached_or_closed_by_another(server):
    """Client A's /ws session, whose id A learns over MCP, is not B's to play (attach refused) nor anyone's to close
    (HTTP /mcp, another socket's mcp message): A's step count stays 0 and A plays on."""
    with connect(server.replace("http", "ws") + "/ws", open_timeout=30) as a:
        assert ask(a, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        sid = ask(a, {"type": "mcp", "data": rpc("openenv/session/create")})["data"]["result"]["session_id"]
        refused_attach(server, sid, "SESSION_IN_USE")
        status, body = post(server + "/mcp", rpc("openenv/session/close", session_id=sid))
        assert status == 200 and body["error"]["data"]["code"] == "SESSION_IN_USE", body
        assert "params.session_id" in body["error"]["message"] and sid not in json.dumps(body["error"])
        with connect(server.replace("http", "ws") + "/ws", open_timeout=30) as c:
            answer = ask(c, {"type": "mcp", "data": rpc("openenv/session/close", session_id=sid)})
            assert answer["type"] == "mcp" and answer["data"]["error"]["data"]["code"] == "SESSION_IN_USE", answer
        with connect(server.replace("http", "ws") + "/mcp", open_timeout=30) as m:
            answer = ask(m, rpc("openenv/session/close", session_id=sid))
            assert answer["error"]["data"]["code"] == "SESSION_IN_USE", answer
        assert ask(a, {"type": "state"})["data"]["step_count"] == 0
        obs = ask(a, {"type": "reset", "data": {"seed": 1}})
        assert obs["type"] == "observation", obs
    refused_attach(server, sid, "UNKNOWN_SESSION", wait=20)  # A's socket went, and its session with it
    refused_attach(server, "not-a-session", "UNKNOWN_SESSION")


def test_an_http_session_is_held_by_its_first_attach_until_it_goes(server):
    """A session made over HTTP MCP is bound to the first /ws that attaches: a second attach and an HTTP close are
    refused while it is there; once it has gone, the id's holder attaches again (the episode kept) or closes it."""
    sid = post(server + "/mcp", rpc("openenv/session/create"))[1]["result"]["session_id"]
    with attach(server, sid) as first:
        assert ask(first, {"type": "reset", "data": {"seed": 3}})["type"] == "observation"
        refused_attach(server, sid, "SESSION_IN_USE")
        body = post(server + "/mcp", rpc("openenv/session/close", session_id=sid))[1]
        assert body["error"]["data"]["code"] == "SESSION_IN_USE", body
        state = ask(first, {"type": "state"})["data"]
    deadline = time.monotonic() + 20
    while True:  # (the server lets go of the attachment once it sees the socket close)
        with attach(server, sid) as again:
            answer = ask(again, {"type": "state"})
        if answer["type"] == "state":
            break
        assert answer["data"]["code"] == "SESSION_IN_USE" and time.monotonic() < deadline, answer
        time.sleep(0.2)
    assert answer["data"]["episode_id"] == state["episode_id"]
    deadline = time.monotonic() + 20
    while True:
        body = post(server + "/mcp", rpc("openenv/session/close", session_id=sid))[1]
        if "result" in body:
            break
        assert body["error"]["data"]["code"] == "SESSION_IN_USE" and time.monotonic() < deadline, body
        time.sleep(0.2)
    assert body["result"]["closed"] is True
    refused_attach(server, sid, "UNKNOWN_SESSION")


def test_mcp_errors_name_the_field_without_echoing_the_input(server):
    """Every malformed JSON-RPC request, over HTTP /mcp, an /mcp socket and a /ws mcp message, is a JSON-RPC error
    naming the field; nothing sent comes back (OpenEnv's own answers quote the method, the id, the whole input)."""
    junk = "q" * 5000
    cases = [({"jsonrpc": "2.0", "method": junk, "id": 1}, "method", -32601),
             ({"jsonrpc": "2.0", "method": "tools/list", "id": 1, junk: 1}, "unknown key", -32600),
             ({"jsonrpc": "1.0" + junk, "method": "tools/list", "id": 1}, "jsonrpc", -32600),
             ({"jsonrpc": "2.0", "method": "tools/list", "id": junk}, "id", -32600),
             ({"jsonrpc": "2.0", "method": "openenv/session/create", "params": [junk], "id": 1}, "params", -32602),
             (rpc("openenv/session/close", session_id=junk), "params.session_id", -32602),
             (rpc("openenv/session/close", session_id="q" * 36), "params.session_id", -32602),
             ([junk], "object", -32600)]

    def check(error, said, code, case):
        assert error["code"] == code and said in error["message"], (case, error)
        assert "q" * 36 not in json.dumps(error), (case, error)

    for case, said, code in cases:
        status, body = post(server + "/mcp", case)
        assert status == 200 and "result" not in body, (case, body)
        check(body["error"], said, code, case)
        assert body["id"] in (1, None)
    with connect(server.replace("http", "ws") + "/mcp", open_timeout=30) as m, \
            connect(server.replace("http", "ws") + "/ws", open_timeout=30) as w:
        for case, said, code in cases:
            check(ask(m, case)["error"], said, code, case)
            answer = ask(w, {"type": "mcp", "data": case})
            assert answer["type"] in ("mcp", "error"), answer
            if answer["type"] == "mcp":
                check(answer["data"]["error"], said, code, case)
            else:  # (data that is not an object: the /ws frame check's BAD_REQUEST)
                assert answer["data"]["code"] == "BAD_REQUEST" and "q" * 36 not in json.dumps(answer)
        assert ask(m, rpc("openenv/session/create"))["id"] == 1  # each socket goes on
        assert ask(w, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_mcp_tool_methods_are_methods_this_server_does_not_have(server):
    """tools/list and tools/call were OpenEnv's -32603 (an internal error) "Environment does not support MCP", data
    null, while the unknown-method error listed them as answered: the env has no MCP tools, so each is -32601 (method
    not found) saying so, on every transport, and the unknown-method error no longer offers them."""
    cases = [rpc("tools/list"), rpc("tools/call", name="x"), rpc("tools/call", session_id="q" * 36, name="x")]

    def check(answer, case):
        error = answer["error"]
        assert error["code"] == -32601 and error["data"] == {"code": "BAD_REQUEST"}, (case, error)
        assert "no MCP tools" in error["message"] and "/ws" in error["message"], (case, error)

    for case in cases:
        status, body = post(server + "/mcp", case)
        assert status == 200 and "result" not in body and body["id"] == 1, body
        check(body, case)
    with connect(server.replace("http", "ws") + "/mcp", open_timeout=30) as m, \
            connect(server.replace("http", "ws") + "/ws", open_timeout=30) as w:
        for case in cases:
            check(ask(m, case), case)
            answer = ask(w, {"type": "mcp", "data": case})
            assert answer["type"] == "mcp", answer
            check(answer["data"], case)
    unknown = post(server + "/mcp", rpc("frobnicate"))[1]["error"]
    assert unknown["code"] == -32601 and "tools/" not in unknown["message"], unknown
    assert "openenv/session/create" in unknown["message"]


@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_the_idle_timeout_frees_attached_sessions():
    """Two sessions made over HTTP MCP and held by idle attached sockets fill --max-sessions 2; past --idle-timeout
    they are freed like plain /ws sessions (a new /ws gets a session), and the idle sockets read SESSION_LOST."""
    with serving("p4g-cotrain", "--max-sessions", "2", "--idle-timeout", "2") as url:
        sids = [post(url + "/mcp", rpc("openenv/session/create", rid=i))[1]["result"]["session_id"] for i in range(2)]
        holders = [attach(url, s) for s in sids]
        try:
            for ws in holders:
                assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            assert new_session(url)["data"]["code"] == "CAPACITY_REACHED"
            deadline = time.monotonic() + 15
            while True:
                answer = new_session(url)
                if answer["type"] == "observation":
                    break
                assert answer["data"]["code"] == "CAPACITY_REACHED" and time.monotonic() < deadline, answer
                time.sleep(0.5)
            for ws in holders:
                lost = ask(ws, {"type": "reset", "data": {"seed": 0}})
                assert lost["type"] == "error" and lost["data"]["code"] == "SESSION_LOST", lost
        finally:
            for ws in holders:
                ws.close()
