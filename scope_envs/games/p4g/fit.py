"""Fit the Persuasion-for-Good parameters that the p4g game ships (``params_train.json``, ``params_heldout.json``).

Reads three files of the real data set (Wang et al., ACL 2019) from ``--data``:

* ``full_info.csv`` (all 1,017 dialogues; persuadee rows ``B4 == 1``): the
  persona model (means, stds, ranges and the Cholesky factor of the
  correlation of the 23 survey traits plus age and income; frequencies of the
  categorical demographics), the propensity to give (an L2 logistic
  regression on the standardised numeric fields), the distribution of
  non-zero donations, and the real headline numbers.
* ``300_dialog.csv`` (the 300 annotated dialogues): per-dialogue counts of
  persuader acts, persuader-act -> persuadee-act response tables, the
  per-turn strategy mix of real persuaders, and the valence of persuadee acts.
* ``300_info.csv``: outcomes of those dialogues (``B6`` actual donation) and
  the donation stated during the dialogue (``B5``), for the intention gap.

The persona x act interactions (``strategy_interactions``): how the effect of
each persuader act on giving moves with the persuadee's *decision lean*
(``personas.decision_lean``: rational minus intuitive on the card's two 1-5
decision-style scales, clipped to +-1), centred on the regression sample's mean
lean. A second L2 logistic regression of giving on ``count(act) * (lean -
centre)``, the persuadee's propensity logit plus the fitted main effects being
its offset, so the main effects (``strategy_effects``) are the ones fitted
without the interactions. Its support: a 95% percentile interval per act from
``N_BOOTSTRAP`` resamples of persuadees (people, not dialogues: the same person
is the persuadee of several dialogues), each refitting both regressions.

The card's way of talking (``reply_disclosure``): a log-linear tilt
``lam[reply] * (lean - centre)`` of the real reply frequencies after each
persuader act (``responses``), the same centre, fitted by L2-penalised maximum
likelihood on the response pairs of those dialogues, with the same kind of
persuadee bootstrap. It is fitted without the willingness tilt the reference
model also applies (part of it is the lean's correlation with giving).

Only aggregate numbers leave this script: no ids, no rows, no text.

Assumptions (numbers chosen here, not measured):

* donations ``B6 > 2`` are typos (the task paid at most $2) and their rows are
  dropped everywhere; stated amounts ``B5 > 2`` likewise;
* both logistic regressions use an L2 penalty of 1.0 * ||w||^2 / 2 on the
  summed log-likelihood (intercept unpenalised); the strategy model has no
  intercept of its own: the persuadee's propensity logit is its offset;
* probability tables are add-0.5 smoothed (the donation-amount tables and the
  gap's proportions are not);
* a giver's donation is snapped to the nearest non-zero amount bin (the
  $0.01-0.02 gifts would otherwise snap to $0);
* turns >= 9 are pooled in the per-turn strategy mix; sample stds use ddof=1;
* the interactions use one card axis, the decision lean, and are linear in
  it: the card's stated decision style is the trait a prompted model playing
  the card reads as "how to persuade me"; the clip at one scale point says a
  lean of a point or more is a clear style, and it is not symmetric around the
  mean card (most cards lean rational), which is what lets the modal card's
  best response differ from the population's. The bootstrap seed is
  ``BOOTSTRAP_SEED``.

Run ``python -m scope_envs.validate.p4g [--data DIR] [--part P] [--out PATH]``
(see ``--help``): it fits on everyone, or on one part of the people split
(``people.py``) alone, and writes ``--out`` (default ``p4g_params.json`` in the
current folder), never the packaged file a part of the game loads
(``personas.PART_FILES``) unless given ``--part`` and ``--overwrite-packaged``. Keys of an existing output file that this script
does not write are kept. The output is deterministic (floats rounded to 6
decimals, keys sorted). Unless ``--no-calibrate``, the willingness offsets are
then calibrated by simulation (``calibrate.py``; the long step, with a
progress bar).
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from scope_envs.games.p4g import dialogue_acts
from scope_envs.games.p4g.personas import decision_lean

TRAITS = (
    "extrovert agreeable conscientious neurotic open care fairness loyalty authority purity freedom "
    "conform tradition benevolence universalism self_direction stimulation hedonism achievement power "
    "security rational intuitive"
).split()
NUMERIC = [*TRAITS, "age", "income"]
CATEGORICAL = "sex race edu marital employment religion ideology".split()
MAX_DOLLARS = 2.0
FILES = ["full_info.csv", "300_dialog.csv", "300_info.csv"]
COLUMNS = {  # the columns each file must have
    "full_info.csv": ["B2", "B4", "B6", *(k + ".x" for k in NUMERIC + CATEGORICAL)],
    "300_dialog.csv": ["B2", "B4", "Turn", "er_label_1", "ee_label_1"],
    "300_info.csv": ["B2", "B4", "B5", "B6"],
}
DEFAULT_OUT = "p4g_params.json"
RESPONSE_ACTS = [*dialogue_acts.PERSUADEE_VERBAL, "provide_amount"]
PERSUADER_REAL = list(dialogue_acts.PERSUADER_ACTS[1:])
N_TURN_BINS = 10
N_BOOTSTRAP = 500
BOOTSTRAP_SEED = 2028


def check_data(data: Path) -> Path:
    """``data`` if it is a folder holding the three csv files; FileNotFoundError naming what is missing."""
    expected = ", ".join(FILES)
    if not data.is_dir():
        raise FileNotFoundError(f"no P4G data folder at {data}: expected a folder holding {expected}")
    for name in FILES:
        if not (data / name).is_file():
            raise FileNotFoundError(f"P4G data folder {data} has no {name} (expected {expected})")
    return data


def _read(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS[path.name] if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} lacks the column(s) {', '.join(missing)}: is it the Persuasion-for-Good {path.name}?")
        rows = []
        for row in reader:
            # a row with fewer or more fields than the header: a file cut short (or spliced) that still parses
            if None in row or None in row.values():
                raise ValueError(f"{path}: line {reader.line_num} has {len([v for v in row.values() if v is not None])}"
                                 f" fields, the header {len(reader.fieldnames)}: is the file cut short?")
            rows.append(row)
        return rows


def _num(s: str) -> float:
    return float(s) if s.strip() else math.nan


def _smooth(counts, keys, alpha: float = 0.5) -> list[float]:
    c = np.array([counts.get(k, 0) for k in keys], dtype=float) + alpha
    return list(c / c.sum())


def _logistic(X, y, offset=None, intercept=True, l2=1.0):
    """Penalised maximum likelihood; returns (intercept, coef)."""
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    off = np.zeros(len(y)) if offset is None else np.asarray(offset, float)
    A = np.hstack([np.ones((len(y), 1)), X]) if intercept else X
    pen = np.ones(A.shape[1])
    if intercept:
        pen[0] = 0.0

    def f(w):
        z = off + A @ w
        nll = np.sum(np.logaddexp(0.0, z) - y * z)
        grad = A.T @ (1.0 / (1.0 + np.exp(-z)) - y)
        return nll + 0.5 * l2 * np.sum(pen * w * w), grad + l2 * pen * w

    res = minimize(f, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 10000, "gtol": 1e-10, "ftol": 1e-15})
    w = res.x
    return (float(w[0]), w[1:]) if intercept else (0.0, w)


def _clean(x):
    """JSON-ready plain types, floats rounded so reruns are byte-identical."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_clean(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = round(float(x), 6)
        return 0.0 if v == 0 else v  # no "-0.0"
    return x


