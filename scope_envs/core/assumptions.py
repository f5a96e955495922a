"""Named variants of a behaviour model's untestable assumptions (the held-out proxies' switches).

A game's proxy declares a frozen dataclass of its assumptions and a ``VARIANTS`` dict of named instances
(``"default"`` among them); ``resolve`` turns what a user passes as ``assumptions=`` into one of them.
"""

from __future__ import annotations


def resolve(value, cls: type, variants: dict, game: str):
    """``None`` (the default), a name of ``variants``, a dict of ``cls``'s fields, or a ``cls``; ValueError
    naming the choices otherwise."""
    if value is None:
        return variants["default"]
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        if value not in variants:
            raise ValueError(f"{game} assumptions must be one of {sorted(variants)} (or a dict of fields), "
                             f"got {value!r}")
        return variants[value]
    if isinstance(value, dict):
        unknown = set(value) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"{game} assumptions take {sorted(cls.__dataclass_fields__)}, not {sorted(unknown)}")
        return cls(**value)
    raise ValueError(f"{game} assumptions must be a variant name, a dict or None, got {type(value).__name__}")


def check_magnitudes(assumptions, names: tuple[str, ...], top: float = 10.0) -> None:
    """ValueError naming the first of ``names`` that is not a number in [0, ``top``]."""
    for name in names:
        value = getattr(assumptions, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= top:
            raise ValueError(f"{name} must be a number in [0, {top:g}], got {value!r}")
