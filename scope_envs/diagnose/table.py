"""The diagnosis of every built-in simulator, as one table: ``python -m scope_envs.diagnose.table``.

For each game: every name ``specs.names(game)`` lists (the frozen simulator, the reference, the sharpened
reference, the cooperation-only reference, the rotation roster, the train-stream families, the six
held-out panel families and the held-out human proxy — the last two for evaluation only), diagnosed at
the command's defaults. Writes ``table.md`` and ``table.json`` under ``--out`` (atomically).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from scope_envs.arguments import count, existing_dir, output_dir, seed
from scope_envs.diagnose.report import clean, fmt, number
from scope_envs.diagnose.specs import GAMES, names
from scope_envs.games import game_spec, load

HEADER = ("| game | simulator | fit | sharpening vs reference [95% CI] | explained | on its own card (explained) "
          "| act cov | path cov | H ratio "
          "| path H ratio | persona sens. (ref) | cooperation bias [95% CI] | errors |")
REAL_HEADER = ("| simulator | sharpening vs real [95% CI] | explained | log-lik. of real replies [95% CI] "
               "| perplexity | conceding at real histories (real) |")


def line(r: dict) -> str:
    s, c, p, co = r["sharpening"], r["coverage"], r["persona_sensitivity"], r["cooperation"]
    tag = " (eval only)" if r["evaluation_only"] else ""
    explained = number(s["explained"], 2) if s.get("explained") is not None else "–"
    persona = f"{number(p['value'])} ({number(p['reference']['value'])})" if p else "n/a"
    own = r.get("sharpening_own_card")
    own_text = "–" if not own else (f"{own['value']:.2f}{' (bound)' if own.get('at_bound') else ''} ("
                                    + (number(own["explained"], 2) if own.get("explained") is not None else "–") + ")")
    return (f"| {r['game']} | `{r['simulator']}`{tag} | {r['fit']} | {fmt(s, 2)} | {explained} | {own_text} "
            f"| {number(c['acts']['value'], 2)} | {fmt(c['paths'], 2).split(' ')[0]} "
            f"| {number(c['entropy_ratio']['value'], 2)} "
            f"| {number(c['path_entropy_ratio']['value'], 2)} | {persona} | {fmt(co['bias'], 3)} "
            f"| {r['errors']['probe_errors']} |")


def real_line(r: dict) -> str:
    x = r["real"]
    s, ll, co = x["sharpening"], x["log_likelihood"], x["cooperation"]
    explained = number(s["explained"], 2) if s.get("explained") is not None else "–"
    return (f"| `{r['simulator']}` | {fmt(s, 2)} | {explained} | {fmt(ll, 3)} | {ll['perplexity']:.2f} "
            f"| {co['rate']['value']:.3f} ({co['real_rate']['value']:.3f}) |")


def main(argv=None) -> None:
    from tqdm.auto import tqdm

    from scope_envs.diagnose import diagnose
    from scope_envs.diagnose.diagnosis import DataError
    from scope_envs.files import check_output_dir, write_atomic, write_json

    ap = argparse.ArgumentParser(prog="python -m scope_envs.diagnose.table", description=__doc__)
    ap.add_argument("--out", type=output_dir, default="runs/diagnose-table",
                    help="table.md and table.json go here (default: ./runs/diagnose-table)")
    ap.add_argument("--games", nargs="+", choices=GAMES, default=list(GAMES), help="the games (default: all of them)")
    ap.add_argument("--data", type=existing_dir, default=None,
                    help="the P4G data folder, for p4g's real-people columns")
    ap.add_argument("--bootstrap", type=count(100_000, low=0), default=300,
                    help="bootstrap replicates of each diagnosis (default 300; 0 to 100_000)")
    ap.add_argument("--seed", type=seed, default=0, help="seed of every diagnosis (default 0; 0 to 2**32-1)")
    args = ap.parse_args(argv)
    with_data = [g for g in args.games if game_spec(g).real_dialogues]
    if args.data is not None:  # the files before any row: the rows without real people take minutes
        for game in with_data:
            try:
                load(game_spec(game).real_dialogues)(Path(args.data))
            except FileNotFoundError as e:
                ap.error(f"argument --data: {e}")
    out = check_output_dir(args.out)
    jobs = [(g, s) for g in args.games for s in names(g)]
    reports, start = [], time.time()
    for game, spec in tqdm(jobs, desc="diagnose table", unit="simulator"):
        try:
            reports.append(clean(diagnose(game, spec, bootstrap=args.bootstrap, seed=args.seed,
                                          data=args.data if game in with_data else None)))
        except DataError as e:  # truncated or malformed csv files, found as they are read
            ap.error(f"argument --data: {e}")
    minutes = (time.time() - start) / 60
    command = "python -m scope_envs.diagnose.table " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    lines = [f"Command: `{command}` ({minutes:.1f} min). Each row: `scope-envs diagnose` at its defaults "
             "(40 probe episodes, 4 draws per state, 6 cards on 40 states, 400 episodes).", "",
             HEADER, "|" + " --- |" * (HEADER.count("|") - 1)]
    lines += [line(r) for r in reports]
    real = [r for r in reports if r.get("real")]
    if real:
        lines += ["", "p4g against the real persuadees (the annotated dialogues' real histories):", "", REAL_HEADER,
                  "|" + " --- |" * (REAL_HEADER.count("|") - 1)]
        lines += [real_line(r) for r in real]
    write_json(out / "table.json", reports)
    write_atomic(out / "table.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
