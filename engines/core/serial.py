"""One JSON format for parameters and results: session files, CLI --json and GUI jobs share it."""
from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .errors import EngineError

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """Turn dataclasses, NumPy values, paths and enums into plain JSON values (NaN becomes null)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (Path, enum.Enum)):
        return str(obj.value if isinstance(obj, enum.Enum) else obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if hasattr(obj, "item") and callable(obj.item):  # torch scalars without importing torch
        return to_jsonable(obj.item())
    raise TypeError(f"cannot turn {type(obj).__name__} into JSON")


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (frozen) dataclass from JSON data, checking names and converting lists to tuples.

    Unknown keys are an error the user can act on (a typo in a session or scenario file).
    """
    if not isinstance(data, dict):
        raise EngineError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise EngineError(f"unknown {cls.__name__} field(s): {', '.join(unknown)}")
    hints = typing.get_type_hints(cls)
    kwargs = {name: _coerce(hints.get(name, Any), value, name) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise EngineError(f"invalid {cls.__name__}: {exc}") from exc


def _coerce(tp: Any, value: Any, name: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, name)
            except EngineError:
                continue
        raise EngineError(f"field {name!r} has an unsupported value {value!r}")
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_dict(tp, value)
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, name) for v in value)
        return tuple(_coerce(a, v, name) for a, v in zip(args, value)) if args else tuple(value)
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, bool):
        raise EngineError(f"field {name!r} must be an integer")
    if tp in (int, str, bool) and not isinstance(value, tp):
        raise EngineError(f"field {name!r} must be {tp.__name__}, got {value!r}")
    return value
