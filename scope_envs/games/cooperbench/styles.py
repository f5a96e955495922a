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

``policy`` turns styles and views into act probabilities, for any number of
teammates at once (``decide``: one, from its ``game.private`` view). In *expected*
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

from scope_envs.core import seal
from scope_envs.core.game import Persona
from scope_envs.games.cooperbench.dialogue_acts import CLAIM, COMBINED, EDIT, INDEX
from scope_envs.games.cooperbench.world import N_REGIONS

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


def persona(split: str, i: int) -> Persona:
    if split == "heldout":  # (before the cache: a card drawn once stays sealed)
        seal.check(f"held-out card {i}")
    return _persona(split, i)


@functools.lru_cache(maxsize=None)
def _persona(split: str, i: int) -> Persona:
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
    """A reply's coin: its probability ``p`` (expected mode), or whether the coin of ``key`` came up (sampled
    mode: ``u < p``, ``u`` the CRC-32 of ``repr(key)`` over 2**32, so a persona flips it once per key)."""
    if not sampled:
        return p
    u = zlib.crc32(repr(key).encode()) / 2**32
    return float(u < p)


@functools.cache
def _coin_keys(max_turns: int) -> tuple[list[bytes], dict]:
    """``coins``' keys in order, as the bytes that follow the style and task in ``repr((style_id, task, *key))``
    (``", 'answer', 3)"``), and where each entry's run of keys lies in that order (a slice; an index for a scalar)."""
    runs = {"answer": [("answer", t) for t in range(max_turns + 1)], "announce": [("announce",)],
            **{name: [(name, r) for r in range(N_REGIONS)] for name in ("respect", "keep", "claim")},
            "report": [("report",)]}
    tails, where = [], {}
    for name, keys in runs.items():
        where[name] = len(tails) if name in ("announce", "report") else slice(len(tails), len(tails) + len(keys))
        tails += [("".join(f", {part!r}" for part in key) + ")").encode() for key in keys]
    return tails, where


@functools.lru_cache(maxsize=65536)
def coins(style_id: str, task: str, max_turns: int) -> dict[str, np.ndarray | float]:
    """The uniforms behind ``coin`` in sampled mode for one (style, task): every key a decision can ask up to
    turn ``max_turns`` (``coin`` is ``u < p`` with this ``u``): ``zlib.crc32(repr((style_id, task, *key)).encode())
    / 2**32``, each CRC continued from the one of the shared head ``(style_id, task``. Cached: read, never write."""
    tails, where = _coin_keys(max_turns)
    head = zlib.crc32(f"({style_id!r}, {task!r}".encode())
    u = np.array([zlib.crc32(tail, head) for tail in tails]) / 2**32
    return {name: float(u[w]) if isinstance(w, int) else u[w] for name, w in where.items()}


def gate(p):
    """A yes/no commitment of the card (respect a claim, keep one's own), from ``p`` its chance (expected mode)
    or its coin (sampled mode, 0 or 1): its likelier side, ``p >= 0.5``, one test for both modes. A commitment
    is a branch, not a share of one reply's mass, so the reference plays the card's typical commitment, the same
    all episode: an ignorer ignores claims, a claim-breaker drops its own. (Until v0.3 the expected mode took any
    chance above 0 as certain, so every reference partner respected claims and kept its own.)"""
    return p >= 0.5


def leaves_shared(talk, sampled: bool):
    """Whether a partner of this ``talk`` leaves the regions it knows both features need to its teammate
    (unless it claimed them itself): in the reference model (expected mode), a card that does not take the
    lead (``talk`` below 1/2) waits for its teammate to integrate the shared work; a leader (``talk`` 1/2
    and above) claims and integrates it. Under the one-owner merge rule (``world.merge``) a leader needs
    its teammate to yield a shared region or to claim it first, and a card that leaves it needs its teammate
    to integrate it. Such a quiet card is also derailed by chatter: once its teammate has claimed a region,
    it stops waiting on the thread and does its own feature alone (``policy``: its own change in every
    region it needs, whatever it was told or asked to leave), so a claim, harmless to a leader, costs the
    shared regions with it. The sampled mode (the held-out human proxy) keeps v0's rule: every partner integrates
    what it knows is shared (the held-out behaviour model is not changed while training-side worlds are
    designed)."""
    return np.logical_and(not sampled, np.asarray(talk) < 0.5)


