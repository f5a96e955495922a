"""The user seat as an LLM on the server (``scope-envs serve ID --surface text --user-llm SPEC``).

A real server process on 127.0.0.1 seats an ``LLMPlayer`` over the repo's stand-in OpenAI chat endpoint
(``llm_fixtures.ChatStandIn``, a real HTTP server in this process); the package's client and OpenEnv's own
client play the agent seat, and every user message must be one the endpoint wrote. The fault path (an
endpoint failing mid-game) and the local-adapter path run in-process on the same ``ScopeEnvironment``
the server runs per session.
"""

import json
import subprocess
import sys
import urllib.request

import pytest

from llm_fixtures import ChatStandIn, tiny_model_dir
from serve_fixtures import free_port, needs_openenv, serving

needs_openenv()
from openenv.core import GenericEnvClient  # noqa: E402

from scope_envs.remote import RemoteParallelEnv  # noqa: E402
from scope_envs.serve.environment import ScopeEnvironment, ServeConfig  # noqa: E402
from scope_envs.serve.llm import ServedLLM, UserLLMError, UserLLMOptions  # noqa: E402
from scope_envs.serve.models import ScopeAction  # noqa: E402

USER_LINES = ("Endpoint user here: who are you with?", "Endpoint user again: I'm listening.",
              "Endpoint user: okay, I'll give some. [DONATE $0.50]")
AGENT_LINES = ("Hello! I'm with Save the Children.", "Every dollar helps a child in need.",
               "Would you donate part of your payment?", "Thank you, goodbye.")


@pytest.fixture(scope="module")
def endpoint():
    stand_in = ChatStandIn(replies=USER_LINES)
    yield stand_in
    stand_in.close()


def user_turns(transcript: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in transcript.splitlines() if line.startswith("Persuadee: ")]


def spec_of(url):
    return json.loads(urllib.request.urlopen(url + "/scope/spec", timeout=30).read())


def play(env, lines):
    """Play agent_0 from ``lines`` to the end; the last transcript and the number of steps."""
    obs, infos = env.reset(seed=3)
    steps = 0
    while env.agents:
        obs, _, _, _, infos = env.step({"agent_0": lines[min(steps, len(lines) - 1)]})
        steps += 1
        assert steps < 50
    return str(obs["agent_0"]), steps


def test_user_llm_plays_the_user_over_both_clients(endpoint):
    with serving("p4g-frozen", "--surface", "text", "--user-llm", f"openai:{endpoint.url}#stand-in",
                 "--user-llm-max-new-tokens", "40") as url:
        spec = spec_of(url)
        assert spec["user_llm"]["plays"] == "user" and spec["user_llm"]["spec"].endswith("#stand-in")
        assert spec["possible_agents"] == ["agent_0"]  # the LLM is the env's user=, not a seat to drive
        before = len(endpoint.requests)
        env = RemoteParallelEnv(url)
        try:
            transcript, steps = play(env, AGENT_LINES)
        finally:
            env.close()
        said = user_turns(transcript)
        asked = endpoint.requests[before:]
        assert said and len(asked) == len(said)  # one request per user message, none else
        assert set(said) <= set(USER_LINES)
        for path, body in asked:
            assert path == "/v1/chat/completions" and body["model"] == "stand-in" and body["max_tokens"] == 40
            assert body["messages"][0]["role"] == "system" and "persona" in body["messages"][0]["content"].lower()
        # what the user was shown is the dialogue: the agent's lines arrive as the user's interlocutor
        assert AGENT_LINES[0] in asked[0][1]["messages"][1]["content"]

        # OpenEnv's own client, the same protocol: its observations carry the endpoint's messages too
        before = len(endpoint.requests)
        with GenericEnvClient(base_url=url, message_timeout_s=30).sync() as client:
            result = client.reset(seed=4)
            result = client.step({"actions": {"agent_0": AGENT_LINES[0]}})
            transcript = result.observation["agents"]["agent_0"]["observation"]
        assert user_turns(transcript) and set(user_turns(transcript)) <= set(USER_LINES)
        assert len(endpoint.requests) - before == len(user_turns(transcript))


