"""Tool machinery: declaring tools, their OpenAI schemas, argument checks and calls.

A tool is a plain function ``fn(state, **arguments)`` declared with ``@tool``;
its signature's annotations give the JSON schema (OpenAI function format) and
the argument checks. As in tau^2-bench, a failing tool never raises out of a
call: ``call`` returns ``("Error: <why>", True)`` to the caller as the tool
message, and the database keeps whatever the tool did before it failed (the tool
code orders its checks before its writes, as upstream does).

Upstream coerces a few arguments through pydantic (an integral float for an int,
an int for a float); ``_check`` does the same so that equal requests give equal
databases, and rejects what pydantic would reject (a string for an int, a value
outside a ``Literal``) before the tool runs. Numbers are checked before any
conversion: an integer or number argument must be finite (JSON text may carry
``1e999``, ``NaN`` or ``Infinity``, which Python reads as floats) and at most
the largest float in size (an integer of thousands of digits); otherwise the
call gets an ``Error: ...`` tool message, as upstream's validation gives for a
bad argument. (Upstream's pydantic accepts ``inf``/``nan`` for a ``float``
argument; here no tool receives one.) An arithmetic error a tool still meets
(``OverflowError``, ``ZeroDivisionError``) is a tool error too (``World.call``).
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal, Union

READ, WRITE, GENERIC = "read", "write", "generic"


class ToolError(ValueError):
    """A tool's refusal; its message goes back to the caller as ``Error: ...``."""


@dataclass
class Tool:
    name: str
    fn: Callable
    kind: str  # read | write | generic
    description: str
    params: dict[str, tuple[Any, bool, Any, str]]  # name -> (annotation, required, default, description)

    @property
    def schema(self) -> dict:
        props, required = {}, []
        for name, (anno, req, _default, desc) in self.params.items():
            props[name] = {**_json_type(anno), "description": desc}
            if req:
                required.append(name)
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": props, "required": required}}}


def tool(kind: str, description: str, /, **arg_docs: str) -> Callable:
    """Declare ``fn(state, ...)`` a tool of ``kind``; ``arg_docs`` describe its arguments."""

    def wrap(fn: Callable) -> Callable:
        params = {}
        for i, (name, p) in enumerate(inspect.signature(fn).parameters.items()):
            if i == 0:
                continue  # the state
            required = p.default is inspect.Parameter.empty
            anno = Any if p.annotation is inspect.Parameter.empty else p.annotation
            params[name] = (anno, required, None if required else p.default, arg_docs.get(name, name))
        fn.tool = Tool(fn.__name__, fn, kind, description, params)
        return fn

    return wrap


def collect(namespace: dict) -> dict[str, Tool]:
    """The tools declared in a module namespace, by name, in declaration order."""
    return {v.tool.name: v.tool for v in namespace.values() if callable(v) and hasattr(v, "tool")}


def _json_type(anno) -> dict:
    origin, args = typing.get_origin(anno), typing.get_args(anno)
    if anno is str:
        return {"type": "string"}
    if anno is bool:
        return {"type": "boolean"}
    if anno is int:
        return {"type": "integer"}
    if anno is float:
        return {"type": "number"}
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    if origin in (list, tuple):
        return {"type": "array", "items": _json_type(args[0]) if args else {}}
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _json_type(inner[0]) if len(inner) == 1 else {}
    if anno is dict or origin is dict:
        return {"type": "object"}
    if isinstance(anno, dict):  # an object schema given inline (nested records)
        return anno
    return {}


def _check(name: str, value: Any, anno: Any) -> Any:
    """Check (and lightly coerce, as pydantic would) one argument; raise ToolError."""
    origin, args = typing.get_origin(anno), typing.get_args(anno)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check(name, value, inner[0]) if len(inner) == 1 else value
    if anno is str:
        if not isinstance(value, str):
            raise ToolError(f"argument {name!r} must be a string, got {type(value).__name__}")
        return value
    if anno is bool:
        if not isinstance(value, bool):
            raise ToolError(f"argument {name!r} must be a boolean, got {type(value).__name__}")
        return value
    if anno is int:
        # checked before any conversion: int(inf) and int(nan) raise, an integral float converts exactly
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not value.is_integer()):
            raise ToolError(f"argument {name!r} must be an integer, got {value!r}")
        return int(_in_range(name, value))
    if anno is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolError(f"argument {name!r} must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ToolError(f"argument {name!r} must be a finite number, got {value!r}")
        return float(_in_range(name, value))
    if origin is Literal:
        if value not in args:
            raise ToolError(f"argument {name!r} must be one of {list(args)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ToolError(f"argument {name!r} must be an array, got {type(value).__name__}")
        return [_check(f"{name}[{i}]", v, args[0]) for i, v in enumerate(value)] if args else value
    if (anno is dict or origin is dict or isinstance(anno, dict)) and not isinstance(value, dict):
        raise ToolError(f"argument {name!r} must be an object, got {type(value).__name__}")
    if isinstance(anno, dict) and "properties" in anno:
        # a nested record (a passenger, a flight, a payment): required fields checked, unknown
        # fields dropped, as the pydantic model upstream builds from it does
        missing = [k for k in anno.get("required", ()) if k not in value]
        if missing:
            raise ToolError(f"argument {name!r} is missing field(s) {missing}")
        return {k: _check(f"{name}.{k}", value[k], _PY[anno["properties"][k].get("type")])
                for k in anno["properties"] if k in value}
    return value


def _in_range(name: str, value: int | float) -> int | float:
    """A number a tool can compute with: at most the largest float in size (RFC 8259's interoperable range;
    ``float()`` of a larger integer raises OverflowError)."""
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        raise ToolError(f"argument {name!r} is out of range: an integer of {value.bit_length()} bits, larger than "
                        f"{sys.float_info.max:.4g}")
    return value


_PY = {"string": str, "integer": int, "number": float, "boolean": bool, None: Any}


def record(**fields: str) -> dict:
    """Schema of a nested record argument: ``record(first_name="string", ...)``; all fields required."""
    return {"type": "object", "properties": {k: {"type": t} for k, t in fields.items()}, "required": list(fields)}


def bind(t: Tool, arguments: Any) -> dict:
    """Checked keyword arguments for ``t``; ToolError on a missing, unknown or mistyped one."""
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments of {t.name} must be a JSON object, got {type(arguments).__name__}")
    unknown = [k for k in arguments if k not in t.params]
    if unknown:
        raise ToolError(f"{t.name}() got unexpected argument(s) {unknown}; it takes {list(t.params)}")
    missing = [k for k, (_, req, _, _) in t.params.items() if req and k not in arguments]
    if missing:
        raise ToolError(f"{t.name}() missing required argument(s) {missing}")
    return {k: _check(k, v, t.params[k][0]) for k, v in arguments.items()}


def to_content(resp: Any) -> str:
    """A tool result as tau^2-bench's tool message content (``Environment.to_json_str``)."""
    if isinstance(resp, str):
        return resp
    if isinstance(resp, (bool, int, float)):
        return json.dumps(str(resp))
    return json.dumps(resp, default=str)
