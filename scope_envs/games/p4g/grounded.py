"""A grounded persuadee: a frozen user simulator fitted to the training part of the real P4G dialogues.

The collapsed simulator (``CollapsedPersuadee``) is what a prompted language model does with the reference
model: one modal card, over-cooperative, its replies sharpened. This module fits the other kind of frozen
simulator, the one a team would build from logs: the real persuadees' own reply frequencies, stated amounts
and follow-through, read from the **training part** of the people split (``people.py``) and from nothing
else. ``scope_envs.agents.p4g.GroundedPersuadee`` plays it, in the user seat of ``p4g-grounded`` (train
personas), as the benchmark's ``grounded`` row and as ``scope-envs diagnose --simulator grounded``.

What it reads. A dialogue is read when its persuadee is in the training part (``people.split_of`` on the
persuadee's user id) **and** its persuader is not a held-out persuadee: 177 people took both roles, and a
held-out person's messages as a persuader are still that person's. ``full_info.csv`` is read in two
passes: its id columns (``B2``, ``B3``, ``B4``) for every row, which is what the rule needs, then every
other column only of the dialogues kept. Rows of the other dialogues never leave the csv reader. The fit
then checks every dialogue it holds against the rule again and refuses to go on (``HeldOutLeak``) if any is
not in the training part. Persuaders' survey rows are never used.

On the real data (``../shared/data/p4g``), 524 dialogues have a training-part persuadee. 102 of them are
dropped for their persuader (30 of the 167 annotated ones). That leaves **137 annotated dialogues of 115
persuadees**, with 1,384 reply pairs, 78 usable stated amounts and 53 persuadees without one. For the card's
giving index it leaves 276 survey-only dialogues of 234 persuadees. The JSON's ``source`` block holds these
counts, and ``tests/test_p4g_grounded.py`` checks them.

The model. No held-out number is read at any point, so none could steer a choice. The choices below were
made before the first fit, with one exception: the offset for forced statements was added after that first
fit gave too often: against the empirical persuader, 50% of its episodes ended in a gift, while 40% of the
training part's real persuadees gave. That comparison used the training part alone.


* **Replies.** The persuadee's reply to the persuader's last act, in ``fit.RESPONSE_ACTS`` (the 18 verbal
  acts and ``provide_amount``), given that act and the turn's phase. Each turn of a real dialogue gives one
  pair: the persuader's last labelled act and the persuadee's first labelled reply. This is the pairing of
  ``fit.py``'s response table and of ``diagnose``'s real states. The phases are bins of the 0-based turn
  index (``TURN_EDGES``): the opening (turn 0), early (1-2), middle (3-6) and late (7 and later). The
  table is smoothed by Dirichlet back-off, with ``PRIOR`` pseudo-replies at each level: the reply
  marginal (add-``ALPHA``), then P(reply | act) drawn towards it, then P(reply | act, phase) drawn towards
  that. A context with no data is therefore its parent's distribution, and one with many pairs is its own.
* **The card** can tilt the replies along one axis only: the decision lean (``personas.decision_lean``,
  the reference model's axis). The tilt is a log-linear ``lam[reply] * (lean - centre)`` fitted by
  penalised maximum likelihood (L2 ``L2``) over the reply pairs. ``centre`` is the mean lean of the
  dialogues that give pairs.
* **Stated amounts.** Saying ``provide_amount`` states a bin: $0 with probability 1 - q, else a positive
  bin from the stated amounts above $0 (``B5``, add-``ALPHA`` over the eight positive bins). ``q`` is the
  share who stated more than $0, unless the card is supported there (below).
* **A statement the game forces.** The game's last reply must state an amount. A persuadee who has stated
  none by then is not like the real ones who stated: the annotated persuadees with no usable ``B5`` gave
  less. Such a statement's log-odds of being above $0 is moved by ``forced_offset``. The offset is set so
  that, after the follow-through below, the share who give is the share of those persuadees who gave.
* **The card and giving.** The candidate is a card-only *giving index*. It is an L2 logistic regression of
  giving (``B6 > 0``) on the 25 standardised survey fields, fitted on the training part's **survey-only**
  persuadees. Its slope is then fitted on the annotated persuadees, a different set of people: a logistic
  regression of "stated more than $0" on the index. If the slope is supported, q becomes
  ``sigmoid(a + b * index(card))``.
* **Follow-through** (stated to actual gift) has the form of the human proxies' gap (``human_proxy``), with
  the training part's rates. Someone who stated more than $0 gives nothing, gives exactly what they
  stated, or otherwise gives the median fraction of it. Someone who stated $0 gives anyway at the real
  share, a gift drawn from the positive actual gifts. A gift is at most $2.

The rule for card conditioning, declared with the model before any fit was run: a card term enters the
simulator only where its 95% percentile interval, from ``N_BOOTSTRAP`` resamples of persuadees (the unit of
the split, seed ``BOOTSTRAP_SEED``), excludes zero. For the reply tilt this is decided act by act: an act
whose interval includes zero gets no tilt. For giving it is decided on the slope. Only the training part is
resampled; no held-out person is read at any point. On the real data, the lean tilt is supported for one
reply act (``personal_related_inquiry``, more often from rational-lean cards), and the giving slope is not
(interval -0.86 to 0.56), so the stated amount does not depend on the card. The JSON's ``card`` blocks hold
the fits and intervals, and ``supported`` says what the simulator uses.

Assumptions (chosen here, not measured): the phase bins, the prior strength and the smoothing; one card
axis for the replies and one index for giving; the ``$2`` cap of ``fit.py`` (typo amounts dropped).
The model remembers nothing of what the persuadee already said, except whether it has stated an amount
(the game makes a goodbye legal only after one, and a statement forced at the end is drawn as above).
The personas the env deals are the game's synthetic train cards (``personas.py``), drawn from a persona
model fitted on the training part's survey rows (``params_train.json``): the env's dealing, not the simulator,
reads that model. The simulator reads only the traits of a card, never a number fitted on held-out people.

Refit and rewrite the committed parameters (deterministic: floats rounded to 6 decimals, keys sorted)::

    python -m scope_envs.games.p4g.grounded --data ../shared/data/p4g            # writes grounded_params.json
    python -m scope_envs.games.p4g.grounded --data ../shared/data/p4g --check    # exit 1 if it differs

The package reads the committed ``grounded_params.json`` and needs no data. Only aggregate numbers leave
the fit: no ids, no rows, no text.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from scope_envs.core.game import Persona
from scope_envs.games.p4g import dialogue_acts, human_proxy
from scope_envs.games.p4g.fit import (COLUMNS, FILES, MAX_DOLLARS, NUMERIC, PERSUADER_REAL, RESPONSE_ACTS, _clean,
                                      _logistic, _num, _softmax_tilt, check_data, response_act)
from scope_envs.games.p4g.people import HELDOUT, HELDOUT_SHARE, SALT, TRAIN, split_of
from scope_envs.games.p4g.personas import decision_lean
from scope_envs.games.p4g.realism import SHAPE as PAIRS_SHAPE, TURN_EDGES, RealPairs, pair_tables, phase

PARAMS = Path(__file__).with_name("grounded_params.json")
PHASES = ("opening", "early", "middle", "late")
PRIOR = 5.0  # pseudo-replies drawing a context towards its parent (P(reply | act) towards the marginal, ...)
ALPHA = 0.5  # add-0.5, as fit.py's tables: the reply marginal and the positive stated bins
L2 = 1.0  # the penalty of every regression, as fit.py's (intercepts unpenalised)
N_BOOTSTRAP = 200
BOOTSTRAP_SEED = 4049
FORCED_CLIP = 0.001  # a forced statement's share above $0 is kept inside [0.001, 0.999]: its log-odds stay finite
LEAN = "decision_lean"
AMOUNT_BINS = dialogue_acts.AMOUNT_BINS


class HeldOutLeak(RuntimeError):
    """A row of a held-out person reached the fit: the people split's rule was not applied (a bug, never data)."""


