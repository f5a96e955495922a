"""CooperBench: the merge, scripted pairs, splits, and the text surface."""

import shutil
import subprocess

import numpy as np
import pytest

import scope_envs
from scope_envs.agents.cooperbench import HumanProxyPartner, ScriptedTeammate, rotation_members
from scope_envs.games.cooperbench import styles, world
from scope_envs.games.cooperbench.dialogue_acts import ACTS, CLAIM, COMBINED, EDIT, INDEX

def random_edits(rng):
    regions = rng.choice(world.N_REGIONS, 4, replace=False)
    both = [("A", "B"), ("B", "A")]  # a combined edit as the teammate and as the partner write it
    return {int(r): both[int(rng.integers(2))] if rng.random() < 0.3 else (str(rng.choice(["A", "B"])),)
            for r in regions}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_merge_equals_git_merge_file(tmp_path):
    rng = np.random.default_rng(0)
    for trial in range(30):
        ea, eb = random_edits(rng), random_edits(rng)
        merged, conflicts = world.merge(ea, eb)
        base, a, b = (world.render(x) for x in (world.branch_regions({}), world.branch_regions(ea), world.branch_regions(eb)))
        clean = world.render(merged)
        for path in world.FILES:
            for name, files in (("base", base), ("a", a), ("b", b)):
                (tmp_path / name).write_text(files[path])
            git = subprocess.run(["git", "merge-file", "-p", str(tmp_path / "a"), str(tmp_path / "base"), str(tmp_path / "b")],
                                 capture_output=True, text=True)
            file_regions = [i for i, r in enumerate(world.REGIONS) if r.startswith(path[:-3] + ".")]
            ours = len(conflicts & set(file_regions))
            assert git.returncode == ours, (trial, path, ea, eb)
            if ours == 0:
                assert git.stdout == clean[path]


def test_the_games_merge_is_the_worlds_text_merge():
    """The rules' array merge (``CooperBenchBatch``) ends every episode as ``world.merge`` and
    ``world.feature_done`` on the branches' text: the same conflicts and the same finished features."""
    from scope_envs.games.cooperbench.batched import CooperBenchBatch

    rng = np.random.default_rng(1)
    n, regions = 300, world.N_REGIONS
    batch = CooperBenchBatch(n)
    needs = rng.random((n, 2, regions)) < 0.3
    batch.reset_needs(np.arange(n), needs, np.full(n, 0.5))
    batch.edits[:] = rng.choice(3, size=(n, 2, regions), p=[0.5, 0.3, 0.2])  # none, own feature, combined
    batch._finish(np.arange(n))
    for i in range(n):
        written = [{r: ((feature,) if code == 1 else (feature, other)) for r, code in enumerate(batch.edits[i, role])
                    if code} for role, (feature, other) in enumerate((("A", "B"), ("B", "A")))]
        merged, conflicts = world.merge(*written)
        done = [world.feature_done(merged, conflicts, frozenset(np.flatnonzero(needs[i, role]).tolist()), f)
                for role, f in enumerate("AB")]
        assert batch.result["conflicts"][i] == len(conflicts)
        assert (batch.result["teammate_feature"][i], batch.result["partner_feature"][i]) == tuple(map(float, done))
        assert batch.result["success"][i] == float(all(done) and not conflicts)


def play(env_id, teammate, partner=None, episodes=60, **kw):
    env = scope_envs.make(env_id, **kw)
    rng = np.random.default_rng(0)
    results = []
    for ep in range(episodes):
        env.reset(seed=ep)
        while env.agents:
            acts = {}
            for a in env.agents:
                player = teammate if a == "agent_0" else partner
                acts[a] = player.act(env.unwrapped.view(env.unwrapped._role[a]), rng)
            *_, infos = env.step(acts)
        results.append(infos["agent_0"])
    return results


def test_scripted_coordinating_pair_succeeds_and_silent_pair_conflicts():
    talk = play("cooperbench-cotrain", ScriptedTeammate(True), ScriptedTeammate(True))
    silent = play("cooperbench-cotrain", ScriptedTeammate(False), ScriptedTeammate(False))
    assert np.mean([r["success"] for r in talk]) >= 0.9
    assert np.mean([r["conflicts"] > 0 for r in silent]) >= 0.3
    assert np.mean([r["success"] for r in silent]) < np.mean([r["success"] for r in talk]) - 0.3
    assert np.mean([r["message_share"] for r in talk]) > 0.1 > np.mean([r["message_share"] for r in silent])


