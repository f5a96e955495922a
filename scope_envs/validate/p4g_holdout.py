"""Out-of-sample check of the p4g persuadee models against real people they were not fitted on.

``scope-envs validate p4g`` checks the two marginals that the willingness and
amount offsets were calibrated to (give rate and mean donation). This check
asks more of the held-out human proxy (``games.p4g.human_proxy``): does it
answer *real persuaders* the way the *real persuadees* did, on people whose
rows it never saw?

Design (``out_of_sample``):

* The dialogues: the annotated dialogues of the held-out part of the people
  split (``people.py``: the people the proxies are fitted on and stand for)
  that have an outcome (``B6 <= 2``) and a complete survey row
  (``fit.annotated_dialogues``; 286 in the data set, 128 of them in the
  held-out part). The training part's people are never read. They are split into ``K`` folds *by
  person* (``B3``: 118 people are the persuadee of several of the 1,017
  dialogues, with the same survey row each time), people taken in a
  permutation drawn from ``SEED`` (fixed in this module before any result
  was seen).
* Per fold, every table is refitted without every dialogue of the test
  people (``fit(data, holdout=...)``, ``holdout_of``: their survey rows
  leave the persona model and the propensity regression too, also those of
  their unannotated dialogues). The shipped ``calibration`` block is kept:
  fitting does not write it, and its offsets were set on the held-out part's
  give rate and mean donation, which are not the statistics tested here.
  The refit parameters are installed with ``personas.set_params`` and the
  previous ones put back afterwards, also when the run raises.
* Each test dialogue is replayed: its persona card is the person's survey
  row; each of its labelled persuader acts, in order, is one persuader turn
  of a ``P4GGame`` whose ``max_turns`` is the dialogue's number of persuader
  acts, and the simulated persuadee replies after each. The game ends by its
  own rules (the final turn, a persuader's closing, or the persuadee's
  closing after stating an amount). ``REPLICATIONS`` seeded replays per
  dialogue; the persuadee's actual donation (after follow-through) and its
  reply acts are recorded.

Statistics, per fold, against the test dialogues' real data:

* ``contrasts``: for each persuasion act (``human_proxy.PERSUASION``) used
  in at least ``MIN_SIDE`` test dialogues and absent from at least
  ``MIN_SIDE``, ``P(give | used) - P(give | not used)`` over dialogues;
  the simulated side averages each dialogue's simulated give probability
  over the same split. Reported per act, with the mean absolute error and
  the Pearson correlation over acts.
* ``replies``: the persuadee's act frequencies over ``fit.RESPONSE_ACTS``
  (stated amounts pooled as ``provide_amount``; real: every labelled
  persuadee sentence, simulated: every reply), with the total-variation
  distance and the per-act absolute differences.
* ``give_rate`` and ``mean_donation``, for reference.

The noise floor is the same comparison between two *real* samples: the
fold's fit part (the other dialogues) against its test part. It is what two
samples of real people disagree by; the fit part is twice the test part, so
it carries somewhat more noise than a simulator with many replications would
(an upper-end floor).

Simulators (``SIMULATORS``): ``human_proxy`` is ``HumanProxyPersuadee`` with
the default assumptions (the evaluation-only held-out persuadee);
``reference`` is ``ReferencePersuadee()`` at its defaults (the training-side
reference model playing the person's card, unsharpened, no cooperation bias,
keeping its word), i.e. the ``p4g-frozen`` persuadee's reference before its
modal card, over-cooperation and sharpening.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from scope_envs.agents.p4g import HumanProxyPersuadee, ReferencePersuadee
from scope_envs.core.game import Persona
from scope_envs.core.simulator import View
from scope_envs.games.p4g import dialogue_acts, human_proxy, personas
from scope_envs.games.p4g.fit import (
    RESPONSE_ACTS,
    annotated_dialogues,
    fit,
    persuadee_ids,
)
from scope_envs.games.p4g.game import PERSUADEE, PERSUADER, P4GGame

K = 3
SEED = 20_13  # fixed before any result was seen
REPLICATIONS = 20
MIN_SIDE = 10
SIMULATORS = {"human_proxy": HumanProxyPersuadee, "reference": ReferencePersuadee}
NOISE_FLOOR = "noise_floor"


def folds(dialogue_ids, k: int = K, seed: int = SEED, person: dict[str, str] | None = None) -> list[list[str]]:
    """``k`` disjoint folds covering ``dialogue_ids``, all dialogues of one person (``person[d]``; default:
    each dialogue its own person) in the same fold. People are taken in a seeded permutation of their sorted
    ids, each joining the fold with the fewest dialogues so far."""
    person = person or {}
    groups: dict[str, list[str]] = defaultdict(list)
    for d in sorted(dialogue_ids):
        groups[person.get(d, d)].append(d)
    people = sorted(groups)
    parts: list[list[str]] = [[] for _ in range(k)]
    for i in np.random.default_rng(seed).permutation(len(people)):
        min(parts, key=len).extend(groups[people[i]])
    return [sorted(part) for part in parts]


def persona_of(dialogue_id: str, record: dict) -> Persona:
    """The person's card: the survey fields the persona model uses."""
    return Persona(id=dialogue_id, split="real", traits=dict(record["traits"]), attributes=dict(record["attributes"]))


