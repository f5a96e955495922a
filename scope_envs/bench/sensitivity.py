"""``scope-envs bench --sensitivity``: do the claims survive the proxies' untestable assumptions?

The held-out human proxies rest on assumptions no data here can pin down (p4g: which acts move willingness,
wear-out, heterogeneity, pushiness; tau2: slips, retractions, patience). Each has a switch, and each game's
``VARIANTS`` (``games.p4g.human_proxy``, ``games.tau2.human_proxy``) were fixed before any sensitivity result
existed. With ``--sensitivity`` every trained policy is re-evaluated on held-out users under every variant, on
the same seeds as its default held-out evaluation (``metrics["sensitivity"][variant]``); the ceiling is the one
row retrained per variant (``oracle`` trained against that variant of the behaviour model on train personas:
a ceiling for one model of users is no ceiling for another), and every claim is judged again, by the same
definitions (``stats.game_claims``), with each variant's held-out success and ceiling in place of the
default's. The methods are *not* retrained: the question is whether what they learned reads the same under
other users. cooperbench's proxy has no variants. Outputs: ``sensitivity.json`` (a list of ``{game, variant,
claim, held}``) and the table ``sensitivity.md``, which is also appended to ``report.md``.
"""

from __future__ import annotations

import copy

from scope_envs.bench.methods import variants
from scope_envs.bench.stats import CEILING, CLAIMS, SUCCESS, game_claims, normalize


def under(table: dict, variant: str, ceilings: dict[str, float]) -> dict:
    """A copy of one game's results table with ``variant``'s held-out success as held-out success, and the
    oracle's per-seed scores replaced by ``ceilings`` (seed -> the variant-trained oracle's held-out success)."""
    out = copy.deepcopy(table)
    for method, entry in out.items():
        for seed, s in entry["per_seed"].items():
            s[SUCCESS] = ceilings[seed] if method == CEILING and seed in ceilings else s["sensitivity"][variant]
    return out


def judge(results: dict, variant_ceilings: list[dict] = ()) -> list[dict]:
    """Every claim of every game with variants, under the default and under each variant; ``variant_ceilings``:
    the runs of the oracle retrained per variant (``run_one(..., assumptions=v)``)."""
    rows = []
    for game, table in results.items():
        names = variants(game)
        if not names or not all("sensitivity" in s for e in table.values() for s in e["per_seed"].values()):
            continue
        for variant in ("default", *names):
            ceilings = {str(r["seed"]): r["metrics"][SUCCESS] for r in variant_ceilings
                        if r["game"] == game and r["assumptions"] == variant}
            t = table if variant == "default" else normalize({game: under(table, variant, ceilings)})[game]
            rows += [{"game": game, "variant": variant, "claim": c["claim"], "held": c["held"]}
                     for c in game_claims(game, t)]
    return rows


def markdown(rows: list[dict], without=()) -> str:
    """Per game, a claims x variants table: yes / no / — (not judged); ``without``: the run's games whose proxies
    have no variants, named so that their missing table is not read as an omission."""
    mark = {True: "yes", False: "no", None: "—"}
    lines = ["## Sensitivity to the proxies' assumptions", "",
             ("Each claim judged again with every trained policy re-evaluated under each variant of the held-out "
             "proxies' assumptions (same policies, same seeds; the oracle ceiling retrained per variant; "
             "`scope_envs.bench.sensitivity`). "
             "yes = holds, no = does not, — = not judged (the evidence in `claims.json` says why under the default)."),
             ""]
    if without:
        lines += [f"{', '.join(without)}: no variants of the held-out proxies' assumptions (not re-judged).", ""]
    for game in dict.fromkeys(r["game"] for r in rows):
        names = list(dict.fromkeys(r["variant"] for r in rows if r["game"] == game))
        lines += [f"**{game}**", "", "| claim | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for claim in CLAIMS.values():
            cells = {r["variant"]: mark[r["held"]] for r in rows if r["game"] == game and r["claim"] == claim}
            if cells:
                lines.append(f"| {claim.split('.')[0]} | " + " | ".join(cells[n] for n in names) + " |")
        lines.append("")
    return "\n".join(lines)
