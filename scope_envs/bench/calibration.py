"""``scope-envs bench --calibration``: the benchmark's known answers, where the truth is known.

The users are the game's training-side **reference model** (sharpening 1, the dealt card, no cooperation
bias) on *held-out cards* (``<game>-heldout`` with ``behaviour="reference"``); nothing of the held-out human
proxies is read. The training simulator is that same model with **one defect at a time**, each a named dial:

=======================  ==========================================================================
dial                     the training simulator
=======================  ==========================================================================
``none``                 the reference itself (no defect: frozen against it is the benchmark's ``uncollapsed``)
``sharpening-default``   sharpened by the frozen simulator's exponent (``regimes.SHARPENING``, 3)
``sharpening-strong``    sharpened by ``STRONG_SHARPENING`` (6, the sharpest rotation member)
``coverage-modal``       always the game's modal card (the frozen simulator's)
``coverage-few``         a few fixed cards: each episode deals one of the game's first three train cards
``cooperation-default``  the frozen simulator's over-cooperation bias (each game's own)
``combined``             all of them at their defaults: the collapsed simulator on its modal card
``homogeneous``          the few fixed cards, sharpened and over-cooperative as the frozen simulator is:
                         the homogeneous "easy mode" user that aligned LLM users are measured to be
                         (arXiv 2603.11245), the collapsed design declared for issue 46 (below)
=======================  ==========================================================================

Every method is trained against each dial, with the default preset's budget (tau2's scaled, as in the
benchmark): ``frozen`` (the dial's simulator), ``vs`` (verbalized sampling over it; not on ``coverage-few``,
whose simulator is a population of three and VS wraps one simulator), ``rotation`` (the dial's simulator
re-dealt each of the game's four rotation cards, its sharpening and bias kept: rotation's remedy, wider
coverage, applied to the dial). ``cotrain``, ``population`` (SCOPE's checkpoint pool) and ``selfplay``
train a user of their own, so they do not depend on the dial: they are trained once per game and read against
every dial. The **floor** is uniform play; the **ceiling** is PPO against the users' own model (train cards)
with its own plateau budget (``presets.ceiling_steps``). Each cell is evaluated on ``eval_episodes`` episodes
against its training simulator (``train_success``) and against the reference users on held-out cards
(``heldout_success`` in its run record: *held-out cards*, not the held-out proxies).

**Expected answers**, declared 2026-12-02 before the first calibration run (``EXPECTATIONS``; judged in
``calibration.json`` and the report; a failed one is a defect to find — in the world, the remedy or the
trainer — or a measured reason why the game cannot show it; an expectation changes only with a reason
written down first). band = ceiling − floor; gap(d) = frozen@none − frozen@d; recovered(m, d) =
(m@d − frozen@d) / gap(d); all on mean held-out-card success over seeds, CIs 95% bootstrap:

* **K1** with no defect, frozen reaches the ceiling: (frozen@none − floor) / band >= ``CEILING_SHARE`` (0.85);
* **K2** each defect opens a gap: gap(d) >= ``GAP_SHARE`` (0.10) of the band and its CI lies above 0;
* **K3** VS recovers most of a pure-sharpening gap: recovered(vs, d) >= 0.5 for both sharpening dials;
* **K4** rotation and the population recover part of a persona-coverage gap: recovered > 0 with the CI of
  m@d − frozen@d above 0, for both coverage dials;
* **K5** a remedy aimed at one defect does not fix another: recovered(vs, d) < 0.5 on the coverage dials and
  recovered(rotation, d) < 0.5 on the sharpening dials.

K3-K5 are judged only on dials whose gap K2 found (otherwise: not judged, no gap to recover).

**A collapsed simulator that costs** (issue 46; declared 2026-12-04, before any run of these dials at the
plateau budgets and before any held-out run): at each game's plateau budget (``scope_envs.bench.budgets``), the
game's collapsed simulator must open a gap of at least ``GAP_SHARE`` of the band with its CI above 0 (K2 on its
dial). Today's frozen simulator (``combined``) is kept where it does; where it does not, the design is
``homogeneous``, the same defects on a few fixed cards instead of the one modal card. Which dial each game's
frozen simulator is, and the runs that chose it, are in ``benchmarks/results/collapse_design/``
(``benchmarks/collapse_design.py``); the benchmark's frozen rows take it with the rebuild of the references.

**Its sensitivity to the world's weakest assumption** (declared 2026-12-04, before the run): where the game
declares variants of its training-side world (``GameSpec.worlds``; p4g: its persona x act interactions, whose
bootstrap intervals exclude zero for one act only, switched off), ``collapse_design.py --world NAME`` repeats the
design's runs in that world, users and simulators alike. No answer is expected there: whether the design still
costs without the assumption is reported beside the fitted world's answer, as how much the cost rests on it.
**A simulator grounded in real people** (issue 49; declared 2026-12-04, before the first run of these answers
and before any held-out run of the realism rows; training side only, ``scope_envs.bench.realism``): **R1** the
grounded simulator on the game's modal card, sharpened by the frozen simulator's exponent (a fitted user collapsed
as a prompted LLM collapses), is diagnosed collapsed: diagnose's sharpening CI lies above the grounded simulator's
and its persona-sensitivity CI below it; **R2** a co-trained user paid for realism (``cotrain-realism``), started
from the behaviour clone of the frozen simulator, ends nearer the training part's real reply pairs than it started
and nearer than ``cotrain``'s user after the same budget (95% bootstrap CIs over seeds below 0), the distance read
against the game's fixed probe agent. ``benchmarks/realism_known_answers.py`` runs them (``benchmarks/results/realism/``).

Outputs (``OUT``): ``calibration.json``, ``calibration.md``, ``calibration_<game>.png``, ``runs/``.
``rewrite_markdown(OUT)`` writes ``calibration.md`` again from ``calibration.json`` alone (after a change of its
wording; it trains nothing and reads no run record).
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import numpy as np

from scope_envs.bench.worlds import use_world
from scope_envs.core.simulator import Simulator

STRONG_SHARPENING = 6.0
DIALS = {  # name -> (sharpening, coverage, cooperation)
    "none": (1.0, "dealt", "none"),
    "sharpening-default": ("default", "dealt", "none"),
    "sharpening-strong": (STRONG_SHARPENING, "dealt", "none"),
    "coverage-modal": (1.0, "modal", "none"),
    "coverage-few": (1.0, "few", "none"),
    "cooperation-default": (1.0, "dealt", "default"),
    "combined": ("default", "modal", "default"),
    "homogeneous": ("default", "few", "default"),
}
DIAL_METHODS = ("frozen", "vs", "rotation")  # trained against each dial
OWN_USER_METHODS = ("cotrain", "population", "selfplay")  # a learned user: one per game, read against every dial
FLOOR, CEILING = "random", "ceiling"
SHARPENING_DIALS, COVERAGE_DIALS = ("sharpening-default", "sharpening-strong"), ("coverage-modal", "coverage-few")
CEILING_SHARE, GAP_SHARE, RECOVERY = 0.85, 0.10, 0.5
DEFAULT_SEEDS, EVAL_EPISODES = 5, 500
RUNNER = "scope_envs.bench.calibration:run_cell"  # what the executors run for each cell
EXPECTATIONS = {
    "K1": f"with no defect, frozen reaches the ceiling: (frozen@none − floor) / band >= {CEILING_SHARE}",
    "K2": f"each defect opens a gap: frozen@none − frozen@dial >= {GAP_SHARE} of the band, its 95% CI above 0",
    "K3": f"VS recovers most of a pure-sharpening gap: recovered >= {RECOVERY} on both sharpening dials",
    "K4": "rotation and the population recover part of a persona-coverage gap: recovered > 0 with the CI of the "
          "difference above 0, on both coverage dials",
    "K5": f"a remedy aimed at one defect does not fix another: VS recovers < {RECOVERY} of a coverage gap, "
          f"rotation < {RECOVERY} of a sharpening gap",
}


# ---------------------------------------------------------------------------------------------- the simulators
def _players(game: str):
    """(reference class, its card keyword, the modal card, the frozen simulator's sharpening and cooperation,
    the few cards, the rotation cards) of a game."""
    from scope_envs.games import game_spec, load
    from scope_envs.regimes import SHARPENING

    spec = game_spec(game)
    Reference, Collapsed, keyword = load(spec.reference), load(spec.collapsed), spec.card_keyword
    modal, card = load(spec.modal_card), load(spec.card)
    cooperation = inspect.signature(Collapsed.__init__).parameters["cooperation"].default
    few = [card("train", i) for i in range(3)]  # "a few": the first three train cards (fixed, not chosen)
    rotation = [getattr(m, keyword) for m in load(spec.rotation)()]  # the game's rotation cards
    return Reference, keyword, modal(), SHARPENING, cooperation, few, rotation


def simulators(game: str, dial: str, cards=None) -> list[Simulator]:
    """The training simulator(s) of ``dial``: one, or on ``coverage-few`` one per fixed card (a population the
    env deals from); ``cards``: one simulator per card instead, the dial's sharpening and bias kept (rotation)."""
    if dial not in DIALS:
        raise ValueError(f"dial must be one of {list(DIALS)}, got {dial!r}")
    Reference, keyword, modal, default_sharpening, default_cooperation, few, _ = _players(game)
    sharpening, coverage, cooperation = DIALS[dial]
    sharpening = default_sharpening if sharpening == "default" else sharpening
    kwargs = {"cooperation": default_cooperation if cooperation == "default" else 0.0}
    if cards is None:
        cards = few if coverage == "few" else [{"dealt": None, "modal": modal}[coverage]]
    # a simulator with a card of its own has the env deal that card (scope_envs.core.env: reset)
    return [Reference(sharpening, **{keyword: c}, name=f"{dial}-{getattr(c, 'id', 'dealt')}", **kwargs)
            for c in cards]


