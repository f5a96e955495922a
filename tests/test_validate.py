"""Simulated versus real donation statistics (issue: held-out within $0.05 and 5 points)."""

import json

import pytest

from scope_envs.cli import main
from scope_envs.games.p4g import personas
from scope_envs.validate.p4g import validate


def test_heldout_proxies_match_real_statistics():
    report = validate(episodes=1500, seed=3)
    assert report["simulated"]["population"] == "heldout human proxies"
    assert abs(report["simulated"]["mean_donation"] - report["real"]["mean_donation"]) <= 0.05
    assert abs(report["simulated"]["give_rate"] - report["real"]["give_rate"]) <= 0.05
    # the intention-action gap survives: people state more than they give
    assert report["simulated"]["mean_intended"] > report["simulated"]["mean_actual"] + 0.05


def test_validate_with_real_data_uses_the_data(p4g_data, capsys):
    main(["validate", "p4g", "--data", str(p4g_data), "--episodes", "300"])
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"real", "simulated"}
    for key in ("mean_donation", "give_rate", "mean_intended", "mean_actual"):
        assert key in report["real"] and key in report["simulated"]
        assert report["real"][key] == pytest.approx(personas.params("heldout")["real"][key], abs=1e-6)


def test_cli_list_names_every_id(capsys):
    import scope_envs

    main(["list"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(scope_envs.registry)
    for id_, spec in scope_envs.registry.items():
        line = next(l for l in out if l.startswith(id_ + " "))
        assert f"regime={spec.regime}" in line and "agent_0" in line


def test_cli_demo_reports_both_sides(capsys):
    main(["demo", "--episodes", "5"])
    out = capsys.readouterr().out
    for id_ in ("p4g-frozen", "p4g-heldout"):
        line = next(l for l in out.splitlines() if l.startswith(id_))
        assert 0.0 <= float(line.split("$")[1].split()[0]) <= 2.0


def test_validate_tau2_shows_its_progress(capsys):
    """validate tau2 replays and plays every task of the real data silently for a minute and more; it now shows
    a bar over the domains on stderr (on a terminal by default)."""
    from scope_envs.validate.tau2 import validate as validate_tau2

    report = validate_tau2(domains=("airline",), progress=True)
    assert report["airline"]["tasks"] >= 1
    captured = capsys.readouterr()
    assert "validate tau2" in captured.err and "validate tau2" not in captured.out
    validate_tau2(domains=("airline",), progress=False)
    assert "validate tau2" not in capsys.readouterr().err


def test_validate_p4g_shows_its_progress_and_the_bar_moves_no_number(capsys):
    """validate p4g plays up to a million episodes (about 1.5 hours) from one random stream: a bar over the
    episodes on stderr, and the numbers the same with and without it."""
    shown = validate(episodes=40, seed=2, progress=True)
    captured = capsys.readouterr()
    assert "playing heldout" in captured.err and "40/40" in captured.err and "playing" not in captured.out
    assert validate(episodes=40, seed=2, progress=False) == shown
    assert "playing" not in capsys.readouterr().err


def test_the_fit_command_bounds_its_episodes_and_says_where_out_cannot_go(tmp_path, capsys):
    """python -m scope_envs.validate.p4g --episodes took any positive count (a mistyped 14 digits calibrated for
    ever) and its --out under a file said 'folder ... does not exist'."""
    from scope_envs.games.p4g.fit import FILES
    from scope_envs.validate.p4g import fit_command

    data = tmp_path / "data"  # --data is checked for its three files only; --out is refused before any is read
    data.mkdir()
    for name in FILES:
        (data / name).write_text("")
    for argv, said in ((["--episodes", "99999999999999"], "argument --episodes: expected an integer from 1 to "
                                                          "1_000_000"),
                       (["--out", str(tmp_path / "a_file" / "p.json")], "a_file is a file, not a folder"),
                       (["--out", str(tmp_path / "nosuch" / "p.json")], "nosuch does not exist")):
        (tmp_path / "a_file").write_text("x")
        with pytest.raises(SystemExit) as e:
            fit_command([*argv, "--data", str(data), "--no-calibrate"])
        err = capsys.readouterr().err
        assert e.value.code == 2 and said in err, err


def test_validate_tau2_leaves_a_task_that_checks_nothing_out_of_the_act_rates_too(tmp_path):
    """A task whose evaluation checks nothing passes whatever is played: it was left out of the replay's rate
    but counted in the oracle's and random play's (on the real airline data 7 of 50 tasks, random 0.38 instead
    of 0.28 over the 43 the report counts)."""
    import shutil

    from scope_envs.games.tau2.data import EMBEDDED
    from scope_envs.validate.tau2 import act_pass_rates, validate as validate_tau2

    shutil.copytree(EMBEDDED / "airline", tmp_path / "airline")
    tasks = json.loads((tmp_path / "airline" / "tasks.json").read_text())
    testable = [t["id"] for t in tasks]
    tasks.append({**tasks[0], "id": "checks_nothing", "evaluation_criteria": {"actions": [], "nl_assertions": []}})
    (tmp_path / "airline" / "tasks.json").write_text(json.dumps(tasks))
    report = validate_tau2(tmp_path, domains=("airline",), progress=False)["airline"]
    assert report["untestable"] == ["checks_nothing"] and report["tasks"] == len(testable)
    assert act_pass_rates("airline", tmp_path, tasks=["checks_nothing"])["random"] == 1.0  # vacuous
    alone = act_pass_rates("airline", tmp_path, tasks=testable)
    assert (report["oracle_act_pass_rate"], report["random_act_pass_rate"]) == (alone["oracle"], alone["random"])


@pytest.mark.parametrize("in_the_way", ["tasks.json", "policy.md"])
def test_validate_tau2_names_a_folder_where_a_data_file_goes(tmp_path, capsys, in_the_way):
    """A folder where tasks.json or policy.md goes was an IsADirectoryError traceback (malformed JSON was already
    an argument error)."""
    import shutil

    from scope_envs.games.tau2.data import EMBEDDED

    shutil.copytree(EMBEDDED / "airline", tmp_path / "airline")
    target = tmp_path / "airline" / in_the_way
    target.unlink(missing_ok=True)
    target.mkdir()
    with pytest.raises(SystemExit) as e:
        main(["validate", "tau2", "--data", str(tmp_path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err, err
    assert f"argument --data: " in err and f"cannot read {target}: Is a directory" in err, err


def test_validate_tau2_on_the_folder_above_the_domains_names_the_one_to_pass(tmp_path, capsys):
    """--data ../shared/data/tau2 (as --data ../shared/data/p4g for p4g) holds domains/, not the domain folders:
    it was refused with 'holds none of the domain folders' and no word of the folder that does."""
    import shutil

    from scope_envs.games.tau2.data import EMBEDDED

    for inner in (tmp_path / "copy" / "domains", tmp_path / "checkout" / "data" / "tau2" / "domains"):
        shutil.copytree(EMBEDDED / "airline", inner / "airline")
        above = inner.parents[2] if inner.parent.name == "tau2" else inner.parent
        with pytest.raises(SystemExit) as e:
            main(["validate", "tau2", "--data", str(above)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "Traceback" not in err, err
        assert err.strip().splitlines()[-1].endswith(f"but '{inner}' does: pass --data {inner}"), err