# -- what the fit reads: the training part, and nothing of the held-out people ------------------------------------
@dataclass(frozen=True)
class TrainingPart:
    """The rows of the training part that the fit uses, by dialogue id (``B2``)."""

    person: dict[str, str]  # every dialogue read -> its persuadee's user id (B3)
    heldout_persuaders: frozenset[str]  # the held-out persuadees' ids: the persuaders a dialogue read must not have
    persuader: dict[str, str]  # every dialogue read -> its persuader's user id (B3; absent where the data has none)
    turns: dict[str, dict[int, dict[str, list[str]]]]  # annotated dialogue -> turn -> {"er": acts, "ee": replies}
    amounts: dict[str, tuple[float, float]]  # annotated dialogue -> (stated B5, actual B6), both read as floats
    cards: dict[str, dict[str, float]]  # dialogue -> its persuadee's survey traits (NUMERIC; complete rows only)
    gave: dict[str, bool]  # dialogue -> gave more than $0 (full_info's B6, typo amounts dropped)
    annotated: frozenset[str]  # the annotated dialogues read (300_info.csv)
    dropped_for_persuader: int  # training-part dialogues left out because their persuader is a held-out persuadee


def _rows(path: Path, keep=None, columns=None):
    """The rows of a P4G csv file whose dialogue (``B2``) is in ``keep`` (every row when None), each reduced to
    ``columns`` when given: the one place rows leave a file."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = [*COLUMNS[path.name], *(["B3"] if path.name == "full_info.csv" else [])]
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} lacks the column(s) {', '.join(missing)}: is it the Persuasion-for-Good "
                             f"{path.name}?")
        for row in reader:
            if keep is None or row["B2"] in keep:
                yield {c: row[c] for c in columns} if columns else row


@dataclass(frozen=True)
class Kept:
    """Which dialogues the fit reads, from ``full_info.csv``'s id columns alone."""

    dialogues: frozenset[str]  # persuadee in the training part, persuader not a held-out persuadee
    persuadee: dict[str, str]  # kept dialogue -> persuadee id
    persuader: dict[str, str]  # kept dialogue -> persuader id
    heldout: frozenset[str]  # every held-out persuadee's id
    dropped: int  # training-part dialogues dropped for their persuader


