"""The proxies' assumption switches and ``scope-envs bench --sensitivity`` (issue: benchmark validity, item 3)."""

import numpy as np
import pytest

import scope_envs
from scope_envs.bench import sensitivity
from scope_envs.bench.stats import game_claims, normalize
from scope_envs.games.p4g import human_proxy as p4g_proxy
from scope_envs.games.p4g.dialogue_acts import PERSUADER_INDEX
from scope_envs.games.tau2 import human_proxy as tau2_proxy
from scope_envs.games.tau2.dialogue_acts import USER_INDEX


def play(env, choose, seed):
    """One episode; ``choose(env, legal mask) -> act`` for agent_0. Returns (agent_0's return, the user's acts)."""
    env.reset(seed=seed)
    total = 0.0
    while env.agents:
        g = env.unwrapped.game
        legal = g.legal(g.agent_role)
        _, rew, _, _, _ = env.step({"agent_0": choose(env, legal)})
        total += rew["agent_0"]
    g = env.unwrapped.game
    return total, [t.act for t in g.history if t.role == g.user_role]


def confirm_every_turn(env, legal):
    """The frozen-trained policy's habit on p4g: confirm_donation whenever it can, else thank, else the first act."""
    for act in ("confirm_donation", "thank"):
        if legal[PERSUADER_INDEX[act]]:
            return PERSUADER_INDEX[act]
    return int(np.flatnonzero(legal)[0])


def test_the_default_variant_is_todays_proxy_bit_for_bit():
    for game, choose in (("p4g", confirm_every_turn), ("tau2", lambda env, legal: int(np.flatnonzero(legal)[-1]))):
        for seed in range(5):
            a = play(scope_envs.make(f"{game}-heldout"), choose, seed)
            b = play(scope_envs.make(f"{game}-heldout", assumptions="default"), choose, seed)
            assert a == b


def test_p4g_switches_change_willingness_as_declared():
    from scope_envs.core.game import Turn
    from scope_envs.games.p4g.personas import persona

    card = persona("heldout", 3)
    coef = p4g_proxy.params(p4g_proxy.PART)["strategy_effects"]["coef"]

    def w(acts, variant):
        history = [Turn("persuader", PERSUADER_INDEX[a]) for a in acts]
        return p4g_proxy.willingness(card, history, p4g_proxy.VARIANTS[variant])

    base = w([], "default")
    # thanks and confirmations move nobody by default; with all acts moving they count, with wear-out
    assert w(["thank", "confirm_donation"] * 3, "default") == pytest.approx(base)
    expected = (coef["thank"] + coef["confirm_donation"]) * (1 + 1 / 2 + 1 / 3)
    assert w(["thank", "confirm_donation"] * 3, "all_acts_move") - base == pytest.approx(expected)
    # wear-out: the k-th use counts 1/k; switched off, every use counts in full
    one = w(["donation_information"], "default") - base
    assert w(["donation_information"] * 3, "default") - base == pytest.approx(one * (1 + 1 / 2 + 1 / 3))
    assert w(["donation_information"] * 3, "no_wear_out") - base == pytest.approx(3 * one)
    # heterogeneity off: the effect is the fitted coefficient for every persona
    assert w(["emotion_appeal"], "homogeneous") - base == pytest.approx(coef["emotion_appeal"])
    # pushiness: the third request costs more when doubled, nothing when off
    asks = ["propose_donation"] * 4
    assert w(asks, "no_pushiness") > w(asks, "default") > w(asks, "pushiness_x2")


def test_all_acts_move_rewards_the_frozen_habit_on_held_out_users():
    """The assumption that decides claim 1 on p4g: under it, confirming every turn pays on held-out users."""
    def mean_gift(variant):
        env = scope_envs.make("p4g-heldout", assumptions=variant)
        return np.mean([play(env, confirm_every_turn, 100 + s)[0] for s in range(150)])

    assert mean_gift("all_acts_move") > mean_gift("default") + 0.05


