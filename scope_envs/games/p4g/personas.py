"""Persuadee personas: synthetic survey cards drawn from the model fitted to P4G's survey.

No real participant's row ships with the package. Persona ``i`` of a split is
drawn from its part's ``params(split)["persona_model"]`` (means, standard deviations, a correlation
Cholesky factor, categorical frequencies) with a generator keyed by
``(split key, i)``, so ``train`` and ``heldout`` are disjoint id spaces drawn
from disjoint seed streams. The ``default`` persona is the modal one: every
numeric trait at its mean, every attribute at its most frequent value.
"""

from __future__ import annotations

import contextlib
import functools
import json
from importlib import resources

import numpy as np

from scope_envs.core import seal
from scope_envs.core.game import Persona

SPLIT_KEYS = {"train": 7_101, "heldout": 9_203}
SPLIT_SIZES = {"train": 1000, "heldout": 500}

TRAIT_LABELS = {
    "extrovert": "extroverted", "agreeable": "agreeable", "conscientious": "conscientious",
    "neurotic": "neurotic", "open": "open to experience",
}


# The people split's parts (``people.py``) and the fit each part's models read: the training side's (the reference
# persuadee and every simulator built on it, the train cards, the agent's card features) "train", the held-out
# side's (the human proxies, the held-out cards, validate's real numbers) "heldout". Each part reads a fit on its
# own people alone (``python -m scope_envs.validate.p4g --part P --overwrite-packaged``).
PART_FILES = {"train": "params_train.json", "heldout": "params_heldout.json"}
PARTS = tuple(PART_FILES)

_params: dict[str, dict] = {}  # part -> the parameters it reads now
_files: dict[str, dict] = {}  # file -> its parameters, loaded once (parts that read one file share one dict)


def check_part(part: str) -> str:
    """``part``, if it names a part of the people split; else the ``ValueError`` naming the parts."""
    if part not in PART_FILES:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    return part


def packaged(part: str) -> dict:
    """The parameters packaged for ``part`` (its file in ``PART_FILES``, loaded once), whatever is in place now."""
    name = PART_FILES[check_part(part)]
    if name not in _files:
        _files[name] = json.loads(resources.files("scope_envs.games.p4g").joinpath(name).read_text())
    return _files[name]


def params(part: str) -> dict:
    """The fitted parameters ``part`` of the people split reads (``PART_FILES``; ``set_params`` may swap them)."""
    if part not in _params:
        _params[part] = packaged(part)
    return _params[part]


def set_params(new: dict, part: str | None = None) -> None:
    """Use other parameters for ``part`` (None: every part; the fitting scripts calibrate freshly fitted ones,
    a world swaps the training side's)."""
    for q in PARTS if part is None else (check_part(part),):
        _params[q] = new
    _persona.cache_clear()
    default_persona.cache_clear()


@contextlib.contextmanager
def params_kept():
    """A block that may ``set_params`` (a fit, a calibration): every part's parameters are put back after it."""
    before = {q: params(q) for q in PARTS}
    try:
        yield
    finally:
        for q, kept in before.items():
            set_params(kept, q)


LEAN_CLIP = 1.0  # one scale point of rational over intuitive (or the reverse) is a clear decision style


def decision_lean(traits) -> float:
    """A card's decision lean: its rational minus its intuitive decision-style score (both on the survey's 1-5
    scales, as the card states them), clipped to +-``LEAN_CLIP``. Positive: a rational decider. The axis the
    reference model's persona x act interactions are fitted along (``fit.py``, ``strategy_interactions``)."""
    return float(np.clip(traits["rational"] - traits["intuitive"], -LEAN_CLIP, LEAN_CLIP))


def numeric_traits(part: str) -> list[str]:
    return params(part)["persona_model"]["numeric"]


def standardize(persona: Persona, part: str) -> np.ndarray:
    """The card's numeric traits standardized by ``part``'s persona model."""
    pm = params(part)["persona_model"]
    x = np.array([persona.traits[t] for t in pm["numeric"]])
    return (x - np.array(pm["mean"])) / np.array(pm["std"])


def persona(split: str, i: int) -> Persona:
    if split == "heldout":  # (before the cache: a card drawn once stays sealed)
        seal.check(f"held-out card {i}")
    return _persona(split, i)


@functools.lru_cache(maxsize=4096)
def _persona(split: str, i: int) -> Persona:
    if split not in SPLIT_KEYS:
        raise ValueError(f"split must be one of {sorted(SPLIT_KEYS)}, got {split!r}")
    if not 0 <= i < SPLIT_SIZES[split]:
        raise ValueError(f"persona index {i} out of range for split {split!r} ({SPLIT_SIZES[split]})")
    pm = params(split)["persona_model"]  # a split's cards come from its part's persona model
    rng = np.random.default_rng([SPLIT_KEYS[split], i])
    z = np.array(pm["cholesky"]) @ rng.standard_normal(len(pm["numeric"]))
    x = np.clip(np.array(pm["mean"]) + np.array(pm["std"]) * z, pm["min"], pm["max"])
    attrs = {}
    for field, spec in sorted(pm["categorical"].items()):
        attrs[field] = str(spec["values"][rng.choice(len(spec["probs"]), p=np.array(spec["probs"]) / sum(spec["probs"]))])
    traits = {t: round(float(v), 2) for t, v in zip(pm["numeric"], x)}
    traits["age"] = float(round(traits["age"]))
    return Persona(id=f"{split}-{i:04d}", split=split, traits=traits, attributes=attrs)


def sample_index(rng: np.random.Generator, split: str) -> int:
    """``sample``'s one draw: the index of the persona it deals."""
    return int(rng.integers(SPLIT_SIZES[split]))


def sample(rng: np.random.Generator, split: str) -> Persona:
    return persona(split, sample_index(rng, split))


@functools.lru_cache(maxsize=1)
def default_persona() -> Persona:
    """The modal card of the training side's persona model: the frozen simulator's own."""
    pm = params("train")["persona_model"]
    traits = {t: round(float(m), 2) for t, m in zip(pm["numeric"], pm["mean"])}
    attrs = {f: str(s["values"][int(np.argmax(s["probs"]))]) for f, s in sorted(pm["categorical"].items())}
    return Persona(id="default-modal", split="default", traits=traits, attributes=attrs)


def card(p: Persona) -> str:
    """The persona card in words, as a prompted simulator would be given it."""
    t, a = p.traits, p.attributes
    big5 = ", ".join(f"{TRAIT_LABELS[k]} {t[k]:.1f}/5" for k in TRAIT_LABELS)
    return (
        f"You are a {int(t['age'])}-year-old {a.get('sex', 'person').lower()} ({a.get('race', '')}), "
        f"{a.get('marital', '').lower()}, {a.get('employment', '').lower()}, education: {a.get('edu', '').lower()}, "
        f"religion: {a.get('religion', '').lower()}, politics: {a.get('ideology', '').lower()}. "
        f"Personality: {big5}. Care for others {t['care']:.1f}/6, value of freedom {t['freedom']:.1f}/6, "
        f"benevolence {t['benevolence']:.1f}/6. Decision style: rational {t['rational']:.1f}/5, "
        f"intuitive {t['intuitive']:.1f}/5."
    )
