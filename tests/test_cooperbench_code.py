"""The real-task CooperBench game: git worktrees, real merges, the demo tasks' real tests, the sandbox."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

import scope_envs
from scope_envs.games.cooperbench.code import dataset, partners, sandbox
from scope_envs.games.cooperbench.code.game import CodeGame

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the real-task game needs git")
PAIRS = ["textkit_task/task1/f1-f2", "textkit_task/task1/f1-f3", "textkit_task/task1/f2-f3"]
SHARED = "textkit_task/task1/f1-f3"  # both features change textkit/core.py:slugify


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def play(env, teammate, partner=None, seed=0):
    """One episode; ``partner`` plays ``user_0`` when the regime has it. Returns agent_0's last infos and rewards."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    game = env.unwrapped.game
    rewards = {}
    while env.agents:
        actions = {}
        for agent in env.agents:
            role = env.unwrapped._role[agent]
            player = teammate if agent == "agent_0" else partner
            actions[agent] = player.reply(env.unwrapped.view(role), rng) if game.active_role() == role else "..."
        _, rewards, _, _, infos = env.step(actions)
    return infos["agent_0"], rewards


@pytest.fixture(scope="module")
def cotrain():
    env = scope_envs.make("cooperbench-cotrain", surface="text", tasks="demo", user_reward="zero_sum")
    yield env
    env.unwrapped.game.close()


@pytest.mark.parametrize("pair", PAIRS)
def test_coordinating_pair_solves_each_demo_pair(cotrain, pair):
    cotrain.unwrapped.game.pairs = [p for p in dataset.discover(dataset.DEMO_DIR) if p.id == pair]
    info, rewards = play(cotrain, partners.coordinating(), partners.coordinating())
    assert info["task_id"] == pair
    assert info["success"] == 1.0 and info["merge_status"] == "clean" and info["feature_passed"] == [True, True]
    assert rewards == {"agent_0": 1.5, "user_0": -1.5}  # team 1 + own feature 0.5; zero_sum partner
    assert info["tests_run"] == 2  # each teammate ran its own feature's tests before submitting
    if pair == SHARED:  # the shared function was claimed and written once, with both changes
        said = [m["content"] for m in info["messages"] if m["role"] in ("user", "assistant") and m["content"]]
        assert any("I'll take textkit/core.py:slugify" in s for s in said)


def test_same_function_edited_differently_is_a_real_conflict(cotrain):
    known = {p.id: p for p in dataset.discover(dataset.DEMO_DIR)}
    cotrain.unwrapped.game.pairs = [known[SHARED]]
    info, rewards = play(cotrain, partners.silent(), partners.silent())
    assert info["merge_status"] == "conflicts" and info["conflicting_files"] == ["textkit/core.py"]
    assert info["success"] == 0.0 and info["merge_conflict"] == 1.0 and info["feature_passed"] == [False, False]
    assert rewards["agent_0"] == 0.0
    # the same silence on a pair with disjoint functions merges cleanly and passes: the conflict is the overlap
    cotrain.unwrapped.game.pairs = [known[PAIRS[0]]]
    info, _ = play(cotrain, partners.silent(), partners.silent())
    assert info["merge_status"] == "clean" and info["success"] == 1.0


def test_conflict_falls_back_to_the_leads_patch_as_cooperbench_does(cotrain):
    """CooperBench 0.0.29: on a conflict, agent1's patch alone is graded against both features' tests."""
    known = {p.id: p for p in dataset.discover(dataset.DEMO_DIR)}
    pair = known[SHARED]
    cotrain.unwrapped.game.pairs = [pair]
    cotrain.reset(seed=0)
    game = cotrain.unwrapped.game
    combined = dataset.reference_versions(pair)["combined"]["textkit/core.py"]
    partner_own = dataset.reference_versions(pair)["feature2"]["textkit/core.py"]
    cotrain.step({"agent_0": call("write_file", path="textkit/core.py", content=combined), "user_0": "..."})
    cotrain.step({"agent_0": "...", "user_0": call("write_file", path="textkit/core.py", content=partner_own)})
    cotrain.step({"agent_0": call("submit"), "user_0": "..."})
    *_, infos = cotrain.step({"agent_0": "...", "user_0": call("submit")})
    assert game.merge.status == "conflicts" and game.merge.strategy == "solo-agent1"
    assert infos["agent_0"]["success"] == 1.0