def test_tau2_switches_change_the_users_as_declared():
    from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS

    # a stalling agent (it never ends, transfers or writes) leaves the end of the dialogue to the user's patience
    stall = np.array([not (a in ("end", "transfer") or a.startswith("execute")) for a in AGENT_ACTS])

    def episodes(variant, n=150, stalling=False):
        env = scope_envs.make("tau2-heldout", assumptions=variant)
        rng = np.random.default_rng(0)

        def choose(env, legal):
            keep = legal & stall if stalling and (legal & stall).any() else legal
            return int(rng.choice(np.flatnonzero(keep)))

        return [play(env, choose, 500 + s)[1] for s in range(n)]

    def count(variant, act):
        return sum(a == USER_INDEX[act] for ep in episodes(variant) for a in ep)

    # (a slip can still come from the uniform fallback when nothing else is legal: fewer, not none)
    assert count("no_slips", "inform_slip") < count("default", "inform_slip") / 3
    assert count("default", "inform_slip") < count("slips_x2", "inform_slip")
    assert count("no_retractions", "change_mind") == 0 < count("default", "change_mind") < count(
        "retractions_x2", "change_mind")
    # impatient users leave sooner, patient ones stay longer
    lengths = {v: np.mean([len(ep) for ep in episodes(v, stalling=True)])
               for v in ("patience_half", "default", "patience_x2")}
    assert lengths["patience_half"] < lengths["default"] < lengths["patience_x2"]


@pytest.mark.parametrize("game, bad", [("p4g", "nope"), ("tau2", "nope"), ("p4g", {"wear": 1}),
                                       ("tau2", {"slips": -1}), ("cooperbench", "all_acts_move"),
                                       ("p4g", {"moving_acts": "some"}), ("p4g", {"wear_out": "false"})])
def test_bad_assumptions_are_one_clear_error(game, bad):
    with pytest.raises(ValueError, match="assumption|must be|take"):
        scope_envs.make(f"{game}-heldout", assumptions=bad)
    with pytest.raises(ValueError, match="assumptions"):  # a training regime takes no such option
        scope_envs.make(f"{game}-frozen", assumptions="default")


def test_variants_are_declared_per_game():
    assert sensitivity.variants("p4g") == [v for v in p4g_proxy.VARIANTS if v != "default"]
    assert sensitivity.variants("tau2") == [v for v in tau2_proxy.VARIANTS if v != "default"]
    assert sensitivity.variants("cooperbench") == []


def table(held: dict[str, list[float]], variant: dict[str, list[float]], train=None) -> dict:
    """A results table: per method and seed, default held-out success and one variant's ("v")."""
    train = train or {}
    return {m: {"per_seed": {str(i): {"heldout_success": x, "train_success": train.get(m, xs)[i],
                                      "sensitivity": {"v": variant[m][i]}} for i, x in enumerate(xs)}}
            for m, xs in held.items()}


def test_claims_are_judged_again_under_each_variant_with_its_own_ceiling(monkeypatch):
    monkeypatch.setattr(sensitivity, "variants", lambda game: ["v"])
    held = {"random": [0.10, 0.11, 0.12], "oracle": [0.90, 0.91, 0.92], "untrained": [0.10, 0.12, 0.11],
            "frozen": [0.40, 0.41, 0.42], "vs": [0.80, 0.81, 0.82]}
    # under "v" vs no longer beats frozen; the policies' oracle scores are ignored for the retrained ceiling's
    var = dict(held, vs=[0.40, 0.42, 0.41], oracle=[0.0, 0.0, 0.0])
    results = normalize({"g": table(held, var)})
    ceilings = [{"game": "g", "method": "oracle", "seed": i, "assumptions": "v", "metrics": {"heldout_success": x}}
                for i, x in enumerate([0.90, 0.90, 0.91])]
    rows = sensitivity.judge(results, ceilings)
    verdict = {(r["variant"], r["claim"][:2]): r["held"] for r in rows}
    assert verdict[("default", "2a")] is True and verdict[("v", "2a")] is False
    assert verdict[("v", "0.")] is True  # the retrained ceiling clears the floor (the re-evaluated one would not)
    assert [r["held"] for r in rows if r["variant"] == "default"] == [c["held"] for c in game_claims("g", results["g"])]
    md = sensitivity.markdown(rows)
    assert "| 2a | yes | no |" in md


