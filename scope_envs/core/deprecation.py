"""Renamed keywords, kept for one release: ``renamed(new, old, ...)`` gives the value to use and warns.

The simulator's sharpening exponent was called ``gamma`` until issue 26; to an RL reader ``gamma`` is a
discount (``PPOConfig.gamma`` still is), so the keyword became ``sharpening``. ``gamma=`` still works, with a
``DeprecationWarning``, until the next release.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     renamed(None, 5.0, "sharpening", "gamma", default=3.0)
    5.0
    >>> caught[0].category.__name__
    'DeprecationWarning'
"""

from __future__ import annotations

import warnings


def renamed(new_value, old_value, new: str, old: str, default=None):
    """The value of keyword ``new``, given that ``old`` is its deprecated name: ``old_value`` (with a
    ``DeprecationWarning``) where only it is given, ``default`` where neither is; both given is an error."""
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None:
        raise ValueError(f"give {new}= (the new name) or {old}= (deprecated), not both")
    warnings.warn(f"{old}= is deprecated: it is now called {new}= (removed in the next release)",
                  DeprecationWarning, stacklevel=3)
    return old_value


def sharpening_of(sharpening, gamma, default=None):
    """``renamed`` for the simulator's sharpening exponent (``gamma`` its deprecated name)."""
    return renamed(sharpening, gamma, "sharpening", "gamma", default)
