"""The server: a real ``scope-envs serve`` process driven by OpenEnv's own client and raw requests.

Each test asserts what the protocol promises: per-agent observations tagged with role, both seats or one
seat driven, isolated sessions, the session limit and idle timeout, the batched endpoint, and every kind of
bad input or fault answered by a clear protocol error (never a 500, never a silent new episode).
"""

import json
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import scope_envs
from serve_fixtures import needs_openenv, post, serving

needs_openenv()
from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402


@pytest.fixture(scope="module")
def cotrain():
    with serving("p4g-cotrain", "--max-sessions", "3", "--max-body-bytes", "65536", "--max-vec-sessions", "2",
                 "--max-num-envs", "64", "--body-timeout", "3") as url:
        yield url


def client(url):
    return GenericEnvClient(base_url=url, message_timeout_s=30).sync()


def legal(entry, rng):
    return int(rng.choice(np.flatnonzero(entry["action_mask"])))


def server_error(fn):
    with pytest.raises(RuntimeError, match="Server error") as e:
        fn()
    return str(e.value)


def test_openenv_client_plays_both_seats_as_in_process(cotrain):
    """OpenEnv's GenericEnvClient plays a whole co-training episode; every step is the in-process env's."""
    local = scope_envs.make("p4g-cotrain")
    lobs, _ = local.reset(seed=5)
    rng = np.random.default_rng(0)
    with client(cotrain) as env:
        result = env.reset(seed=5)
        steps = 0
        while not result.done:
            agents = result.observation["agents"]
            assert set(agents) == set(local.agents) == {"agent_0", "user_0"}
            assert {a: e["role"] for a, e in agents.items()} == {"agent_0": "persuader", "user_0": "persuadee"}
            for a, e in agents.items():
                np.testing.assert_array_equal(np.asarray(e["observation"], np.float32), lobs[a]["observation"])
            acts = {a: legal(e, rng) if e["active"] else 0 for a, e in agents.items()}
            result = env.step({"actions": acts})
            lobs, lrew, lterm, ltrunc, _ = local.step(acts)
            got = result.observation["agents"]
            assert {a: e["reward"] for a, e in got.items()} == pytest.approx(lrew)
            assert result.reward == pytest.approx(lrew["agent_0"])  # OpenEnv's one reward: agent_0's
            steps += 1
            assert steps < 200
        assert not local.agents and result.observation["live"] == []
        state = env.state()
        assert state["step_count"] == steps and state["env_id"] == "p4g-cotrain"


def test_one_seat_driven_the_other_played_on_the_server(cotrain):
    with client(cotrain) as env:
        result = env.reset(seed=1, drive=["agent_0"])
        turns = []
        while not result.done:
            agents = result.observation["agents"]
            assert list(agents) == ["agent_0"] and agents["agent_0"]["active"]  # always the driven seat's turn
            turns.append(agents["agent_0"]["info"]["turn"])
            result = env.step({"actions": {"agent_0": int(np.flatnonzero(agents["agent_0"]["action_mask"])[0])}})
            assert len(turns) < 100
        assert len(turns) > 1 and all(b - a == 2 for a, b in zip(turns, turns[1:])), "the user replied each turn"
        # the user seat alone: the server's scripted persuader plays agent_0
        result = env.reset(seed=1, drive=["user_0"])
        assert list(result.observation["agents"]) == ["user_0"] and result.observation["agents"]["user_0"]["active"]
        assert "played by the server" in server_error(lambda: env.step({"actions": {"agent_0": 1}}))


def test_sessions_are_isolated(cotrain):
    with client(cotrain) as a, client(cotrain) as b:
        ra, rb = a.reset(seed=3), b.reset(seed=4)
        before = b.state()
        for _ in range(3):
            e = ra.observation["agents"]
            ra = a.step({"actions": {k: (legal(v, np.random.default_rng(0)) if v["active"] else 0) for k, v in e.items()}})
        assert b.state() == before  # stepping a left b untouched
        other = rb.observation["episode_id"]
        message = server_error(lambda: a.step({"actions": {"agent_0": 0}, "episode_id": other}))
        assert "BAD_REQUEST" in message and "episode_id" in message and "not this session's" in message


def test_session_limit(cotrain):
    clients = [client(cotrain) for _ in range(3)]
    try:
        for c in clients:
            c.reset(seed=0)
        extra = client(cotrain)
        assert "CAPACITY_REACHED" in server_error(lambda: extra.reset(seed=0))
    finally:
        for c in clients:
            c.close()
    # the slots come back once the sessions close
    deadline = time.monotonic() + 20
    while True:
        try:
            with client(cotrain) as c:
                c.reset(seed=0)
            break
        except RuntimeError:
            assert time.monotonic() < deadline, "closed sessions did not free their slots"
            time.sleep(0.2)


def test_bad_input_over_the_websocket(cotrain):
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        def ask(raw):
            ws.send(raw)
            return json.loads(ws.recv(timeout=30))

        assert ask("{not json")["data"]["code"] == "INVALID_JSON"
        first = ask(json.dumps({"type": "step", "data": {"actions": {"agent_0": 1}}}))["data"]
        assert "NO_EPISODE" in first["message"]
        assert ask(json.dumps({"type": "reset", "data": {"seed": 0, "bogus": 1}}))["data"]["message"].startswith(
            "BAD_REQUEST: reset takes")
        assert "BAD_REQUEST" in ask(json.dumps({"type": "reset", "data": {"seed": "zero"}}))["data"]["message"]
        obs = ask(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert obs["type"] == "observation"
        wrong = ask(json.dumps({"type": "step", "data": {"actions": {"agent_0": "hello"}}}))["data"]
        assert "must be an int act" in wrong["message"]
        typed = ask(json.dumps({"type": "step", "data": {"actions": {"agent_0": 1.5}}}))["data"]
        assert typed["code"] == "BAD_REQUEST" and "actions" in typed["message"]
        unknown = ask(json.dumps({"type": "step", "data": {"actions": {"user_9": 0}}}))["data"]["message"]
        assert "user_9" in unknown
        mask = np.asarray(obs["data"]["observation"]["agents"]["agent_0"]["action_mask"])
        masked = int(np.flatnonzero(mask == 0)[0])
        message = ask(json.dumps({"type": "step", "data": {"actions": {"agent_0": masked}}}))["data"]["message"]
        assert "agent_0" in message and "BAD_REQUEST" in message
        assert ask(json.dumps({"type": "dance"}))["data"]["code"] == "UNKNOWN_TYPE"
        # the session survived every error: the episode plays on to its end, then a step is EPISODE_OVER
        rng = np.random.default_rng(1)
        data = obs["data"]
        while not data["done"]:
            agents = data["observation"]["agents"]
            acts = {a: legal(e, rng) if e["active"] else 0 for a, e in agents.items()}
            data = ask(json.dumps({"type": "step", "data": {"actions": acts}}))["data"]
        assert "EPISODE_OVER" in ask(json.dumps({"type": "step", "data": {"actions": {"agent_0": 0}}}))["data"]["message"]


@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_disconnect_mid_episode_frees_the_session(cotrain):
    for _ in range(4):  # more than the limit of 3: each dropped socket's session was destroyed
        ws = connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30)
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        ws.recv(timeout=30)
        ws.socket.close()  # no close frame: the client vanished mid-episode
        time.sleep(0.3)
    with client(cotrain) as c:
        assert not c.reset(seed=0).done