@pytest.mark.slow
def test_bench_sensitivity_end_to_end(tmp_path):
    import json

    from scope_envs.bench import run

    run(games=["p4g"], methods=["random", "oracle", "untrained", "frozen"], seeds=2, steps=64, eval_episodes=8,
        out=tmp_path, jobs=1, progress=False, sensitivity=True)
    results = json.loads((tmp_path / "results.json").read_text())
    for entry in results["p4g"].values():
        for s in entry["per_seed"].values():
            assert set(s["sensitivity"]) == set(sensitivity.variants("p4g"))
    rows = json.loads((tmp_path / "sensitivity.json").read_text())
    assert {r["variant"] for r in rows} == {"default", *sensitivity.variants("p4g")}
    assert "Sensitivity" in (tmp_path / "report.md").read_text()


def test_bench_world_trains_in_the_variant_and_leaves_the_worker_as_shipped():
    """``scope-envs bench --world no-interactions``: the run trains and is judged in p4g's world without its persona x
    act interactions, says so in its record, and the process is back in the shipped world afterwards."""
    from scope_envs.bench.methods import run_one
    from scope_envs.games.p4g import personas

    def interactions():
        return sum(abs(v) for v in personas.params("train")["strategy_interactions"]["coef"].values())

    shipped = interactions()
    assert shipped > 0
    kwargs = dict(game="p4g", method="uncollapsed", seed=0, steps=600, eval_episodes=60, curve_points=2,
                  curve_episodes=20)
    plain, varied = run_one(**kwargs), run_one(**kwargs, world="no-interactions")
    assert "world" not in plain and varied["world"] == "no-interactions"
    assert interactions() == shipped
    # the simulator it trained against and the reference users it was judged on moved; the held-out proxies did not
    assert plain["metrics"]["train_success"] != varied["metrics"]["train_success"]
    again = run_one(**kwargs)  # the next run in this worker is the shipped world's again
    assert [again["metrics"][k] for k in ("train_success", "heldout_success")] == \
        [plain["metrics"][k] for k in ("train_success", "heldout_success")]


def test_bench_world_is_refused_where_a_game_lacks_it(tmp_path):
    """(With --against it is taken: tests/test_bench_reference.py scores a row against a reference made in a world.)"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "scope_envs.cli", "bench", "--world", "no-interactions",
                           "--out", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "--world" in done.stderr.splitlines()[-1], done.stderr
    assert "cooperbench, tau2 declare(s) no world 'no-interactions'" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def test_bench_sensitivity_on_games_without_variants_is_refused_and_named(tmp_path, capsys, monkeypatch):
    """cooperbench's proxies have no variants: ``--sensitivity --games cooperbench`` wrote an empty sensitivity.json
    and a table-less section without a word; now exit 2 naming the argument, before any run. With a game that has
    them, the table says which games were not re-judged."""
    from scope_envs.bench import runner
    from scope_envs.cli import main

    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a run started"))  # (the name run() calls)
    with pytest.raises(SystemExit) as e:
        main(["bench", "--sensitivity", "--games", "cooperbench", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.splitlines()[-1]
    assert e.value.code == 2 and err.startswith("scope-envs bench: error: argument --sensitivity: cooperbench: no "
                                                "variants") and "p4g, tau2" in err, err
    table = sensitivity.markdown([{"game": "p4g", "variant": "default", "claim": "0. x", "held": True}],
                                 without=["cooperbench"])
    assert "cooperbench: no variants of the held-out proxies' assumptions (not re-judged)." in table