def replay(record: dict, persona: Persona, user, rng: np.random.Generator) -> tuple[float, list[str]]:
    """One replay of a real dialogue's persuader acts against ``user``: (actual donation, reply acts)."""
    acts = record["persuader"]
    game = P4GGame(max_turns=len(acts))
    game.user_player = user  # the game asks it for follow-through
    game.reset(persona, rng)
    replies = []
    for act in acts:
        if game.done:
            break
        game.apply(PERSUADER, dialogue_acts.PERSUADER_INDEX[act])
        view = View(role=PERSUADEE, persona=persona, history=tuple(game.history), legal=game.legal(PERSUADEE),
                    public=game.info())
        reply = user.act(view, rng)
        game.apply(PERSUADEE, reply)
        replies.append(reply)
    return game.actual, [_response_name(r) for r in replies]


def _response_name(act: int) -> str:
    return "provide_amount" if act >= dialogue_acts.FIRST_AMOUNT else dialogue_acts.PERSUADEE_ACTS[act]


def simulate(records: dict[str, dict], user, replications: int, seed: tuple[int, ...]) -> dict:
    """Replay every dialogue ``replications`` times, replay ``r`` of dialogue ``i`` with the generator
    ``(*seed, i, r)``: per-dialogue give probability and mean donation (in ``records``' order) and the pooled
    reply counts."""
    give, donation, replies = [], [], Counter()
    for i, (d, rec) in enumerate(records.items()):
        persona = persona_of(d, rec)
        gifts = []
        for r in range(replications):
            actual, said = replay(rec, persona, user, np.random.default_rng([*seed, i, r]))
            gifts.append(actual)
            replies.update(said)
        give.append(np.mean([g > 0 for g in gifts]))
        donation.append(np.mean(gifts))
    return {"give": np.array(give), "donation": np.array(donation), "replies": replies}


def real(records: dict[str, dict]) -> dict:
    """The same summary of the real people: give (0/1) and donation per dialogue, their reply counts."""
    return {"give": np.array([rec["donation"] > 0 for rec in records.values()], float),
            "donation": np.array([rec["donation"] for rec in records.values()]),
            "replies": Counter(a for rec in records.values() for a in rec["persuadee"])}


def used(records: dict[str, dict], act: str) -> np.ndarray:
    return np.array([act in rec["persuader"] for rec in records.values()])


def testable_acts(records: dict[str, dict], min_side: int = MIN_SIDE) -> list[str]:
    """Persuasion acts used in at least ``min_side`` dialogues and absent from at least ``min_side``."""
    out = []
    for act in human_proxy.PERSUASION:
        u = used(records, act)
        if u.sum() >= min_side and (~u).sum() >= min_side:
            out.append(act)
    return out


def contrasts(records: dict[str, dict], give: np.ndarray, acts) -> dict[str, float]:
    """``P(give | act used) - P(give | not used)`` over dialogues, for each act both sides of which are non-empty."""
    out = {}
    for act in acts:
        u = used(records, act)
        if u.any() and (~u).any():
            out[act] = float(give[u].mean() - give[~u].mean())
    return out


