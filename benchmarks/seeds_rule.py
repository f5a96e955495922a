"""Seeds per game by a declared rule: how many seeds the default run needs so that each game's confirmatory
comparisons can see 15% of its band.

The rule (declared before any run that uses its numbers; ``scope_envs.bench.methods.SEEDS_MIN`` holds its output):

* **What is resolved.** A game's confirmatory family compares each method with ``frozen`` on held-out success
  (Welch's t, Holm over the family's m comparisons: the larger of the family in ``RUNS`` and the default grid's
  today, ``grid_family``, so a row added to the grid raises m). Its minimum detectable effect (``stats.mde``: power 0.8,
  two-sided alpha 0.05 / m, Holm's strictest step, at n seeds per arm, noncentral t) times the per-seed sd is the
  smallest true difference the instrument reliably sees. The rule asks for MDE <= ``FRACTION`` (15%) of the band
  (the ceiling ``oracle`` minus the floor ``random`` on held-out success).
* **Inputs: spreads, never differences.** sd = the pooled per-seed sd of held-out success (``stats.pooled_sd``)
  over the confirmatory arms (frozen and the six methods compared with it) of the committed default runs made
  on today's worlds and settings before the preset was sized (``RUNS``: same steps, evaluation episodes and
  evaluation rule; their ``report.md`` settings are checked; a later rerun at the same settings reproduces the
  instrument and is not fed back), each run's arms pooled separately; band = the mean over those runs of oracle - random. No
  method's difference to another enters: only how much a method's score spreads across seeds, and the band's two
  rows.
* **Output.** Per game the smallest n with MDE(n) sd <= 15% band. The run uses ``max(preset seeds, n)`` per game, as
  the evaluation rule raises but never lowers the preset's episodes (``EVAL_EPISODES_MIN``); ``--seeds`` is exact.

It also says what a paired analysis would need (the same seed index shares its evaluation episodes across methods,
``methods.py``'s common random numbers, so a paired t-test on per-seed differences is possible: sd of the
differences, one-sample noncentral t, df n - 1) and estimates the default run's wall time with the rule's seeds
from the committed run clocks (``CLOCK_RUN``'s records; ``--tau2-speedup``: the batched tau2 engine's measured factor on
tau2's runs).

    python benchmarks/seeds_rule.py                      # prints JSON; needs this checkout's git history
    python benchmarks/seeds_rule.py --out benchmarks/results/seeds_rule/seeds_rule.json --tau2-speedup 1.4
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from scope_envs.arguments import output_file
from scope_envs.bench import records, stats
from scope_envs.bench.methods import METHODS, PRESETS, available, heldout_episodes_for, preset_steps
from scope_envs.bench.methods import SEEDS_MDE_FRACTION as FRACTION  # the MDE the rule allows, a fraction of the band

REPO = Path(__file__).resolve().parents[1]
# the committed default run at today's preset: the first on the engine without exact mode and on p4g's per-part fits
# (issue 45, issue 49), at the plateau budgets, p4g 19 / cooperbench 22 / tau2 8 seeds (the rule's answer on 74bf4448,
# the first run at the plateau budgets, before). The inputs change with the worlds, the engine or the settings; a
# rerun at the same settings reproduces the instrument and is not fed back
RUNS = ("491a3791",)
RESULTS = "benchmarks/results/default"
# the wall-time estimate reads each game's run clocks (``wall_s`` of its run records) and seeds from this run (VM-A;
# for a few minutes of it a third process shared the two cores)
CLOCK_RUN, CLOCK_JOBS = "491a3791", 2
MAX_SEEDS = 200


def git_show(rev: str, path: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"git show {rev}:{path}: {out.stderr.strip()}")
    return out.stdout


def expected_settings() -> dict[str, str]:
    """The rows of report.md's settings table that today's default preset writes."""
    p = PRESETS["default"]
    games = ("p4g", "cooperbench", "tau2")
    steps = {g: preset_steps(g) for g in games}
    return {"steps": ", ".join(f"{g} {steps[g]}" for g in games),
            "eval_episodes": ", ".join(f"{g} {p['eval_episodes']}" for g in games),
            "heldout_episodes": ", ".join(f"{g} {heldout_episodes_for(g, p['eval_episodes'])}" for g in games)}


def report_settings(rev: str) -> dict[str, str]:
    """The settings table of the committed run's ``report.md`` at ``rev`` (its two-cell rows)."""
    rows = {}
    for line in git_show(rev, f"{RESULTS}/report.md").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def check_settings(rev: str) -> None:
    rows = report_settings(rev)
    for key, value in expected_settings().items():
        if rows.get(key) != value:
            raise RuntimeError(f"{rev}: report.md has {key} = {rows.get(key)!r}, today's default is {value!r}")


def power_paired(d: float, n: int, alpha: float) -> float:
    """Power of the two-sided one-sample t-test on n paired differences (df n - 1) at standardized effect d."""
    from scipy import stats as st

    df, nc = n - 1, d * math.sqrt(n)
    tc = st.t.ppf(1 - alpha / 2, df)
    lower = st.nct.sf(tc, df, -nc)
    return float(st.nct.sf(tc, df, nc) + (lower if np.isfinite(lower) else 0.0))


def mde_paired(n: int, family: int) -> float:
    from scipy.optimize import brentq

    a = stats.ALPHA / family
    return float(brentq(lambda d: power_paired(d, n, a) - stats.POWER, 0.0, 100.0, xtol=1e-10))


def smallest(n_ok) -> int:
    for n in range(2, MAX_SEEDS + 1):
        if n_ok(n):
            return n
    return MAX_SEEDS