def train_env(game: str, method: str, dial: str | None) -> tuple[str, dict]:
    """(env id, make() kwargs) a cell trains on (and is evaluated on for its train side)."""
    from scope_envs.bench.methods import method_setup

    if method in (CEILING, FLOOR):  # the users' own model: the benchmark's uncollapsed row's simulator
        env_id, kwargs, _ = method_setup(game, "uncollapsed")
        return env_id, kwargs
    if method in OWN_USER_METHODS:
        env_id, kwargs, _ = method_setup(game, method)
        return env_id, kwargs
    if method == "rotation":
        return f"{game}-rotation", {"users": simulators(game, dial, cards=_players(game)[-1])}
    sims = simulators(game, dial)
    if len(sims) > 1:
        if method != "frozen":
            raise ValueError(f"{method} wraps one simulator; dial {dial!r} is a population of {len(sims)}")
        return f"{game}-rotation", {"users": sims}
    return f"{game}-{method}", {"user": sims[0]}


# ------------------------------------------------------------------------------------------------------ one cell
def dials(game: str) -> list[str]:
    """The game's dials: all of ``DIALS``, but ``cooperation-default`` only where the game's frozen simulator
    has a cooperation bias of its own (tau2's has none: its modal card is the over-cooperative customer)."""
    return [d for d in DIALS if d != "cooperation-default" or _players(game)[4]]