def _donations(persuadees) -> list[float]:
    """Donations of all persuadees after the typo filter (survey gaps do not matter here)."""
    return [b for b in (_num(r["B6"]) for r in persuadees) if b <= MAX_DOLLARS]


def _persona_model(people):
    X = np.array([[p[k] for k in NUMERIC] for p in people])
    mean, std = X.mean(0), X.std(0, ddof=1)
    corr = np.corrcoef(X, rowvar=False)
    try:
        chol = np.linalg.cholesky(corr)
    except np.linalg.LinAlgError:
        chol = np.linalg.cholesky(corr + 1e-6 * np.eye(len(NUMERIC)))
    categorical = {}
    for field in CATEGORICAL:
        c = Counter(p[field] or "unknown" for p in people)
        values = sorted(c, key=lambda v: (-c[v], v))
        categorical[field] = {"values": values, "probs": [c[v] / len(people) for v in values]}
    model = {"numeric": NUMERIC, "mean": mean, "std": std, "min": X.min(0), "max": X.max(0),
             "cholesky": np.tril(chol), "categorical": categorical, "n": len(people)}
    return model, X


def response_act(label: str) -> str:
    """A persuadee annotation label as one of ``RESPONSE_ACTS`` (stated amounts pooled as ``provide_amount``)."""
    return "provide_amount" if label == "provide-donation-amount" else dialogue_acts.persuadee_act(label)