def training_dialogues(data: Path) -> Kept:
    """The dialogues the fit may read: its persuadee is in the training part and its persuader is not a held-out
    persuadee (``full_info.csv``'s id columns ``B2``, ``B3``, ``B4`` are all it reads)."""
    persuadee, persuader = {}, {}
    for r in _rows(data / "full_info.csv", columns=("B2", "B3", "B4")):
        (persuadee if r["B4"] == "1" else persuader)[r["B2"]] = r["B3"]
    heldout = frozenset(p for p in persuadee.values() if split_of(p) == HELDOUT)
    train = {d for d, p in persuadee.items() if split_of(p) == TRAIN}
    kept = frozenset(d for d in train if persuader.get(d) not in heldout)
    return Kept(kept, {d: persuadee[d] for d in kept}, {d: persuader[d] for d in kept if d in persuader}, heldout,
                len(train) - len(kept))


def read_training_part(data_dir) -> TrainingPart:
    """The training part's rows of the P4G csv files in ``data_dir`` (``FileNotFoundError`` when they are not
    there): see the module docstring for the rule."""
    data = check_data(Path(data_dir))
    kept = training_dialogues(data)
    cards, gave = {}, {}
    for r in _rows(data / "full_info.csv", kept.dialogues):
        if r["B4"] != "1" or not _num(r["B6"]) <= MAX_DOLLARS:
            continue
        gave[r["B2"]] = _num(r["B6"]) > 0
        traits = {k: _num(r[k + ".x"]) for k in NUMERIC}
        if not any(math.isnan(v) for v in traits.values()):
            cards[r["B2"]] = traits
    amounts, annotated = {}, set()
    for r in _rows(data / "300_info.csv", kept.dialogues):
        if r["B4"] == "1":
            annotated.add(r["B2"])
            amounts[r["B2"]] = (_num(r["B5"]), _num(r["B6"]))
    turns: dict[str, dict[int, dict[str, list[str]]]] = {}
    for r in _rows(data / "300_dialog.csv", kept.dialogues):  # the file's order is the speaking order
        turn = turns.setdefault(r["B2"], {}).setdefault(int(r["Turn"]), {"er": [], "ee": []})
        if r["B4"] == "0" and r["er_label_1"].strip():
            turn["er"].append(dialogue_acts.persuader_act(r["er_label_1"].strip()))
        elif r["B4"] == "1" and r["ee_label_1"].strip():
            turn["ee"].append(response_act(r["ee_label_1"].strip()))
    part = TrainingPart(person=kept.persuadee, heldout_persuaders=kept.heldout, persuader=kept.persuader,
                        turns={d: turns[d] for d in sorted(turns) if d in annotated}, amounts=amounts, cards=cards,
                        gave=gave, annotated=frozenset(annotated), dropped_for_persuader=kept.dropped)
    check_training_only(part)
    return part