def test_bad_input_over_http(cotrain):
    status, body = post(cotrain + "/step", {"action": {"actions": {"agent_0": 1}}})
    assert status == 409 and body["code"] == "NO_EPISODE"  # OpenEnv's HTTP /step is stateless
    status, body = post(cotrain + "/step", None, raw=b'{"action": ')
    assert status == 422
    status, body = post(cotrain + "/step", {"action": {"actions": "agent_0"}})
    assert status == 422
    status, body = post(cotrain + "/reset", None, raw=b"x" * 70000)
    assert status == 413 and body["code"] == "BODY_TOO_LARGE"
    status, body = post(cotrain + "/scope/vec/nope/step", {"actions": {}})
    assert status == 404 and body["code"] == "UNKNOWN_SESSION"
    status, body = post(cotrain + "/scope/vec/0123456789ab." + "feed" * 8 + "/step", {"actions": {}})
    assert status == 410 and "restarted" in body["detail"]  # an id of another boot's form: issued before a restart
    status, body = post(cotrain + "/scope/vec/nope.nope/step", {"actions": {}})
    assert status == 404 and body["code"] == "UNKNOWN_SESSION"  # never issued by any boot
    status, body = post(cotrain + "/scope/vec", {"num_envs": 100000})
    assert status == 422 and "at most 64" in body["detail"]
    status, body = post(cotrain + "/scope/vec", {"num_envs": "4"})
    assert status == 422


def test_batched_endpoint_matches_make_vec(cotrain):
    from scope_envs.serve.codec import pack, unpack

    status, opened = post(cotrain + "/scope/vec", {"num_envs": 8})
    assert status == 200
    sid = opened["session_id"]
    base = f"{cotrain}/scope/vec/{sid}"
    local = scope_envs.make_vec("p4g-cotrain", num_envs=8)
    status, out = post(base + "/step", {"actions": {}})
    assert status == 409 and out["code"] == "NO_EPISODE"
    lobs, _ = local.reset(seed=2)
    obs = unpack(post(base + "/reset", {"seed": 2})[1])["obs"]
    rng = np.random.default_rng(0)
    for _ in range(30):
        for a in local.possible_agents:
            np.testing.assert_array_equal(obs[a]["observation"], lobs[a]["observation"])
        acts = {a: np.array([rng.choice(np.flatnonzero(m)) for m in lobs[a]["action_mask"]]) for a in lobs}
        lobs, lrew, *_ = local.step(acts)
        status, out = post(base + "/step", {"actions": {a: pack(v) for a, v in acts.items()}})
        assert status == 200
        out = unpack(out)
        obs = out["obs"]
        for a in lrew:
            np.testing.assert_array_equal(out["rewards"][a], lrew[a])
    status, bad = post(base + "/step", {"actions": {"agent_0": pack(np.zeros(3, np.int64))}})
    assert status == 422 and "must be 8 ints" in bad["detail"]
    masked = np.array([int(np.flatnonzero(m == 0)[0]) for m in lobs["agent_0"]["action_mask"]])
    status, bad = post(base + "/step", {"actions": {"agent_0": pack(masked), "user_0": pack(np.zeros(8, np.int64))}})
    assert status == 422
    assert post(base, None, method="DELETE")[0] == 200
    status, gone = post(base + "/step", {"actions": {}})
    assert status == 410 and gone["code"] == "SESSION_LOST"


def test_idle_timeout_reports_the_session_lost():
    with serving("p4g-frozen", "--idle-timeout", "1") as url:
        with client(url) as env:
            env.reset(seed=0)
            status, opened = post(url + "/scope/vec", {"num_envs": 2})
            time.sleep(7)  # OpenEnv's reaper looks every max(timeout / 4, 5) s
            message = server_error(lambda: env.step({"actions": {"agent_0": 1}}))
            assert "SESSION_LOST" in message and "closed" in message
        status, body = post(f"{url}/scope/vec/{opened['session_id']}/step", {"actions": {}})
        assert status == 410 and "idle" in body["detail"]


def test_population_pool_takes_a_pushed_snapshot():
    with serving("p4g-population", "--kwarg", "pool_size=3") as url:
        with client(url) as env:
            spec = json.loads(urllib.request.urlopen(url + "/scope/spec", timeout=30).read())
            obs_dim = spec["observation_spaces"]["user_0"]["spaces"]["observation"]["shape"][0]
            n = spec["action_spaces"]["user_0"]["n"]
            rng = np.random.default_rng(0)
            wire = {"layers": [{"weight": rng.normal(size=(8, obs_dim)).tolist(), "bias": [0.0] * 8},
                               {"weight": rng.normal(size=(n, 8)).tolist(), "bias": [0.0] * n}]}
            env.reset(seed=0, snapshot=wire)
            assert env.state()["pool_entries"] == 2
            env.reset(seed=1, snapshot=wire)
            env.reset(seed=2, snapshot=wire)
            assert env.state()["pool_entries"] == 3  # FIFO: a full pool drops its oldest snapshot
            # the snapshots play: over a few episodes the live user (user_0) sits some out
            live = set()
            for s in range(12):
                live.add(tuple(env.reset(seed=10 + s, drive=["agent_0", "user_0"]).observation["agents"]))
            assert ("agent_0",) in live and ("agent_0", "user_0") in live
            bad = {"layers": [{"weight": [[1.0] * 3], "bias": [0.0]}]}
            assert "do not take inputs of width" in server_error(lambda: env.reset(seed=0, snapshot=bad))


