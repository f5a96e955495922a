"""New entrants: rows beyond the built-in grid, each with its own pre-declared tests.

A row is **built-in** when its method is one of ``methods.METHODS`` or ``EXTRA_METHODS``; any other row (a
``--method`` plug-in, an SB3 reference row such as ``frozen-sb3``) is an **entrant**. The built-in rows'
statistics — the confirmatory family (each method against ``frozen``), the exploratory pairs, the MDE, the
claims — are computed from the built-in rows alone (``builtin``), so adding any number of entrants leaves
every built-in number and p-value byte-identical (tests/test_bench_entrants.py holds it).

Each entrant gets its own family of comparisons on held-out success, declared before its results exist:

* by default, against ``frozen`` and against the best built-in method on held-out success (the floor and
  ceiling rows excluded; the best is read from the reference rows, which exist before the entrant runs;
  one comparison where the best is ``frozen``);
* ``--confirmatory ROW [ROW ...]``: against exactly the rows named instead (built-in rows or other entrants).

Within that family, and only there, p-values are Holm-corrected (m = the family's size): Welch's t-test
(each arm its own seeds, as the built-in family: against a reference, all of the reference's seeds, whatever
``--seeds`` the entrant ran) and, beside it, the **paired** t-test on the seeds both rows share (common random
numbers: the same seed means the same evaluation episodes, so pairing removes the episodes' share of the
variance). Also the bootstrap CI of the difference (``stats.bootstrap_diff_ci``), and the power of the test at
the entrant's own n: the minimum detectable effect (the two-sample t at n_entrant and n_other seeds, power 0.8,
alpha 0.05 / m, the two arms' pooled sd; also as a fraction of the headroom) and the power Welch's test has
there (``stats.welch_power``). The entrant's row in the game's table gets its CI of the mean as every row does;
``normalized`` and ``recovered`` come from the same band.

**The verdict** (``verdicts``, ``summary``): per game and entrant, its held-out success against each row of its
family (difference, CI, p_Holm), its power, and collapse beside it: the reference's collapse cost at this
budget (``uncollapsed − frozen`` on the reference model's users, ``scope_envs.bench.split``) with its CI, the
entrant's share of it, ``(entrant − frozen) / cost`` on the same users, with its bootstrap CI
(``stats.bootstrap_share_ci``), and, where the cost's CI includes 0, that beating ``frozen`` at this budget
is not evidence about collapse; where the game's ceiling does not clear its floor (``band_clears`` false), that
the game cannot judge methods, this one included; and how far past the budget its seeds trained, where they did.
``scope-envs bench`` ends its output with these blocks and appends them to ``report.md``.
"""

from __future__ import annotations

import argparse

import numpy as np

from scope_envs.arguments import nonempty

MAX_PLUGINS = 32
# below it an entrant's Welch p is anti-conservative and its bootstrap CI narrow against the reference's rows
# (benchmarks/instrument_checks.py, "entrant": at 2 seeds Welch rejects 10-12% of true nulls at 0.05, at 5 5-6%)
FEW_SEEDS = 5


def builtin_names() -> tuple[str, ...]:
    from scope_envs.bench.methods import EXTRA_METHODS, METHODS

    return METHODS + EXTRA_METHODS


def builtin(table: dict) -> dict:
    """The built-in rows of one game's table (results.json's ``results[game]``), in their order."""
    names = builtin_names()
    return {m: e for m, e in table.items() if m in names}


def builtin_results(results: dict) -> dict:
    return {game: builtin(table) for game, table in results.items()}


def entrant_names(table: dict) -> list[str]:
    names = builtin_names()
    return [m for m in table if m not in names]


def default_family(table: dict) -> list[str]:
    """``frozen`` and the best built-in method on mean held-out success (floor and ceiling excluded)."""
    from scope_envs.bench.stats import BASELINE, judged_methods, per_seed

    rows = builtin(table)
    means = {m: float(per_seed(rows[m]).mean()) for m in judged_methods(rows) if len(per_seed(rows[m]))}
    family = [BASELINE] if BASELINE in rows else []
    if means:
        best = max(means, key=lambda m: (means[m], -list(means).index(m)))  # ties: the first in the grid's order
        if best not in family:
            family.append(best)
    return family