def annotated_dialogues(data_dir) -> dict[str, dict]:
    """The annotated dialogues that have an outcome (``B6 <= 2``) and a complete survey row: the dialogues of
    the strategy regression, keyed by dialogue id. Each holds ``persuader`` (the labelled persuader acts in
    speaking order), ``persuadee`` (the labelled persuadee acts, ``RESPONSE_ACTS`` names), ``donation``
    (``B6``), ``traits`` (``NUMERIC``) and ``attributes`` (``CATEGORICAL``, blanks as ``"unknown"``).
    For the out-of-sample check; rows stay in memory, nothing is written."""
    data = check_data(Path(data_dir))
    survey = {}
    for r in _read(data / "full_info.csv"):
        if r["B4"] != "1" or _num(r["B6"]) > MAX_DOLLARS:
            continue
        traits = {k: _num(r[k + ".x"]) for k in NUMERIC}
        if not any(math.isnan(v) for v in traits.values()):
            survey[r["B2"]] = {"traits": traits,
                               "attributes": {k: r[k + ".x"].strip() or "unknown" for k in CATEGORICAL}}
    outcome = {r["B2"]: _num(r["B6"]) for r in _read(data / "300_info.csv") if r["B4"] == "1"}
    out: dict[str, dict] = {}
    for r in _read(data / "300_dialog.csv"):  # the file's order is the speaking order
        d = r["B2"]
        if d not in survey or not outcome.get(d, math.inf) <= MAX_DOLLARS:
            continue
        rec = out.setdefault(d, {"persuader": [], "persuadee": [], "donation": outcome[d], **survey[d]})
        if r["B4"] == "0" and r["er_label_1"].strip():
            rec["persuader"].append(dialogue_acts.persuader_act(r["er_label_1"].strip()))
        elif r["B4"] == "1" and r["ee_label_1"].strip():
            rec["persuadee"].append(response_act(r["ee_label_1"].strip()))
    return dict(sorted(out.items()))


def persuadee_ids(data_dir) -> dict[str, str]:
    """Dialogue id -> the persuadee's user id (``B3``), over every dialogue of ``full_info.csv``. The same
    person is the persuadee of several dialogues (with the same survey row each time), so a held-out check
    must hold out people, not dialogues."""
    rows = _read(check_data(Path(data_dir)) / "full_info.csv")
    if rows and "B3" not in rows[0]:
        raise ValueError(f"{Path(data_dir) / 'full_info.csv'} lacks the column B3 (user id)")
    return {r["B2"]: r["B3"] for r in rows if r["B4"] == "1"}