def test_escape_attempts_are_refused(cotrain, tmp_path):
    cotrain.reset(seed=0)
    game = cotrain.unwrapped.game
    root = game.worktrees["teammate"].root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-CONTENT")
    os.symlink(outside, root / "link")  # a symlink already in the tree (an agent cannot make one itself)
    escape = [
        call("read_file", path="../" * 8 + str(outside / "secret.txt")),
        call("read_file", path=str(outside / "secret.txt")),
        call("write_file", path="../evil.py", content="x"),
        call("write_file", path="textkit/../../evil.py", content="x"),
        call("write_file", path=str(outside / "evil.py"), content="x"),
        call("write_file", path="link/evil.py", content="x"),
        call("read_file", path="link/secret.txt"),
        call("write_file", path=".git/config", content="x"),
        call("write_file", path=".gitattributes", content="* merge=union\n"),  # would make conflicts "clean"
        call("list_files", path="link"),
        call("apply_patch", patch="--- a/../evil.py\n+++ b/../evil.py\n@@ -0,0 +1 @@\n+x\n"),
        call("apply_patch", patch="diff --git a/ln b/ln\nnew file mode 120000\n--- /dev/null\n+++ b/ln\n"
                                  "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n"),
    ]
    for text in escape:
        cotrain.step({"agent_0": text, "user_0": "..."})
        cotrain.step({"agent_0": "...", "user_0": "ok"})
    results = [t.result for t in game.history if t.role == "teammate" and t.call]
    assert all(r.startswith("Error:") for r in results), results
    assert game.escapes_refused == len(escape)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"] and not (root.parent / "evil.py").exists()
    assert not any("TOP-SECRET" in r for r in results)
    # inside the worktree the same tools work
    *_, infos = cotrain.step({"agent_0": call("write_file", path="notes/plan.txt", content="hi"), "user_0": "..."})
    assert (root / "notes" / "plan.txt").read_text() == "hi" and game.history[-1].result.startswith("wrote")
    assert infos["agent_0"]["escapes_refused"] == len(escape)


def test_endless_loop_in_a_test_run_is_killed_and_the_episode_goes_on():
    env = scope_envs.make("cooperbench-cotrain", surface="text", tasks="demo", pairs=SHARED, cpu_limit=1,
                          cache_tests=False)  # killed by its CPU limit (the wall-clock one: test_limits_...)
    env.reset(seed=0)
    game = env.unwrapped.game
    looping = "def slugify(text, separator='-'):\n    while True:\n        pass\n\n\ndef truncate(t, w):\n" \
              "    return t[:w]\n\n\ndef word_count(t):\n    return len(t.split())\n"
    env.step({"agent_0": call("write_file", path="textkit/core.py", content=looping), "user_0": "..."})
    env.step({"agent_0": "...", "user_0": "waiting"})
    env.step({"agent_0": call("run_tests"), "user_0": "..."})
    assert game.history[-1].result.startswith("TIMED OUT")
    assert env.agents and game.active_role() == "partner" and game.test_timeouts == 1
    env.step({"agent_0": "...", "user_0": "go on"})
    fixed = dataset.reference_versions(game.pair)["feature1"]["textkit/core.py"]
    env.step({"agent_0": call("write_file", path="textkit/core.py", content=fixed), "user_0": "..."})
    env.step({"agent_0": "...", "user_0": "ok"})
    *_, infos = env.step({"agent_0": call("run_tests"), "user_0": "..."})
    assert game.history[-1].result.startswith("PASSED") and infos["agent_0"]["test_timeouts"] == 1.0
    game.close()