def test_named_adapters_join_a_text_population_pool(endpoint):
    with serving("p4g-population", "--surface", "text", "--kwarg", "pool_size=3",
                 "--user-llm", f"openai:{endpoint.url}#base-model") as url:
        assert spec_of(url)["user_llm"]["plays"] == "adapters"
        with GenericEnvClient(base_url=url, message_timeout_s=30).sync() as client:
            for bad in ("../etc", "a b", "", "/etc/x", "a/b", "user@..", "@1"):
                with pytest.raises(RuntimeError, match="adapter name"):
                    client.reset(seed=0, adapter=bad)
            # train-llm --mode population --lora names its adapters user@1, user@2, ...
            client.reset(seed=0, adapter="user@1")
            assert client.state()["pool_entries"] == 2
            with pytest.raises(RuntimeError, match="snapshot .* or an adapter"):
                client.reset(seed=0, adapter="x", snapshot={"layers": []})
        env = RemoteParallelEnv(url)
        try:
            env.add_adapter("user@2")  # the name train-llm --mode population --lora gives
            env.reset(seed=0)
            assert env.state()["pool_entries"] == 2
            env.close()
            env = RemoteParallelEnv(url)
            env.add_adapter("user-step-4")
            env.reset(seed=0)
            assert env.state()["pool_entries"] == 2
            before = len(endpoint.requests)
            snapshot_episodes = 0
            for seed in range(1, 12):  # uniform over 2 entries: the snapshot plays some of them
                obs, infos = env.reset(seed=seed)
                if env.agents != ["agent_0"]:
                    continue  # the live user_0 plays this one (the client drives it)
                snapshot_episodes += 1
                steps = 0
                while env.agents:
                    obs, *_ = env.step({"agent_0": AGENT_LINES[min(steps, 3)]})
                    steps += 1
                if snapshot_episodes == 2:
                    break
            assert snapshot_episodes, "the pool never drew its snapshot in 11 episodes"
            asked = endpoint.requests[before:]
            assert asked and {body["model"] for _, body in asked} == {"user-step-4"}  # the adapter, by name
            assert set(user_turns(str(obs["agent_0"]))) <= set(USER_LINES)
        finally:
            env.close()


def test_an_act_server_and_a_server_without_llm_refuse_adapters():
    env = ScopeEnvironment(ServeConfig("p4g-population", "text", {"pool_size": 2}))
    with pytest.raises(Exception, match="no LLM to run adapters on"):
        env.reset(seed=0, adapter="a")
    env = ScopeEnvironment(ServeConfig("p4g-population", "act", {"pool_size": 2}))
    with pytest.raises(Exception, match="act-level server takes a snapshot"):
        env.reset(seed=0, adapter="a")


def test_an_endpoint_failing_mid_game_costs_the_user_its_tries():
    """Each failed request is one of the user's in-game errors; the model never sees an error it did not make."""
    stand_in = ChatStandIn(replies=("I'm back. [DONATE $1]",), fail_first=2)
    try:
        served = ServedLLM(f"openai:{stand_in.url}#stand-in", UserLLMOptions(retries=0))
        env = ScopeEnvironment(ServeConfig("p4g-frozen", "text", {"max_errors": 3}, served, "user"))
        env.reset(seed=0)
        out = env.step(ScopeAction(actions={"agent_0": AGENT_LINES[0]}))
        entry = out.agents["agent_0"]
        assert len(stand_in.requests) == 3  # two failures (counted), then the reply
        assert entry.info["simulator_errors"] == 2 and not out.done
        assert "HTTP 500" in entry.info["user_llm_error"]
        assert user_turns(entry.observation) == ["I'm back. [DONATE $1]"]
        last = stand_in.requests[-1][1]["messages"]
        assert not any("could not be used" in m["content"] for m in last)
        stand_in.close()  # now unreachable: the next user turn uses up the tries and truncates
        out = env.step(ScopeAction(actions={"agent_0": AGENT_LINES[1]}))
        entry = out.agents["agent_0"]
        assert out.done and entry.truncated and not entry.terminated
        assert entry.info["simulator_errors"] == 3 and "could not reach" in entry.info["user_llm_error"]
    finally:
        stand_in.close()