def paired(x: dict, y: dict) -> dict:
    """The paired t-test of x - y on the seeds both have (``x``/``y``: seed -> held-out success)."""
    from scipy import stats

    shared = sorted(set(x) & set(y), key=int)
    if len(shared) < 2:
        return {"n_paired": len(shared), "t_paired": float("nan"), "p_paired": float("nan")}
    d = np.array([x[s] - y[s] for s in shared], float)
    if np.allclose(d, d[0]):  # no spread in the differences: the test is decided by their sign alone
        return {"n_paired": len(shared), "t_paired": float("nan") if d[0] == 0 else float(np.sign(d[0])) * np.inf,
                "p_paired": 1.0 if d[0] == 0 else 0.0}
    t, p = stats.ttest_rel([x[s] for s in shared], [y[s] for s in shared])
    return {"n_paired": len(shared), "t_paired": float(t), "p_paired": float(p)}


def entrant_tests(table: dict, entrant: str, confirmatory: list[str] | None = None) -> dict:
    """One entrant's family (``family``: the rows it is compared with) and its ``rows``: per comparison the
    difference, its bootstrap CI, Welch's t and p, the paired t and p on the shared seeds, each p
    Holm-corrected within this family, and the test's power at these seeds (``n``, ``n_other``, ``mde_d``,
    ``mde``, ``mde_frac`` of the headroom, ``power``: Welch's at the MDE)."""
    from scope_envs.bench.stats import ALPHA, SUCCESS, band, bootstrap_diff_ci, holm, mde, pooled_sd, welch, welch_power

    family = [m for m in (confirmatory or default_family(table)) if m != entrant]
    missing = [m for m in family if m not in table]
    rows = []
    seeds = {m: {s: v[SUCCESS] for s, v in e["per_seed"].items() if SUCCESS in v} for m, e in table.items()}
    m = max(1, len(family))
    b = band(builtin(table))
    for other in family:
        if other in missing:
            continue
        x, y = np.array(list(seeds[entrant].values())), np.array(list(seeds[other].values()))
        if len(x) < 2 or len(y) < 2:
            continue
        d = mde(len(x), family=m, n2=len(y))
        absolute = d * pooled_sd([x, y])
        frac = absolute / b["headroom"] if b["present"] and b["headroom"] > 0 and np.isfinite(absolute) \
            else float("nan")
        rows.append({"a": entrant, "b": other, **welch(x, y), **paired(seeds[entrant], seeds[other]),
                     "ci": bootstrap_diff_ci(x, y), "n": len(x), "n_other": len(y), "mde_d": d, "mde": absolute,
                     "mde_frac": frac, "power": welch_power(d, len(x), ALPHA / m, n2=len(y))})
    for row, adj in zip(rows, holm([r["p"] for r in rows], m=m)):
        row["p_holm"] = adj
    finite = [(i, r["p_paired"]) for i, r in enumerate(rows) if np.isfinite(r["p_paired"])]
    for (i, _), adj in zip(finite, holm([p for _, p in finite], m=m)):
        rows[i]["p_paired_holm"] = adj
    for r in rows:
        r.setdefault("p_paired_holm", float("nan"))
        r["reading"] = reading(r["diff"], r["p_holm"], r["ci"])
    return {"family": family, "declared": "confirmatory" if confirmatory else "default", "missing": missing,
            "rows": rows}


def reading(diff: float, p_holm: float, ci=None) -> str:
    """A comparison in words: "better" or "worse" where its Holm-adjusted p is below ALPHA (and its CI, if given,
    lies on that side of 0), else "no detectable difference"."""
    from scope_envs.bench.stats import ALPHA

    lo, hi = ci if ci is not None else (diff, diff)
    if not (np.isfinite(p_holm) and p_holm < ALPHA):
        return "no detectable difference"
    if diff > 0 and lo > 0:
        return "better"
    if diff < 0 and hi < 0:
        return "worse"
    return "no detectable difference"


def game_stats(table: dict, confirmatory: list[str] | None = None) -> dict:
    """``stats.game_stats`` of the built-in rows alone (byte-identical whatever entrants the table holds), with
    every entrant's CI of its mean added to ``ci`` and its own tests under ``entrants``."""
    from scope_envs.bench import stats

    st = stats.game_stats(builtin(table))
    others = entrant_names(table)
    for m in others:
        st["ci"][m] = stats.bootstrap_ci(stats.per_seed(table[m]))
    st["entrants"] = {m: entrant_tests(table, m, confirmatory) for m in others}
    return st


