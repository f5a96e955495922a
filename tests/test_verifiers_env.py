"""The verifiers environment: built from verifiers' own classes (``vf.Env``, ``vf.Taskset``,
``vf.EnvConfig``, ``vf.AgentConfig``, its plugin loaders) and played through its ``run(task, agents)`` with
scripted seats in place of the models (they keep verifiers' turn contract: a prompted task's first turn is
a bare ``turn()``), and once end to end with a real model: verifiers' own rollout (``Env.run_episode``,
its interception server, its ``null`` chat harness in a subprocess runtime) against a tiny local model
behind a streaming OpenAI-compatible endpoint (``TinyModelEndpoint``; verifiers' chat program streams, so
the repo's non-streaming ``ChatStandIn`` cannot answer it).

verifiers pins mcp==2.0.0, which OpenEnv's server library (fastmcp, mcp<2) cannot import beside, so this
file runs in a virtualenv of its own (.ci/verifiers.sh) and skips where verifiers is not installed."""

import asyncio

import pytest

pytest.importorskip("verifiers.v1", reason="verifiers runs in its own virtualenv: bash .ci/verifiers.sh")
import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.utils.loaders import environment_class, taskset_class  # noqa: E402

import scope_envs  # noqa: E402
from scope_envs.integrations import verifiers_env as ve  # noqa: E402

AGENT_LINES = ("Hello! I'm reaching out on behalf of Save the Children.", "Every dollar helps a child in need.",
               "Would you consider donating part of your payment? [DONATE $0.50]", "Thank you so much, goodbye.")
USER_LINES = ("Hi, what is this about?", "I'm not sure I can afford it.", "Okay, I'll give a little. [DONATE $0.50]")


class Recorder:
    def __init__(self):
        self.rewards, self.metrics = {}, {}

    def record_reward(self, name, value, weight=1.0):
        self.rewards[name] = value

    def record_metrics(self, values):
        self.metrics.update(values)


class Segment:
    def __init__(self, reply):
        self.last_reply, self.terminated = reply, reply is None


class ScriptedSeat:
    """Stands in for a model seat: the interaction's ``turn`` answers from a script."""

    def __init__(self, lines, limit=None):
        self.lines, self.limit, self.received, self.trace, self.trainable = lines, limit, [], Recorder(), True

    def interaction(self, task):
        seat = self
        self.prompt, self.started = task.data.prompt, False

        class Context:
            async def __aenter__(self):
                return seat

            async def __aexit__(self, *exc):
                return False

        return Context()

    async def turn(self, message=None):
        # verifiers' rule (Interaction.turn): a task with a prompt speaks first, with a bare turn()
        prompted, self.started = not self.started and self.prompt is not None, True
        if (message is None) != prompted:
            raise ValueError("a prompted task's first turn is a bare turn(); every other turn carries a message")
        self.received.append(self.prompt if prompted else message)
        n = len(self.received) - 1
        if self.limit is not None and n >= self.limit:
            return Segment(None)
        return Segment(self.lines[min(n, len(self.lines) - 1)])


class Agents:
    def __init__(self, **seats):
        self.__dict__.update(seats)


def in_process(env_id, seed, lines_by_agent, history=False, **kwargs):
    env = scope_envs.make(env_id, surface="text", **kwargs)
    obs, infos = env.reset(seed=seed)
    counts, totals = {a: 0 for a in lines_by_agent}, {a: 0.0 for a in lines_by_agent}
    while env.agents:
        speaker = next(a for a in env.agents if infos[a]["active"])
        lines = lines_by_agent[speaker]
        obs, rewards, _, _, infos = env.step({speaker: lines[min(counts[speaker], len(lines) - 1)]})
        counts[speaker] += 1
        for a in totals:
            totals[a] += rewards.get(a, 0.0)
    if history:
        return totals, env.unwrapped.game.outcome(), env.unwrapped.game.history
    return totals, env.unwrapped.game.outcome()


def test_load_environment_is_a_verifiers_env_with_its_taskset():
    env = ve.load_environment("p4g-frozen", seeds=[0, 1, 2])
    assert isinstance(env, vf.Env) and isinstance(env.taskset, vf.Taskset)
    tasks = list(env.taskset)
    assert [t.data.seed for t in tasks] == [0, 1, 2] and all(isinstance(t, vf.Task) for t in tasks)
    # verifiers' own loaders resolve the plugin id to these classes
    assert environment_class(ve.MODULE) is ve.ScopeTextEnv and taskset_class(ve.MODULE) is ve.ScopeTextTaskset
    with pytest.raises(ValueError, match="unknown scope id"):
        ve.load_environment("p4g-nope")


@pytest.mark.parametrize("seed", [0, 3])
def test_agent_seat_against_the_built_in_user(seed):
    env = ve.load_environment("p4g-frozen", seeds=[seed])
    (task,) = list(env.taskset)
    agent = ScriptedSeat(AGENT_LINES)
    asyncio.run(env.run(task, Agents(agent=agent, user=ScriptedSeat(USER_LINES))))
    totals, outcome = in_process("p4g-frozen", seed, {"agent_0": AGENT_LINES})
    assert agent.trace.rewards["scope_reward"] == pytest.approx(totals["agent_0"])
    assert agent.trace.metrics == pytest.approx({k: float(v) for k, v in outcome.items()})
    assert len(agent.received) >= 2 and agent.received[0] == ve.OPENING
    # each turn carries only what is new: the simulated user's reply, never the agent's own message again
    assert all(AGENT_LINES[0] not in m for m in agent.received[1:])