def test_local_model_adapters(tmp_path):
    """A local model's adapters: PEFT directories under the adapter dir, loaded by name on first use."""
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_dir = tiny_model_dir()
    model = AutoModelForCausalLM.from_pretrained(base_dir)
    lora = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path / "u1")
    served = ServedLLM(base_dir, UserLLMOptions(max_new_tokens=6), adapter_dir=tmp_path)
    with pytest.raises(UserLLMError, match="no adapter 'u2'"):
        served.adapter_player("u2")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    base = served.backend.chat([chat], max_new_tokens=6, temperature=1.0, seed=7)[0]
    player = served.adapter_player("u1")
    tuned = player.player.backend.chat([chat], max_new_tokens=6, temperature=1.0, seed=7)[0]
    assert served.backend.model.active_adapter == "u1"
    assert (tuned.token_ids, tuned.logprobs) != (base.token_ids, base.logprobs)  # the adapter's weights speak
    env = ScopeEnvironment(ServeConfig("p4g-population", "text", {"pool_size": 2}, served, "adapters"))
    env.reset(seed=0, adapter="u1")
    assert env.state.pool_entries == 2
    from scope_envs.serve.app import create_app

    with pytest.raises(UserLLMError, match="local model needs --user-adapter-dir") as refused:
        create_app("p4g-population", "text", {"pool_size": 2}, user_llm=served.backend)
    assert refused.value.argument == "--user-adapter-dir"
    # an adapter whose config has a field of the wrong type (peft's TypeError) or names an unknown peft type
    # (its KeyError) is a failed backend call, which costs the user a turn's try, not the server's thread
    import json
    import shutil

    from scope_envs.agents.llm.backends import BackendError

    for name, change in (("typed", {"r": "4"}), ("unknown", {"peft_type": "NOT-A-TYPE"})):
        shutil.copytree(tmp_path / "u1", tmp_path / name)
        config = tmp_path / name / "adapter_config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), **change}))
        with pytest.raises(BackendError, match=f"adapter '{name}' could not be loaded"):
            served.adapter_player(name).player.backend.chat([chat], max_new_tokens=6, seed=7)
    again = player.player.backend.chat([chat], max_new_tokens=6, temperature=1.0, seed=7)[0]
    assert (again.token_ids, again.logprobs) == (tuned.token_ids, tuned.logprobs)  # u1 plays as before


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "scope_envs.cli", "serve", *args, "--port", "0"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,named,said", [
    (["p4g-frozen", "--surface", "text", "--user-llm", "openai:localhost#m"], "--user-llm", "BASE_URL#MODEL"),
    (["p4g-frozen", "--surface", "text", "--user-llm", "/no/such/model"], "--user-llm", "never downloads"),
    (["p4g-frozen", "--user-llm", "openai:http://127.0.0.1:9/v1#m"], "--user-llm", "--surface text"),
    (["p4g-cotrain", "--surface", "text", "--user-llm", "openai:http://127.0.0.1:9/v1#m"], "--user-llm",
     "frozen or vs"),
    (["p4g-frozen", "--surface", "text", "--user-llm-temperature", "99"], "--user-llm-temperature", "0 to 10"),
    (["p4g-frozen", "--surface", "text", "--user-adapter-dir", "/tmp"], "--user-adapter-dir", "--user-llm"),
    (["p4g-frozen", "--surface", "text", "--user-llm-max-new-tokens", "16"], "--user-llm-max-new-tokens", "--user-llm"),
    (["p4g-frozen", "--surface", "text", "--user-llm-temperature", "0.5"], "--user-llm-temperature", "--user-llm"),
    (["p4g-frozen", "--surface", "text", "--user-llm-timeout", "5"], "--user-llm-timeout", "--user-llm"),
    (["p4g-frozen", "--surface", "text", "--user-llm-retries", "0"], "--user-llm-retries", "--user-llm"),
])
def test_bad_user_llm_settings_are_argument_errors(args, named, said):
    out = run_cli(*args)
    assert out.returncode == 2 and f"argument {named}" in out.stderr and said in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_an_unreachable_endpoint_at_start_is_an_argument_error():
    port = free_port()  # nothing listens there
    out = run_cli("p4g-frozen", "--surface", "text", "--user-llm", f"openai:http://127.0.0.1:{port}/v1#m")
    assert out.returncode == 2 and "argument --user-llm" in out.stderr and "unreachable" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_container_entry_takes_the_user_llm(endpoint, monkeypatch):
    """scope_envs.serve.asgi (the Dockerfile's app): SCOPE_USER_LLM is --user-llm; a bad one names the variable."""
    monkeypatch.setenv("SCOPE_ENV_ID", "p4g-frozen")  # the module builds its app on import
    from scope_envs.serve.asgi import from_environment

    environ = {"SCOPE_ENV_ID": "p4g-frozen", "SCOPE_ENV_SURFACE": "text", "SCOPE_USER_LLM": f"openai:{endpoint.url}#m"}
    app = from_environment(environ)
    assert app.state.scope_spec["user_llm"]["plays"] == "user"
    with pytest.raises(RuntimeError, match="SCOPE_USER_LLM: .*--surface text"):
        from_environment({**environ, "SCOPE_ENV_SURFACE": "act"})


