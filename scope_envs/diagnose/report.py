"""A diagnosis written out: ``diagnose.json`` (every number), ``diagnose.md`` (the card) and ``diagnose.png``,
each atomically (``scope_envs.files``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from scope_envs.files import check_output_dir, save_figure, write_atomic, write_json

FILES = ("diagnose.json", "diagnose.md", "diagnose.png")


def clean(x):
    """JSON-ready: NaN and infinities as null, numpy scalars as Python numbers."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float):
        return None if not math.isfinite(x) else round(x, 6)
    return x


def number(x, digits: int = 3) -> str:
    """``x`` to ``digits`` places; ``n/a`` for None; a value that rounds to zero shows no sign (not ``-0.00``)."""
    if x is None:
        return "n/a"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fmt(block, digits: int = 3) -> str:
    """``value [lo, hi]`` of a ``{"value", "ci"}`` block; ``n/a`` where there is none."""
    if not block or block.get("value") is None:
        return "n/a"
    text = number(block["value"], digits)
    if block.get("ci"):
        text += f" [{number(block['ci'][0], digits)}, {number(block['ci'][1], digits)}]"
    return text


def rows(r: dict) -> list[tuple[str, str, str]]:
    """(number, value with 95% CI, what it means) of a report, for the card and the benchmark table."""
    s, c, p, co = r["sharpening"], r["coverage"], r["persona_sensitivity"], r["cooperation"]
    out = [
        ("sharpening (vs reference model)", fmt(s, 2),
         f"{r['fit']} fit on {s['states']} states; KL to fit {number(s.get('kl_fitted'))} vs to reference "
         f"{number(s.get('kl_reference'))}" + (f", explained {number(s['explained'], 2)}" if s.get("explained") is not None
                                               else "") + (", AT A BOUND" if s.get("at_bound") else "")),
    ]
    own = r.get("sharpening_own_card")
    if own:
        out.append(("sharpening (vs reference on its own card)", fmt(own, 2),
                    f"{own['against']}; explained " + (number(own["explained"], 2) if own.get("explained") is not None
                                                       else "n/a") + (", AT A BOUND" if own.get("at_bound") else "")))
    out += [
        ("act-mode coverage", fmt(c["acts"], 2),
         f"{len(c['acts']['modes'])} modes; missing: {', '.join(c['acts']['missing']) or 'none'}"),
        ("act-path coverage", fmt(c["paths"], 2),
         f"{len(c['paths']['modes'])} path modes (first replies); missing {len(c['paths']['missing'])}"),
        ("entropy ratio (replies)", fmt(c["entropy_ratio"], 2), "pooled reply entropy / the reference's"),
        ("entropy ratio (paths)", fmt(c["path_entropy_ratio"], 2), "act-path entropy / the reference's"),
    ]
    if p:
        dropped = (f"; {p['dropped_cards']} failed cards dropped, {p['dropped_states']} states with fewer than 2 "
                   "cards left out" if p.get("dropped_cards") or p.get("dropped_states") else "")
        out.append(("persona sensitivity", fmt(p, 3),
                    f"reference {fmt(p['reference'], 3)}; difference {fmt(p['difference'], 3)} ({p['estimator']})"
                    + dropped + (f"; {p['note']}" if p.get("note") else "")))
    out += [
        ("conceding rate", fmt(co["rate"], 3), co.get("note") or f"reference {fmt(co['reference_rate'], 3)} "
                                                                  f"({', '.join(co['concede_acts'])})"),
        ("cooperation bias", fmt(co["bias"], 3), "conceding rate minus the reference's (paired episodes)"),
        (f"outcome: {co['outcome']['label']}", fmt(co["outcome"]["rate"], 3),
         co["outcome"].get("note") or f"reference {fmt(co['outcome']['reference_rate'], 3)}"),
    ]
    real = r.get("real")
    if real:
        ll = real["log_likelihood"]
        out += [
            ("sharpening (vs real persuadees)", fmt(real["sharpening"], 2),
             f"{real['states']} real states of {real['dialogues']} dialogues; explained "
             f"{number(real['sharpening']['explained'], 2)}" if real["sharpening"].get("explained") is not None
             else f"{real['states']} real states"),
            ("log-likelihood of real replies (nats/reply)", fmt(ll, 3),
             f"perplexity {ll['perplexity']:.2f}; reference model {fmt(ll['reference_model'], 3)}; "
             f"real table in-sample {fmt(ll['real_table_in_sample'], 3)}" if ll.get("perplexity") else ""),
            ("conceding at real histories", fmt(real["cooperation"]["rate"], 3),
             f"real persuadees {fmt(real['cooperation']['real_rate'], 3)}; bias {fmt(real['cooperation']['bias'], 3)}"),
        ]
    return out


