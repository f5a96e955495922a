"""Values on the wire: JSON-safe infos, and numpy arrays packed as base64 for the batched endpoint.

``jsonable`` turns what an env puts in ``infos`` (numpy scalars and arrays, tuples) into plain JSON
values. The batched endpoint moves (N, dim) arrays every step, where JSON number lists cost more than the
step itself, so ``pack``/``unpack`` carry numeric arrays as ``{"__nd__": base64, "dtype", "shape"}`` and
object arrays (a finished episode's persona, its user acts) as ``{"__obj__": [...]}``; both sides of the
batched endpoint use them, and nothing else does.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from scope_envs.files import jsonable  # noqa: F401  (the wire's plain JSON values are the output files')

# dtypes a packed array may name: a peer cannot make the decoder build an arbitrary dtype
WIRE_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"})
MAX_PACKED_ELEMENTS = 1 << 24


def pack(value: Any) -> Any:
    """``jsonable``, except numeric numpy arrays, packed (``unpack`` restores them with dtype and shape)."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"__obj__": [pack(v) for v in value.tolist()]}
        if value.dtype.name in WIRE_DTYPES:
            data = np.ascontiguousarray(value)
            return {"__nd__": base64.b64encode(data.tobytes()).decode("ascii"), "dtype": value.dtype.name,
                    "shape": list(value.shape)}
        return jsonable(value)
    if isinstance(value, dict):
        return {str(k): pack(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [pack(v) for v in value]
    return jsonable(value)


def unpack(value: Any) -> Any:
    """The inverse of ``pack``; a malformed packed array raises ``ValueError`` naming the problem."""
    if isinstance(value, dict):
        if "__nd__" in value:
            return _array(value)
        if "__obj__" in value:
            items = value["__obj__"]
            if not isinstance(items, list):
                raise ValueError("a packed object array must hold a list")
            out = np.empty(len(items), object)
            out[:] = [unpack(v) for v in items] if items else []
            return out
        return {k: unpack(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unpack(v) for v in value]
    return value


def _array(spec: dict) -> np.ndarray:
    dtype, shape, data = spec.get("dtype"), spec.get("shape"), spec.get("__nd__")
    if not isinstance(dtype, str) or dtype not in WIRE_DTYPES:  # (a list or an object is unhashable)
        raise ValueError(f"packed array: dtype must be one of {sorted(WIRE_DTYPES)}, got {dtype!r:.60}")
    if (not isinstance(shape, list) or len(shape) > 4
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s for s in shape)):
        raise ValueError(f"packed array: shape must be a list of at most 4 non-negative ints, got {shape!r}")
    size = math.prod(shape)  # (exact: numpy's int64 product wraps, [2**62, 2**62] would pass as 0)
    if size > MAX_PACKED_ELEMENTS:
        raise ValueError(f"packed array: {size} elements, the limit is {MAX_PACKED_ELEMENTS}")
    if not isinstance(data, str):
        raise ValueError("packed array: __nd__ must be a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, TypeError) as e:
        raise ValueError(f"packed array: bad base64 ({e})") from None
    if len(raw) != size * np.dtype(dtype).itemsize:
        raise ValueError(f"packed array: {len(raw)} bytes do not make shape {shape} of {dtype}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