def test_frozen_partner_is_easier_than_heldout_proxies():
    frozen = play("cooperbench-frozen", ScriptedTeammate(True))
    held = play("cooperbench-heldout", ScriptedTeammate(True))
    assert np.mean([r["success"] for r in frozen]) > np.mean([r["success"] for r in held]) + 0.1


def test_task_and_persona_splits_are_disjoint():
    train, held = world.tasks("train"), world.tasks("heldout")
    assert not {t.id for t in train} & {t.id for t in held}
    assert not {t.needs for t in train} & {t.needs for t in held}
    assert all(t.needs[0] and t.needs[1] for t in train + held)
    ptrain = {styles.persona("train", i).traits.values().__repr__() for i in range(styles.SPLIT_SIZES["train"])}
    pheld = {styles.persona("heldout", i).traits.values().__repr__() for i in range(styles.SPLIT_SIZES["heldout"])}
    assert not ptrain & pheld
    assert all(m.persona.split in ("train", "default") for m in rotation_members())


@pytest.mark.parametrize("regime", ["frozen", "vs", "rotation", "cotrain", "population"])
def test_training_regimes_use_train_tasks_and_no_proxy(regime, monkeypatch):
    monkeypatch.setattr(HumanProxyPartner, "distribution", lambda *a: (_ for _ in ()).throw(AssertionError("proxy")))
    env = scope_envs.make(f"cooperbench-{regime}")
    rng = np.random.default_rng(0)
    for ep in range(8):
        obs, _ = env.reset(seed=ep)
        assert env.unwrapped.game.task.split == "train"
        while env.agents:
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})


def test_heldout_regime_plays_heldout_tasks_and_styles():
    env = scope_envs.make("cooperbench-heldout")
    for ep in range(5):
        env.reset(seed=ep)
        assert env.unwrapped.game.task.split == "heldout" and env.unwrapped.game.persona.split == "heldout"


def test_rules_combined_edit_needs_knowledge():
    env = scope_envs.make("cooperbench-cotrain")
    obs, _ = env.reset(seed=0)
    game = env.unwrapped.game
    shared = sorted(game.task.overlap) or pytest.skip("task without shared regions")
    r = shared[0]
    assert not obs["agent_0"]["action_mask"][COMBINED + r]
    env.step({"agent_0": INDEX["ask"], "user_0": 0})
    obs, *_ = env.step({"agent_0": 0, "user_0": INDEX["answer"]})
    assert obs["agent_0"]["action_mask"][COMBINED + r]


def test_text_surface_commands_and_messages():
    env = scope_envs.make("cooperbench-cotrain", surface="text")
    env.reset(seed=1)
    game = env.unwrapped.game
    mine = sorted(game.needs["teammate"])[0]
    env.step({"agent_0": f"I'll take {world.REGIONS[mine]}, leave it to me.", "user_0": ""})
    assert game.history[-1].act == CLAIM + mine
    env.step({"agent_0": "", "user_0": "What's your plan?"})
    assert ACTS[game.history[-1].act] == "ask"
    env.step({"agent_0": f"I need to change {world.REGIONS[mine]}.", "user_0": ""})
    assert ACTS[game.history[-1].act] == "answer"
    obs, *_, infos = env.step({"agent_0": "", "user_0": "EDIT nowhere.at_all"})
    assert infos["user_0"]["errors"] == 1 and "unknown region" in obs["user_0"]
    theirs = sorted(game.needs["partner"])[0]
    env.step({"agent_0": "", "user_0": f"EDIT {world.REGIONS[theirs]}"})
    assert game.history[-1].act == EDIT + theirs


def test_solo_baseline_and_infos():
    env = scope_envs.make("cooperbench-heldout")
    env.reset(seed=0)
    assert world.solo_success(env.unwrapped.game.task, env.unwrapped.game.max_turns)
    res = play("cooperbench-heldout", ScriptedTeammate(True), episodes=3)
    assert set(res[0]) >= {"success", "teammate_feature", "partner_feature", "conflicts", "message_share"}