def stats_by_game(results: dict, confirmatory: list[str] | None = None) -> dict:
    return {game: game_stats(table, confirmatory) for game, table in results.items()}


def to_json(stats_by_game_: dict) -> dict:
    """entrants.json: game -> entrant -> its family and tests (JSON numbers; NaN as null)."""
    from scope_envs.files import jsonable

    return {g: jsonable(st["entrants"]) for g, st in stats_by_game_.items() if st.get("entrants")}


def collapse(table: dict, entrant: str, cost: dict | None, key: str) -> dict:
    """The entrant beside the collapse split of its game (the module docstring): ``cost`` is the split's
    (``split.split(table)["cost"]``: mean, ci, hurts; None without the frozen and uncollapsed rows) and ``key``
    the per-seed success on the reference model's users. Returns ``{"absent": why}``, or the cost with its CI,
    ``includes_zero``, and the entrant's ``share`` of it with its CI (``share`` None where the cost is 0)."""
    from scope_envs.bench.stats import BASELINE, UNCOLLAPSED, bootstrap_share_ci, per_seed

    if cost is None:
        absent = " and ".join(f"`{m}`" for m in (BASELINE, UNCOLLAPSED) if m not in table) or "no row"
        return {"absent": f"no collapse cost: the rows compared (this run's, and the reference's with --against) have "
                          f"no {absent} row with the reference users' side"}
    x = per_seed(table[entrant], key)
    if not len(x):
        return {"absent": f"{entrant}'s runs have no success on the reference model's users"}
    base, top = per_seed(table[BASELINE], key), per_seed(table[UNCOLLAPSED], key)
    lo, hi = cost["ci"]
    includes_zero = not (_finite(lo) and _finite(hi)) or lo <= 0 <= hi
    diff = float(x.mean() - base.mean())
    # a share is read only of a cost that is there: of a negative one (the collapsed simulator trained better
    # than the defect-free one) "recovering" it would mean doing worse than frozen
    costs = not includes_zero and lo > 0
    return {"cost": cost["mean"], "cost_ci": [lo, hi], "includes_zero": bool(includes_zero), "costs": bool(costs),
            "diff": diff, "share": diff / cost["mean"] if costs else None,
            "share_ci": list(bootstrap_share_ci(x, base, top)) if costs else None}


def verdicts(results: dict, stats_by_game_: dict, splits: dict, key: str, runs: list[dict] | None = None,
             budgets: dict | None = None) -> dict:
    """Per game and entrant, its tests (``entrant_tests``) completed into its verdict, in place (so that
    entrants.json holds it): its mean held-out success, its ``seeds``, the built-in rows' (``builtin_seeds``:
    the most any has) and ``collapse``; with ``runs`` (the run records) and ``budgets`` (game -> the run's budget),
    the most decisions of agent_0 a seed of it reported (``agent_steps_max``) and that ``budget``: the budget rule
    lets the iteration that reaches the budget cross it by any amount, so the verdict says by how much it did.
    Returns game -> entrant -> that verdict."""
    from scope_envs.bench.stats import per_seed

    out = {}
    for game, st in stats_by_game_.items():
        table = results[game]
        band = st.get("band") or {}
        for name, tests in (st.get("entrants") or {}).items():
            # the pre-declared rule every row is read by: a game whose ceiling does not clear its floor judges none
            tests.update(band_clears=bool(band["clears"]) if band.get("present") else None,
                         heldout_success=float(per_seed(table[name]).mean()), seeds=len(per_seed(table[name])),
                         few_seeds=len(per_seed(table[name])) < FEW_SEEDS,
                         builtin_seeds=max((len(per_seed(table[m])) for m in builtin(table)), default=0),
                         collapse=collapse(table, name, (splits.get(game) or {}).get("cost"), key))
            steps = [r.get("agent_steps") or 0 for r in runs or () if r.get("game") == game and r.get("method") == name]
            if steps and (budgets or {}).get(game) is not None:
                tests.update(agent_steps_max=int(max(steps)), budget=int(budgets[game]))
            out.setdefault(game, {})[name] = tests
    return out


def _finite(x) -> bool:  # entrants.json writes NaN as null
    return x is not None and bool(np.isfinite(x))


def _num(x, fmt="+.3f") -> str:
    return format(x, fmt) if _finite(x) else "n/a"