def cells(game: str) -> list[tuple[str, str | None]]:
    """(method, dial) of every cell of a game, the floor and the ceiling first."""
    return ([(FLOOR, None), (CEILING, None)]
            + [(m, d) for d in dials(game) for m in DIAL_METHODS if (m, DIALS[d][1]) != ("vs", "few")]
            + [(m, None) for m in OWN_USER_METHODS])


def cell_name(method: str, dial: str | None) -> str:
    return method if dial is None else f"{method}@{dial}"


def run_cell(game: str, method: str, seed: int, steps: int, eval_episodes: int, dial: str | None = None,
             world: str | None = None) -> dict:
    """Train one cell for ``seed`` and evaluate it: its run record (``method`` is the cell's name). ``world``: a
    variant of the game's training-side world (``use_world``), for users and simulators alike."""
    import torch
    from threadpoolctl import threadpool_limits

    from scope_envs.bench.methods import ceiling_steps, method_setup
    from scope_envs.bench.policies import TrainerPlayers
    from scope_envs.bench.protocol import eval_envs, play, side_seeds
    from scope_envs.bench.reference import fingerprint
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    torch.set_num_threads(1)  # one thread per run: the runs are the parallelism (as methods.run_one)
    threadpool_limits(1)
    use_world(game, world)
    t0 = time.perf_counter()
    base = method.split("@")[0]
    env_id, kwargs = train_env(game, base, dial)
    overrides = method_setup(game, base)[2] if base in OWN_USER_METHODS else {}
    budget = 0 if base == FLOOR else ceiling_steps(game, steps) if base == CEILING else steps
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=seed, total_steps=budget, **overrides))
    if budget:
        trainer.train()
    players = TrainerPlayers(trainer, uniform=base == FLOOR)
    seeds = side_seeds(seed)  # the benchmark's train and held-out seed streams
    tr = play(players, env_id, eval_episodes, seeds["train"], eval_envs(eval_episodes), **kwargs)
    ho = play(players, f"{game}-heldout", eval_episodes, seeds["heldout"], eval_envs(eval_episodes),
              behaviour="reference")
    return {"game": game, "method": method, "seed": seed, "dial": dial, **({"world": world} if world else {}),
            "metrics": {"train_success": tr["success"], "heldout_success": ho["success"],
                        "policy_entropy": tr["policy_entropy"], "sim_entropy": tr["sim_entropy"]},
            "agent_steps": trainer.agent_steps, "wall_s": time.perf_counter() - t0,
            "fingerprint": fingerprint(game)}  # what made these episodes: --resume redoes a cell other code made


