"""The batched engine's p4g reply weights (``P4GBatch.reference_weights`` / ``human_proxy_weights``: log-space
tables, one exponential) against the reply distributions the scalar game computes (``reference_reply``,
``human_proxy_reply``): normalized, they are the same distributions up to rounding, on every kind of legal mask."""

import numpy as np
import pytest
from scope_envs.agents.base import normalize, sharpen

from scope_envs.games.p4g.batched import (
    FIRST_AMOUNT,
    N_PERSUADEE_ACTS,
    N_PERSUADER_ACTS,
    P4GBatch,
)


def batch(n: int = 400, seed: int = 0) -> tuple[P4GBatch, np.ndarray, np.ndarray]:
    """Slots at random willingness after random persuader acts, with the persuadee's legal masks as the game
    makes them (the final reply, an amount stated or not) plus some random ones."""
    rng = np.random.default_rng(seed)
    b = P4GBatch(n)
    b.ref_base[:], b.ref_sum[:], b.proxy_w[:] = rng.normal(0, 2, n), rng.normal(0, 1, n), rng.normal(0, 3, n)
    b.last_persuader[:] = rng.integers(0, N_PERSUADER_ACTS, n)
    b.final[:] = rng.random(n) < 0.3
    b.stated[:] = np.where(rng.random(n) < 0.5, -1, rng.integers(0, 9, n))
    legal = b.legal(1, np.ones(n, np.int64))
    legal[: n // 4] = rng.random((n // 4, N_PERSUADEE_ACTS)) < 0.5
    return b, np.arange(n), legal


@pytest.mark.parametrize("gamma,cooperation", [(1.0, 0.0), (3.0, 0.0), (2.5, 0.7), (4.0, -1.0)])
def test_reference_weights_are_the_sharpened_reference(gamma, cooperation):
    b, idx, legal = batch()
    exact = normalize(sharpen(b.reference_reply(idx, legal, cooperation), gamma), legal)
    w = b.reference_weights(idx, legal, cooperation, gamma)
    assert (w[~legal] == 0).all()
    has = w.sum(1) > 0
    assert has[legal.any(1)].all()
    np.testing.assert_allclose(w[has] / w[has].sum(1, keepdims=True), exact[has], rtol=0, atol=1e-12)
    # not vacuous: another sharpening is another distribution
    other = b.reference_weights(idx, legal, cooperation, gamma + 1.0)
    assert np.abs(other[has] / other[has].sum(1, keepdims=True) - exact[has]).max() > 1e-3


def test_human_proxy_weights_are_its_distribution():
    b, idx, legal = batch(seed=1)
    exact = b.human_proxy_reply(idx, legal)
    w = b.human_proxy_weights(idx, legal)
    has = w.sum(1) > 0
    assert has[legal.any(1)].all() and (w[~legal] == 0).all()
    np.testing.assert_allclose(w[has] / w[has].sum(1, keepdims=True), exact[has], rtol=0, atol=1e-12)
    # the amounts carry mass where the game's final reply allows nothing else
    final = b.final & (b.stated < 0)
    final[: len(final) // 4] = False  # (the random masks)
    assert (w[final][:, FIRST_AMOUNT:].sum(1) > 0).all()
