"""``p4g-grounded``: the frozen persuadee fitted to the training part of the real P4G dialogues
(``scope_envs.games.p4g.grounded``, ``scope_envs.agents.p4g.GroundedPersuadee``).

The fit never reads a held-out person (a fake data folder whose held-out rows would break any parse, and whose
held-out acts do not move the fit); the committed parameters are what the fit derives from the data; replayed on
the training part's real contexts, the simulator's replies have the real frequencies; the id is registered for
p4g alone, passes the API tests and is deterministic; the ``grounded`` bench row runs; diagnose names it.
"""

import csv
import dataclasses
import json
import math
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import scope_envs
from scope_envs.agents.p4g import CollapsedPersuadee, GroundedPersuadee
from scope_envs.core.game import Persona
from scope_envs.core.simulator import View
from scope_envs.games.p4g import dialogue_acts, grounded, personas
from scope_envs.games.p4g.fit import CATEGORICAL, NUMERIC, RESPONSE_ACTS
from scope_envs.games.p4g.game import PERSUADEE, PERSUADER, P4GGame
from scope_envs.games.p4g.people import HELDOUT, TRAIN, split_of, split_people

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "p4g"
needs_data = pytest.mark.skipif(not (DATA / "full_info.csv").exists(),
                                reason=f"Persuasion-for-Good data not found at {DATA} (needed to refit the grounded "
                                       "persuadee)")
# the training part on the real data, as the module docstring states it
REAL_SOURCE = {"n_annotated_dialogues": 137, "n_annotated_persuadees": 115, "n_pairs": 1384,
               "n_survey_only_dialogues": 276, "n_survey_only_persuadees": 234, "n_dropped_for_persuader": 102}


# ---------------------------------------------------------------------------------------- a fake data folder
def ids_in(part: str, n: int, prefix: str) -> list[str]:
    """The first ``n`` ids ``<prefix><i>`` that the people split puts in ``part``."""
    out, i = [], 0
    while len(out) < n:
        if split_of(f"{prefix}{i}") == part:
            out.append(f"{prefix}{i}")
        i += 1
    return out


AMOUNTS = [("0.5", "0.5"), ("1.0", "0.0"), ("0.5", "0.25"), ("0.0", "0.0"), ("", "0.1"), ("0.25", "0.25"),
           ("", "0.0"), ("2.0", "1.0"), ("0.1", "0.1"), ("0.0", "0.5")]  # (stated B5, actual B6)