def check_training_only(part: TrainingPart) -> None:
    """``HeldOutLeak`` unless every dialogue ``part`` holds has a training-part persuadee (``people.split_of``,
    computed afresh) and a persuader who is not a held-out persuadee."""
    held = set(part.turns) | set(part.amounts) | set(part.cards) | set(part.gave) | set(part.annotated)
    unknown = sorted(held - set(part.person))
    leaked = sorted(d for d in held & set(part.person) if split_of(part.person[d]) != TRAIN
                    or part.persuader.get(d) in part.heldout_persuaders)
    if unknown or leaked:
        raise HeldOutLeak(f"{len(leaked)} dialogue(s) with a held-out person and {len(unknown)} of unknown persuadees "
                          "reached the grounded fit")


# -- the fit ---------------------------------------------------------------------------------------------------------
def _pairs(part: TrainingPart) -> list[tuple[str, int, str, str]]:
    """``(persuader act, phase, reply, dialogue)`` for every turn with both a labelled act and a labelled reply."""
    return [(t["er"][-1], phase(turn), t["ee"][0], d)
            for d, by_turn in part.turns.items() for turn, t in sorted(by_turn.items()) if t["er"] and t["ee"]]


def _backed_off(counts: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Dirichlet back-off: counts (..., R) drawn towards ``parent`` by ``PRIOR`` pseudo-replies."""
    return (counts + PRIOR * parent) / (counts.sum(-1, keepdims=True) + PRIOR)


def reply_table(pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(table, counts, marginal)``: P(reply | persuader act, phase) smoothed as the module docstring says, shape
    (len(PERSUADER_REAL), len(PHASES), len(RESPONSE_ACTS)), the raw counts of that shape and the smoothed marginal."""
    counts = np.zeros((len(PERSUADER_REAL), len(PHASES), len(RESPONSE_ACTS)))
    for er, ph, ee, _ in pairs:
        counts[PERSUADER_REAL.index(er), ph, RESPONSE_ACTS.index(ee)] += 1
    marginal = counts.sum((0, 1)) + ALPHA
    marginal /= marginal.sum()
    by_act = _backed_off(counts.sum(1), marginal)
    return _backed_off(counts, by_act[:, None, :]), counts, marginal


def _interval(draws) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.percentile(np.asarray(draws), [2.5, 97.5], axis=0))


def _resample(units: list, rng: np.random.Generator) -> np.ndarray:
    """How many times each unit (a persuadee) is drawn in one bootstrap resample."""
    return np.bincount(rng.integers(len(units), size=len(units)), minlength=len(units))


def reply_tilt(pairs, table: np.ndarray, part: TrainingPart) -> dict:
    """The decision-lean tilt of the replies: its fit, its persuadee-bootstrap interval and the acts it keeps."""
    with_card = [p for p in pairs if p[3] in part.cards]
    lean = {d: decision_lean(part.cards[d]) for d in {p[3] for p in with_card}}
    centre = float(np.mean(list(lean.values())))
    cells = sorted({(er, ph, lean[d]) for er, ph, _, d in with_card})
    cell = {c: i for i, c in enumerate(cells)}
    units = sorted({part.person[d] for d in lean})
    unit = {u: i for i, u in enumerate(units)}
    by_person = np.zeros((len(units), len(cells), len(RESPONSE_ACTS)))
    for er, ph, ee, d in with_card:
        by_person[unit[part.person[d]], cell[(er, ph, lean[d])], RESPONSE_ACTS.index(ee)] += 1
    log_base = np.log(np.array([table[PERSUADER_REAL.index(er), ph] for er, ph, _ in cells]))
    dev = np.array([x for *_, x in cells]) - centre
    lam = _softmax_tilt(log_base, dev, by_person.sum(0), l2=L2)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    lo, hi = _interval([_softmax_tilt(log_base, dev, np.tensordot(_resample(units, rng), by_person, 1), l2=L2)
                        for _ in range(N_BOOTSTRAP)])
    supported = [a for a, l, h in zip(RESPONSE_ACTS, lo, hi) if l > 0 or h < 0]
    return {"axis": LEAN, "centre": centre, "fitted": dict(zip(RESPONSE_ACTS, lam)),
            "ci95": {a: [l, h] for a, l, h in zip(RESPONSE_ACTS, lo, hi)}, "supported": supported,
            "coef": {a: (v if a in supported else 0.0) for a, v in zip(RESPONSE_ACTS, lam)},
            "n_pairs": len(with_card), "n_persuadees": len(units)}