# -------------------------------------------------------------------------------------------------- the analysis
def analyse(runs: list[dict]) -> dict:
    """calibration.json's per-game part from the cells' runs: means and CIs per cell, the band, each dial's gap
    and every method's recovered share of it, and the known answers (``EXPECTATIONS``)."""
    from scope_envs.bench import stats as st

    out = {}
    for game in dict.fromkeys(r["game"] for r in runs):
        held = {}
        for r in runs:
            if r["game"] == game:
                held.setdefault(r["method"], []).append(r["metrics"]["heldout_success"])
        held = {m: np.asarray(v, float) for m, v in held.items()}
        mean = {m: float(v.mean()) for m, v in held.items()}
        cells_out = {m: {"mean": mean[m], "ci": list(st.bootstrap_ci(v)) if len(v) > 1 else [None, None],
                         "seeds": len(v)} for m, v in held.items()}
        band = mean.get(CEILING, np.nan) - mean.get(FLOOR, np.nan)
        none = held.get("frozen@none")
        dials = {}
        for d in DIALS:
            if d == "none" or f"frozen@{d}" not in held or none is None:
                continue
            frozen = held[f"frozen@{d}"]
            gap = float(none.mean() - frozen.mean())
            ci = st.bootstrap_diff_ci(none, frozen)
            opened = bool(band > 0 and gap >= GAP_SHARE * band and ci[0] > 0)
            rec = {}
            for m in [*DIAL_METHODS[1:], *OWN_USER_METHODS]:
                x = held.get(f"{m}@{d}", held.get(m))
                if x is None:
                    continue
                diff_ci = st.bootstrap_diff_ci(x, frozen)
                rec[m] = {"diff": float(x.mean() - frozen.mean()), "ci": list(diff_ci),
                          "recovered": float((x.mean() - frozen.mean()) / gap) if opened else None}
            dials[d] = {"gap": gap, "gap_share": gap / band if band > 0 else None, "ci": list(ci), "opened": opened,
                        "recovered": rec}
        out[game] = {"cells": cells_out, "floor": mean.get(FLOOR), "ceiling": mean.get(CEILING), "band": band,
                     "dials": dials, "known_answers": known_answers(mean, band, dials)}
    return out


