"""The known-answer calibration (scope_envs.bench.calibration, ``scope-envs bench --calibration``)."""

import json

import numpy as np
import pytest

from scope_envs.bench import calibration as cal
from scope_envs.cli import main


def test_each_dial_sets_one_defect():
    from scope_envs.agents.p4g import CollapsedPersuadee
    from scope_envs.games.p4g.personas import default_persona

    frozen = CollapsedPersuadee()
    one = lambda dial: cal.simulators("p4g", dial)[0]  # noqa: E731
    assert (one("none").sharpening, one("none").persona, one("none").cooperation) == (1.0, None, 0.0)
    assert one("sharpening-default").sharpening == frozen.sharpening
    assert one("sharpening-strong").sharpening == cal.STRONG_SHARPENING
    assert one("coverage-modal").persona == default_persona()
    assert one("cooperation-default").cooperation == frozen.cooperation
    combined = one("combined")
    assert (combined.sharpening, combined.persona, combined.cooperation) == \
        (frozen.sharpening, frozen.persona, frozen.cooperation)  # today's frozen simulator
    with pytest.raises(ValueError, match="dial"):
        cal.simulators("p4g", "sharpening-mild")


def test_few_cards_is_a_population_the_env_deals_from():
    import scope_envs

    env_id, kwargs = cal.train_env("p4g", "frozen", "coverage-few")
    assert env_id == "p4g-rotation" and len(kwargs["users"]) == 3
    env = scope_envs.make(env_id, **kwargs)
    dealt = set()
    for seed in range(30):
        env.reset(seed=seed)
        dealt.add(env.unwrapped.game.persona.id)
    assert dealt == {u.persona.id for u in kwargs["users"]}  # only the few cards, all of them
    assert ("vs", "coverage-few") not in cal.cells("p4g")  # VS wraps one simulator
    with pytest.raises(ValueError, match="population"):
        cal.train_env("p4g", "vs", "coverage-few")


def test_the_dials_follow_each_games_frozen_simulator():
    import inspect

    from scope_envs.agents.tau2 import CollapsedUser

    has_bias = inspect.signature(CollapsedUser.__init__).parameters["cooperation"].default != 0
    assert ("cooperation-default" in cal.dials("tau2")) == has_bias
    assert cal.dials("p4g") == list(cal.DIALS)
    cells = cal.cells("cooperbench")
    assert cells[:2] == [(cal.FLOOR, None), (cal.CEILING, None)]
    assert ("rotation", "coverage-modal") in cells and ("population", None) in cells
    env_id, kwargs = cal.train_env("cooperbench", "rotation", "sharpening-strong")
    assert env_id == "cooperbench-rotation" and len(kwargs["users"]) == 4
    assert {m.sharpening for m in kwargs["users"]} == {cal.STRONG_SHARPENING}  # the dial kept, the cards varied
    assert len({m.persona.id for m in kwargs["users"]}) == 4


def _runs(means: dict, seeds: int = 6, sd: float = 0.01) -> list[dict]:
    rng = np.random.default_rng(1)
    return [{"game": "p4g", "method": m, "seed": s,
             "metrics": {"heldout_success": float(mu + sd * rng.standard_normal()), "train_success": 0.0}}
            for m, mu in means.items() for s in range(seeds)]