def giving_index(part: TrainingPart) -> dict:
    """The card-only giving index, fitted on the training part's survey-only persuadees."""
    rows = [d for d in sorted(part.cards) if d not in part.annotated and d in part.gave]
    X = np.array([[part.cards[d][k] for k in NUMERIC] for d in rows])
    mean, std = X.mean(0), X.std(0, ddof=1)
    b0, w = _logistic((X - mean) / std, [part.gave[d] for d in rows], l2=L2)
    return {"fields": NUMERIC, "mean": mean, "std": std, "intercept": b0, "coef": w, "n_dialogues": len(rows),
            "n_persuadees": len({part.person[d] for d in rows})}


def index_of(index: dict, traits) -> float:
    """The giving index (log-odds scale) of a card's traits."""
    z = (np.array([traits[k] for k in index["fields"]]) - np.array(index["mean"])) / np.array(index["std"])
    return float(index["intercept"] + np.clip(z, -4, 4) @ np.array(index["coef"]))


def stated_amounts(part: TrainingPart) -> tuple[list[tuple[str, float, float]], list[float], list[float]]:
    """``(stated, unstated, actual of all)``: (dialogue, stated, actual) of the annotated persuadees who stated a
    usable amount, the actual gifts of those who did not (no ``B5``, or a typo above $2), and every annotated
    persuadee's actual gift; typo gifts (above $2) dropped everywhere."""
    kept = [(d, b5, b6) for d, (b5, b6) in sorted(part.amounts.items()) if b6 <= MAX_DOLLARS]
    return ([(d, b5, b6) for d, b5, b6 in kept if b5 <= MAX_DOLLARS],
            [b6 for _, b5, b6 in kept if not b5 <= MAX_DOLLARS], [b6 for _, _, b6 in kept])


def _logit(p: float) -> float:
    p = min(max(p, FORCED_CLIP), 1 - FORCED_CLIP)
    return math.log(p / (1 - p))


def forced_offset(p_positive: float, unstated: list[float], gap: dict) -> float:
    """The log-odds that a statement the game forces (a last reply with nothing stated yet) is above $0, minus a
    volunteered one's: set so that after follow-through the share who give is the unstated persuadees' (a stated
    $0 gives with ``p_give_if_intended_zero``, a positive one with 1 - ``p_zero_if_intended``)."""
    give = _share([b6 > 0 for b6 in unstated], "persuadees without a stated amount")
    keep, zero = 1 - gap["p_zero_if_intended"], gap["p_give_if_intended_zero"]
    q = (give - zero) / (keep - zero) if keep != zero else p_positive
    return _logit(q) - _logit(p_positive)


def _slope(x: np.ndarray, y: np.ndarray, tol: float = 1e-10, max_iter: int = 100) -> tuple[float, float]:
    """``(a, b)`` of P(y) = sigmoid(a + b * x) by penalised maximum likelihood (``L2`` on ``b``, the intercept
    unpenalised, as ``fit._logistic``), by Newton's method with step halving: the small problem the bootstrap
    refits ``N_BOOTSTRAP`` times."""
    A = np.column_stack([np.ones(len(x)), x])
    pen = np.diag([0.0, L2])

    def objective(w):
        z = A @ w
        return np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * w @ pen @ w

    w = np.zeros(2)
    f = objective(w)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        step = np.linalg.solve((A * (p * (1 - p))[:, None]).T @ A + pen + 1e-12 * np.eye(2), A.T @ (p - y) + pen @ w)
        t = 1.0
        while objective(w - t * step) > f and t > 1e-8:
            t /= 2
        w, f = w - t * step, objective(w - t * step)
        if np.max(np.abs(t * step)) < tol:
            break
    return float(w[0]), float(w[1])