def test_text_surface_with_openenv_client():
    with serving("tau2-cotrain", "--surface", "text") as url:
        with client(url) as env:
            result = env.reset(seed=0)
            agents = result.observation["agents"]
            assert isinstance(agents["agent_0"]["observation"], str) and agents["agent_0"]["action_mask"] is None
            assert "messages" in agents["agent_0"]["info"]
            speaker = next(a for a, e in agents.items() if e["active"])
            result = env.step({"actions": {speaker: "Hello, how can I help?"}})
            assert result.observation["agents"][speaker]["info"]["turn"] >= 1
            assert "must be a string" in server_error(lambda: env.step({"actions": {"agent_0": 3}}))
            status, body = post(url + "/scope/vec", {"num_envs": 2})
            assert status == 422 and "act surface" in body["detail"]
            long = "x" * 5000  # past the env's 4000 characters: an in-game error, not a protocol one
            speaker = next(a for a, e in result.observation["agents"].items() if e["active"])
            result = env.step({"actions": {speaker: long}})
            assert result.observation["agents"][speaker]["info"]["errors"] == 1


# Each bad command line through ``main`` with its exit and stderr, in one interpreter (a start is seconds); a
# command that passed its checks would serve, and the timeout would fail the test.
_RUN_EACH = """
import contextlib, io, json, sys
from scope_envs.cli import main
out = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main(["serve", *args])
            code = 0
        except SystemExit as e:
            code = e.code
    out.append([code, err.getvalue()])
print(json.dumps(out))
"""


