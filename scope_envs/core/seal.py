"""The held-out side, sealed while a benchmark entrant trains.

Every policy is scored on the held-out human proxies, the reference model on held-out cards and the held-out
simulator panel, and no training run may see them (docs/architecture.md §4.1). The built-in rows keep to that
by construction; a method plug-in is the user's code, so ``scope-envs bench`` runs its ``train`` under
``sealed()``: in this process, building a ``<game>-heldout`` env (``scope_envs.make``, ``make_vec``), a
human-proxy simulator, the held-out panel or a held-out card raises ``HeldOutSealed``, which fails the
method's run with that message. The benchmark's own evaluation, learning-curve points included, runs
``unsealed()``.

It is a guard against a mistake, and against the routes the package documents; it is not a sandbox: code that
reads the held-out models' parameters by other means, or trains in a process of its own, is not seen.

    >>> import scope_envs
    >>> with sealed():
    ...     try:
    ...         scope_envs.make("p4g-heldout")
    ...     except HeldOutSealed as e:
    ...         print(str(e)[:62])
    p4g-heldout is the held-out side, sealed while a benchmark met
"""

from __future__ import annotations

import contextlib

_depth = 0  # sealed() calls open in this process (threads included: they share the held-out side)


class HeldOutSealed(PermissionError):
    """The held-out side was asked for while a benchmark method trains (the message names what)."""


@contextlib.contextmanager
def sealed():
    """The held-out side refused (``check``) inside the block."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


@contextlib.contextmanager
def unsealed():
    """The held-out side open inside the block, whatever encloses it (the benchmark's own evaluation)."""
    global _depth
    depth, _depth = _depth, 0
    try:
        yield
    finally:
        _depth = depth


def check(what: str) -> None:
    """``HeldOutSealed`` naming ``what`` when sealed; nothing otherwise."""
    if _depth:
        raise HeldOutSealed(f"{what} is the held-out side, sealed while a benchmark method trains: every policy is "
                            "evaluated on it afterwards, and no training run may see it (train on the training "
                            "regimes; the ceiling, a built-in row, is the one that trains on the held-out "
                            "behaviour model)")