def known_answers(mean: dict, band: float, dials: dict) -> list[dict]:
    """The five expectations judged: ``{key, expectation, held, evidence}``, held True / False / None."""
    out = []

    def add(key, held, evidence):
        out.append({"key": key, "expectation": EXPECTATIONS[key], "held": held, "evidence": evidence})

    if not band > 0 or "frozen@none" not in mean:
        add("K1", None, "no band (the ceiling does not clear the floor) or no frozen@none cell")
    else:
        share = (mean["frozen@none"] - mean[FLOOR]) / band
        add("K1", bool(share >= CEILING_SHARE), f"frozen@none at {share:.2f} of the band")
    # one seed of a cell: no CI of a gap, so no gap can open; said as that, not as a failed expectation
    one_seed = [d for d, v in dials.items() if v["ci"][0] is None or not np.isfinite(v["ci"][0])]
    no_ci = "not judged (fewer than 2 seeds: no CI of a gap; run --seeds 2 or more)"
    parts = [f"{d} {v['gap_share']:+.2f} of the band"
             + ("" if one_seed else f" (CI of the gap [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}])")
             for d, v in dials.items() if v["gap_share"] is not None]
    add("K2", bool(dials) and all(v["opened"] for v in dials.values()) if parts and not one_seed else None,
        "; ".join(([no_ci] if one_seed and parts else []) + parts) or "no band")

    def recovered(method, names, test):
        judged = [(d, dials[d]["recovered"].get(method)) for d in names if d in dials and dials[d]["opened"]]
        judged = [(d, r) for d, r in judged if r is not None]
        if not judged:
            if any(d in one_seed for d in names):
                return None, no_ci
            return None, "not judged (no gap opened on " + ", ".join(names) + ")"
        ok = all(test(r) for _, r in judged)
        return ok, "; ".join(f"{method}@{d} recovered {r['recovered']:+.2f} (difference {r['diff']:+.3f}, CI "
                             f"[{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}])" for d, r in judged)

    add("K3", *recovered("vs", SHARPENING_DIALS, lambda r: r["recovered"] >= RECOVERY))
    k4 = [recovered(m, COVERAGE_DIALS, lambda r: r["recovered"] > 0 and r["ci"][0] > 0)
          for m in ("rotation", "population")]
    add("K4", None if all(h is None for h, _ in k4) else all(h for h, _ in k4 if h is not None),
        "; ".join(dict.fromkeys(e for _, e in k4)))  # (both remedies not judged on the same dials: said once)
    k5 = [recovered("vs", COVERAGE_DIALS, lambda r: r["recovered"] < RECOVERY),
          recovered("rotation", SHARPENING_DIALS, lambda r: r["recovered"] < RECOVERY)]
    add("K5", None if all(h is None for h, _ in k5) else all(h for h, _ in k5 if h is not None),
        "; ".join(dict.fromkeys(e for _, e in k5)))
    return out