def fit(data_dir, holdout=frozenset()) -> dict:
    """All fitted parameters from the csv files in ``data_dir`` (FileNotFoundError if they are not there).

    ``holdout``: dialogue ids (``B2``) whose rows are dropped from every table before fitting, persuadee
    survey rows included, so nothing fitted has seen those people (the out-of-sample check,
    ``scope_envs.validate.p4g_holdout``, refits without its test dialogues)."""
    data = check_data(Path(data_dir))
    full, dialog, info = ([r for r in _read(data / name) if r["B2"] not in holdout]
                          for name in ("full_info.csv", "300_dialog.csv", "300_info.csv"))

    # --- survey rows of persuadees ---------------------------------------------------------
    persuadees = [r for r in full if r["B4"] == "1"]
    outliers = [r for r in persuadees if _num(r["B6"]) > MAX_DOLLARS]
    people, survey = [], {}
    for r in persuadees:
        if _num(r["B6"]) > MAX_DOLLARS:
            continue
        p = {k: _num(r[k + ".x"]) for k in NUMERIC}
        p.update({k: r[k + ".x"].strip() for k in CATEGORICAL})
        p["B6"] = _num(r["B6"])
        p["person"] = r.get("B3") or r["B2"]  # the bootstrap's unit (a dialogue id where B3 is absent)
        if not any(math.isnan(p[k]) for k in NUMERIC):
            people.append(p)
            survey[r["B2"]] = p
    persona, X = _persona_model(people)
    mu, sd = persona["mean"], persona["std"]

    # --- propensity to give, from the survey alone ------------------------------------------
    give = np.array([p["B6"] > 0 for p in people], float)
    b0, w = _logistic((X - mu) / sd, give)
    propensity = {"intercept": b0, "coef": dict(zip(NUMERIC, w)), "base_rate": give.mean()}

    def logit(p):
        return b0 + float(((np.array([p[k] for k in NUMERIC]) - mu) / sd) @ w)

    # --- donation amounts of givers ----------------------------------------------------------
    gifts = [b for b in _donations(persuadees) if b > 0]
    amount_counts = Counter(max(dialogue_acts.amount_bin(g), 1) for g in gifts)
    amounts = {"bins": list(dialogue_acts.AMOUNT_BINS),
               "given_give": [amount_counts[i] / len(gifts) for i in range(len(dialogue_acts.AMOUNT_BINS))]}

    # --- annotated dialogues -----------------------------------------------------------------
    outcome = {r["B2"]: _num(r["B6"]) for r in info if r["B4"] == "1"}
    units = defaultdict(list)  # dialogue -> rows in file order (the file's order is the speaking order)
    for r in dialog:
        units[r["B2"]].append(r)

    er_counts, y_s, off_s, lean_s, person_s, lean_pairs = [], [], [], [], [], []
    pairs, start = Counter(), Counter()
    by_turn = [Counter() for _ in range(N_TURN_BINS)]
    valence = {True: Counter(), False: Counter()}
    for d in sorted(units):
        rows = units[d]
        ok_outcome = d in outcome and outcome[d] <= MAX_DOLLARS
        turns = defaultdict(lambda: {"er": [], "ee": []})
        for r in rows:
            t = int(r["Turn"])
            if r["B4"] == "0" and r["er_label_1"].strip():
                a = dialogue_acts.persuader_act(r["er_label_1"].strip())
                turns[t]["er"].append(a)
                by_turn[min(t, N_TURN_BINS - 1)][a] += 1
            elif r["B4"] == "1" and r["ee_label_1"].strip():
                a = response_act(r["ee_label_1"].strip())
                turns[t]["ee"].append(a)
                if ok_outcome:
                    valence[outcome[d] > 0][a] += 1
        for t, tt in turns.items():
            if tt["er"] and tt["ee"]:
                pairs[(tt["er"][-1], tt["ee"][0])] += 1
                if ok_outcome and d in survey:  # the dialogues of the strategy regressions
                    lean_pairs.append((tt["er"][-1], tt["ee"][0], decision_lean(survey[d]), survey[d]["person"]))
        if turns.get(0, {}).get("ee"):
            start[turns[0]["ee"][0]] += 1
        if ok_outcome and d in survey:
            c = Counter(a for tt in turns.values() for a in tt["er"])
            er_counts.append([c[a] for a in PERSUADER_REAL])
            y_s.append(outcome[d] > 0)
            off_s.append(logit(survey[d]))
            lean_s.append(decision_lean(survey[d]))
            person_s.append(survey[d]["person"])

    _, beta = _logistic(er_counts, y_s, offset=off_s, intercept=False)
    strategy_effects = {"coef": dict(zip(PERSUADER_REAL, beta)), "n_dialogues": len(y_s)}
    strategy_interactions = _interactions(np.array(er_counts, float), np.array(y_s, float), np.array(off_s),
                                          np.array(lean_s), person_s, beta)

    pooled = Counter()
    for (_, b), n in pairs.items():
        pooled[b] += n
    given = {}
    for a in PERSUADER_REAL:
        row = Counter({b: n for (er, b), n in pairs.items() if er == a})
        given[a] = _smooth(row if row else pooled, RESPONSE_ACTS)
    responses = {"acts": RESPONSE_ACTS, "given": given, "start": _smooth(start, RESPONSE_ACTS),
                 "counts_total": sum(pairs.values())}
    reply_disclosure = _disclosure(lean_pairs, given, strategy_interactions["centre"])
    p_gave, p_not = _smooth(valence[True], RESPONSE_ACTS), _smooth(valence[False], RESPONSE_ACTS)
    valence_out = {a: math.log(g / n) for a, g, n in zip(RESPONSE_ACTS, p_gave, p_not)}
    empirical = {"acts": PERSUADER_REAL, "by_turn": [_smooth(c, PERSUADER_REAL) for c in by_turn]}

    # --- intention versus action ---------------------------------------------------------------
    ann = [(_num(r["B5"]), _num(r["B6"])) for r in info if r["B4"] == "1"]
    ann = [(b5, b6) for b5, b6 in ann if b6 <= MAX_DOLLARS]
    gap_rows = [(b5, b6) for b5, b6 in ann if math.isnan(b5) or b5 <= MAX_DOLLARS]
    stated = [(b5, b6) for b5, b6 in gap_rows if not math.isnan(b5)]
    unstated = [b6 for b5, b6 in gap_rows if math.isnan(b5)]
    pos = [(b5, b6) for b5, b6 in stated if b5 > 0]
    exact = [abs(b6 - b5) < 0.005 for b5, b6 in pos]
    other = [b6 / b5 for (b5, b6), ex in zip(pos, exact) if b6 > 0 and not ex]
    zero = [b6 for b5, b6 in stated if b5 == 0]
    intended = Counter(dialogue_acts.amount_bin(b5) for b5, _ in stated)
    gap = {
        "p_stated": len(stated) / len(gap_rows),
        "intended_probs": [intended[i] / len(stated) for i in range(len(dialogue_acts.AMOUNT_BINS))],
        "p_zero_if_intended": np.mean([b6 == 0 for _, b6 in pos]),
        "p_exact_if_intended": np.mean(exact),
        "ratio_if_other": np.mean(other),
        "ratio_if_other_median": np.median(other),  # the mean is dominated by a $0.01 -> $1 case
        "p_give_if_intended_zero": np.mean([b6 > 0 for b6 in zero]),
        "give_rate_if_unstated": np.mean([b6 > 0 for b6 in unstated]),
        "mean_actual_if_unstated": np.mean(unstated),
    }

    kept = _donations(persuadees)
    # intended and actual over the same persuadees (those who stated an amount), as the
    # data's README compares them; mean_actual_all is every annotated persuadee
    real = {"mean_donation": np.mean(kept), "give_rate": np.mean([b > 0 for b in kept]), "n": len(kept),
            "mean_intended": np.mean([b5 for b5, _ in stated]),
            "mean_actual": np.mean([b6 for _, b6 in stated]),
            "mean_actual_all": np.mean([b6 for _, b6 in ann]),
            "give_rate_annotated": np.mean([b6 > 0 for _, b6 in ann]), "n_annotated": len(ann)}

    return _clean({
        "source": {"dataset": "Persuasion for Good (Wang et al., ACL 2019)", "files": FILES,
                   "n_persuadees": len(persuadees), "n_outliers_dropped": len(outliers)},
        "persona_model": persona,
        "propensity": propensity,
        "amounts": amounts,
        "strategy_effects": strategy_effects,
        "strategy_interactions": strategy_interactions,
        "reply_disclosure": reply_disclosure,
        "responses": responses,
        "valence": valence_out,
        "gap": gap,
        "empirical_persuader": empirical,
        "real": real,
    })