def frequencies(counts: Counter) -> np.ndarray:
    total = sum(counts[a] for a in RESPONSE_ACTS)
    return np.array([counts[a] for a in RESPONSE_ACTS], float) / max(total, 1)


def pearson(x, y) -> float | None:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def errors(test: dict, test_records: dict, other: dict, other_records: dict, acts) -> dict:
    """How far ``other`` (a simulation of the test dialogues, or the real fit part) is from the real test part."""
    want = contrasts(test_records, test["give"], acts)
    got = contrasts(other_records, other["give"], acts)
    shared = [a for a in acts if a in want and a in got]
    p, q = frequencies(test["replies"]), frequencies(other["replies"])
    return {
        "contrasts": {a: got[a] for a in shared},
        "contrast_abs_error": {a: abs(got[a] - want[a]) for a in shared},
        "contrast_mae": float(np.mean([abs(got[a] - want[a]) for a in shared])) if shared else None,
        "contrast_pearson": pearson([want[a] for a in shared], [got[a] for a in shared]),
        "reply_frequencies": dict(zip(RESPONSE_ACTS, q)),
        "reply_abs_diff": dict(zip(RESPONSE_ACTS, np.abs(p - q))),
        "reply_tv": float(0.5 * np.abs(p - q).sum()),
        "give_rate": float(other["give"].mean()),
        "mean_donation": float(other["donation"].mean()),
        "give_rate_abs_diff": float(abs(other["give"].mean() - test["give"].mean())),
        "mean_donation_abs_diff": float(abs(other["donation"].mean() - test["donation"].mean())),
    }


def noise_floor(fit_records: dict, test_records: dict, acts) -> dict:
    """The errors of the real fit part as a predictor of the real test part: the sampling noise between two
    real samples."""
    return errors(real(test_records), test_records, real(fit_records), fit_records, acts)


def holdout_of(test_ids, person: dict[str, str]) -> frozenset[str]:
    """Every dialogue whose persuadee is one of the test dialogues' persuadees (their other dialogues too)."""
    people = {person.get(d, d) for d in test_ids}
    return frozenset(test_ids) | {d for d, u in person.items() if u in people}


def run_fold(data_dir, dialogues: dict, test_ids, fold: int, simulators, replications: int, seed: int,
             person: dict[str, str] | None = None, dropped: frozenset[str] = frozenset()) -> dict:
    """One fold: refit without the test people's dialogues (and without ``dropped``: the other part of the people
    split), replay the test dialogues with each simulator, compare."""
    test_set = frozenset(test_ids)
    test_records = {d: dialogues[d] for d in sorted(test_set)}
    fit_records = {d: rec for d, rec in dialogues.items() if d not in test_set}
    acts = testable_acts(test_records)
    truth = real(test_records)
    shipped = personas.params("heldout")  # the proxies' fit; the refit stands in for it in every part
    holdout = holdout_of(test_set, person or {}) | dropped
    refit = fit(data_dir, holdout=holdout)
    report = {
        "fold": fold, "n_test": len(test_records), "n_fit": len(fit_records), "n_held_out": len(holdout),
        "refit_n_dialogues": refit["strategy_effects"]["n_dialogues"], "refit_n_persuadees": refit["persona_model"]["n"],
        "acts": acts,
        "real_test": {"give_rate": float(truth["give"].mean()), "mean_donation": float(truth["donation"].mean()),
                      "contrasts": contrasts(test_records, truth["give"], acts),
                      "reply_frequencies": dict(zip(RESPONSE_ACTS, frequencies(truth["replies"])))},
        NOISE_FLOOR: noise_floor(fit_records, test_records, acts),
    }
    with personas.params_kept():
        personas.set_params({**shipped, **refit})  # keeps the shipped calibration (and any key fit does not write)
        for name in simulators:
            sim = simulate(test_records, SIMULATORS[name](), replications, seed=(seed, fold))
            report[name] = errors(truth, test_records, sim, test_records, acts)
    return report


SUMMARY_KEYS = ("contrast_mae", "contrast_pearson", "reply_tv", "give_rate_abs_diff", "mean_donation_abs_diff")


