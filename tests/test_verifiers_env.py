"""The verifiers environment: built from verifiers' own classes (``vf.Env``, ``vf.Taskset``,
``vf.EnvConfig``, ``vf.AgentConfig``, its plugin loaders) and played through its ``run(task, agents)`` with
scripted seats in place of the models (a model turn needs verifiers' harness runtime and an endpoint).

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

        class Context:
            async def __aenter__(self):
                return seat

            async def __aexit__(self, *exc):
                return False

        return Context()

    async def turn(self, message):
        self.received.append(message)
        n = len(self.received) - 1
        if self.limit is not None and n >= self.limit:
            return Segment(None)
        return Segment(self.lines[min(n, len(self.lines) - 1)])


class Agents:
    def __init__(self, **seats):
        self.__dict__.update(seats)


def in_process(env_id, seed, lines_by_agent):
    env = scope_envs.make(env_id, surface="text")
    obs, infos = env.reset(seed=seed)
    counts, totals = {a: 0 for a in lines_by_agent}, {a: 0.0 for a in lines_by_agent}
    while env.agents:
        speaker = next(a for a in env.agents if infos[a]["active"])
        lines = lines_by_agent[speaker]
        obs, rewards, _, _, infos = env.step({speaker: lines[min(counts[speaker], len(lines) - 1)]})
        counts[speaker] += 1
        for a in totals:
            totals[a] += rewards.get(a, 0.0)
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