def test_cli_bounds():
    import subprocess
    import sys

    cases = ((["p4g-frozen", "--port", "70000"], "--port"), (["nope"], "id"),
             (["p4g-frozen", "--kwarg", "no-equals"], "--kwarg"),
             (["p4g-frozen", "--kwarg", "bogus=1", "--port", "0"], "bogus"),
             (["p4g-frozen", "--max-sessions", "99999"], "--max-sessions"),
             (["p4g-frozen", "--host", "999.1.1.1"], "--host"),
             (["p4g-frozen", "--idle-timeout", "inf"], "--idle-timeout"),
             *((["p4g-frozen", "--kwarg", f"max_turns={v}"], "--kwarg")
               for v in ("1e400", "NaN", "2.5", "1000000000", "99999999999999999999", "true")))
    done = subprocess.run([sys.executable, "-c", _RUN_EACH, json.dumps([args for args, _ in cases])],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    for (code, stderr), (args, name) in zip(json.loads(done.stdout), cases, strict=True):
        assert code == 2 and name in stderr and "Traceback" not in stderr, (args, stderr)


def test_a_port_in_use_is_an_argument_error_before_anything_is_printed():
    """Not "serving ... on" and then uvicorn's address-in-use error (exit 3): exit 2 naming --port, at once."""
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "scope_envs.cli", "serve", "p4g-frozen", "--port", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and f"argument --port: 127.0.0.1:{port} is in use" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "serving" not in out.stderr


def test_port_0_prints_the_port_the_server_listens_on():
    """``--port 0`` (any free port): the "serving ... on" line names the port the OS chose, and the server
    answers there (the line said ``:0``)."""
    import queue
    import re
    import subprocess
    import sys
    import threading

    from serve_fixtures import START_TIMEOUT, stop, wait_healthy

    proc = subprocess.Popen([sys.executable, "-m", "scope_envs.cli", "serve", "p4g-frozen", "--port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()  # read aside, so that a server that never says the line fails at the timeout
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        said = None
        while said is None:
            line = lines.get(timeout=START_TIMEOUT)
            said = re.match(r"serving p4g-frozen \(act\) on http://127\.0\.0\.1:(\d+) \(boot ", line)
        port = int(said.group(1))
        assert port != 0, line
        wait_healthy(f"http://127.0.0.1:{port}", proc)
    finally:
        stop(proc)


def test_the_printed_port_takes_connections_before_the_server_has_started():
    """serve and study serve print their URL once the socket is bound, and uvicorn then starts: a client that
    connected in between was refused (study's port-0 test failed so on a loaded machine). The sockets listen
    when bound, so such a client waits in the queue."""
    import socket

    from scope_envs.serve.cli import bound_sockets

    sockets = bound_sockets("127.0.0.1", 0)
    try:
        port = sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # no uvicorn behind it yet: queued, not refused
    finally:
        for sock in sockets:
            sock.close()


def test_every_bounded_option_states_its_bound_in_its_help():
    """A count or a duration is refused past its maximum (a typo of many digits fails at once): its help says
    that maximum, for every such option of ``serve``."""
    import argparse

    from scope_envs.serve.cli import add_parser, idle_seconds, temperature

    p = add_parser(argparse.ArgumentParser().add_subparsers())
    bounded = []
    for action in p._actions:
        if getattr(action.type, "maximum", None) is not None:  # arguments.count
            said = (f"{action.type.maximum:_}", f"{action.type.maximum:,}", str(action.type.maximum))
        elif action.type is idle_seconds:
            said = ("7 days",)
        elif action.type is temperature:
            said = ("to 10",)
        else:
            continue
        bounded.append(action.option_strings[0])
        assert action.help and any(s in action.help for s in said), (action.option_strings, action.help, said)
    assert {"--port", "--max-sessions", "--idle-timeout", "--body-timeout", "--header-timeout", "--user-llm-timeout",
            "--user-llm-retries"} <= set(bounded), bounded


def test_lone_surrogates_and_huge_input_are_4xx_naming_the_field(cotrain):
    for path, raw, field in (("/reset", b'{"episode_id":"\\udc00"}', "episode_id"), ("/reset", b'{"seed":"\\udc00"}', "seed"),
                             ("/scope/vec", b'{"num_envs":"\\udc00"}', "num_envs"),
                             ("/scope/vec", b'{"num_envs":1,"\\udc00":1}', "key"),
                             ("/step", b'{"action":{"actions":{"agent_0":"\\ud800"}}}', "actions.agent_0"),
                             ("/mcp", b'{"jsonrpc":"2.0","id":"\\udc00","method":"\\udc00"}', "id")):
        status, body = post(cotrain + path, None, raw=raw)
        assert status == 422 and body["code"] == "BAD_REQUEST" and field in body["detail"], (path, body)
    status, body = post(cotrain + "/reset", {"episode_id": "x" * 60000})
    assert status == 422 and len(json.dumps(body)) < 2000 and "episode_id" in body["detail"]
    status, body = post(cotrain + "/step", {"action": {"actions": {"agent_0": "x" * 65537}}}, raw=None)
    assert status in (413, 422)  # past this server's 64 KiB body limit or the wire cap; never a 500
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        def ask(raw):
            ws.send(raw)
            return json.loads(ws.recv(timeout=30))

        for raw in ("[1,2]", "null", '"str"', "1", "true", '{"type":"reset","data":{"options":' + "[" * 30000 + "]" * 30000 + "}}",
                    '{"type":"reset","data":{"episode_id":"\\udc00"}}'):
            answer = ask(raw)["data"]
            assert answer["code"] == "BAD_REQUEST" and "BAD_REQUEST" in answer["message"], (raw[:40], answer)
        assert "episode_id" in answer["message"]
        assert ask(json.dumps({"type": "reset", "data": {"seed": 0}}))["type"] == "observation"  # the session survived


def test_a_body_not_utf8_or_not_sent_as_json_is_422_saying_so(cotrain):
    """Bytes that are not UTF-8 in a JSON body were FastAPI's 400 "There was an error parsing the body" (the docs
    promise 422 for a bad request); a JSON body sent as text/plain (or with no Content-Type) was told "Input
    should be a valid dictionary". Both are 422 BAD_REQUEST saying what is wrong; the server goes on."""
    for path in ("/reset", "/step", "/scope/vec"):
        status, body = post(cotrain + path, None, raw=b'{"seed": "\xff\xfe"}')
        assert status == 422 and body["code"] == "BAD_REQUEST" and "not valid UTF-8" in body["detail"], (path, body)
        for kind in ("text/plain", None, "application/x-www-form-urlencoded"):
            req = urllib.request.Request(cotrain + path, data=b'{"num_envs": 2}', method="POST",
                                         headers={} if kind is None else {"content-type": kind})
            if kind is None:
                req.remove_header("Content-type")  # (urllib adds form-urlencoded to a body without one)
            try:
                urllib.request.urlopen(req, timeout=30)
                raise AssertionError(f"{path} {kind}: accepted")
            except urllib.error.HTTPError as e:
                status, body = e.code, json.loads(e.read())
            assert status == 422 and body["code"] == "BAD_REQUEST", (path, kind, body)
            assert "Content-Type: application/json" in body["detail"] and "must be JSON" in body["detail"], body
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 2})
    assert status == 200  # the same body as application/json
    post(f"{cotrain}/scope/vec/{opened['session_id']}", None, method="DELETE")


def test_an_unknown_session_id_is_not_echoed_whole(cotrain):
    """A 404 for a batched session id the server never issued echoed the whole id sent (tens of KB of a URL);
    at most its first 40 characters are echoed."""
    sid = "q" * 20000
    status, body = post(f"{cotrain}/scope/vec/{sid}/step", {"actions": {}})
    assert status == 404 and body["code"] == "UNKNOWN_SESSION", body
    assert len(body["detail"]) < 200 and repr("q" * 40) + "…" in body["detail"] and "q" * 41 not in body["detail"], body
    status, body = post(f"{cotrain}/scope/vec/nope/step", {"actions": {}})
    assert status == 404 and "'nope'" in body["detail"]  # a short id is named whole


def test_task_api_chunked_bodies_and_batched_seeds(cotrain):
    import http.client

    for method, path in (("GET", "/p4g-cotrain/splits"), ("POST", "/p4g-cotrain/tasks")):
        status, body = post(cotrain + path, {"split": "train"} if method == "POST" else None, method=method,
                            raw=None if method == "POST" else b"")
        assert status == 404 and "task API" in body["detail"]
    host, port = cotrain.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/reset", body=iter([b"x" * 30000] * 3), headers={"content-type": "application/json"},
                 encode_chunked=True)
    r = conn.getresponse()
    assert r.status == 413 and json.loads(r.read())["code"] == "BODY_TOO_LARGE"
    conn.close()
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 2})
    base = f"{cotrain}/scope/vec/{opened['session_id']}"
    for body, name in (({"seed": 10**30}, "seed"), ({"seed": 2**64}, "seed"), ({"seed": [0, -1]}, "seed[1]"),
                       ({"options": {"scenario_seed": 10**30}}, "options.scenario_seed"),
                       ({"options": {"scenario_seed": "x"}}, "options.scenario_seed"),
                       ({"options": [None, {"scenario_seed": -1}]}, "options[1].scenario_seed")):
        status, out = post(base + "/reset", body)
        assert status == 422 and name in out["detail"], (body, out)
    assert post(base + "/reset", {"seed": 2**63 - 1})[0] == 200
    post(base, None, method="DELETE")


def test_a_body_shorter_than_its_length_gets_408_and_the_server_goes_on(cotrain):
    """A client that declares more body than it sends is answered 408 after ``--body-timeout``, not held open."""
    import socket

    host, port = cotrain.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n"
                  b"\r\n{\"seed\": 0")
        start = time.monotonic()
        head = s.recv(65536).decode()
        waited = time.monotonic() - start
        while "REQUEST_TIMEOUT" not in head and (more := s.recv(65536)):  # (the body may come in a second packet)
            head += more.decode()
    assert head.startswith("HTTP/1.1 408") and "REQUEST_TIMEOUT" in head, head
    assert 2.5 < waited < 25, waited  # after the server's 3 s, not at once and not at the client's own timeout
    assert post(cotrain + "/reset", {"seed": 0})[0] == 200