def stated_model(part: TrainingPart, stated, unstated, gap: dict) -> dict:
    """The stated amount: the positive bins, the share above $0 (volunteered, and forced by the game's last reply),
    and the card's slope on the giving index (fitted, with its interval and whether the rule keeps it)."""
    positive = Counter(max(dialogue_acts.amount_bin(b5), 1) for _, b5, _ in stated if b5 > 0)
    bins = np.array([positive[i] for i in range(1, len(AMOUNT_BINS))], float) + ALPHA
    index = giving_index(part)
    rows = [(d, b5 > 0) for d, b5, _ in stated if d in part.cards]
    x = np.array([index_of(index, part.cards[d]) for d, _ in rows])
    y = np.array([s for _, s in rows], float)
    a, b = _slope(x, y)
    units = sorted({part.person[d] for d, _ in rows})
    of = defaultdict(list)
    for i, (d, _) in enumerate(rows):
        of[part.person[d]].append(i)
    rng = np.random.default_rng(BOOTSTRAP_SEED + 1)
    draws = []
    for _ in range(N_BOOTSTRAP):
        take = np.concatenate([of[units[k]] for k in rng.integers(len(units), size=len(units))])
        draws.append(_slope(x[take], y[take])[1])
    lo, hi = _interval(draws)
    p_positive = _share([b5 > 0 for _, b5, _ in stated], "stated amounts")
    return {"p_positive": p_positive, "positive_bins": bins / bins.sum(), "n_stated": len(stated),
            "forced_offset": forced_offset(p_positive, unstated, gap), "n_unstated": len(unstated),
            "give_rate_unstated": _share([b6 > 0 for b6 in unstated], "persuadees without a stated amount"),
            "card": {"axis": "giving_index", "index": index, "intercept": a, "slope": b, "ci95": [lo, hi],
                     "supported": bool(lo > 0 or hi < 0), "n_dialogues": len(rows), "n_persuadees": len(units)}}


def _share(values, what: str) -> float:
    if not values:
        raise ValueError(f"the training part holds no {what}: too little data to fit the grounded persuadee")
    return float(np.mean(values))


def follow_through_model(stated, actual_all) -> dict:
    """The gap between stated and actual gifts, in the human proxies' form (``human_proxy.follow_through``)."""
    pos = [(b5, b6) for _, b5, b6 in stated if b5 > 0]
    exact = [abs(b6 - b5) < 0.005 for b5, b6 in pos]
    other = [b6 / b5 for (b5, b6), ex in zip(pos, exact) if b6 > 0 and not ex]
    zero = [b6 for _, b5, b6 in stated if b5 == 0]
    gifts = Counter(max(dialogue_acts.amount_bin(g), 1) for g in actual_all if g > 0)
    n_gifts = sum(gifts.values())
    if not other or not n_gifts:
        raise ValueError("the training part holds no partial or positive gifts: too little data to fit the grounded "
                         "persuadee")
    return {"p_zero_if_intended": _share([b6 == 0 for _, b6 in pos], "positive stated amounts"),
            "p_exact_if_intended": _share(exact, "positive stated amounts"),
            "ratio_if_other_median": float(np.median(other)),
            "p_give_if_intended_zero": _share([b6 > 0 for b6 in zero], "stated $0"),
            "gifts": [gifts[i] / n_gifts for i in range(len(AMOUNT_BINS))],
            "n_positive": len(pos), "n_zero": len(zero)}


def fit(data_dir) -> dict:
    """The grounded persuadee's parameters from the training part of the P4G csv files in ``data_dir``: what
    ``grounded_params.json`` holds (``FileNotFoundError`` when the files are not there, ``ValueError`` when the
    training part is too thin to fit)."""
    part = read_training_part(data_dir)
    pairs = _pairs(part)
    if not pairs:
        raise ValueError("the training part holds no reply pairs: too little data to fit the grounded persuadee")
    table, counts, marginal = reply_table(pairs)
    stated, unstated, actual_all = stated_amounts(part)
    gap = follow_through_model(stated, actual_all)
    survey_only = [d for d in part.gave if d not in part.annotated]
    return _clean({
        "source": {"dataset": "Persuasion for Good (Wang et al., ACL 2019)", "files": FILES,
                   "part": TRAIN, "people_rule": {"salt": SALT, "heldout_share": HELDOUT_SHARE},
                   "n_annotated_dialogues": len(part.turns), "n_annotated_persuadees":
                       len({part.person[d] for d in part.turns}),
                   "n_pairs": len(pairs), "n_survey_only_dialogues": len(survey_only),
                   "n_survey_only_persuadees": len({part.person[d] for d in survey_only}),
                   "n_dropped_for_persuader": part.dropped_for_persuader},
        "replies": {"acts": RESPONSE_ACTS, "persuader_acts": PERSUADER_REAL, "phases": PHASES,
                    "turn_edges": TURN_EDGES, "prior": PRIOR, "alpha": ALPHA, "marginal": marginal,
                    "given": {a: table[i] for i, a in enumerate(PERSUADER_REAL)},
                    "n_context": {a: counts[i].sum(-1) for i, a in enumerate(PERSUADER_REAL)},
                    "card": reply_tilt(pairs, table, part)},
        "stated": stated_model(part, stated, unstated, gap),
        "follow_through": gap,
        "pairs": pair_tables(pairs, part.person),  # realism.py: what a realism-paid user is told apart from
    })


