"""Partner styles: the persona cards of CooperBench teammates, and the policy they induce.

A style is five probabilities (all assumptions of ours, shaped after the
failure modes CooperBench reports):

* ``announce``: opens by announcing its full plan;
* ``answer``: answers its partner's questions (low: communication failure);
* ``keep``: edits the regions it claimed (low: commitment failure);
* ``respect``: leaves alone regions its partner claimed (low: expectation failure);
* ``talk``: claims shared regions and reports when done.

Archetypes: ``planner`` (communicative, keeps its word), ``silent`` (works,
never talks), ``claim_breaker`` (claims, then does otherwise),
``non_answerer`` (ignores questions), ``ignorer`` (ignores claims). A persona
is an archetype with its probabilities jittered; ``train`` and ``heldout``
personas come from disjoint seed streams, and held-out ones are jittered more
widely (held-out parameters). The modal ``default`` persona has every
probability at the archetypes' mean.

``decide`` turns a style and a view into act probabilities. In *expected*
mode every coin is its probability (the reference policy, which collapsed
simulators sharpen); in *sampled* mode each coin is flipped once per
(persona, task, decision), so a human proxy is consistent within an episode.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

from scope_envs.core.game import Persona
from scope_envs.games.cooperbench.dialogue_acts import CLAIM, COMBINED, EDIT, INDEX

TRAITS = ("announce", "answer", "keep", "respect", "talk")
ARCHETYPES = {
    "planner": (0.95, 0.95, 0.95, 0.95, 0.8),
    "silent": (0.05, 0.2, 0.9, 0.7, 0.05),
    "claim_breaker": (0.8, 0.8, 0.2, 0.6, 0.8),
    "non_answerer": (0.5, 0.05, 0.8, 0.8, 0.3),
    "ignorer": (0.6, 0.6, 0.8, 0.1, 0.5),
}
SPLIT_KEYS = {"train": 5_519, "heldout": 6_673}
SPLIT_SIZES = {"train": 400, "heldout": 200}
JITTER = {"train": 0.08, "heldout": 0.15}


@functools.lru_cache(maxsize=None)
def persona(split: str, i: int) -> Persona:
    if split not in SPLIT_KEYS:
        raise ValueError(f"split must be one of {sorted(SPLIT_KEYS)}, got {split!r}")
    rng = np.random.default_rng([SPLIT_KEYS[split], i])
    name = list(ARCHETYPES)[int(rng.integers(len(ARCHETYPES)))]
    values = np.clip(np.array(ARCHETYPES[name]) + JITTER[split] * rng.standard_normal(len(TRAITS)), 0.0, 1.0)
    return Persona(f"{split}-{i:04d}", split, {t: round(float(v), 3) for t, v in zip(TRAITS, values)}, {"style": name})


def sample(rng: np.random.Generator, split: str) -> Persona:
    return persona(split, int(rng.integers(SPLIT_SIZES[split])))


def default_persona() -> Persona:
    """The modal teammate: every probability at the archetypes' mean."""
    mean = np.mean(list(ARCHETYPES.values()), axis=0)
    return Persona("default-mean", "default", {t: round(float(v), 3) for t, v in zip(TRAITS, mean)}, {"style": "mean"})


def coin(p: float, sampled: bool, *key) -> float:
    if not sampled:
        return p
    u = zlib.crc32(repr(key).encode()) / 2**32
    return float(u < p)


def decide(style: Persona, private: dict, legal: np.ndarray, sampled: bool) -> np.ndarray:
    """Probabilities over the game's acts for a teammate of this style."""
    t = style.traits
    p = np.zeros(len(legal))
    mass = 1.0

    def put(act: int, q: float) -> None:
        nonlocal mass
        if legal[act]:
            p[act] += mass * q
            mass *= 1.0 - q

    key = (style.id, private["task"])
    if private["asked"]:
        put(INDEX["answer"], coin(t["answer"], sampled, *key, "answer", private["turn"]))
    if private["turn"] == 0:
        put(INDEX["announce_plan"], coin(t["announce"], sampled, *key, "announce"))
    todo = []
    for r in sorted(private["needs"]):
        done = private["edits"].get(r)
        shared = r in private["known"]
        if done and (len(done) == 2 or not shared):
            continue
        if r in private["partner_claims"] and coin(t["respect"], sampled, *key, "respect", r):
            continue
        if r in private["own_claims"] and not coin(t["keep"], sampled, *key, "keep", r):
            continue
        todo.append(r)
    for r in todo:  # claim the shared regions it will do, before doing them
        if r in private["known"] and r not in private["own_claims"] and r not in private["partner_claims"]:
            put(CLAIM + r, coin(t["talk"], sampled, *key, "claim", r))
    if todo:
        r = todo[0]
        put((COMBINED if r in private["known"] else EDIT) + r, 1.0)
    else:
        if not private["reported"]:
            put(INDEX["report_done"], coin(t["talk"], sampled, *key, "report"))
        put(INDEX["submit"], 1.0)
    put(INDEX["wait"], 1.0)
    if p.sum() == 0:
        p = legal.astype(float)
    return p / p.sum()