def test_limits_cpu_wall_output_and_cleanup(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    work = tmp_path / "run" / "repo"
    work.mkdir(parents=True)
    cpu = sandbox.run_limited([sys.executable, "-c", "while True: pass"], work, sandbox.Limits(wall_s=60, cpu_s=1))
    assert cpu.timed_out and cpu.exit_code in (-9, -24)  # SIGXCPU at the soft limit or SIGKILL at the hard
    wall = sandbox.run_limited([sys.executable, "-c", "import time; time.sleep(60)"], work,
                               sandbox.Limits(wall_s=1, cpu_s=60))
    assert wall.timed_out and wall.exit_code == -9
    loud = sandbox.run_limited([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"], work,
                               sandbox.Limits(wall_s=60, cpu_s=60, output_mb=1))
    assert loud.exit_code is not None and loud.exit_code != 0 and not loud.passed
    assert (tmp_path / "run" / "output.txt").stat().st_size <= 2**20
    # a test run's temporary checkout is gone afterwards, also when it timed out
    pair = dataset.discover(dataset.DEMO_DIR)[0]
    base = tmp_path / "base"
    dataset.build_base(pair.dir, base)
    box = sandbox.LocalSandbox(sandbox.Limits(wall_s=30))
    run = box.run(base, dataset.test_command(pair.dir), pair.features[0].tests_patch, pair.features[0].gold_patch)
    assert run.passed and run.tests_passed == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "run"]


@pytest.mark.parametrize("guard", ["unshare", "sitecustomize"])
def test_no_network_in_test_runs(tmp_path, guard):
    if guard == "unshare" and sandbox.unshare_prefix() is None:
        pytest.skip("unshare cannot make a network namespace here")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    work = tmp_path / "repo"
    work.mkdir()
    probe = f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('CONNECTED')\n" \
            "except OSError as e:\n    print('BLOCKED', e)\n"
    run = sandbox.run_limited([sys.executable, "-c", probe], work, sandbox.Limits(wall_s=20), network=guard)
    server.settimeout(0.2)  # a connection that was made waits in the backlog
    assert run.network == guard and "BLOCKED" in run.output and not _accept(server)
    server.close()


def _accept(server):
    try:
        server.accept()[0].close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("regime", ["cotrain", "frozen"])
def test_parallel_api(regime):
    env = scope_envs.make(f"cooperbench-{regime}", surface="text", tasks="demo", max_turns=4)
    parallel_api_test(env, num_cycles=25)
    if regime == "cotrain":
        api_test(parallel_to_aec(env), num_cycles=10)
    infos = env.reset(seed=1)[1]
    assert infos["agent_0"]["network_guard"] in ("unshare", "sitecustomize")
    assert [t["function"]["name"] for t in infos["agent_0"]["tools"]] == [
        "list_files", "read_file", "write_file", "apply_patch", "run_tests", "send_message", "submit"]
    env.unwrapped.game.close()


def test_partner_regimes_play_episodes():
    for regime in ("frozen", "rotation", "heldout"):
        env = scope_envs.make(f"cooperbench-{regime}", surface="text", tasks="demo", pairs=PAIRS[0])
        info, rewards = play(env, partners.coordinating(), seed=3)
        assert info["success"] == 1.0 and rewards["agent_0"] == 1.5, regime
        env.unwrapped.game.close()
    # verbalized sampling: the partner states its unsharpened replies with probabilities; one is drawn
    env = scope_envs.make("cooperbench-vs", surface="text", tasks="demo", pairs=SHARED)
    env.reset(seed=0)
    infos = env.step({"agent_0": "My plan: I need to change textkit/core.py:slugify."})[-1]["agent_0"]
    assert len(infos["vs_texts"]) >= 2 and 0.99 <= sum(infos["vs_probs"]) <= 1.01
    assert env.unwrapped.game.history[-1].role == "partner"
    env.unwrapped.game.close()
    # determinism: the same seed replays the same episode (partner coins drawn from the env's generator)
    runs = []
    for _ in range(2):
        env = scope_envs.make("cooperbench-frozen", surface="text", tasks="demo", pairs=SHARED, sharpening=1.0)
        messages = play(env, partners.coordinating(), seed=5)[0]["messages"]
        runs.append([m for m in messages if m["role"] != "tool"])  # test output carries its own timings
        env.unwrapped.game.close()
    assert runs[0] == runs[1]
    assert isinstance(scope_envs.make("cooperbench-frozen").unwrapped.game,
                      scope_envs.games.cooperbench.game.CooperBenchGame)  # the act-level world stays the default


def test_data_dir_layout_subsets_and_errors(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(dataset.DEMO_DIR, data)
    task = data / "textkit_task" / "task1"
    repo = task / "repo"  # the base as plain files instead of repo.patch
    repo.mkdir()
    subprocess.run(["git", "apply", str(task / "repo.patch")], cwd=repo, check=True)
    (task / "repo.patch").unlink()
    (data / "subsets").mkdir()
    (data / "subsets" / "mine.json").write_text(json.dumps({"tasks": [
        {"repo": "textkit_task", "task_id": 1, "pairs": [[3, 1]]}]}))
    game = CodeGame(data_dir=data, subset="mine")
    assert [p.id for p in game.pairs] == ["textkit_task/task1/f3-f1"]
    assert (game.worktrees["teammate"].root / "textkit" / "core.py").is_file()
    root = game._root
    game.close()
    assert not root.exists()
    with pytest.raises(ValueError, match="not a directory"):
        CodeGame(data_dir=tmp_path / "missing")
    with pytest.raises(ValueError, match="no CooperBench feature pairs"):
        CodeGame(data_dir=tmp_path / "data" / "subsets")
    with pytest.raises(ValueError, match="text surface only"):
        scope_envs.make("cooperbench-frozen", tasks="demo")
    with pytest.raises(ValueError, match="unknown pair"):
        scope_envs.make("cooperbench-frozen", surface="text", tasks="demo", pairs="nope")
    if shutil.which("docker") is None:
        with pytest.raises(ValueError, match="Docker"):
            scope_envs.make("cooperbench-frozen", surface="text", tasks="demo", backend="docker")


class _Reply:
    def __init__(self, text):
        self.text = text


class _RecordingBackend:
    """A chat backend stand-in: reads a file, then submits; keeps every prompt it was given."""

    def __init__(self):
        self.prompts = []

    def chat(self, batch, max_new_tokens, temperature, seed):
        self.prompts.append(batch[0])
        return [_Reply(call("read_file", path="textkit/core.py") if len(self.prompts) == 1 else call("submit"))]


def test_llm_partner_reads_its_own_tool_results_and_not_the_teammates():
    backend = _RecordingBackend()
    env = scope_envs.make("cooperbench-frozen", surface="text", tasks="demo", pairs=PAIRS[0],
                          user=partners.ChatPartner(backend))
    env.reset(seed=0)
    env.step({"agent_0": call("write_file", path="textkit/notes.py", content="TEAMMATE_ONLY = 1\n")})
    env.step({"agent_0": "I'll do truncate's neighbour, slugify."})
    second = backend.prompts[1]
    assert second[0]["role"] == "system" and '"name": "read_file"' in second[0]["content"]
    assert any(m["role"] == "tool" and "def slugify" in m["content"] for m in second)  # its own read_file result
    assert not any("TEAMMATE_ONLY" in json.dumps(m) for p in backend.prompts for m in p)
    assert second[-1] == {"role": "user", "content": "I'll do truncate's neighbour, slugify."}
    env.unwrapped.game.close()


def test_run_tests_shows_only_the_own_features_tests_or_none():
    for visible, expected in ((True, "FAILED: 3 passed, 1 failed"), (False, "PASSED: 3 passed, 0 failed")):
        env = scope_envs.make("cooperbench-cotrain", surface="text", tasks="demo", pairs=PAIRS[0],
                              visible_tests=visible)
        env.reset(seed=0)
        env.step({"agent_0": call("run_tests"), "user_0": "..."})  # the base: feature 1's new test fails
        assert env.unwrapped.game.history[-1].result.startswith(expected), visible
        env.unwrapped.game.close()


@pytest.mark.parametrize("style,succeeds", [("planner", True), ("silent", False)])
def test_partner_styles_on_the_shared_function(style, succeeds):
    """The act-level archetypes as text partners: a planner coordinates; a silent worker leaves the teammate
    unaware of the overlap, so the teammate writes its own version while the partner writes the combined one."""
    from scope_envs.core.game import Persona
    from scope_envs.games.cooperbench import styles

    card = Persona(style, "default", dict(zip(styles.TRAITS, styles.ARCHETYPES[style])), {"style": style})
    env = scope_envs.make("cooperbench-frozen", surface="text", tasks="demo", pairs=SHARED,
                          user=partners.ScriptedCoder(card, sharpening=50.0))
    info, _ = play(env, partners.coordinating(), seed=0)
    assert info["success"] == float(succeeds) and (info["merge_status"] == "conflicts") != succeeds
    env.unwrapped.game.close()


def test_a_git_clone_in_the_task_is_checked_out_at_setup_sh_base_commit(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(dataset.DEMO_DIR, data)
    task = data / "textkit_task" / "task1"
    repo = task / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("apply", str(task / "repo.patch"))
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (repo / "textkit" / "core.py").write_text("LATER = 1\n")  # a later commit must not be the task's base
    git("commit", "-qam", "later")
    (task / "repo.patch").unlink()
    (task / "setup.sh").write_text(f'REPO_NAME="textkit"\nBASE_COMMIT="{base}"\n')
    game = CodeGame(data_dir=data)
    assert "def slugify(text):" in (game.worktrees["partner"].root / "textkit" / "core.py").read_text()
    game.close()