# -- the model the simulator plays -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def params() -> dict:
    """The committed parameters (``grounded_params.json``), loaded once."""
    return json.loads(resources.files("scope_envs.games.p4g").joinpath(PARAMS.name).read_text())


class GroundedModel:
    """The fitted persuadee as arrays: its reply, stated-amount and follow-through distributions."""

    def __init__(self, fitted: dict):
        r, s = fitted["replies"], fitted["stated"]
        if r["acts"] != RESPONSE_ACTS or r["persuader_acts"] != PERSUADER_REAL:
            raise ValueError("grounded parameters of another act set: refit them (python -m "
                             "scope_envs.games.p4g.grounded)")
        self.edges = tuple(r["turn_edges"])
        # indexed by the game's persuader act (PERSUADER_INDEX); the no-op row, never answered in a game, is pooled
        self.table = np.empty((len(dialogue_acts.PERSUADER_ACTS), len(r["phases"]), len(RESPONSE_ACTS)))
        self.table[0] = r["marginal"]
        for a, rows in r["given"].items():
            self.table[dialogue_acts.PERSUADER_INDEX[a]] = rows
        self.centre = r["card"]["centre"]
        self.tilt = np.array([r["card"]["coef"][a] for a in RESPONSE_ACTS])
        self.verbal = np.array([dialogue_acts.PERSUADEE_INDEX[a] for a in RESPONSE_ACTS[:-1]])
        self.p_positive, self.positive_bins = s["p_positive"], np.array(s["positive_bins"])
        self.forced_offset = s["forced_offset"]
        self.card = s["card"] if s["card"]["supported"] else None
        self.gap = fitted["follow_through"]
        self.gifts = np.array(self.gap["gifts"])

    def replies(self, persona: Persona | None, persuader_act: int, turn: int) -> np.ndarray:
        """P(reply) over ``RESPONSE_ACTS`` answering ``persuader_act`` (a ``PERSUADER_ACTS`` index) at the 0-based
        ``turn``, tilted by the card's decision lean (no tilt without a card)."""
        p = self.table[persuader_act, min(sum(turn >= e for e in self.edges), self.table.shape[1] - 1)]
        if persona is None or not self.tilt.any():
            return p
        q = p * np.exp(self.tilt * (decision_lean(persona.traits) - self.centre))
        return q / q.sum()

    def stated(self, persona: Persona | None, forced: bool = False) -> np.ndarray:
        """P(stated bin) over ``AMOUNT_BINS``: $0, else the positive bins. The card moves the share above $0 only
        where the data supports it; ``forced`` (the game's last reply, nothing stated yet) moves it by the fitted
        ``forced_offset``."""
        z = _logit(self.p_positive)
        if self.card is not None and persona is not None:
            z = self.card["intercept"] + self.card["slope"] * index_of(self.card["index"], persona.traits)
        q = 1.0 / (1.0 + math.exp(-(z + (self.forced_offset if forced else 0.0))))
        return np.concatenate([[1.0 - q], q * self.positive_bins])

    def reply_distribution(self, persona: Persona | None, history, legal: np.ndarray) -> np.ndarray:
        """Probabilities over ``PERSUADEE_ACTS`` after ``history`` (the game's turns), zero on illegal acts."""
        said = [t.act for t in history if t.role == "persuader"]
        r = self.replies(persona, said[-1] if said else 0, max(len(said) - 1, 0))
        # the game's last reply (no verbal act legal) must state an amount: forced, if none was stated before
        forced = not legal[1:dialogue_acts.FIRST_AMOUNT].any() and not any(
            t.role == "persuadee" and t.act >= dialogue_acts.FIRST_AMOUNT for t in history)
        p = np.zeros(len(dialogue_acts.PERSUADEE_ACTS))
        p[self.verbal] = r[:-1]
        p[dialogue_acts.FIRST_AMOUNT:] = r[-1] * self.stated(persona, forced)
        p = np.where(legal, p, 0.0)
        total = p.sum()
        return p / total if total > 0 else legal / legal.sum()  # off-turn: only the no-op

    def follow_through(self, intended: float, rng: np.random.Generator) -> float:
        """The actual gift after stating ``intended`` dollars, with the training part's rates."""
        return human_proxy.gap_draw(self.gap, self.gifts, intended, rng, cap=MAX_DOLLARS)