def write_fake(folder: Path, seed: int = 0) -> dict:
    """A P4G folder of made-up people: 40 annotated and 30 survey-only dialogues of training-part persuadees, the
    same of held-out ones, and one training-part dialogue whose persuader is a held-out persuadee. Returns the
    dialogue ids by kind."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    er_labels, ee_labels = list(dialogue_acts.PERSUADER_LABELS), [*dialogue_acts.PERSUADEE_LABELS,
                                                                  "provide-donation-amount"]
    train, held = ids_in(TRAIN, 70, "user_"), ids_in(HELDOUT, 70, "user_")
    persuaders = ids_in(TRAIN, 141, "er_")
    full, info, dialog = [], [], []
    kinds = defaultdict(list)
    for k, (people, part) in enumerate(((train, TRAIN), (held, HELDOUT))):
        for i, who in enumerate(people):
            d = f"d{k}_{i}"
            annotated = i < 40
            kinds[(part, annotated)].append(d)
            persuader = held[-1] if (part == TRAIN and i == 0) else persuaders[70 * k + i]
            if part == TRAIN and i == 0:
                kinds["held_persuader"].append(d)
            traits = {f"{t}.x": f"{rng.uniform(1, 5):.2f}" for t in NUMERIC}
            cats = {f"{c}.x": str(rng.choice(["a", "b"])) for c in CATEGORICAL}
            stated, actual = AMOUNTS[i % len(AMOUNTS)]
            if not annotated:
                actual = str(rng.choice(["0.0", "0.5", "1.0"]))
            full += [{"B2": d, "B3": persuader, "B4": "0", "B6": "0.0", **traits, **cats},
                     {"B2": d, "B3": who, "B4": "1", "B6": actual, **traits, **cats}]
            if annotated:
                info += [{"B2": d, "B3": persuader, "B4": "0", "B5": "", "B6": "0.0"},
                         {"B2": d, "B3": who, "B4": "1", "B5": stated, "B6": actual}]
                for turn in range(10):
                    dialog.append({"B2": d, "B4": "0", "Turn": str(turn), "Unit": "x",
                                   "er_label_1": str(rng.choice(er_labels)), "ee_label_1": ""})
                    dialog.append({"B2": d, "B4": "1", "Turn": str(turn), "Unit": "y", "er_label_1": "",
                                   "ee_label_1": str(rng.choice(ee_labels))})
    for name, rows in (("full_info.csv", full), ("300_info.csv", info), ("300_dialog.csv", dialog)):
        with open(folder / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return kinds


def rewrite(folder: Path, name: str, dialogues, change) -> None:
    """``change(row)`` applied to the rows of ``name`` whose dialogue is in ``dialogues``."""
    path = folder / name
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    for r in rows:
        if r["B2"] in dialogues:
            change(r)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def fake(tmp_path):
    folder = tmp_path / "p4g"
    return folder, write_fake(folder)


def test_the_fake_folder_is_fitted_and_its_training_part_read(fake):
    folder, kinds = fake
    part = grounded.read_training_part(folder)
    assert set(part.turns) == set(kinds[(TRAIN, True)]) - set(kinds["held_persuader"])
    assert all(split_of(part.person[d]) == TRAIN for d in part.gave)
    fitted = grounded.fit(folder)
    assert fitted["source"]["n_annotated_dialogues"] == 39 and fitted["source"]["n_dropped_for_persuader"] == 1


def test_a_heldout_persons_rows_are_never_parsed(fake):
    """Held-out persuadees' rows (and the training dialogue whose persuader is one) made unparseable: a turn that is
    no integer, amounts and survey values that are no numbers, labels of no act. The fit is the same bytes."""
    folder, kinds = fake
    before = grounded.dumps(grounded.fit(folder))
    held = set(kinds[(HELDOUT, True)]) | set(kinds[(HELDOUT, False)]) | set(kinds["held_persuader"])

    def garble(row):
        for k in row:
            if k not in ("B2", "B3", "B4"):
                row[k] = "not a number"

    for name in ("full_info.csv", "300_info.csv", "300_dialog.csv"):
        rewrite(folder, name, held, garble)
    assert grounded.dumps(grounded.fit(folder)) == before


def test_a_heldout_persons_acts_do_not_move_the_fit_and_a_training_persons_do(fake):
    folder, kinds = fake
    before = grounded.dumps(grounded.fit(folder))
    held = set(kinds[(HELDOUT, True)]) | set(kinds["held_persuader"])

    def all_provide(row):  # every reply a stated amount, every persuader act a close
        row["er_label_1"] = "closing" if row["B4"] == "0" else ""
        row["ee_label_1"] = "provide-donation-amount" if row["B4"] == "1" else ""

    rewrite(folder, "300_dialog.csv", held, all_provide)
    rewrite(folder, "300_info.csv", held, lambda r: r.update(B5="2.0", B6="2.0"))
    assert grounded.dumps(grounded.fit(folder)) == before
    # the same change to one training-part dialogue moves the fit: the comparison above can fail
    rewrite(folder, "300_dialog.csv", {kinds[(TRAIN, True)][5]}, all_provide)
    assert grounded.dumps(grounded.fit(folder)) != before


def test_the_fit_refuses_a_part_holding_a_heldout_dialogue(fake):
    folder, kinds = fake
    part = grounded.read_training_part(folder)
    grounded.check_training_only(part)
    d = kinds[(HELDOUT, True)][0]
    leaked = dataclasses.replace(part, person={**part.person, d: ids_in(HELDOUT, 1, "user_")[0]},
                                 turns={**part.turns, d: {}})
    with pytest.raises(grounded.HeldOutLeak):
        grounded.check_training_only(leaked)
    stranger = dataclasses.replace(part, amounts={**part.amounts, "nobody's": (0.0, 0.0)})
    with pytest.raises(grounded.HeldOutLeak):
        grounded.check_training_only(stranger)
    d = kinds[(TRAIN, True)][3]
    via_persuader = dataclasses.replace(part, persuader={**part.persuader, d: next(iter(part.heldout_persuaders))})
    with pytest.raises(grounded.HeldOutLeak):
        grounded.check_training_only(via_persuader)


def test_the_command_writes_checks_and_says_what_is_missing(fake, tmp_path, capsys):
    folder, _ = fake
    out = tmp_path / "grounded.json"
    grounded.main(["--data", str(folder), "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(grounded.dumps(grounded.fit(folder)))
    assert not list(tmp_path.glob(".grounded.json.*"))  # the temporary file was renamed over the target
    with pytest.raises(SystemExit) as same:
        grounded.main(["--data", str(folder), "--out", str(out), "--check"])
    assert same.value.code == 0
    out.write_text(out.read_text().replace("0.", "0.9", 1))
    with pytest.raises(SystemExit) as differs:
        grounded.main(["--data", str(folder), "--out", str(out), "--check"])
    assert differs.value.code == 1
    with pytest.raises(SystemExit) as missing:
        grounded.main(["--data", str(tmp_path / "nowhere"), "--out", str(out)])
    assert missing.value.code == 2 and "no P4G data folder" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- on the real data
@pytest.fixture(scope="module")
def part():
    return grounded.read_training_part(DATA)


@needs_data
def test_the_committed_parameters_are_what_the_fit_derives():
    """Equal to the file's 6 decimals (a hair more absorbs a rounding flip on another machine's arithmetic); if not,
    rerun python -m scope_envs.games.p4g.grounded --data ../shared/data/p4g."""
    from test_p4g_fit import _assert_close

    fitted = json.loads(grounded.dumps(grounded.fit(DATA)))
    committed = json.loads(grounded.PARAMS.read_text(encoding="utf-8"))
    assert set(fitted) == set(committed)
    _assert_close(fitted, committed, "grounded_params")
    assert {k: fitted["source"][k] for k in REAL_SOURCE} == REAL_SOURCE


@needs_data
def test_the_fit_reads_the_training_part_of_the_declared_split(part):
    split = split_people(DATA)
    heldout_people = split.people(HELDOUT)
    read = set(part.turns) | set(part.amounts) | set(part.cards) | set(part.gave)
    assert read and not read & split.dialogues(HELDOUT)
    assert {part.person[d] for d in read} <= split.people(TRAIN)
    assert not {part.persuader.get(d) for d in read} & heldout_people


@needs_data
def test_replayed_training_contexts_get_the_real_reply_frequencies(part):
    """At every real (persuader act, turn) of the training part, on the person's own card: the simulator's reply
    distribution, averaged, against the real replies. Tolerance, stated before looking: overall total variation
    at most 0.01; per persuader act with at least 20 pairs, at most the back-off's own bound (a cell of n pairs
    moves at most PRIOR / (n + PRIOR) of its mass towards its parent) plus 0.01 for the lean tilt. The pooled
    reply marginal, which ignores the context, must fail the per-act bound (the check can fail)."""
    model = grounded.model()
    marginal = np.array(grounded.params()["replies"]["marginal"])
    by_act = defaultdict(lambda: {"pred": [], "real": [], "cells": defaultdict(int)})
    for d, by_turn in part.turns.items():
        card = Persona(d, "real", part.cards[d]) if d in part.cards else None
        for turn, t in sorted(by_turn.items()):
            if not (t["er"] and t["ee"]):
                continue
            row = by_act[t["er"][-1]]
            row["pred"].append(model.replies(card, dialogue_acts.PERSUADER_INDEX[t["er"][-1]], turn))
            row["real"].append(np.eye(len(RESPONSE_ACTS))[RESPONSE_ACTS.index(t["ee"][0])])
            row["cells"][grounded.phase(turn)] += 1
    pred = np.concatenate([r["pred"] for r in by_act.values()])
    real = np.concatenate([r["real"] for r in by_act.values()])
    assert len(pred) == REAL_SOURCE["n_pairs"]
    assert 0.5 * np.abs(pred.mean(0) - real.mean(0)).sum() <= 0.01
    tested = 0
    for act, r in by_act.items():
        n = len(r["real"])
        if n < 20:
            continue
        bound = sum(k / n * grounded.PRIOR / (k + grounded.PRIOR) for k in r["cells"].values()) + 0.01
        freq = np.mean(r["real"], 0)
        assert 0.5 * np.abs(np.mean(r["pred"], 0) - freq).sum() <= bound, act
        assert 0.5 * np.abs(marginal - freq).sum() > bound, act
        tested += 1
    assert tested >= 15


def replay(sim, part, reps: int, seed: int = 0) -> tuple[float, float]:
    """The training part's real persuader acts replayed through the game, ``sim`` answering on the person's card:
    (share of episodes ending in a gift, the real share of those dialogues)."""
    rng = np.random.default_rng(seed)
    sim_gave, real_gave = [], []
    for d, by_turn in part.turns.items():
        if d not in part.cards or not part.amounts.get(d, (0, math.inf))[1] <= 2:
            continue
        acts = [t["er"][-1] for _, t in sorted(by_turn.items()) if t["er"]]
        card = Persona(d, "real", part.cards[d])
        for _ in range(reps):
            game = P4GGame(max_turns=len(acts))
            game.reset(card, rng)
            game.user_player = sim
            for a in acts:
                game.apply(PERSUADER, dialogue_acts.PERSUADER_INDEX[a])
                view = View(PERSUADEE, sim.persona or card, tuple(game.history), game.legal(PERSUADEE), game.info())
                game.apply(PERSUADEE, sim.act(view, rng))
                if game.done:
                    break
            sim_gave.append(game.actual > 0)
        real_gave.append(part.amounts[d][1] > 0)
    return float(np.mean(sim_gave)), float(np.mean(real_gave))


@needs_data
def test_replayed_training_dialogues_give_at_about_the_real_rate(part):
    """In sample, the real persuaders' acts replayed: the grounded simulator's give rate within 0.10 of the training
    part's (about two standard errors of a share on these 125 dialogues); the collapsed simulator is not."""
    sim, real = replay(GroundedPersuadee(), part, reps=8)
    assert abs(sim - real) <= 0.10, (sim, real)
    collapsed, _ = replay(CollapsedPersuadee(), part, reps=4)
    assert abs(collapsed - real) > 0.10, (collapsed, real)