def _newton_logistic(X, y, offset, l2=1.0, tol=1e-12, max_iter=100):
    """``_logistic`` without an intercept by Newton's method: the same penalised optimum (the objective is strictly
    convex), in a few linear solves instead of hundreds of gradient steps, which the bootstrap needs (1,000 fits);
    a step that does not lower the objective is halved."""
    def objective(w):
        z = offset + X @ w
        return np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * w @ w

    w = np.zeros(X.shape[1])
    f = objective(w)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(offset + X @ w)))
        grad = X.T @ (p - y) + l2 * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while objective(w - t * step) > f and t > 1e-8:
            t /= 2
        w = w - t * step
        f = objective(w)
        if np.max(np.abs(t * step)) < tol:
            break
    return w


def _interaction_coef(counts, gave, offset, deviation, beta):
    """The interaction regression: giving on ``count(act) * deviation`` with offset ``offset + counts @ beta``."""
    return _newton_logistic(counts * deviation[:, None], gave, offset + counts @ beta)


def _interactions(counts, gave, offset, lean, people, beta) -> dict:
    """``strategy_interactions``: the per-act change of the strategy effect per unit of decision lean above the
    sample's mean lean, and its support from a bootstrap over persuadees (both regressions refitted)."""
    centre = float(lean.mean())
    gamma = _interaction_coef(counts, gave, offset, lean - centre, beta)
    units = sorted(set(people))
    rows_of = {u: [i for i, q in enumerate(people) if q == u] for u in units}
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = []
    for _ in range(N_BOOTSTRAP):
        rows = np.concatenate([rows_of[units[k]] for k in rng.integers(len(units), size=len(units))])
        c, y, off, dev = counts[rows], gave[rows], offset[rows], lean[rows] - lean[rows].mean()
        b = _newton_logistic(c, y, off)
        draws.append(_interaction_coef(c, y, off, dev, b))
    lo, hi = np.percentile(np.array(draws), [2.5, 97.5], axis=0)
    supported = [a for a, l, h in zip(PERSUADER_REAL, lo, hi) if l > 0 or h < 0]
    return {"axis": "decision_lean", "centre": centre, "coef": dict(zip(PERSUADER_REAL, gamma)),
            "ci95": {a: [l, h] for a, l, h in zip(PERSUADER_REAL, lo, hi)}, "supported": supported,
            "n_bootstrap": N_BOOTSTRAP, "n_dialogues": len(gave), "n_persuadees": len(units)}