def out_of_sample(data_dir: str | os.PathLike, replications: int = REPLICATIONS, k: int = K, seed: int = SEED,
                  simulators=tuple(SIMULATORS)) -> dict:
    """The K-fold out-of-sample report (see the module docstring); FileNotFoundError when ``data_dir`` lacks
    the data, ValueError for a bad argument."""
    if replications < 1:
        raise ValueError(f"replications must be >= 1, got {replications}")
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    unknown = [s for s in simulators if s not in SIMULATORS]
    if unknown:
        raise ValueError(f"simulators must be among {sorted(SIMULATORS)}, got {unknown}")
    from scope_envs.games.p4g.people import HELDOUT, outside
    from scope_envs.validate.p4g import data_errors

    data = Path(data_dir)
    with data_errors(data):
        # the held-out part of the people split, which the proxies are fitted on and stand for
        training_part = outside(data, HELDOUT)
        dialogues = {d: r for d, r in annotated_dialogues(data).items() if d not in training_part}
        person = persuadee_ids(data)
        parts = folds(dialogues, k, seed, person)
        per_fold = [run_fold(data, dialogues, ids, f, simulators, replications, seed, person, training_part)
                    for f, ids in enumerate(parts)]
    summary = {}
    for name in (NOISE_FLOOR, *simulators):
        summary[name] = {}
        for key in SUMMARY_KEYS:
            values = [f[name][key] for f in per_fold if f[name][key] is not None]
            summary[name][key] = float(np.mean(values)) if values else None
    return _rounded({
        "design": {"k": k, "seed": seed, "replications": replications, "min_side": MIN_SIDE,
                   "n_dialogues": len(dialogues), "n_people": len({person[d] for d in dialogues}),
                   "fold_sizes": [len(p) for p in parts],
                   "simulators": {"human_proxy": "HumanProxyPersuadee(), default assumptions",
                                  "reference": "ReferencePersuadee() at its defaults: the person's card, gamma 1, "
                                               "no cooperation bias (p4g-frozen's unsharpened reference)",
                                  NOISE_FLOOR: "the real fit part against the real test part"},
                   "calibration": "the shipped offsets, set on the held-out part's give rate and mean donation",
                   "people": "the held-out part of the people split (the training part's never read)"},
        "summary": summary,
        "folds": per_fold,
    })


def _rounded(x):
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return round(float(x), 4)
    if isinstance(x, np.integer):
        return int(x)
    return x


def markdown(report: dict) -> str:
    """The summary as a Markdown table (mean over folds; lower is better except the correlation)."""
    names = [n for n in (NOISE_FLOOR, *SIMULATORS) if n in report["summary"]]
    labels = {NOISE_FLOOR: "real fit part (noise floor)", "human_proxy": "held-out human proxy",
              "reference": "reference persuadee"}
    d = report["design"]
    lines = [(f"{d['k']} folds of {d['n_dialogues']} annotated dialogues (seed {d['seed']}), "
              f"{d['replications']} replays per test dialogue; mean over folds."), "",
             ("| against the real test part | give-rate contrast MAE | contrast correlation | reply TV "
              "| give rate abs diff | mean donation abs diff |"),
             "| --- | --- | --- | --- | --- | --- |"]
    for n in names:
        s = report["summary"][n]
        cells = ["n/a" if s[k] is None else f"{s[k]:.3f}" for k in SUMMARY_KEYS]
        lines.append(f"| {labels[n]} | " + " | ".join(cells) + " |")
    lines += ["", ("Give-rate contrast P(give | used) - P(give | not used) per act, over the folds in which the "
                   "act is testable: the real test part's mean, and each predictor's mean (its mean absolute error "
                   "against the test part, fold by fold)."), "",
              "| act | folds | real test | " + " | ".join(labels[n] for n in names) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for act in human_proxy.PERSUASION:
        folds_with = [f for f in report["folds"] if act in f["real_test"]["contrasts"]]
        if not folds_with:
            continue
        row = [act, str(len(folds_with)), f"{np.mean([f['real_test']['contrasts'][act] for f in folds_with]):+.3f}"]
        for n in names:
            got = [(f[n]["contrasts"][act], f[n]["contrast_abs_error"][act]) for f in folds_with
                   if act in f[n]["contrasts"]]
            row.append(f"{np.mean([g for g, _ in got]):+.3f} ({np.mean([e for _, e in got]):.3f})" if got else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