# ---------------------------------------------------------------------------------------- the simulator
def test_the_package_plays_it_from_the_committed_file_alone():
    p = grounded.params()
    assert p["source"]["part"] == TRAIN and p["replies"]["acts"] == RESPONSE_ACTS
    text = grounded.PARAMS.read_text()
    assert "_live" not in text and "user_" not in text, "an id leaked into grounded_params.json"
    table = np.array(list(p["replies"]["given"].values()))
    assert np.allclose(table.sum(-1), 1, atol=1e-5) and (table > 0).all()


def view_after(persuader_acts, persona, stated=None, final=False):
    game = P4GGame(max_turns=len(persuader_acts) if final else 10)
    game.reset(persona, np.random.default_rng(0))
    for i, a in enumerate(persuader_acts):
        game.apply(PERSUADER, dialogue_acts.PERSUADER_INDEX[a])
        if i < len(persuader_acts) - 1:
            reply = stated if stated is not None and i == 0 else dialogue_acts.PERSUADEE_INDEX["positive_reaction"]
            game.apply(PERSUADEE, reply)
    return View(PERSUADEE, persona, tuple(game.history), game.legal(PERSUADEE), game.info())


def test_its_distribution_is_the_fitted_table_on_the_games_acts():
    sim, model = GroundedPersuadee(), grounded.model()
    card = personas.persona("train", 3)
    view = view_after(["greeting", "credibility_appeal", "donation_information"], card)
    p = sim.distribution(view)
    assert p.sum() == pytest.approx(1) and not p[~view.legal].any()
    r = model.replies(card, dialogue_acts.PERSUADER_INDEX["donation_information"], 2)
    verbal = [dialogue_acts.PERSUADEE_INDEX[a] for a in RESPONSE_ACTS[:-1]]
    legal_mass = r[:-1][view.legal[verbal]].sum() + r[-1]  # the goodbye is illegal before an amount
    assert p[verbal][view.legal[verbal]] == pytest.approx(r[:-1][view.legal[verbal]] / legal_mass)
    assert p[dialogue_acts.FIRST_AMOUNT:].sum() == pytest.approx(r[-1] / legal_mass)
    # the phase matters: a greeting answered at the opening and late differ
    greeting = dialogue_acts.PERSUADER_INDEX["greeting"]
    assert not np.allclose(model.replies(card, greeting, 0), model.replies(card, greeting, 8))