def _interval(ci, fmt="+.3f") -> str:
    lo, hi = ci
    return f"[{lo:{fmt}}, {hi:{fmt}}]" if _finite(lo) and _finite(hi) else "[n/a]"


def summary(verdicts_: dict, report: str) -> str:
    """The blocks that end ``scope-envs bench``'s output: per game and entrant, its held-out success against
    each row of its family (difference, CI, p_Holm in its own family), its power, its share of the collapse
    cost, and where the whole report is (``report``)."""
    from scope_envs.bench.stats import LEVEL, POWER

    lines = []
    for game, entrants in verdicts_.items():
        for name, v in entrants.items():
            m = max(1, len(v["family"]))
            lines += [f"{game}: {name}, held-out success {v['heldout_success']:.3f} over {v['seeds']} seed(s) "
                      f"(the built-in rows: {v['builtin_seeds']} each)"]
            if v.get("budget") and v.get("agent_steps_max", 0) > v["budget"]:
                lines.append(f"  budget: up to {v['agent_steps_max']:,} decisions of agent_0 a seed against "
                             f"{v['budget']:,} ({v['agent_steps_max'] / v['budget']:.2f}x: the iteration that "
                             "reached the budget crossed it)")
            if v.get("few_seeds"):
                lines.append(f"  caution: {v['seeds']} seed(s), fewer than {FEW_SEEDS}: Welch's p is too small and the "
                             "bootstrap CI too narrow at so few (benchmarks/README.md, \"How far the tests hold\"); "
                             f"a smoke run: to cite, run --seeds {FEW_SEEDS} or more")
            if v.get("band_clears") is False:
                lines.append("  the reference's ceiling (oracle) does not clear its floor (random): this game cannot "
                             "judge methods (claim 0), so the comparisons below are no verdict on this one")
            for r in v["rows"]:
                paired_ = f", paired p_Holm {_num(r['p_paired_holm'], '.2g')} on {r['n_paired']} shared seeds" \
                    if r["n_paired"] >= 2 else ""
                lines.append(f"  vs {r['b']}: {r['reading']}: {r['diff']:+.3f}, {LEVEL:.0%} CI {_interval(r['ci'])}, "
                             f"p_Holm {_num(r['p_holm'], '.2g')} (Welch, m = {m}){paired_}")
                frac = f" = {r['mde_frac']:.0%} of the headroom" if _finite(r["mde_frac"]) else ""
                lines.append(f"    power: detects {_num(r['mde'], '.3f')}{frac} at {r['n']} vs {r['n_other']} "
                             f"seeds with power {POWER} (the pooled t); Welch's test there: {_num(r['power'], '.2f')}")
            for other in v["missing"]:
                lines.append(f"  vs {other}: not in this run")
            if not v["rows"] and not v["missing"]:
                lines.append("  not tested: fewer than 2 seeds on a side")
            c = v["collapse"]
            if "absent" in c:
                lines.append(f"  collapse: {c['absent']}")
            else:
                share = "n/a (no cost to share)" if c["share"] is None else \
                    f"{c['share']:+.2f}, {LEVEL:.0%} CI {_interval(c['share_ci'], '+.2f')}"
                lines.append(f"  collapse: cost at this budget (uncollapsed − frozen on the reference model's users) "
                             f"{c['cost']:+.3f}, {LEVEL:.0%} CI {_interval(c['cost_ci'])}; "
                             f"{name}'s share of it {share}")
                if c["includes_zero"] and not all(_finite(b) for b in c["cost_ci"]):
                    lines.append("    the cost has no CI (a side has fewer than 2 seeds): collapse is not shown at "
                                 "this budget, so beating frozen here is not evidence about collapse")
                elif c["includes_zero"]:
                    lines.append("    the cost's CI includes 0: collapse costs nothing measurable at this budget, so "
                                 "beating frozen here is not evidence about collapse")
                elif not c.get("costs", True):
                    lines.append("    the cost is below 0: the collapsed simulator trained better than the "
                                 "defect-free one at this budget, so beating frozen here is not evidence about "
                                 "collapse")
    lines.append(f"the whole report: {report}")
    return "\n".join(lines) + "\n"


