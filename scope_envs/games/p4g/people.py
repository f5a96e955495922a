"""The split of the real Persuasion-for-Good people into a training part and a held-out part.

Nothing may be fitted to the held-out people if a simulator trained on the
other people is to be judged on them. So the split is declared here, as a rule,
before any fit reads it. A grounded user simulator is fitted on the training
part only. Every other model reads the fit on its side's part alone
(``personas.params(part)``: ``params_train.json``, ``params_heldout.json``);
the held-out human proxies are checked against their part by ``scope-envs
validate p4g``.

The rule. The unit is the person (the user id, ``B3``), not the dialogue: 118
persuadees took part in several of the 1,017 dialogues, each time with the same
survey row, so splitting dialogues would put the same person on both sides.
A person is held out when the first 8 bytes of
``SHA-256(SALT + "\\x00" + person_id)``, read as a big-endian integer and
divided by 2**64, fall below ``HELDOUT_SHARE``. Otherwise the person is in
the training part. The salt is a fixed, named string and was chosen before any
part's size was seen. The part depends only on the id, so it does not change
with the order of the files, with which other people are in them, or with any
number fitted from the data. Adding or removing people moves nobody else.

Who the rule divides:

* **annotated persuadees**, the persuadees of the 300 annotated dialogues
  (``300_info.csv``). This includes everyone in ``fit.annotated_dialogues``,
  the 286 dialogues with an outcome and a complete survey row. These people's
  act sequences, and their stated and actual amounts, are what a grounded
  simulator learns from and what the out-of-sample check replays;
* **survey-only persuadees**, the persuadees of the other dialogues, who have a
  survey row and a donation but no annotated acts. The same rule applies to
  them. Their survey rows and donations go only into their own part's persona
  model, propensity regression and real marginals. They are reported apart
  because only the annotated people can ground act-level behaviour.

A dialogue belongs to its persuadee's part, because the user seat is what is
grounded and held out. The same rule gives a person one part in both roles: 177
people were persuaders in some dialogues and persuadees in others, and they
have the same part in both. Whether a fit also drops a held-out person's rows
as a *persuader* is for that fit to state. This module only says which part
each person is in.

The share: one half (``HELDOUT_SHARE = 0.5``). The held-out part has to be
large enough to re-check the refitted proxies. ``scope-envs validate p4g``
holds the proxies to a mean donation within $0.05 of the real one and a give
rate within 5 points. Both real numbers then come from the
held-out people alone. Real donations have a standard deviation of about $0.55
and a give rate of about 52%. With half of the 761 persuadees (369 people
fall in the held-out part), the standard error of that part's real give rate
is about sqrt(0.25 / 369) = 2.6 points, and of its mean donation about
$0.55 / sqrt(369) = $0.029. So the 95% sampling band of the target is about
as wide as the tolerance it is checked at. A third would give 3.1 points and
$0.035, and the check would be testing sampling noise more than the proxies.
Half of the annotated people also leaves about 43 dialogues (128 / 3) in each
of the out-of-sample check's three folds. In each of those folds, 10 of the
12 acts it tests still have its ``MIN_SIDE`` of 10 dialogues on each side
(11 or 12 with all 286 dialogues). The training part keeps the other half for
the grounded simulator. Halving costs both sides: the contrasts of single
strategies were already too noisy to test on 286 dialogues, and they are
noisier on half.

On the real data (``../shared/data/p4g``) the rule gives:

* annotated persuadees (257): 135 in training and 122 held out. Of them, the
  245 in ``fit.annotated_dialogues``: 127 in training and 118 held out; their
  286 dialogues: 158 in training and 128 held out;
* survey-only persuadees (504): 257 in training and 247 held out;
* all 761 persuadees: 392 in training and 369 held out; their 1,017
  dialogues: 524 in training and 493 held out.

``tests/test_p4g_people.py`` checks these counts and the rule's properties.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from scope_envs.games.p4g.fit import _read, check_data, persuadee_ids

SALT = "scope-envs/p4g/people"
HELDOUT_SHARE = 0.5
TRAIN, HELDOUT = "train", "heldout"
PARTS = (TRAIN, HELDOUT)


def split_of(person_id: str) -> str:
    """``"heldout"`` or ``"train"``: the part of the person with user id ``person_id`` (``B3``), by the rule in the
    module docstring. TypeError for a non-string id, ValueError for an empty one."""
    if not isinstance(person_id, str):
        raise TypeError(f"a person id is a string (the data's B3), got {type(person_id).__name__}")
    if not person_id:
        raise ValueError("a person id must not be empty")
    digest = hashlib.sha256(f"{SALT}\x00{person_id}".encode("utf-8")).digest()
    return HELDOUT if int.from_bytes(digest[:8], "big") / 2**64 < HELDOUT_SHARE else TRAIN


@dataclass(frozen=True)
class PeopleSplit:
    """Both parts of the real persuadees, by user id (``B3``), and every dialogue's part (its persuadee's)."""

    train: frozenset[str]  # annotated persuadees in the training part
    heldout: frozenset[str]  # annotated persuadees held out
    survey_train: frozenset[str]  # survey-only persuadees in the training part
    survey_heldout: frozenset[str]  # survey-only persuadees held out
    dialogue_part: dict[str, str]  # dialogue id (B2) -> "train" | "heldout", all dialogues of full_info.csv

    def people(self, part: str) -> frozenset[str]:
        """Every persuadee of ``part``, annotated or survey-only."""
        return self.train | self.survey_train if _checked(part) == TRAIN else self.heldout | self.survey_heldout

    def dialogues(self, part: str) -> frozenset[str]:
        """The dialogue ids whose persuadee is in ``part``."""
        part = _checked(part)
        return frozenset(d for d, p in self.dialogue_part.items() if p == part)


def _checked(part: str) -> str:
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    return part


def split_people(data_dir) -> PeopleSplit:
    """The split of the real persuadees in ``data_dir`` (the P4G csv files, read with ``fit``'s readers).
    FileNotFoundError with a one-line message when the data is not there."""
    data = check_data(Path(data_dir))
    person = persuadee_ids(data)  # dialogue id -> persuadee user id, every dialogue
    annotated_dialogues = {r["B2"] for r in _read(data / "300_info.csv") if r["B4"] == "1"}
    unknown = sorted(annotated_dialogues - set(person))
    if unknown:
        raise ValueError(f"{data / '300_info.csv'} names dialogue(s) absent from full_info.csv: {', '.join(unknown[:5])}")
    annotated = {person[d] for d in annotated_dialogues}
    survey_only = set(person.values()) - annotated

    def part(ids, which):
        return frozenset(i for i in ids if split_of(i) == which)

    return PeopleSplit(train=part(annotated, TRAIN), heldout=part(annotated, HELDOUT),
                       survey_train=part(survey_only, TRAIN), survey_heldout=part(survey_only, HELDOUT),
                       dialogue_part={d: split_of(u) for d, u in sorted(person.items())})


def outside(data_dir, part: str) -> frozenset[str]:
    """The dialogue ids a fit on ``part`` must not read: the other part's (none for ``"everyone"``), as
    ``fit(data, holdout=outside(data, "train"))`` fits the training side."""
    if part == "everyone":
        return frozenset()
    return split_people(data_dir).dialogues(HELDOUT if _checked(part) == TRAIN else TRAIN)