def test_the_card_tilts_only_the_replies_its_data_supports():
    """A rational and an intuitive card answer one act differently on the supported replies alone (their ratio is
    the same on every other reply); the stated amount does not depend on the card (its slope is not supported)."""
    p, model = grounded.params(), grounded.model()
    supported = p["replies"]["card"]["supported"]
    assert supported and not p["stated"]["card"]["supported"]
    base = personas.persona("train", 0)
    rational, intuitive = (Persona(f"lean{x}", "train", {**base.traits, "rational": 3 + x, "intuitive": 3 - x})
                           for x in (1.0, -1.0))
    appeal = dialogue_acts.PERSUADER_INDEX["emotion_appeal"]
    ratio = model.replies(rational, appeal, 4) / model.replies(intuitive, appeal, 4)
    moved = {a for a, r in zip(RESPONSE_ACTS, ratio) if not math.isclose(r, np.median(ratio), rel_tol=1e-9)}
    assert moved == set(supported)
    assert model.stated(rational) == pytest.approx(model.stated(intuitive))


def test_a_forced_last_statement_is_less_often_a_gift_than_a_volunteered_one():
    sim, card = GroundedPersuadee(), personas.persona("train", 4)
    forced = sim.distribution(view_after(["greeting", "propose_donation"], card, final=True))
    assert forced[:dialogue_acts.FIRST_AMOUNT].sum() == 0  # only amounts are legal
    stated_before = sim.distribution(view_after(["greeting", "propose_donation"], card, final=True,
                                                stated=dialogue_acts.FIRST_AMOUNT + 4))
    volunteered = grounded.model().stated(card)
    assert forced[dialogue_acts.FIRST_AMOUNT] > volunteered[0]
    # after an amount was stated, a last reply may say goodbye, and a new amount is a volunteered one's
    close = dialogue_acts.PERSUADEE_INDEX["closing"]
    assert stated_before[close] > 0
    amounts = stated_before[dialogue_acts.FIRST_AMOUNT:] / stated_before[dialogue_acts.FIRST_AMOUNT:].sum()
    assert amounts == pytest.approx(volunteered)