def report_lines(game: str, st: dict) -> list[str]:
    """The game's section on its entrants, for report.md."""
    from scope_envs.bench.stats import ALPHA, LEVEL

    ent = st.get("entrants") or {}
    if not ent:
        return []

    def f(x, fmt=".2g"):
        return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)

    lines = ["", "### New entrants: each against its own pre-declared comparisons (held-out success)", "",
             "Each entrant's family is its own (default: `frozen` and the best built-in method on held-out success; "
             "`--confirmatory` names others); Holm within that family only, so the built-in rows' tests above are "
             "untouched. Welch's t (each arm its seeds) and the paired t on the shared seeds (same seed, same "
             "evaluation episodes).", "",
             f"| entrant | vs | difference | {LEVEL:.0%} CI (bootstrap) | Welch p | p (Holm) | paired t (n) | "
             f"paired p | paired p (Holm) | reading ({ALPHA}, Holm, Welch / paired) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in ent.items():
        m = len(e["family"])
        if not e["rows"]:
            lines.append(f"| {name} | {', '.join(e['family']) or '—'} | — | — | — | — | — | — | — | "
                         "not tested (fewer than 2 seeds, or the rows are missing) |")
        for r in e["rows"]:
            lo, hi = r["ci"]
            ci = "n/a" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:+.3f}, {hi:+.3f}]"
            sig = f"{r['reading']} / {reading(r['diff'], r['p_paired_holm'])}"
            lines.append(f"| {name} | {r['b']} | {r['diff']:+.3f} | {ci} | {f(r['p'])} | {f(r['p_holm'])} (m = {m}) | "
                         f"{f(r['t_paired'], '.2f')} ({r['n_paired']}) | {f(r['p_paired'])} | "
                         f"{f(r['p_paired_holm'])} | {sig} |")
        if e["missing"]:
            lines.append(f"| {name} | {', '.join(e['missing'])} | not in this run | | | | | | | |")
    return lines


# ------------------------------------------------------------------------------------------------ the command line
def add_arguments(ap: argparse.ArgumentParser) -> None:
    """``bench``'s entrant options: ``--method``, ``--against``, ``--confirmatory``."""
    ap.add_argument("--method", action="append", default=None, metavar="SPEC",
                    help="a method plug-in to add as a row: path/to/file.py:NAME, package.module:NAME, an installed "
                         "entry point of the group scope_envs.methods, or a built-in row's name (not with --against; "
                         f"repeat for several; at most {MAX_PLUGINS})")
    ap.add_argument("--against", type=nonempty, default=None, metavar="REF",
                    help="train and evaluate only the --method rows; take the others from REF: 'reference' (the "
                         "committed default run), 'reference-sb3' (its SB3 rows), 'reference-full' (the committed "
                         "--full run; with --full) or an earlier --out folder; "
                         "refused when its settings or fingerprint differ")
    ap.add_argument("--confirmatory", nargs="+", default=None, metavar="ROW",
                    help="the rows each --method row is tested against (default: frozen and the best built-in "
                         "method on held-out success)")