def markdown(r: dict, command: str | None = None) -> str:
    d, e = r["design"], r["errors"]
    lines = [f"# Diagnosis: `{r['simulator']}` on {r['game']}", ""]
    if r["evaluation_only"]:
        lines += ["**Evaluation only**: this simulator reads held-out personas or the held-out behaviour model; "
                  "never train against it.", ""]
    lines += [f"{r['name']} ({r['kind']}, {r['surface']} surface). Fit: **{r['fit']}** "
              f"({'its stated distributions' if r['fit'] == 'exact' else 'its sampled answers'}). "
              f"{d['probe_states']} probe states from {d['probe_episodes']} probe episodes "
              f"({d['samples']} draws each), {d['persona_states']} of them under {d['cards']} cards; "
              f"{d['episodes']} episodes of its own; 95% cluster-bootstrap CIs ({d['bootstrap']} replicates; "
              "mode coverage and entropy ratios: value ± 1.96 SE, since a replicate holds fewer distinct clusters). "
              f"Reference: {d['reference']}.", "",
              "| number | value [95% CI] | reading |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows(r)]
    lines += ["", f"Errors: {e['probe_errors']} of {e['asked']} probe questions unusable; "
                  f"{e['episode_in_game_errors']} in-game errors and {e['episodes_raised']} raised episodes "
                  f"in {d['episodes']} episodes ({e['episodes_truncated']} truncated)."]
    for m in e["messages"] + e["episode_messages"]:
        lines.append(f"- `{m}`")
    lines += ["", "Sharpening s: the maximum-likelihood exponent of pi ∝ ref^s (1: the reference itself, above 1: "
                  "sharper, below 1: flatter or differently shaped; read it with its KL columns). "
                  "Definitions: docs/diagnose.md."]
    if command:
        lines += ["", f"Command: `{command}`"]
    return "\n".join(lines) + "\n"


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))

    def bars(ax, items, title, line=None):
        labels = [k for k, _ in items]
        vals = [b["value"] if b and b.get("value") is not None else math.nan for _, b in items]
        err = [[v - b["ci"][0] if b and b.get("ci") else 0 for (_, b), v in zip(items, vals)],
               [b["ci"][1] - v if b and b.get("ci") else 0 for (_, b), v in zip(items, vals)]]
        err = [[max(x, 0) if math.isfinite(x) else 0 for x in side] for side in err]
        ax.bar(range(len(items)), vals, yerr=err, capsize=3, color="tab:blue")
        ax.set_xticks(range(len(items)), labels, rotation=20, fontsize=8)
        if line is not None:
            ax.axhline(line, color="0.4", ls=":", lw=1)
        ax.set_title(title, fontsize=9)

    s = [("vs reference", r["sharpening"])]
    if r.get("real"):
        s.append(("vs real", r["real"]["sharpening"]))
    bars(axes[0], s, "sharpening exponent (1 = reference)", 1.0)
    c = r["coverage"]
    bars(axes[1], [("acts", c["acts"]), ("act mass", c["acts_mass"]), ("paths", c["paths"]),
                   ("H replies", c["entropy_ratio"]), ("H paths", c["path_entropy_ratio"])],
         "coverage and entropy ratio (1 = reference)", 1.0)
    p = r["persona_sensitivity"]
    bars(axes[2], [("simulator", p), ("reference", p["reference"])] if p else [], "persona sensitivity (TV)")
    co = r["cooperation"]
    items = [("simulator", co["rate"]), ("reference", co["reference_rate"])]
    if r.get("real"):
        items += [("sim @ real", r["real"]["cooperation"]["rate"]), ("real people", r["real"]["cooperation"]["real_rate"])]
    bars(axes[3], items, "conceding rate")
    fig.suptitle(f"diagnose {r['game']} {r['simulator']} ({r['fit']} fit)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=90)
    plt.close(fig)


def write(r: dict, out, command: str | None = None) -> list[Path]:
    """The three files under ``out`` (created; ``OutputError`` if it cannot be written)."""
    folder = check_output_dir(out)
    r = clean(r)
    write_json(folder / FILES[0], r)
    write_atomic(folder / FILES[1], markdown(r, command))
    plot(r, folder / FILES[2])
    return [folder / f for f in FILES]


def load(path) -> dict:
    return json.loads(Path(path).read_text())