def test_websocket_error_codes_are_the_documented_ones(cotrain):
    """data.code is the protocol error's own code (the message keeps it at its head); a validation error is
    BAD_REQUEST naming the field, its errors without the echoed input; a wrong episode_id is BAD_REQUEST."""
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        def ask(message):
            ws.send(json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        def error(message, code, *said):
            answer = ask(message)
            assert answer["type"] == "error", answer
            data = answer["data"]
            assert data["code"] == code and data["message"].startswith(code + ":"), (message, data)
            assert all(s in data["message"] for s in said), (message, data)
            return data

        error({"type": "step", "data": {"actions": {"agent_0": 1}}}, "NO_EPISODE")
        error({"type": "reset", "data": {"seed": "zero"}}, "BAD_REQUEST", "seed")
        error({"type": "reset", "data": {"seed": 0, "drive": ["user_9"]}}, "BAD_REQUEST", "user_9")
        obs = ask({"type": "reset", "data": {"seed": 0}})["data"]
        episode = obs["observation"]["episode_id"]
        error({"type": "step", "data": {"actions": {"user_9": 0}}}, "BAD_REQUEST", "user_9")
        wrong = error({"type": "step", "data": {"actions": {"agent_0": 0}, "episode_id": "not-" + episode}},
                      "BAD_REQUEST", "episode_id")
        assert "SESSION_LOST" not in wrong["message"]
        for message, field in (({"type": "step", "data": {"actions": {"agent_0": 0}, "episode_id": "e" * 300}},
                                "episode_id"),
                               ({"type": "step", "data": {"actions": "agent_0"}}, "actions"),
                               ({"type": "step"}, "data")):
            data = error(message, "BAD_REQUEST", field)
            assert data["errors"] and all("input" not in e and "ctx" not in e for e in data["errors"]), data
            assert "e" * 100 not in json.dumps(data)
        # the session went on through every error: the episode plays to its end, then EPISODE_OVER
        rng = np.random.default_rng(1)
        while not obs["done"]:
            agents = obs["observation"]["agents"]
            obs = ask({"type": "step", "data": {"actions": {a: legal(e, rng) if e["active"] else 0
                                                            for a, e in agents.items()}}})["data"]
        error({"type": "step", "data": {"actions": {"agent_0": 0}}}, "EPISODE_OVER")


def test_unknown_reset_options_are_refused_naming_the_key(cotrain):
    """A typo in reset's options (scenario_sed) is refused on /ws, HTTP /reset and the batched reset alike, naming
    the key and the keys the env reads; the keys it reads still work."""
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        def ask(message):
            ws.send(json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        answer = ask({"type": "reset", "data": {"seed": 0, "options": {"scenario_sed": 5}}})
        assert answer["type"] == "error" and answer["data"]["code"] == "BAD_REQUEST", answer
        assert "scenario_sed" in answer["data"]["message"] and "scenario_seed" in answer["data"]["message"]
        assert ask({"type": "reset", "data": {"seed": 0, "options": {"scenario_seed": 5}}})["type"] == "observation"
    status, body = post(cotrain + "/reset", {"seed": 0, "options": {"scenario_sed": 5}})
    assert status == 422 and body["code"] == "BAD_REQUEST" and "scenario_sed" in body["detail"], body
    assert "reset_schedule" in body["detail"]
    assert post(cotrain + "/reset", {"seed": 0, "options": {"scenario_seed": 5}})[0] == 200
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 2})
    base = f"{cotrain}/scope/vec/{opened['session_id']}"
    try:
        for options, name in (({"scenario_sed": 5}, "options"), ([{"scenario_seed": 1}, {"bogus": 1}], "options[1]")):
            status, out = post(base + "/reset", {"seed": 0, "options": options})
            assert status == 422 and name in out["detail"] and "scenario_seed" in out["detail"], (options, out)
        assert post(base + "/reset", {"seed": 0, "options": {"scenario_seed": 5}})[0] == 200
    finally:
        post(base, None, method="DELETE")


def test_a_seed_that_is_not_an_int_is_refused_on_every_transport(cotrain):
    """A seed of "1", 1.0 or true is refused alike over HTTP /reset (whose OpenEnv model would take each for 1), /ws
    and the batched reset, naming the seed; the seeds the protocol takes still work on each."""
    bad = ("1", 1.0, True, -1, 2**63)
    for seed in bad:
        status, body = post(cotrain + "/reset", {"seed": seed})
        assert status == 422 and body["code"] == "BAD_REQUEST" and body["detail"].startswith("seed must be an int"), \
            (seed, status, body)
    for seed in (None, 0, 2**63 - 1):
        assert post(cotrain + "/reset", {"seed": seed})[0] == 200, seed
    assert post(cotrain + "/reset", {})[0] == 200
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        for seed in bad:
            ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            answer = json.loads(ws.recv(timeout=30))
            assert answer["type"] == "error" and answer["data"]["code"] == "BAD_REQUEST", (seed, answer)
            assert "seed must be an int" in answer["data"]["message"], (seed, answer)
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 2})
    base = f"{cotrain}/scope/vec/{opened['session_id']}"
    try:
        for seed in bad:
            status, out = post(base + "/reset", {"seed": seed})
            assert status == 422 and out["detail"].startswith("seed"), (seed, out)
        assert post(base + "/reset", {"seed": 3})[0] == 200
    finally:
        post(base, None, method="DELETE")


def test_task_api_is_404_for_every_method_and_body(cotrain):
    """OpenEnv's task API answers 404 on every route, whatever the method and body (not 405, not 422)."""
    for route in ("splits", "tasks", "num_tasks", "task", "task_range"):
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            for raw in (b"", b"{}", b'{"split": "train", "index": 0}', b"not json"):
                if method in ("GET", "DELETE") and raw:
                    continue
                status, body = post(f"{cotrain}/p4g-cotrain/{route}", None, method=method, raw=raw or None)
                assert status == 404 and body["code"] == "NOT_FOUND" and "task API" in body["detail"], \
                    (route, method, raw, status, body)
    assert post(cotrain + "/reset", {"seed": 0})[0] == 200  # the other routes are untouched