def _softmax_tilt(log_base, deviation, counts, l2=1.0, tol=1e-12, max_iter=100):
    """Penalised maximum likelihood of ``lam`` in P(reply) = softmax(log_base + lam * deviation) by Newton's
    method. One row per (persuader act, lean) cell: ``log_base`` its log reply frequencies, ``deviation`` its lean
    deviation, ``counts`` how often each reply was observed in it. Strictly convex with the penalty."""
    n = counts.sum(1)
    observed = deviation @ counts
    lam = np.zeros(log_base.shape[1])
    for _ in range(max_iter):
        z = log_base + deviation[:, None] * lam[None]
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        grad = (deviation * n) @ p - observed + l2 * lam
        pw = p * (n * deviation * deviation)[:, None]
        step = np.linalg.solve(np.diag(pw.sum(0)) - pw.T @ p + l2 * np.eye(len(lam)), grad)
        lam = lam - step
        if np.max(np.abs(step)) < tol:
            break
    return lam


def _disclosure(pairs, given, centre) -> dict:
    """``reply_disclosure``: how a persuadee's reply to a persuader act moves with their decision lean, a
    log-linear tilt ``lam[reply] * (lean - centre)`` of the real reply frequencies after that act (``responses``),
    fitted by penalised maximum likelihood (L2 1.0) on the response pairs of the strategy regressions' dialogues,
    with a 95% interval from ``N_BOOTSTRAP`` resamples of persuadees."""
    index = {a: i for i, a in enumerate(RESPONSE_ACTS)}
    cells = sorted({(er, lean) for er, _, lean, _ in pairs})
    cell = {c: i for i, c in enumerate(cells)}
    units = sorted({who for *_, who in pairs})
    unit = {u: i for i, u in enumerate(units)}
    by_person = np.zeros((len(units), len(cells), len(RESPONSE_ACTS)))  # reply counts per person and cell
    for er, r, lean, who in pairs:
        by_person[unit[who], cell[(er, lean)], index[r]] += 1
    log_base = np.log(np.array([given[er] for er, _ in cells]))
    dev = np.array([lean for _, lean in cells]) - centre
    lam = _softmax_tilt(log_base, dev, by_person.sum(0))
    rng = np.random.default_rng(BOOTSTRAP_SEED + 1)
    draws = []
    for _ in range(N_BOOTSTRAP):  # a resample of persuadees: each drawn person's replies, as often as drawn
        times = np.bincount(rng.integers(len(units), size=len(units)), minlength=len(units))
        draws.append(_softmax_tilt(log_base, dev, np.tensordot(times, by_person, 1)))
    lo, hi = np.percentile(np.array(draws), [2.5, 97.5], axis=0)
    return {"axis": "decision_lean", "centre": centre, "coef": dict(zip(RESPONSE_ACTS, lam)),
            "ci95": {a: [l, h] for a, l, h in zip(RESPONSE_ACTS, lo, hi)},
            "supported": [a for a, l, h in zip(RESPONSE_ACTS, lo, hi) if l > 0 or h < 0],
            "n_bootstrap": N_BOOTSTRAP, "n_pairs": len(pairs), "n_persuadees": len(units)}