@functools.lru_cache(maxsize=1)
def model() -> GroundedModel:
    """The committed parameters as a ``GroundedModel`` (built once)."""
    return GroundedModel(params())


@functools.lru_cache(maxsize=1)
def real_pairs() -> RealPairs:
    """The training part's reply pairs, by fold, from the committed parameters (``realism.py``; built once)."""
    block = params().get("pairs")
    if block is None or tuple(block["shape"]) != PAIRS_SHAPE or tuple(block["turn_edges"]) != TURN_EDGES:
        raise ValueError("grounded_params.json holds no reply pairs of this act set: refit it "
                         "(python -m scope_envs.games.p4g.grounded --data ../shared/data/p4g)")
    return RealPairs(np.array(block["fit"]["counts"], float), np.array(block["held_back"]["counts"], float))


# -- the command -----------------------------------------------------------------------------------------------
def summary(p: dict) -> str:
    s, r, st, g = p["source"], p["replies"], p["stated"], p["follow_through"]
    return "\n".join([
        f"training part: {s['n_annotated_dialogues']} annotated dialogues of {s['n_annotated_persuadees']} persuadees "
        f"({s['n_dropped_for_persuader']} dropped: a held-out persuader), {s['n_pairs']} reply pairs; "
        f"{s['n_survey_only_dialogues']} survey-only dialogues of {s['n_survey_only_persuadees']} persuadees",
        f"reply tilt along the decision lean supported for: {', '.join(r['card']['supported']) or 'no act'}",
        f"stated: {st['n_stated']} amounts, {st['p_positive']:.3f} above $0; {st['n_unstated']} without one "
        f"({st['give_rate_unstated']:.3f} gave: forced offset {st['forced_offset']:+.3f}); "
        f"card slope {st['card']['slope']:+.3f} "
        f"[{st['card']['ci95'][0]:+.3f}, {st['card']['ci95'][1]:+.3f}]: "
        f"{'supported' if st['card']['supported'] else 'not supported (no card term)'}",
        f"follow-through: P(0 | stated > 0) {g['p_zero_if_intended']:.2f}, P(exact) {g['p_exact_if_intended']:.2f}, "
        f"median ratio otherwise {g['ratio_if_other_median']:.2f}, P(give | stated 0) "
        f"{g['p_give_if_intended_zero']:.2f}",
        "realism folds: " + ", ".join(f"{fold} {p['pairs'][fold]['persuadees']} persuadees, "
                                      f"{int(np.sum(p['pairs'][fold]['counts']))} pairs"
                                      for fold in ("fit", "held_back")),
    ])


def dumps(fitted: dict) -> str:
    """The file's text: keys sorted, one value a line, as ``params_train.json``."""
    return json.dumps(fitted, indent=1, sort_keys=True) + "\n"


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all: a temporary file beside ``path``, flushed, renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m scope_envs.games.p4g.grounded",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/p4g"),
                    help=f"folder with the P4G csv files {', '.join(FILES)} (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=PARAMS, help="the parameter file (default: the committed %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when --out differs from what the data gives")
    args = ap.parse_args(argv)
    try:
        fitted = fit(args.data)
    except (FileNotFoundError, ValueError) as e:
        ap.error(f"argument --data: {e}")
    text = dumps(fitted)
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'as fitted' if same else 'differs from the fit: rerun without --check'}", file=sys.stderr)
        sys.exit(0 if same else 1)
    if not args.out.parent.is_dir():
        ap.error(f"argument --out: folder {args.out.parent} does not exist")
    _write(args.out, text)
    print(summary(fitted), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