def test_the_container_entry_names_a_bad_variable_in_one_line():
    """``uvicorn scope_envs.serve.asgi:app`` with a bad SCOPE_* variable: one line naming it, a non-zero exit."""
    import os
    import subprocess
    import sys

    for env, name in (({"SCOPE_ENV_ID": "nope"}, "SCOPE_ENV_ID"),
                      ({"SCOPE_ENV_ID": "p4g-frozen", "SCOPE_ENV_KWARGS": "{bad"}, "SCOPE_ENV_KWARGS"),
                      ({"SCOPE_ENV_ID": "p4g-frozen", "SCOPE_ENV_KWARGS": '{"max_turns":0}'}, "SCOPE_ENV_KWARGS"),
                      ({"SCOPE_ENV_ID": "p4g-frozen", "SCOPE_ENV_SURFACE": "txt"}, "SCOPE_ENV_SURFACE"),
                      ({"SCOPE_ENV_ID": "p4g-frozen", "SCOPE_MAX_SESSIONS": "many"}, "SCOPE_MAX_SESSIONS")):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
        out = subprocess.run([sys.executable, "-m", "uvicorn", "scope_envs.serve.asgi:app", "--port", "0"],
                             capture_output=True, text=True, timeout=120, env={**environ, **env})
        lines = out.stderr.strip().splitlines()
        assert out.returncode != 0 and "Traceback" not in out.stderr, (env, out.stderr[-3000:])
        assert len(lines) == 1 and name in lines[0], (env, out.stderr)