def grid_family(game: str) -> int:
    """The size of ``game``'s confirmatory family in today's default grid: its methods compared with frozen."""
    return sum(available(game, m) and m not in stats.REFERENCE and m != stats.BASELINE for m in METHODS)


def rule(runs: dict[str, dict]) -> dict:
    """The rule's inputs and output per game, from ``runs`` (revision -> its results.json)."""
    out = {}
    for game in ("p4g", "cooperbench", "tau2"):
        arms, diffs, bands, family = [], [], [], grid_family(game)
        for results in runs.values():
            table = results[game]
            fam = stats.confirmatory_family(table)
            family = max(family, len(fam))
            frozen = stats.per_seed(table[stats.BASELINE])
            arms += [frozen] + [stats.per_seed(table[m]) for m in fam]
            diffs += [stats.per_seed(table[m]) - frozen for m in fam]
            bands.append(stats.band(table)["headroom"])
        sd, sd_diff, band = stats.pooled_sd(arms), stats.pooled_sd(diffs), float(np.mean(bands))
        target = FRACTION * band
        n = smallest(lambda k: stats.mde(k, family) * sd <= target)
        n_paired = smallest(lambda k: k >= 3 and mde_paired(k, family) * sd_diff <= target)
        out[game] = {"sd": sd, "band": band, "family": family, "target_mde": target, "seeds": n,
                     "mde_frac_at_seeds": stats.mde(n, family) * sd / band,
                     "mde_frac_at_8": stats.mde(8, family) * sd / band,
                     "sd_paired_differences": sd_diff, "seeds_if_paired": n_paired}
    return out


def run_clocks(rev: str) -> tuple[dict[str, float], dict[str, int], float]:
    """Per game, the summed run clocks (``wall_s``) and the seeds of the committed run at ``rev``, and its wall
    time (``report.md``'s ``wall time`` row, seconds)."""
    packed = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{RESULTS}/{records.PACKED}"],
                            capture_output=True, check=True).stdout  # the records as the reference keeps them
    clocks: dict[str, float] = {}
    seeds: dict[str, set] = {}
    for line in gzip.decompress(packed).decode().splitlines():
        result = json.loads(line)["result"]
        clocks[result["game"]] = clocks.get(result["game"], 0.0) + result["wall_s"]
        seeds.setdefault(result["game"], set()).add(result["seed"])
    wall = report_settings(rev).get("wall time")
    if wall is None:
        raise RuntimeError(f"{rev}: report.md has no wall time row")
    return clocks, {g: len(v) for g, v in seeds.items()}, float(wall.split()[0])


def wall_estimate(seeds: dict[str, int], tau2_speedup: float, clock=None) -> dict:
    """The default run's wall time at these seeds per game from the committed run clocks (``CLOCK_RUN``): each
    game's clock per seed times its seeds (tau2's divided by ``tau2_speedup``), over the workers, plus that run's
    overhead beyond its runs (start-up, report, plots)."""
    clocks0, seeds0, wall0 = clock or run_clocks(CLOCK_RUN)
    per_seed = {g: clocks0[g] / seeds0[g] / (tau2_speedup if g == "tau2" else 1.0) for g in clocks0}
    clocks = {g: per_seed[g] * n for g, n in seeds.items()}
    overhead = max(0.0, wall0 - sum(clocks0.values()) / CLOCK_JOBS)
    return {"run_clocks_s": {g: round(c) for g, c in clocks.items()}, "jobs": CLOCK_JOBS, "clock_run": CLOCK_RUN,
            "wall_s": round(sum(clocks.values()) / CLOCK_JOBS + overhead), "overhead_s": round(overhead),
            "tau2_speedup": tau2_speedup}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tau2-speedup", type=float, default=1.0,
                    help="tau2's run clocks divided by this in the wall estimate (the batched engine's measured "
                         "factor on tau2's benchmark runs; default 1: the committed clocks as they are; 0.1 to 100)")
    ap.add_argument("--runs", nargs="+", default=None, metavar="REV",
                    help="read the committed default runs of these revisions instead of RUNS (made at today's "
                         "default preset)")
    ap.add_argument("--out", type=output_file, default=None, help="also write the JSON here (atomically)")
    args = ap.parse_args(argv)
    if not 0.1 <= args.tau2_speedup <= 100:
        ap.error(f"argument --tau2-speedup: must be in [0.1, 100], got {args.tau2_speedup}")
    for rev in args.runs or ():  # ("" would read the index: git show :PATH)
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=REPO,
                               capture_output=True).returncode == 0
        if not rev or not known:
            ap.error(f"argument --runs: {rev!r} is not a revision of this repository")
    runs = {}
    try:
        for rev in args.runs or RUNS:
            check_settings(rev)
            runs[rev] = json.loads(git_show(rev, f"{RESULTS}/results.json"))
        clock = run_clocks(CLOCK_RUN)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit(f"seeds_rule: {e}")
    per_game = rule(runs)
    preset = PRESETS["default"]["seeds"]
    seeds = {g: max(preset, r["seeds"]) for g, r in per_game.items()}
    out = {"rule": f"smallest n with MDE(n) x sd <= {FRACTION:.0%} of the band (power {stats.POWER}, alpha "
                   f"{stats.ALPHA}/m, Holm's first step); the run uses max(preset {preset}, n)",
           "runs": list(args.runs or RUNS), "games": per_game, "seeds_min": {g: r["seeds"] for g, r in per_game.items()},
           "default_seeds": seeds, "estimate": wall_estimate(seeds, args.tau2_speedup, clock),
           "estimate_at_8": wall_estimate({g: preset for g in seeds}, args.tau2_speedup, clock)}
    text = json.dumps(out, indent=1)
    if args.out is not None:
        from scope_envs.files import write_atomic

        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, text + "\n")
    print(text)


if __name__ == "__main__":
    main()
