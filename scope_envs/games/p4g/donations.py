"""Real versus simulated donation statistics.

``scope-envs validate p4g`` runs the held-out human-proxy population against an
*empirical persuader* (the per-turn strategy mix of the real persuaders) and
reports ``{"real": {...}, "simulated": {...}}`` with ``mean_donation``,
``give_rate``, ``mean_intended`` (among those who stated an amount) and
``mean_actual`` (the same people's actual gifts).

The entry point, ``scope_envs.validate.p4g.validate``, gets the real
statistics (``real_statistics``: the shipped ones, or, with ``data_dir``,
refitted from the raw data), plays the dialogues (``simulate.py``) with the
built-in players and hands both to ``compare``, which takes the real
statistics as an argument and builds the report. The offsets that make the two meet are set on train personas by
``calibrate.py``.
"""

from __future__ import annotations

import os

from scope_envs.games.p4g import personas
from scope_envs.games.p4g.fit import fit
from scope_envs.games.p4g.people import HELDOUT, outside

REAL_KEYS = ("mean_donation", "give_rate", "mean_intended", "mean_actual", "n")


def real_statistics(data_dir: str | os.PathLike | None = None) -> dict:
    """The real numbers of the held-out part of the people split, which the proxies are checked against: the
    shipped ones, or refitted from that part's people in the P4G csv files in ``data_dir``.

    Raises FileNotFoundError (naming the folder and the file expected) when
    ``data_dir`` does not hold the data.
    """
    if data_dir is None:
        return personas.params("heldout")["real"]
    return fit(data_dir, holdout=outside(data_dir, HELDOUT))["real"]


def compare(real: dict, simulated: dict) -> dict:
    """The report: the real statistics (``REAL_KEYS`` of ``real``), the simulated ones as given, and how far apart
    the mean donation and the give rate are."""
    missing = [k for k in REAL_KEYS if k not in real]
    if missing:
        raise ValueError(f"the real statistics lack {', '.join(missing)} (expected {', '.join(REAL_KEYS)})")
    real = {k: real[k] for k in REAL_KEYS}
    return {
        "real": real,
        "simulated": simulated,
        "abs_diff": {k: round(abs(simulated[k] - real[k]), 4) for k in ("mean_donation", "give_rate")},
    }