def test_serve_refuses_llm_toy_naming_it():
    """``serve llm-toy`` (train-llm's toy task, no registered env) is an argument error naming the id, not a
    traceback; serve's hint for an unknown id does not offer llm-toy. (--user-llm-* settings without --user-llm:
    tests/test_serve_llm.py.)"""
    import subprocess
    import sys

    for env_id, said in (("llm-toy", "train-llm's toy task"), ("nope-frozen", "scope-envs list")):
        out = subprocess.run([sys.executable, "-m", "scope_envs.cli", "serve", env_id, "--port", "0"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and "argument id" in out.stderr and f"'{env_id}'" in out.stderr, out.stderr
        assert said in out.stderr and "Traceback" not in out.stderr, out.stderr
        if env_id != "llm-toy":
            assert "llm-toy" not in out.stderr, out.stderr


def test_an_over_long_websocket_message_is_bad_request_and_the_session_goes_on():
    """Past the 65,536-character wire cap, /ws answers BAD_REQUEST naming the cap (as HTTP /step's 422), never a
    SESSION_ERROR that closes the session; the package's client raises ValueError and plays on."""
    from scope_envs.remote import RemoteParallelEnv
    from scope_envs.serve.models import MAX_WIRE_TEXT

    with serving("p4g-frozen", "--surface", "text") as url:
        with connect(url.replace("http", "ws") + "/ws", open_timeout=30, max_size=None) as ws:
            def ask(message):
                ws.send(json.dumps(message))
                return json.loads(ws.recv(timeout=30))

            assert ask({"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            answer = ask({"type": "step", "data": {"actions": {"agent_0": "x" * (MAX_WIRE_TEXT + 1)}}})
            data = answer["data"]
            assert answer["type"] == "error" and data["code"] == "BAD_REQUEST", answer
            assert f"at most {MAX_WIRE_TEXT} characters" in data["message"] and "agent_0" in data["message"]
            assert all("input" not in e for e in data["errors"]) and len(json.dumps(answer)) < 3000
            assert ask({"type": "step", "data": {"actions": {"agent_0": "Hello!"}}})["type"] == "observation"
        status, body = post(url + "/step", {"action": {"actions": {"agent_0": "x" * (MAX_WIRE_TEXT + 1)}}})
        assert status == 422 and f"at most {MAX_WIRE_TEXT} characters" in body["detail"], body
        env = RemoteParallelEnv(url)
        try:
            env.reset(seed=0)
            with pytest.raises(ValueError, match=f"at most {MAX_WIRE_TEXT} characters"):
                env.step({"agent_0": "x" * 100_000})
            obs, *_ = env.step({"agent_0": "Hello!"})  # the same session and episode go on
            assert "Hello!" in str(obs["agent_0"])
        finally:
            env.close()


def test_wire_text_cap_is_named():
    from pydantic import ValidationError

    from scope_envs.serve.models import MAX_WIRE_TEXT, ScopeAction

    with pytest.raises(ValidationError, match=f"at most {MAX_WIRE_TEXT} characters"):
        ScopeAction(actions={"agent_0": "x" * (MAX_WIRE_TEXT + 1)})


def test_a_snapshot_must_be_small_finite_numbers():
    from scope_envs.serve.snapshot import MLPSnapshot, SnapshotError

    for weight, reason in (([[3e38] * 4] * 3, "magnitude"), ([["1"] * 4] * 3, "numbers"), ([[True] * 4] * 3, "numbers")):
        with pytest.raises(SnapshotError, match=reason):
            MLPSnapshot.from_wire({"layers": [{"weight": weight, "bias": [0.0] * 3}]}, 4, 3)
    deep = {"layers": [{"weight": [[1e5] * 4] * 4, "bias": [0.0] * 4}] * 7 + [{"weight": [[1e5] * 4] * 3, "bias": [0.0] * 3}],
            "activation": "relu"}
    with pytest.raises(SnapshotError, match="not finite"):
        MLPSnapshot.from_wire(deep, 4, 3)


def test_an_overlong_integer_is_bad_request_naming_the_field_and_the_session_goes_on(cotrain):
    """A 5,000-digit seed or act (past the digits Python reads) is a BAD_REQUEST frame naming the field, without
    echoing it, and the /ws session plays on; over HTTP it is the documented 422 naming the field."""
    huge = "9" * 5000
    with connect(cotrain.replace("http", "ws") + "/ws", open_timeout=30) as ws:
        def ask(raw):
            ws.send(raw)
            return json.loads(ws.recv(timeout=30))

        obs = ask(json.dumps({"type": "reset", "data": {"seed": 0}}))["data"]
        for raw, field in (('{"type":"reset","data":{"seed":%s}}' % huge, "data.seed"),
                           ('{"type":"reset","data":{"seed":-%s}}' % huge, "data.seed"),
                           ('{"type":"step","data":{"actions":{"agent_0":%s}}}' % huge, "data.actions.agent_0")):
            answer = ask(raw)
            assert answer["type"] == "error" and answer["data"]["code"] == "BAD_REQUEST", answer
            assert answer["data"]["message"].startswith(f"BAD_REQUEST: {field}: an integer of 5000 digits"), answer
            assert "9" * 30 not in json.dumps(answer)
        assert ask(json.dumps({"type": "state"}))["data"]["step_count"] == 0  # the episode is still there
        agents = obs["observation"]["agents"]
        acts = {a: legal(e, np.random.default_rng(0)) if e["active"] else 0 for a, e in agents.items()}
        assert ask(json.dumps({"type": "step", "data": {"actions": acts}}))["type"] == "observation"
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 2})
    try:
        for path, raw, field in (("/reset", '{"seed":%s}' % huge, "seed"),
                                 ("/step", '{"action":{"actions":{"agent_0":%s}}}' % huge, "action.actions.agent_0"),
                                 (f"/scope/vec/{opened['session_id']}/reset", '{"seed":[0,%s]}' % huge, "seed.1")):
            status, body = post(cotrain + path, None, raw=raw.encode())
            assert status == 422 and body["code"] == "BAD_REQUEST", (path, status, body)
            assert body["detail"].startswith(f"{field}: an integer of 5000 digits") and "9" * 30 not in json.dumps(body)
    finally:
        post(f"{cotrain}/scope/vec/{opened['session_id']}", None, method="DELETE")


def test_a_batched_reset_refuses_repeated_slots_and_more_slots_than_the_session_has(cotrain):
    """A batched reset's slots: each slot at most once and no more than num_envs of them, else 422 naming slots
    (a list repeating slot 0 was accepted, and reset it as many times); a list of distinct slots still resets."""
    status, opened = post(cotrain + "/scope/vec", {"num_envs": 4})
    base = f"{cotrain}/scope/vec/{opened['session_id']}"
    try:
        assert post(base + "/reset", {"seed": 0})[0] == 200
        for slots, said in (([0, 0], "more than once"), ([1, 2, 1], "more than once"), ([0] * 20000, "20000 slots"),
                            ([0, 1, 2, 3, 0], "5 slots")):
            status, out = post(base + "/reset", {"seed": 1, "slots": slots})
            assert status == 422 and out["code"] == "BAD_REQUEST" and out["detail"].startswith("slots"), (slots[:5], out)
            assert said in out["detail"], out
        status, out = post(base + "/reset", {"seed": 1, "slots": [3, 1]})
        assert status == 200
    finally:
        post(base, None, method="DELETE")


def test_the_printed_url_puts_an_ipv6_host_in_brackets():
    from scope_envs.serve.cli import url_host

    assert url_host("::1") == "[::1]" and url_host("127.0.0.1") == "127.0.0.1" and url_host("localhost") == "localhost"


def test_a_snapshot_or_packed_array_of_the_wrong_form_is_bad_request_naming_it():
    """A snapshot whose activation is not a string, or with a key the wire does not have (a typo such as
    "activaton": "relu" was ignored and the policy played with tanh), and a packed array whose dtype is not a
    string, are 422 naming the field (they were 500s, or accepted); the pool and the session go on."""
    with serving("p4g-population", "--kwarg", "pool_size=3") as url:
        spec = json.loads(urllib.request.urlopen(url + "/scope/spec", timeout=30).read())
        obs_dim = spec["observation_spaces"]["user_0"]["spaces"]["observation"]["shape"][0]
        n = spec["action_spaces"]["user_0"]["n"]
        layer = {"weight": [[0.0] * obs_dim] * n, "bias": [0.0] * n}
        status, opened = post(url + "/scope/vec", {"num_envs": 2})
        base = f"{url}/scope/vec/{opened['session_id']}"
        try:
            for snapshot, named in (({"layers": [layer], "activation": ["relu"]}, "activation"),
                                    ({"layers": [layer], "activation": {}}, "activation"),
                                    ({"layers": [layer], "activaton": "relu"}, "activaton"),
                                    ({"layers": [{**layer, "act": "relu"}]}, "act")):
                status, out = post(base + "/snapshot", {"snapshot": snapshot})
                assert status == 422 and out["code"] == "BAD_REQUEST" and repr(named) in out["detail"], out
            good = {"layers": [layer], "activation": "relu"}
            assert post(base + "/snapshot", {"snapshot": good}) == (200, {"pool_entries": 2})
            assert post(base + "/reset", {"seed": 0})[0] == 200
            packed = {"__nd__": "AQAAAAAAAAABAAAAAAAAAA==", "dtype": ["int64"], "shape": [2]}
            status, out = post(base + "/step", {"actions": {"agent_0": packed}})
            assert status == 422 and out["code"] == "BAD_REQUEST" and "dtype" in out["detail"], out
        finally:
            post(base, None, method="DELETE")
        with connect(url.replace("http", "ws") + "/ws", open_timeout=30) as ws:
            unhashable = {"layers": [layer], "activation": [1]}
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0, "snapshot": unhashable}}))
            answer = json.loads(ws.recv(timeout=30))
            assert answer["data"]["code"] == "BAD_REQUEST" and "activation" in answer["data"]["message"], answer
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0, "snapshot": {"layers": [layer]}}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"