def check_arguments(args) -> None:
    """argparse errors for the entrant options (exit 2, the argument named)."""
    specs = getattr(args, "method", []) or []
    if len(specs) > MAX_PLUGINS:
        args.parser.error(f"argument --method: at most {MAX_PLUGINS}, got {len(specs)}")
    if getattr(args, "against", None) and not specs:
        args.parser.error("argument --against: needs at least one --method (the rows to score against it)")
    if getattr(args, "against", None) and getattr(args, "sensitivity", False):
        args.parser.error("argument --sensitivity: not with --against (the variants' ceilings are retrained per run; "
                          "run the grid with --method instead)")
    if getattr(args, "confirmatory", None) and not specs:
        args.parser.error("argument --confirmatory: only with --method")
    if getattr(args, "against", None) and getattr(args, "out", None) is not None:
        check_out(args)
    if getattr(args, "against", None) and args.methods != args.parser.get_default("methods"):
        args.parser.error("argument --methods: not with --against (the reference's rows are taken as they are; "
                          "--method names your rows)")
    from scope_envs.bench.methods import builtin
    from scope_envs.bench.plugins import PluginError, env_specs, load

    names = []
    for spec in specs:
        game = None
        try:
            method = load(spec, builtin())
            # its simulators, for every game of the run: a wrong id is the same mistake in each of its runs
            for game in args.games if not getattr(method, "builtin", False) else ():
                env_specs(method, game)
        except PluginError as e:
            args.parser.error(f"argument --method: {e}")
        except Exception as e:  # noqa: BLE001  (its train_envs, the user's code: said in one line)
            args.parser.error(f"argument --method: {spec}: its train_envs({game!r}) failed: {type(e).__name__}: {e} "
                              "(it gives env ids, or (env id, make() kwargs) pairs)")
        names.append(method.name)
    if len(set(names)) != len(names):
        args.parser.error(f"argument --method: two methods share a name: {names}")
    # a method of one's own (a file, a module, an entry point) named as a built-in row would be read as that row
    own = [n for spec, n in zip(specs, names) if n in builtin_names() and spec != n]
    if own:
        args.parser.error(f"argument --method: {', '.join(map(repr, own))} is a built-in row's name: give your "
                          "method another name (its `name`, or the function's)")
    by_name = [n for spec, n in zip(specs, names) if n in builtin_names() and spec == n]
    if by_name and getattr(args, "against", None):  # it would retrain that row in place of the reference's
        args.parser.error(f"argument --method: {', '.join(map(repr, by_name))}: a row of the reference, taken as it is "
                          "with --against (rerun built-in rows without --against, with --methods)")
    confirmatory = getattr(args, "confirmatory", None) or []
    if confirmatory:  # a row the run will not have would only be "not in this run" in the report, after the grid
        rows = run_rows(args, names)
        unknown = [m for m in dict.fromkeys(confirmatory) if rows is not None and m not in rows]
        if unknown:
            args.parser.error(f"argument --confirmatory: {', '.join(map(repr, unknown))}: not a row of this run "
                              f"(its rows: {', '.join(rows)})")
        alone = [n for n in names if not [m for m in confirmatory if m != n]]
        if alone:
            args.parser.error(f"argument --confirmatory: leaves {', '.join(map(repr, alone))} nothing to be compared "
                              "with (a row is never compared with itself)")


def check_out(args) -> None:
    """``--out`` must not be a folder of ``--against``: the run makes ``OUT/runs`` before it reads the reference,
    so a packed reference (``runs.jsonl.gz``, as the committed ones are) would be read as that empty folder, and any
    reference would get this run's outputs over its own."""
    import os
    from pathlib import Path

    from scope_envs.bench import reference

    try:
        refs = reference.folders(args.against)
    except reference.ReferenceMismatch:  # not a reference at all: the run's own check says so, before any run
        return
    out = Path(os.path.expanduser(str(args.out))).resolve()
    if any(out == ref.resolve() for ref in refs):
        args.parser.error(f"argument --out: {args.out} is the --against folder ({args.against}): this run would "
                          "write its outputs over the reference's; give another --out")


def run_rows(args, names: list[str]) -> list[str] | None:
    """The rows a run will have: its --methods (or, with --against, the reference's rows of its --games) and the
    --method entrants ``names``. None when the reference cannot be read (its own check says why, before any run)."""
    against = getattr(args, "against", None)
    if against is None:
        builtins = list(args.methods)
    else:
        from scope_envs.bench import reference

        try:
            records = reference.read_records(reference.folders(against))
        except reference.ReferenceMismatch:
            return None
        builtins = [r["result"].get("method") for r in records if r["task"].get("game") in args.games]
    return list(dict.fromkeys(m for m in builtins + names if m))


def plan(tasks: list[dict], specs: list[str], against: str | None) -> tuple[list[dict], list[dict]]:
    """The runs to do and the reference's runs to take: the built-in ``tasks`` (all of them without
    ``against``, none with it) plus one task per plug-in, game and seed (each a copy of the game's built-in
    task with ``method`` its row name and ``plugin`` its spec, made absolute)."""
    from scope_envs.bench import reference
    from scope_envs.bench.methods import builtin
    from scope_envs.bench.plugins import absolute, load

    if not specs:
        return tasks, []
    template = {}
    for t in tasks:
        template.setdefault((t["game"], t["seed"]), t)
    rows = []
    for spec in specs:
        method = load(spec, builtin())
        extra = {} if method.name in builtin() and spec == method.name else {"plugin": absolute(spec)}
        rows += [{**t, "method": method.name, **extra} for t in template.values() if not t.get("assumptions")]
    if against is None:
        names = {r["method"] for r in rows}
        return [t for t in tasks if t["method"] not in names] + rows, []
    ref_runs, _ = reference.select(against, rows, skip={r["method"] for r in rows})
    return rows, ref_runs