def summary(p: dict) -> str:
    r, g, s = p["real"], p["gap"], p["strategy_effects"]["coef"]
    top = sorted(s.items(), key=lambda kv: -abs(kv[1]))[:5]
    return "\n".join([
        f"persuadees {p['source']['n_persuadees']} ({p['source']['n_outliers_dropped']} typo donations dropped); "
        f"persona model on {p['persona_model']['n']}",
        f"real: mean donation ${r['mean_donation']:.3f}, give rate {r['give_rate']:.3f} (n={r['n']}); "
        f"annotated: intended ${r['mean_intended']:.3f} vs actual ${r['mean_actual']:.3f} "
        f"(all annotated ${r['mean_actual_all']:.3f}), "
        f"give rate {r['give_rate_annotated']:.3f} (n={r['n_annotated']})",
        "largest strategy effects (log-odds per use): " + ", ".join(f"{a} {v:+.3f}" for a, v in top),
        f"gap: stated {g['p_stated']:.2f}, P(0|intended>0) {g['p_zero_if_intended']:.2f}, "
        f"P(exact|intended>0) {g['p_exact_if_intended']:.2f}, ratio otherwise {g['ratio_if_other']:.2f} "
        f"(median {g['ratio_if_other_median']:.2f}), "
        f"P(give|intended 0) {g['p_give_if_intended_zero']:.2f}, "
        f"give rate unstated {g['give_rate_if_unstated']:.2f}",
        f"response pairs {p['responses']['counts_total']}",
    ])