def markdown(analysis: dict, settings: dict) -> str:
    verdict = {True: "holds", False: "**fails**", None: "not judged"}
    lines = ["# Calibration: the benchmark's known answers", "",
             "Users: each game's training-side reference model on held-out cards (no held-out proxy is read). "
             "The training simulator has one defect at a time (`scope_envs.bench.calibration`). "
             f"Settings: {settings}.", ""]
    for game, a in analysis.items():
        # the gap and its CI on one scale (success), its share of the band in a column of its own: a share printed
        # beside the CI of the gap read as a point outside its interval ("-0.33 [-0.215, +0.070]")
        lines += [f"## {game}", "", f"Floor {a['floor']:.3f}, ceiling {a['ceiling']:.3f}, band {a['band']:+.3f}.", "",
                  "| dial | gap = frozen@none − frozen@dial [95% CI of the gap] | gap as a share of the band | "
                  + " | ".join(f"{m} recovered" for m in (*DIAL_METHODS[1:], *OWN_USER_METHODS)) + " |",
                  "|---|---|---|" + "---|" * (len(DIAL_METHODS) - 1 + len(OWN_USER_METHODS))]
        for d, v in a["dials"].items():
            share = "n/a" if v["gap_share"] is None else f"{v['gap_share']:+.2f}"
            row = [f"{v['gap']:+.3f} [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}]",
                   share + ("" if v["opened"] else " (no gap)")]
            for m in (*DIAL_METHODS[1:], *OWN_USER_METHODS):
                r = v["recovered"].get(m)
                row.append("—" if r is None else (f"{r['recovered']:+.2f}" if r["recovered"] is not None
                                                   else f"({r['diff']:+.3f})"))
            lines.append(f"| {d} | " + " | ".join(row) + " |")
        lines += ["", "Gap and its 95% CI in mean held-out-card success; the share is the gap over the band (K2 wants "
                      f"at least {GAP_SHARE:.2f} and the CI of the gap above 0; \"no gap\": K2 found none). A method's "
                      "recovered share: (method@dial − frozen@dial) / gap, where the gap opened; in parentheses where "
                      "it did not, the difference method@dial − frozen@dial itself (nothing to recover). —: not run.",
                  "", "Cells (mean success against the reference users on held-out cards, over seeds): " + "; ".join(
            f"{m} {c['mean']:.3f}" for m, c in a["cells"].items()), ""]
        lines += [f"* **{k['key']}** {k['expectation']}: "
                  + (k["evidence"] if k["evidence"].startswith(verdict[None]) else  # (it says why it is not judged)
                     f"{verdict[k['held']]}. {k['evidence']}") for k in a["known_answers"]]
        lines += [""]
    return "\n".join(lines) + "\n"


def rewrite_markdown(out) -> Path:
    """``OUT/calibration.md`` written again from ``OUT/calibration.json`` (its analysis and settings, as ``run``
    wrote them): the same numbers in the current wording. Trains nothing and reads no run record."""
    import json

    from scope_envs.files import write_atomic

    out = Path(out)
    data = json.loads((out / "calibration.json").read_text())
    write_atomic(out / "calibration.md", markdown(data["games"], data["settings"]))
    return out / "calibration.md"