def test_follow_through_has_the_training_parts_rates():
    model, gap = grounded.model(), grounded.params()["follow_through"]
    rng = np.random.default_rng(0)
    gifts = np.array([model.follow_through(0.5, rng) for _ in range(20_000)])
    se = math.sqrt(0.25 / len(gifts))
    assert abs((gifts == 0).mean() - gap["p_zero_if_intended"]) < 4 * se
    assert abs((gifts == 0.5).mean() - gap["p_exact_if_intended"]) < 4 * se
    assert set(np.unique(gifts)) <= {0.0, 0.5, round(0.5 * gap["ratio_if_other_median"], 2)}
    assert gifts.max() <= 2.0


def test_it_is_deterministic_given_its_generator():
    sim = GroundedPersuadee()
    view = view_after(["greeting", "emotion_appeal"], personas.persona("train", 9))
    draws = [[sim.act(view, np.random.default_rng(s)) for s in range(50)] for _ in range(2)]
    assert draws[0] == draws[1] and len(set(draws[0])) > 3
    assert [sim.follow_through(1.0, np.random.default_rng(s)) for s in range(20)] == \
        [sim.follow_through(1.0, np.random.default_rng(s)) for s in range(20)]


# ---------------------------------------------------------------------------------------- the env id
def episodes(env, seed, n=4):
    rng, out = np.random.default_rng(1), []
    for ep in range(n):
        obs, infos = env.reset(seed=seed if ep == 0 else None)
        trace = []
        while env.agents:
            acts = {a: (int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) if isinstance(obs[a], dict)
                        else "Would you give something? [DONATE $0.50]") for a in env.agents}
            obs, rewards, *_, infos = env.step(acts)
            trace.append((acts, rewards))
        out.append((trace, infos["agent_0"]["actual"], env.unwrapped.game.persona.id))
    return out


def test_the_id_is_registered_for_p4g_alone_and_listed(capsys):
    from scope_envs.cli import main

    spec = scope_envs.registry["p4g-grounded"]
    assert (spec.game, spec.regime, spec.pettingzoo_id) == ("p4g", "grounded", "scope/P4G-Grounded-v0")
    assert scope_envs.REGIMES == ("frozen", "vs", "rotation", "cotrain", "population", "heldout")
    assert "cooperbench-grounded" not in scope_envs.registry and "tau2-grounded" not in scope_envs.registry
    main(["list"])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("p4g-grounded "))
    assert "regime=grounded" in line and "agent_0" in line