def test_known_answers_are_judged_from_the_cells():
    good = {"random": 0.0, "ceiling": 1.0, "frozen@none": 0.95}
    for d in cal.DIALS:
        if d != "none":
            good[f"frozen@{d}"] = 0.5
            if d != "coverage-few":
                good[f"vs@{d}"] = 0.9 if d.startswith("sharpening") else 0.55
            good[f"rotation@{d}"] = 0.7 if d.startswith("coverage") else 0.55
    good.update(cotrain=0.5, population=0.6, selfplay=0.4)
    ka = {k["key"]: k["held"] for k in cal.analyse(_runs(good))["p4g"]["known_answers"]}
    assert ka == {"K1": True, "K2": True, "K3": True, "K4": True, "K5": True}

    # frozen@none far below the ceiling, so every gap is under a tenth of the band; VS short on one dial
    bad = dict(good, **{"frozen@none": 0.58, "vs@sharpening-strong": 0.52})
    a = cal.analyse(_runs(bad))["p4g"]
    ka = {k["key"]: k["held"] for k in a["known_answers"]}
    assert ka["K1"] is False and ka["K2"] is False and ka["K3"] is None  # no gap opened: nothing judged
    assert a["dials"]["sharpening-strong"]["gap"] == pytest.approx(0.08, abs=0.02)
    some = dict(good, **{"vs@sharpening-strong": 0.52})
    ka = {k["key"]: k["held"] for k in cal.analyse(_runs(some))["p4g"]["known_answers"]}
    assert ka["K3"] is False and ka["K1"] is True

    flat = {m: (0.5 if m.startswith("frozen") else mu) for m, mu in good.items()}
    ka = {k["key"]: k["held"] for k in cal.analyse(_runs(flat))["p4g"]["known_answers"]}
    assert ka["K2"] is False and ka["K3"] is None and ka["K4"] is None  # no gap: nothing to recover

    # one seed: no CI of any gap, so no expectation that rests on one is failed; K1 (a point share) still judged
    one = {k["key"]: k for k in cal.analyse(_runs(good, seeds=1))["p4g"]["known_answers"]}
    assert one["K1"]["held"] is True
    for key in ("K2", "K3", "K4", "K5"):
        assert one[key]["held"] is None and "fewer than 2 seeds" in one[key]["evidence"], one[key]
        assert "--seeds 2" in one[key]["evidence"]


def test_calibration_rejects_the_benchmarks_own_rows(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--calibration", "--methods", "frozen", "vs"])
    assert e.value.code == 2 and "--methods" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # taken and unused: the calibration always prints its report
        main(["bench", "--calibration", "--print-report"])
    assert e.value.code == 2 and "argument --print-report: not with --calibration" in capsys.readouterr().err


@pytest.mark.slow
def test_a_small_calibration_run_writes_its_outputs_and_learns(tmp_path):
    """End to end on p4g: every cell, the files, the known answers judged; and the ceiling (PPO against the
    users' own model) beats uniform play against those users on held-out cards — training learned."""
    out = tmp_path / "cal"
    main(["bench", "--calibration", "--games", "p4g", "--seeds", "2", "--steps", "1000", "--eval-episodes", "48",
          "--out", str(out)])
    data = json.loads((out / "calibration.json").read_text())
    game = data["games"]["p4g"]
    assert set(data["expectations"]) == {"K1", "K2", "K3", "K4", "K5"}
    assert {k["key"] for k in game["known_answers"]} == set(data["expectations"])
    assert len(list((out / "runs").glob("*.json"))) == 2 * len(cal.cells("p4g"))
    assert set(game["dials"]) == set(cal.DIALS) - {"none"}
    assert game["ceiling"] > game["floor"]
    assert (out / "calibration_p4g.png").stat().st_size > 1000
    assert "K3" in (out / "calibration.md").read_text()
    # --resume keeps the cells this code made and redoes one that other code made (its fingerprint differs)
    runs = {p.name: json.loads(p.read_text()) for p in (out / "runs").glob("*.json")}
    stale = "p4g-frozen@none-1.json"
    runs[stale]["result"]["fingerprint"]["engine"] = "other code"
    (out / "runs" / stale).write_text(json.dumps(runs[stale]))
    main(["bench", "--calibration", "--games", "p4g", "--seeds", "2", "--steps", "1000", "--eval-episodes", "48",
          "--out", str(out), "--resume"])
    again = {p.name: json.loads(p.read_text()) for p in (out / "runs").glob("*.json")}
    redone = [name for name in runs if again[name] != runs[name]]
    assert redone == [stale]
    assert again[stale]["result"]["fingerprint"] == runs["p4g-ceiling-0.json"]["result"]["fingerprint"]


def test_the_homogeneous_dial_is_the_frozen_defects_on_the_few_cards():
    from scope_envs.agents.p4g import CollapsedPersuadee

    sims = cal.simulators("p4g", "homogeneous")
    few = cal.simulators("p4g", "coverage-few")
    assert len(sims) == 3 and [s.persona for s in sims] == [s.persona for s in few]
    assert {(s.sharpening, s.cooperation) for s in sims} == {(CollapsedPersuadee().sharpening,
                                                              CollapsedPersuadee().cooperation)}


def test_a_world_variant_moves_the_users_and_the_simulators_and_fitted_puts_it_back():
    """p4g's persona x act interactions switched off, in this process, for every model that reads them."""
    from scope_envs.games.p4g import personas, reference

    fitted = reference.act_effects(personas.persona("train", 3))
    try:
        cal.use_world("p4g", "no-interactions")
        off = reference.act_effects(personas.persona("train", 3))
        main_effects = personas.params("train")["strategy_effects"]["coef"]
        assert off == {a: main_effects[a] for a in main_effects} and off != fitted
    finally:
        cal.use_world("p4g", "fitted")
    assert reference.act_effects(personas.persona("train", 3)) == fitted
    with pytest.raises(ValueError, match="p4g world must be one of"):
        cal.use_world("p4g", "no-cards")
    with pytest.raises(ValueError, match="tau2 declares no variants of its training-side world"):
        cal.use_world("tau2", "no-interactions")


def test_the_markdown_prints_each_gap_beside_its_own_ci_and_its_share_apart():
    """calibration.md printed "-0.33 [-0.215, +0.070]": a share of the band beside the CI of the absolute gap, which
    read as a point outside its interval. Now the gap and its CI are on one scale, the share in its own column, and
    every number is the analysis's own."""
    import re

    good = {"random": 0.0, "ceiling": 0.5, "frozen@none": 0.45}
    for d in cal.DIALS:
        if d != "none":
            good[f"frozen@{d}"] = 0.3 if d.startswith("sharpening") else 0.46
            good[f"rotation@{d}"] = 0.4
    a = cal.analyse(_runs(good, sd=0.05))
    md = cal.markdown(a, {"seeds": 6})
    header = next(line for line in md.splitlines() if line.startswith("| dial |"))
    assert "[95% CI of the gap]" in header and "| gap as a share of the band |" in header
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ") and "@" not in line
            and not line.startswith("| dial")}
    assert set(rows) == set(a["p4g"]["dials"])
    for d, v in a["p4g"]["dials"].items():
        cells = [c.strip() for c in rows[d].strip("|").split("|")]
        gap, lo, hi = map(float, re.fullmatch(r"([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]", cells[1]).groups())
        assert (gap, lo, hi) == (round(v["gap"], 3), round(v["ci"][0], 3), round(v["ci"][1], 3))
        assert lo <= gap <= hi, rows[d]  # the point inside its own interval
        assert cells[2] == f"{v['gap_share']:+.2f}" + ("" if v["opened"] else " (no gap)")
    shares = {d: v["gap_share"] for d, v in a["p4g"]["dials"].items()}
    assert any(not cal.GAP_SHARE <= s for s in shares.values()) and any(s >= cal.GAP_SHARE for s in shares.values())
    assert "A method's recovered share: (method@dial − frozen@dial) / gap" in md


