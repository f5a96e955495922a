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
mode (the training-side reference policy, which collapsed simulators sharpen)
every reply's coin is its probability and every commitment (``gate``: respect a
claim, keep one's own) takes its likelier side; in *sampled* mode (the held-out
human proxy) each coin is flipped once per (persona, task, decision), so a
proxy is consistent within an episode.

The reference's cards need different teammates (v0.3; assumptions of ours,
shaped after CooperBench's expectation, commitment and communication failures,
with no data behind their sizes): under the one-owner merge rule
(``world.merge``) a *leader* (``talk`` 1/2 and above) claims and integrates the
shared regions it knows of, so its teammate must yield them or claim them
first, and a leader that ignores claims (``respect`` below 1/2) needs them
yielded; a claim-breaker (``keep`` below 1/2) drops what it claimed, so its
teammate must integrate; a *quiet* card (``leaves_shared``) leaves shared
regions to its teammate and is derailed by a claim, so its teammate must
integrate them without claiming. The collapsed partner (modal card + 0.3,
sharpened) is a respectful leader: yielding or claiming first serves it, and
both fail the quiet cards. The sampled mode keeps v0's rules (no
``leaves_shared``): the held-out behaviour model is not redesigned on the
training side.
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


def sample_index(rng: np.random.Generator, split: str) -> int:
    """``sample``'s one draw: the index of the persona it deals."""
    return int(rng.integers(SPLIT_SIZES[split]))


def sample(rng: np.random.Generator, split: str) -> Persona:
    return persona(split, sample_index(rng, split))


@functools.lru_cache(maxsize=1)
def default_persona() -> Persona:
    """The modal teammate: every probability at the archetypes' mean (one card, made once: every game and frozen
    partner starts from it)."""
    mean = np.mean(list(ARCHETYPES.values()), axis=0)
    return Persona("default-mean", "default", {t: round(float(v), 3) for t, v in zip(TRAITS, mean)}, {"style": "mean"})


def coin(p: float, sampled: bool, *key) -> float:
    if not sampled:
        return p
    u = zlib.crc32(repr(key).encode()) / 2**32
    return float(u < p)


def gate(p: float, sampled: bool, *key) -> bool:
    """A yes/no commitment of the card (respect a claim, keep one's own): sampled, its coin (``coin``);
    expected, its likelier side (``p >= 0.5``). A commitment is a branch, not a share of one reply's mass,
    so the reference plays the card's typical commitment, the same all episode: an ignorer ignores claims,
    a claim-breaker drops its own. (Until v0.3 the expected mode took any chance above 0 as certain, so
    every reference partner respected claims and kept its own, whatever its card said.)"""
    return coin(p, sampled, *key) >= 0.5  # a sampled coin is 0 or 1: the same test in both modes


def leaves_shared(style: Persona, sampled: bool) -> bool:
    """Whether a partner of this card leaves the regions it knows both features need to its teammate
    (unless it claimed them itself): in the reference model (expected mode), a card that does not take the
    lead (``talk`` below 1/2) waits for its teammate to integrate the shared work; a leader (``talk`` 1/2
    and above) claims and integrates it. Under the one-owner merge rule (``world.merge``) a leader needs
    its teammate to yield a shared region or to claim it first, and a card that leaves it needs its teammate
    to integrate it. Such a quiet card is also derailed by chatter: once its teammate has claimed a region,
    it stops waiting on the thread and does its own feature alone (``decide``: its own change in every
    region it needs, whatever it was told or asked to leave), so a claim, harmless to a leader, costs the
    shared regions with it. The sampled mode (the held-out human proxy) keeps v0's rule: every partner integrates
    what it knows is shared (the held-out behaviour model is not changed while training-side worlds are
    designed)."""
    return not sampled and style.traits["talk"] < 0.5


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
    leaves = leaves_shared(style, sampled)
    alone = leaves and bool(private["partner_claims"])  # derailed by a claim (``leaves_shared``)
    known = frozenset() if alone else private["known"]  # working alone, it plans as if told nothing
    for r in sorted(private["needs"]):
        done = private["edits"].get(r)
        shared = r in known
        if done and (len(done) == 2 or not shared):
            continue
        if shared and leaves and r not in private["own_claims"]:
            continue
        if not alone and r in private["partner_claims"] and gate(t["respect"], sampled, *key, "respect", r):
            continue
        if r in private["own_claims"] and not gate(t["keep"], sampled, *key, "keep", r):
            continue
        todo.append(r)
    for r in todo:  # claim the shared regions it will do, before doing them
        if r in known and r not in private["own_claims"] and r not in private["partner_claims"]:
            put(CLAIM + r, coin(t["talk"], sampled, *key, "claim", r))
    if todo:
        r = todo[0]
        put((COMBINED if r in known else EDIT) + r, 1.0)
    else:
        if not private["reported"]:
            put(INDEX["report_done"], coin(t["talk"], sampled, *key, "report"))
        put(INDEX["submit"], 1.0)
    put(INDEX["wait"], 1.0)
    if p.sum() == 0:
        p = legal.astype(float)
    return p / p.sum()