def test_a_lora_adapter_as_the_user_llm_names_its_base_model(tmp_path):
    """An adapter folder (a --lora run's checkpoints/final/adapters/user) passes eval-llm's policy check but is
    no model the server loads: one line naming the base model to pass, not transformers' tokenizer complaint."""
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_dir = tiny_model_dir()
    lora = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir), LoraConfig(r=4, target_modules=["q_proj"]))
    lora.save_pretrained(tmp_path / "user")
    for spec in (str(tmp_path / "user"), f"hf:{tmp_path / 'user'}"):
        with pytest.raises(UserLLMError, match="is a LoRA adapter, not a model: pass its base model") as refused:
            ServedLLM(spec)
        assert base_dir in str(refused.value) and "\n" not in str(refused.value)


def test_a_chat_template_is_checked_before_listening_and_its_refusal_mid_game_costs_the_user_a_try(tmp_path):
    """A local --user-llm with a broken chat template started listening, and each step came back as a
    BAD_REQUEST blaming the client: it is an argument error naming --user-llm and the folder now (exit 2),
    before anything listens. A template that renders an episode's opening but refuses a later conversation is a
    failed backend call during play: the user's in-game error, with user_llm_error in the agent's info."""
    from llm_fixtures import template_variant

    from scope_envs.agents.llm import TransformersBackend

    broken = template_variant(tmp_path / "broken", "broken")
    out = run_cli("p4g-frozen", "--surface", "text", "--user-llm", f"hf:{broken}")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "serving" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("scope-envs serve: error: argument --user-llm: ") and repr(broken) in last
    assert "unexpected '}'" in last

    backend = TransformersBackend.from_path(tiny_model_dir())
    backend.tokenizer.chat_template = ("{% for m in messages %}{% if 'REFUSE' in m['content'] %}"
                                       "{{ raise_exception('this template refuses REFUSE') }}{% endif %}"
                                       "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                                       "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    served = ServedLLM(backend, UserLLMOptions(max_new_tokens=4))
    env = ScopeEnvironment(ServeConfig("p4g-frozen", "text", {"max_errors": 3}, served, "user"))
    env.reset(seed=0)
    out = env.step(ScopeAction(actions={"agent_0": "Please REFUSE nothing: would you donate?"}))
    entry = out.agents["agent_0"]  # each try renders the same conversation: the tries run out, truncated
    assert entry.info["simulator_errors"] == 3 and out.done and entry.truncated and not entry.terminated
    assert "this template refuses REFUSE" in entry.info["user_llm_error"]