def test_rewrite_markdown_rewrites_the_words_from_the_json_alone(tmp_path, monkeypatch):
    """No cell is trained and no record read: calibration.md again from calibration.json, the same numbers."""
    good = {"random": 0.0, "ceiling": 1.0, "frozen@none": 0.95, "frozen@combined": 0.5, "rotation@combined": 0.6}
    analysis = cal.analyse(_runs(good))
    settings = {"seeds": 6, "steps": {"p4g": 10}, "wall_s": 1.0}
    (tmp_path / "calibration.json").write_text(json.dumps({"settings": settings, "games": analysis}))
    monkeypatch.setattr(cal, "run_cell", lambda *a, **k: pytest.fail("rewrite_markdown trained a cell"))
    assert cal.rewrite_markdown(tmp_path) == tmp_path / "calibration.md"
    assert (tmp_path / "calibration.md").read_text() == cal.markdown(json.loads(json.dumps(analysis)), settings)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibration.json", "calibration.md"]


def test_each_committed_calibration_recomputes_its_known_answers_and_its_md():
    """Every committed calibration: its known answers are what ``known_answers`` makes of its own cells and dials
    (verdicts and words), and its calibration.md is its JSON in the current wording."""
    from pathlib import Path

    folders = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "results").glob("*/calibration.json"))
    assert len(folders) >= 6
    for path in folders:
        data = json.loads(path.read_text())
        for game, g in data["games"].items():
            mean = {m: c["mean"] for m, c in g["cells"].items()}
            assert cal.known_answers(mean, g["band"], g["dials"]) == g["known_answers"], (path, game)
        assert (path.parent / "calibration.md").read_text() == cal.markdown(data["games"], data["settings"]), path
