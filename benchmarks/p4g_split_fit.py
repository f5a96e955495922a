"""What the people split costs p4g's held-out proxies (issue 49, item 1).

The held-out human proxies read a fit on the held-out part of the people split alone (``params_heldout.json``,
``scope_envs.games.p4g.people``), checked against that part. This script measures what that costs against a fit on
every persuadee. It fits the parameters from the P4G csv files (``fit.fit``)
on every persuadee, as shipped, and on the held-out part alone (the training part's people dropped, survey rows
and all). For each fit it then calibrates the proxies and the reference to that fit's own real numbers
(``calibrate.calibrate``, as ``python -m scope_envs.validate.p4g`` does). Last, it plays the proxies against
the empirical persuader on held-out cards (``scope-envs validate p4g``'s dialogues) and compares them with the
held-out part's real numbers. That is validate's check, a mean donation within $0.05 and a give rate within 5
points, applied to the people the proxies stand for.

Outputs (``--out``): ``p4g_split_fit.json`` and ``p4g_split_fit.md``: each fit's people and dialogues, its real
numbers, its calibration offsets, its proxies' numbers, and their distance to the held-out part's real numbers.
Nothing the package ships changes, and only aggregate numbers are written.

    python benchmarks/p4g_split_fit.py                                  # ../shared/data/p4g
    python benchmarks/p4g_split_fit.py --episodes 200 --validate-episodes 400 --out /tmp/split
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scope_envs.arguments import count, existing_dir, output_dir
from scope_envs.files import check_output_dir, write_atomic, write_json

OUT = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "p4g"
TOLERANCE = {"mean_donation": 0.05, "give_rate": 0.05}  # scope-envs validate p4g's


def fit_on(data: Path, part: str | None) -> dict:
    """The P4G parameters fitted on ``part`` of the people split (None: everyone, as shipped), as
    ``python -m scope_envs.validate.p4g --part`` fits them."""
    from scope_envs.games.p4g.fit import fit
    from scope_envs.games.p4g.people import outside

    return fit(data, holdout=outside(data, part or "everyone"))


def check(params: dict, target: dict, episodes: int, validate_episodes: int, seed: int) -> dict:
    """Calibrate ``params`` to its own real numbers, then play its proxies on held-out cards against the empirical
    persuader and compare them with ``target`` (the held-out part's real numbers)."""
    from scope_envs.agents.p4g import EmpiricalPersuader, HumanProxyPersuadee, ReferencePersuadee
    from scope_envs.games.p4g import personas
    from scope_envs.games.p4g.calibrate import calibrate
    from scope_envs.games.p4g.simulate import play, statistics

    offsets = calibrate(params, human_proxy=HumanProxyPersuadee(), reference=ReferencePersuadee(),
                        persuader=EmpiricalPersuader(), episodes=episodes, progress=True)
    personas.set_params({**params, "calibration": offsets})
    sim = statistics(play(HumanProxyPersuadee(), EmpiricalPersuader(), "heldout", validate_episodes, seed))
    diff = {k: round(abs(sim[k] - target[k]), 4) for k in TOLERANCE}
    return {"calibration": offsets, "simulated": {k: round(float(sim[k]), 4) for k in TOLERANCE},
            "abs_diff": diff, "within_tolerance": all(diff[k] <= TOLERANCE[k] for k in TOLERANCE)}


def run(data: Path, episodes: int, validate_episodes: int, seed: int) -> dict:
    from scope_envs.games.p4g import personas
    from scope_envs.games.p4g.people import HELDOUT

    fits = {"all people (as shipped)": fit_on(data, None), "held-out part": fit_on(data, HELDOUT)}
    target = fits["held-out part"]["real"]
    out = {"data": str(data), "target": {k: target[k] for k in (*TOLERANCE, "n")}, "tolerance": TOLERANCE,
           "episodes": episodes, "validate_episodes": validate_episodes, "seed": seed, "fits": {}}
    with personas.params_kept():
        for name, params in fits.items():
            out["fits"][name] = {"survey_rows": params["source"]["n_persuadees"],
                                 "annotated_dialogues": params["strategy_effects"]["n_dialogues"],
                                 "real": {k: params["real"][k] for k in (*TOLERANCE, "n")},
                                 **check(params, target, episodes, validate_episodes, seed)}
    return out


def markdown(report: dict) -> str:
    t = report["target"]
    lines = ["# What the people split costs p4g's held-out proxies", "",
             f"Target: the held-out part's real numbers (n {t['n']}): mean donation ${t['mean_donation']:.3f}, give "
             f"rate {t['give_rate']:.3f}. Tolerance (`scope-envs validate p4g`): $0.05 and 5 points. Calibration "
             f"{report['episodes']} episodes a measurement; check {report['validate_episodes']} held-out episodes, "
             f"seed {report['seed']}.", "",
             "| fit | dialogues with a survey row | annotated dialogues | its real mean / give rate | proxy offset, amount shift, "
             "reference offset | proxies' mean / give rate | off the target | within |", "|---|---|---|---|---|---|---|---|"]
    for name, f in report["fits"].items():
        c, s, d = f["calibration"], f["simulated"], f["abs_diff"]
        lines.append(f"| {name} | {f['survey_rows']} | {f['annotated_dialogues']} | ${f['real']['mean_donation']:.3f} / "
                     f"{f['real']['give_rate']:.3f} | {c['human_proxy_offset']:+.3f}, {c['human_proxy_amount_shift']:+.3f}, "
                     f"{c['reference_offset']:+.3f} | ${s['mean_donation']:.3f} / {s['give_rate']:.3f} | "
                     f"${d['mean_donation']:.3f} / {d['give_rate']:.3f} | {'yes' if f['within_tolerance'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=existing_dir, default=str(DATA), help="the P4G csv files (default: %(default)s)")
    ap.add_argument("--episodes", type=count(100_000), default=1000,
                    help="episodes per calibration measurement (default 1000, as the fit command; at most 100_000)")
    ap.add_argument("--validate-episodes", type=count(1_000_000), default=4000,
                    help="held-out episodes of the check (default 4000; at most 1_000_000)")
    ap.add_argument("--seed", type=count(2**31 - 1, 0), default=0, help="the check's seed (default 0)")
    ap.add_argument("--out", type=output_dir, default=str(OUT), help="folder for the results (default: %(default)s)")
    args = ap.parse_args(argv)
    from scope_envs.games.p4g.fit import check_data
    from scope_envs.validate.p4g import DataFilesError, data_errors

    try:
        check_data(Path(args.data))
    except FileNotFoundError as e:
        ap.error(f"argument --data: {e}")
    new = not Path(args.out).exists()
    out = check_output_dir(args.out)  # a folder that cannot be written fails now, not after the fits
    try:
        with data_errors(args.data):
            report = run(Path(args.data), args.episodes, args.validate_episodes, args.seed)
    except DataFilesError as e:
        if new:
            out.rmdir()
        ap.error(f"argument --data: {e}")
    write_json(out / "p4g_split_fit.json", report)
    write_atomic(out / "p4g_split_fit.md", markdown(report))
    print(markdown(report), end="")


if __name__ == "__main__":
    sys.exit(main())