def figure(out: Path, game: str, a: dict) -> None:
    """calibration_<game>.png: each dial's gap (share of the band, with its CI) and the methods' recovered
    shares."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scope_envs.files import save_figure

    dials = list(a["dials"])
    methods = [m for m in (*DIAL_METHODS[1:], *OWN_USER_METHODS)
               if any(m in a["dials"][d]["recovered"] for d in dials)]  # a part of the grid: those it ran
    fig, axes = plt.subplots(1, 2 if methods else 1, figsize=(12 if methods else 6, 4), squeeze=False)
    ax1 = axes[0, 0]
    band = a["band"] if a["band"] and a["band"] > 0 else np.nan
    gaps = [a["dials"][d]["gap"] / band for d in dials]
    err = np.array([[a["dials"][d]["gap"] - a["dials"][d]["ci"][0], a["dials"][d]["ci"][1] - a["dials"][d]["gap"]]
                    for d in dials]).T / band if dials else None
    ax1.bar(range(len(dials)), gaps, yerr=err, color="tab:red", capsize=3)
    ax1.axhline(GAP_SHARE, ls="--", color="gray", lw=1)
    ax1.set_xticks(range(len(dials)), dials, rotation=30, ha="right")
    ax1.set_ylabel("frozen@none − frozen@dial\n(share of the band, 95% CI)")
    ax1.set_title(f"{game}: the gap each defect opens")
    if not methods:
        fig.tight_layout()
        save_figure(fig, out / f"calibration_{game}.png", dpi=110)
        plt.close(fig)
        return
    ax2 = axes[0, 1]
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        rows = [a["dials"][d]["recovered"].get(m) or {} for d in dials]
        vals = [np.nan if r.get("recovered") is None else r["recovered"] for r in rows]
        # the CI of m@d − frozen@d over the gap: the recovered share's interval (the gap taken as known)
        errs = [[np.nan, np.nan] if r.get("recovered") is None else
                [(r["diff"] - r["ci"][0]) / a["dials"][d]["gap"], (r["ci"][1] - r["diff"]) / a["dials"][d]["gap"]]
                for d, r in zip(dials, rows)]
        ax2.bar(np.arange(len(dials)) + j * width, vals, width, label=m,
                yerr=np.array(errs).T if errs else None, capsize=2)
    ax2.axhline(RECOVERY, ls="--", color="gray", lw=1)
    ax2.set_xticks(np.arange(len(dials)) + 0.4 - width / 2, dials, rotation=30, ha="right")
    ax2.set_ylabel("recovered share of the gap (95% CI)")
    ax2.set_title("each method's recovery (dials with a gap)")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / f"calibration_{game}.png", dpi=110)
    plt.close(fig)


def run(games, seeds: int | None = None, steps: int | dict | None = None, eval_episodes: int | None = None,
        out="results-calibration", jobs: int | None = None, progress: bool = True, resume: bool = False,
        only_dials=None, methods=None, world: str | None = None) -> dict:
    """Run the calibration grid and write its outputs; returns calibration.json's dict. ``steps``: one budget for
    every game, or a budget per game (default: each game's preset budget). ``only_dials``/``methods``: a part of
    the grid (those dials, those of ``DIAL_METHODS`` and ``OWN_USER_METHODS``; the floor and the ceiling always).
    ``world``: every cell in that variant of the game's training-side world (``use_world``)."""
    import os

    from scope_envs.bench.executors import execute
    from scope_envs.bench.methods import preset_steps
    from scope_envs.files import check_output_dir, write_atomic, write_json

    out = check_output_dir(out)
    check_output_dir(out / "runs")
    seeds = DEFAULT_SEEDS if seeds is None else seeds
    episodes = EVAL_EPISODES if eval_episodes is None else eval_episodes
    if not isinstance(steps, dict):
        steps = {} if steps is None else dict.fromkeys(games, steps)
    budget = {g: steps.get(g, preset_steps(g)) for g in games}
    for name in only_dials or ():
        if name not in DIALS:
            raise ValueError(f"dial must be one of {list(DIALS)}, got {name!r}")

    def wanted(m, d):
        return m in (FLOOR, CEILING) or ((methods is None or m in methods)
                                         and (only_dials is None or d is None or d in only_dials))

    tasks = [dict(game=g, method=cell_name(m, d), seed=s, steps=budget[g], eval_episodes=episodes, dial=d,
                  runner=RUNNER, **({"world": world} if world else {}))
             for g in games for m, d in cells(g) if wanted(m, d) for s in range(seeds)]
    tasks.sort(key=lambda t: -(5 if t["method"] == CEILING else 4 if t["method"] == "population" else 1))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    t0 = time.perf_counter()
    runs, jobs = execute(tasks, out, jobs=jobs, resume=resume, progress=progress)
    settings = {"seeds": seeds, "steps": budget, "eval_episodes": episodes, "jobs": jobs, **({"world": world} if world else {}),
                "wall_s": round(time.perf_counter() - t0, 1)}
    analysis = analyse(runs)
    write_json(out / "calibration.json", {"settings": settings, "dials": {d: list(v) for d, v in DIALS.items()},
                                          "expectations": EXPECTATIONS, "games": analysis})
    write_atomic(out / "calibration.md", markdown(analysis, settings))
    for game, a in analysis.items():
        figure(out, game, a)
    return analysis