def test_count_kwargs_are_bounded_as_the_package_uses_them():
    """families, members and pool_size were accepted up to 1,000,000 (families=10**6 took 48 s per session's env;
    before that bound, pool_size=10**18 was served and members=10**7 took 17 s):
    families is at most 1,000 (the train-stream families any spec names: diagnose's family:0..999), members 64 and
    pool_size 1,024 (train-llm's --members and --pool-size). The message names the kwarg and its bound; the
    bound itself is accepted."""
    import subprocess
    import sys

    from scope_envs.serve.app import check_kwargs

    cases = [["p4g-rotation", "--kwarg", "families=1001", "--port", "0"],
             ["p4g-population", "--kwarg", "members=65", "--port", "0"],
             ["p4g-population", "--kwarg", "pool_size=1025", "--port", "0"],
             ["p4g-rotation", "--kwarg", "families=1000000000", "--port", "0"],
             ["p4g-population", "--kwarg", "members=10000000", "--port", "0"],
             ["p4g-population", "--kwarg", "pool_size=100000000", "--port", "0"]]
    done = subprocess.run([sys.executable, "-c", _RUN_EACH, json.dumps(cases)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    wanted = ["families must be an integer from 1 to 1000, got 1001", "members must be an integer from 1 to 64, got 65",
              "pool_size must be an integer from 1 to 1024, got 1025",
              "families must be an integer from 1 to 1000, got 1000000000",
              "members must be an integer from 1 to 64, got 10000000",
              "pool_size must be an integer from 1 to 1024, got 100000000"]
    for (code, stderr), args, said in zip(json.loads(done.stdout), cases, wanted, strict=True):
        assert code == 2 and "argument --kwarg:" in stderr and said in stderr, (args, stderr)
    check_kwargs("p4g-rotation", "act", {"families": 1000})
    check_kwargs("p4g-population", "act", {"members": 64})
    check_kwargs("p4g-population", "act", {"pool_size": 1024})


def test_a_kwarg_named_surface_or_given_twice_is_an_argument_error():
    """``--kwarg surface=text`` said "got multiple values for keyword argument 'surface'"; a key given twice served
    its last value without a word."""
    import subprocess
    import sys

    cases = [["p4g-frozen", "--kwarg", "surface=text", "--port", "0"],
             ["p4g-frozen", "--kwarg", "max_turns=3", "--kwarg", "max_turns=4", "--port", "0"]]
    done = subprocess.run([sys.executable, "-c", _RUN_EACH, json.dumps(cases)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    (code1, err1), (code2, err2) = json.loads(done.stdout)
    assert code1 == 2 and "argument --kwarg: the surface is --surface act|text" in err1, err1
    assert code2 == 2 and "argument --kwarg: max_turns given more than once" in err2, err2



def _closed_within(sock, seconds: float, trickle: bytes = b"") -> float:
    """Seconds until the server closes ``sock`` having answered nothing, sending ``trickle`` every 0.5 s meanwhile;
    an AssertionError if it answers or is still open after ``seconds``."""
    import select

    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if select.select([sock], [], [], 0.5)[0]:
            got = sock.recv(65536)
            assert got == b"", got[:200]
            return time.monotonic() - start
        if trickle:
            try:
                sock.sendall(trickle)
            except OSError:  # (closed meanwhile)
                return time.monotonic() - start
    raise AssertionError(f"still open after {seconds} s")


def _answer(sock) -> bytes:
    """One whole answer of the server on ``sock``: its head and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        assert more, data
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_request_whose_headers_never_end_is_closed_after_header_timeout():
    """``POST /reset HTTP/1.1\\r\\nHost: x\\r\\n`` and nothing more held the connection open forever (slowloris: only
    a slow body got 408). Past ``--header-timeout`` it is closed: on a new connection, on a kept-alive one after an
    answered request, and when header lines trickle in; a head that completes in time is served (its body then
    timed by ``--body-timeout`` alone), and the server goes on."""
    import socket

    with serving("p4g-frozen", "--header-timeout", "2") as url:
        host, port = url.split("//")[1].split(":")
        address = (host, int(port))
        half = b"POST /reset HTTP/1.1\r\nHost: x\r\n"
        with socket.create_connection(address, timeout=30) as s:
            s.sendall(half)
            assert 1.5 < _closed_within(s, 20) < 20
        with socket.create_connection(address, timeout=30) as s:  # keep-alive: the second request's head is timed
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _answer(s).startswith(b"HTTP/1.1 200")
            s.sendall(half)
            assert 1.5 < _closed_within(s, 20) < 20
        with socket.create_connection(address, timeout=30) as s:  # a line every 0.5 s does not push the bound back
            s.sendall(half)
            assert 1.5 < _closed_within(s, 20, trickle=b"X-Slow: 1\r\n") < 20
        with socket.create_connection(address, timeout=30) as s:  # the head in time, the body past the head's bound
            s.sendall(half)
            time.sleep(0.5)
            s.sendall(b"content-type: application/json\r\ncontent-length: 11\r\n\r\n")
            time.sleep(3)
            s.sendall(b'{"seed": 0}')
            assert _answer(s).startswith(b"HTTP/1.1 200")
        assert post(url + "/reset", {"seed": 0})[0] == 200


def test_malformed_json_names_the_character_where_it_breaks(cotrain):
    """A body that is not JSON was answered "8: JSON decode error": nothing said 8 is a character offset, nor why."""
    for path, raw, at, why in (("/reset", b'{"seed":', 8, "Expecting value"),
                               ("/reset", b'{"seed": 1,}', 11, "Expecting property name"),
                               ("/scope/vec", b'{"num_envs" 2}', 12, "Expecting \':\' delimiter")):
        status, body = post(cotrain + path, None, raw=raw)
        assert status == 422 and body["code"] == "BAD_REQUEST", body
        assert body["detail"].startswith(f"the request body: invalid JSON at character {at} (counting from 0): {why}"), body
        assert body["errors"][0]["type"] == "json_invalid" and str(at) in body["errors"][0]["msg"], body


def test_the_documented_codes_of_an_unknown_route_and_a_wrong_method_are_the_answers(cotrain):
    """docs/serving.md said an unknown route answers 404 HTTP_ERROR; it answers NOT_FOUND (a method a route does
    not take: 405 HTTP_ERROR). Each row names the code the server sends."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "serving.md").read_text()
    for start, (method, path) in (("| a route the server does not have", ("GET", "/nope")),
                                  ("| an HTTP method a route does not take", ("PUT", "/reset"))):
        status, body = post(cotrain + path, None, method=method, raw=b"")
        row = next((line for line in docs.splitlines() if line.startswith(start)), None)
        assert row is not None, start
        assert f"HTTP {status} `{body['code']}`" in row, (row, status, body)