def test_its_user_is_the_grounded_simulator_on_train_cards_and_it_takes_no_option():
    env = scope_envs.make("p4g-grounded")
    dealt = set()
    for ep in range(12):
        env.reset(seed=ep)
        assert isinstance(env.unwrapped.game.user_player, GroundedPersuadee)
        dealt.add(env.unwrapped.game.persona.id)
    assert all(i.startswith("train-") for i in dealt) and len(dealt) > 8
    with pytest.raises(ValueError, match="takes no option"):
        scope_envs.make("p4g-grounded", user="reference")


@pytest.mark.parametrize("surface", ["act", "text"])
def test_the_api_tests_pass_and_episodes_are_determined_by_the_seed(surface):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(scope_envs.make("p4g-grounded", surface=surface), num_cycles=100)
    runs = [episodes(scope_envs.make("p4g-grounded", surface=surface), seed=11) for _ in range(2)]
    assert runs[0] == runs[1]
    assert episodes(scope_envs.make("p4g-grounded", surface=surface), seed=12) != runs[0]


def test_batched_rollouts_draw_as_the_scalar_envs():
    from test_vec_distribution import alike, collect, compare
    from scope_envs.vec import BatchedVecEnv, vectorize

    vec = scope_envs.make_vec("p4g-grounded", num_envs=128)
    assert isinstance(vec, BatchedVecEnv)
    scalar = vectorize([scope_envs.make("p4g-grounded") for _ in range(128)], batched=False)
    p = compare(collect(vec, 4000, 3), collect(scalar, 2000, 3))
    assert alike(p), p


# ---------------------------------------------------------------------------------------- bench and diagnose
def test_the_grounded_row_is_in_the_default_grid_of_p4g_only(tmp_path):
    from scope_envs.bench.methods import METHODS, available, method_setup
    from scope_envs.bench.runner import run

    assert "grounded" in METHODS and available("p4g", "grounded")
    assert method_setup("p4g", "grounded") == ("p4g-grounded", {}, method_setup("p4g", "frozen")[2])
    for game in ("cooperbench", "tau2"):
        assert not available(game, "grounded")
        with pytest.raises(ValueError, match=f"{game} has none"):
            method_setup(game, "grounded")
    with pytest.raises(ValueError, match="row of none of"):
        run(games=["tau2"], methods=["grounded"], seeds=1, steps=100, out=tmp_path / "x", progress=False)


def test_the_cli_refuses_a_grounded_row_on_a_game_without_one(tmp_path, capsys):
    from scope_envs.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "--games", "tau2", "--methods", "grounded", "--out", str(tmp_path / "x")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --methods" in err and "tau2 has none" in err and "Traceback" not in err


def test_a_one_seed_grounded_row_runs_end_to_end(tmp_path):
    from scope_envs.cli import main

    out = tmp_path / "bench"
    main(["bench", "--games", "p4g", "--methods", "grounded", "--seeds", "1", "--steps", "300", "--eval-episodes", "16",
          "--out", str(out)])
    row = json.loads((out / "results.json").read_text())["p4g"]["grounded"]
    for key in ("train_success", "heldout_success", "panel_success", "reference_success"):
        assert 0.0 <= row[key] <= 2.0, key
    assert "| grounded |" in (out / "report.md").read_text()


def test_diagnose_names_it_beside_the_collapsed_simulator_and_tells_them_apart():
    from scope_envs.diagnose import diagnose
    from scope_envs.diagnose.specs import names, resolve

    assert names("p4g")[:2] == ["frozen", "grounded"]
    assert "grounded" not in names("cooperbench") and "grounded" not in names("tau2")
    assert isinstance(resolve("p4g", "grounded")[0], GroundedPersuadee)
    small = dict(probe_episodes=6, episodes=40, bootstrap=0, cards=2, persona_states=6, seed=0)
    mine, collapsed = diagnose("p4g", "grounded", **small), diagnose("p4g", "frozen", **small)
    assert mine["sharpening"]["value"] < 1.5 < collapsed["sharpening"]["value"]
    assert mine["cooperation"]["bias"]["value"] < collapsed["cooperation"]["bias"]["value"]