def policy(view: dict, legal: np.ndarray, traits: np.ndarray, u: dict | None) -> np.ndarray:
    """The style policy for k teammates at once, the one definition of how a card plays: probabilities (k, acts).

    ``view``: each teammate's side as arrays, ``asked`` and ``reported`` (k,), ``turn`` (k,), ``needs``,
    ``known``, ``own_claims`` and ``partner_claims`` (k, regions) bool, ``edits`` (k, regions) 0 none, 1 its
    own feature's change, 2 both; ``legal`` (k, acts); ``traits`` (k, 5) in ``TRAITS`` order; ``u`` the coin
    uniforms (``coins`` stacked: each key an array over the k) in sampled mode, or None in expected mode
    (every coin its probability). Acts are put in order, each taking ``q`` of the mass still unspent:
    answer a pending question, announce on the first turn, claim the shared regions it will do, edit the
    first region left (combined where it is shared), else report and submit; then wait."""
    k = len(legal)
    t = {name: traits[:, j] for j, name in enumerate(TRAITS)}
    p = np.zeros((k, legal.shape[1]))
    mass = np.ones(k)
    rows = np.arange(k)

    def put(act, q, where=None):
        nonlocal mass
        ok = legal[:, act] if isinstance(act, int) else legal[rows, act]
        if where is not None:
            ok = ok & where
        if not ok.any():
            return
        qo = q if np.ndim(q) == 0 else q[ok]
        if isinstance(act, int):
            p[ok, act] += mass[ok] * qo
        else:
            p[rows[ok], act[ok]] += mass[ok] * qo
        mass = np.where(ok, mass * (1.0 - q), mass)

    def flip(prob, uniform):  # ``coin`` on arrays: the probability, or whether its coin came up
        return prob if u is None else (uniform < prob).astype(float)

    asked, turn = view["asked"], view["turn"]
    put(INDEX["answer"], flip(t["answer"], None if u is None else u["answer"][rows, turn]), asked)
    put(INDEX["announce_plan"], flip(t["announce"], None if u is None else u["announce"]), turn == 0)
    needs, edits = view["needs"], view["edits"]
    partner_claims, own_claims = view["partner_claims"], view["own_claims"]
    respect = flip(t["respect"][:, None], None if u is None else u["respect"])
    keep = flip(t["keep"][:, None], None if u is None else u["keep"])
    leaves = leaves_shared(t["talk"], u is not None)
    alone = leaves & partner_claims.any(1)  # derailed by a claim: plans as if told nothing, ignores claims
    known = view["known"] & ~alone[:, None]
    skip = (edits > 0) & ((edits == 2) | ~known)
    skip |= known & ~own_claims & leaves[:, None]
    skip |= partner_claims & gate(respect) & ~alone[:, None]
    skip |= own_claims & ~gate(keep)
    todo = needs & ~skip
    claim = todo & known & ~own_claims & ~partner_claims
    if claim.any():  # claim the shared regions it will do, before doing them, in region order
        talk = np.broadcast_to(flip(t["talk"][:, None], None if u is None else u["claim"]), (k, N_REGIONS))
        for r in np.flatnonzero(claim.any(0)).tolist():
            put(CLAIM + r, talk[:, r], claim[:, r])
    has = todo.any(1)
    first = todo.argmax(1)
    if has.any():
        put(np.where(known[rows, first], COMBINED, EDIT) + first, 1.0, has)
    if not has.all():
        put(INDEX["report_done"], flip(t["talk"], None if u is None else u["report"]), ~has & ~view["reported"])
        put(INDEX["submit"], 1.0, ~has)
    put(INDEX["wait"], 1.0)
    total = p.sum(1, keepdims=True)
    empty = total[:, 0] == 0
    if empty.any():
        p[empty] = legal[empty]
        total[empty] = p[empty].sum(1, keepdims=True)
    return p / total


def regions_row(regions) -> np.ndarray:
    """A set of regions as one row of flags."""
    row = np.zeros((1, N_REGIONS), bool)
    row[0, list(regions)] = True
    return row


def decide(style: Persona, private: dict, legal: np.ndarray, sampled: bool) -> np.ndarray:
    """Probabilities over the game's acts for a teammate of this style, from its ``game.private`` view:
    ``policy`` on a batch of one."""
    edits = np.zeros((1, N_REGIONS), np.int64)
    for r, features in private["edits"].items():
        edits[0, r] = len(features)
    view = {"asked": np.array([private["asked"]]), "turn": np.array([private["turn"]]),
            "reported": np.array([private["reported"]]), "needs": regions_row(private["needs"]),
            "known": regions_row(private["known"]), "own_claims": regions_row(private["own_claims"]),
            "partner_claims": regions_row(private["partner_claims"]), "edits": edits}
    u = None
    if sampled:
        u = {key: np.asarray(value)[None] for key, value in coins(style.id, private["task"], private["turn"]).items()}
    traits = np.array([[style.traits[name] for name in TRAITS]])
    return policy(view, np.asarray(legal, bool)[None], traits, u)[0]