def test_a_user_model_in_the_learnable_seat():
    env = ve.load_environment("p4g-cotrain", seeds=[2], user=vf.AgentConfig(harness={"id": "null"}))
    assert env.config.user_seat == "model"
    (task,) = list(env.taskset)
    agent, user = ScriptedSeat(AGENT_LINES), ScriptedSeat(USER_LINES)
    agents = Agents(agent=agent, user=user)
    asyncio.run(env.setup(agents))
    assert user.trainable is False  # frozen unless train_user=True
    asyncio.run(env.run(task, agents))
    totals, _ = in_process("p4g-cotrain", 2, {"agent_0": AGENT_LINES, "user_0": USER_LINES})
    assert agent.trace.rewards["scope_reward"] == pytest.approx(totals["agent_0"])
    assert user.trace.rewards["scope_user_reward"] == pytest.approx(totals["user_0"])
    assert user.received, "the user model played its turns"


def test_seat_mismatches_are_clear_errors():
    env = ve.load_environment("p4g-cotrain", seeds=[0])
    (task,) = list(env.taskset)
    with pytest.raises(ValueError, match="user_seat='model'"):
        asyncio.run(env.run(task, Agents(agent=ScriptedSeat(AGENT_LINES), user=ScriptedSeat(USER_LINES))))
    env = ve.load_environment("p4g-frozen", seeds=[0], user=vf.AgentConfig(harness={"id": "null"}))
    (task,) = list(env.taskset)
    with pytest.raises(ValueError, match="no learnable user seat"):
        asyncio.run(env.run(task, Agents(agent=ScriptedSeat(AGENT_LINES), user=ScriptedSeat(USER_LINES))))


def test_a_seat_turn_limit_ends_the_episode():
    env = ve.load_environment("p4g-frozen", seeds=[0])
    (task,) = list(env.taskset)
    agent = ScriptedSeat(AGENT_LINES, limit=1)
    asyncio.run(env.run(task, Agents(agent=agent, user=ScriptedSeat(USER_LINES))))
    assert len(agent.received) == 2 and "scope_reward" in agent.trace.rewards


def test_docs_verifiers_block():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "serving.md").read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b.startswith("# verifiers")]
    scope = {"__name__": "docs"}
    exec(compile(code, "docs/serving.md", "exec"), scope)
    assert len(scope["tasks"]) == 8 and scope["coplay"].config.user_seat == "model"


class TinyModelEndpoint:
    """A tiny local model (``llm_fixtures.tiny_model_dir``: random weights, a tokenizer trained here, nothing
    downloaded) behind an OpenAI-compatible chat-completions endpoint on 127.0.0.1 that streams (SSE), as
    verifiers' chat program asks. ``replies`` holds every reply the model wrote, in order."""

    MAX_TOKENS = 24

    def __init__(self):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from llm_fixtures import tiny_model_dir

        from scope_envs.agents.llm.backends import TransformersBackend

        self.backend = TransformersBackend.from_path(tiny_model_dir())
        self.replies, self.lock = [], threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                messages = [{"role": m["role"], "content": _text(m.get("content"))} for m in body["messages"]]
                with outer.lock:  # one model, one generation at a time; seeded, so a rerun replays
                    seed = len(outer.replies)
                    text = outer.backend.chat([messages], max_new_tokens=outer.MAX_TOKENS, temperature=1.0,
                                              seed=seed)[0].text
                    outer.replies.append(text)
                chunk = {"id": f"tiny-{seed}", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
                events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                                 "finish_reason": None}]},
                          {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                          {**chunk, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                             "total_tokens": 2}}]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _text(content):
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def test_a_real_model_plays_the_agent_seat(monkeypatch):
    """verifiers' own rollout with a model producing agent_0's turns: the rollout completes, every message
    the model wrote is on the trace and (where the game could read it) in the scope transcript, and the
    episode's reward is recorded."""
    import shutil

    if shutil.which("uv") is None:
        pytest.skip("verifiers' null harness runs its chat program through uv: .ci/verifiers.sh installs it")
    pytest.importorskip("transformers")
    from verifiers.v1.clients import EvalClientConfig, ModelContext
    from verifiers.v1.runtimes import SubprocessConfig

    endpoint = TinyModelEndpoint()
    monkeypatch.setenv("TINY_ENDPOINT_KEY", "local")
    try:
        agent = vf.AgentConfig(harness={"id": "null"}, runtime=SubprocessConfig(), max_turns=4)
        env = ve.load_environment("p4g-frozen", seeds=[1], agent=agent, kwargs={"max_turns": 3})
        (task,) = list(env.taskset)
        ctx = ModelContext(model="tiny", client=EvalClientConfig(base_url=endpoint.url, api_key_var="TINY_ENDPOINT_KEY"))

        async def rollout():
            async with env.serving():
                return await env.run_episode(task, ctx)

        episode = asyncio.run(asyncio.wait_for(rollout(), 120))
    finally:
        endpoint.close()
    assert episode.ok, episode.errors
    (trace,) = [t for t in episode.traces if t.agent.name == "agent"]
    said = [(m.content or "").strip() for m in trace.assistant_messages]
    assert endpoint.replies and said == [r.strip() for r in endpoint.replies]  # every turn was the model's
    assert trace.rewards["scope_reward"] is not None and "actual" in trace.metrics
    # the same seed in-process with the model's replies as agent_0's messages: the same reward and outcome,
    # and the persuader's turns of the transcript are the model's words
    totals, outcome, history = in_process("p4g-frozen", 1, {"agent_0": endpoint.replies}, max_turns=3,
                                          history=True)
    assert trace.rewards["scope_reward"].value == pytest.approx(totals["agent_0"])
    assert trace.metrics == pytest.approx({k: float(v) for k, v in outcome.items()})
    spoken = [t.text for t in history if t.role == "persuader"]
    assert spoken and all(text in said for text in spoken)
