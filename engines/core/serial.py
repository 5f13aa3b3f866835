"""One JSON format for parameters and results: session files, CLI --json and GUI jobs share it.

Two field metadata entries let a dataclass describe a JSON object whose rules are not its types:
``KEY`` names the JSON key when it cannot be the field's name ("class"), and ``CHECK`` is a
callable that reads the field's value instead of its type (a session's ranges and choices); its
``ValueError`` is the one sentence the user reads.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .errors import EngineError

T = TypeVar("T")
KEY = "json_key"
CHECK = "check"


def _key(f: dataclasses.Field) -> str:
    return f.metadata.get(KEY, f.name)


def to_jsonable(obj: Any) -> Any:
    """Turn dataclasses, NumPy values, paths and enums into plain JSON values (NaN becomes null)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {_key(f): to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr}
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
    """Build a (frozen) dataclass from JSON data, checking names, types and shapes.

    Unknown keys, missing fields and wrong-typed values are errors the user can act on (a typo in a
    session or scenario file), so each is one sentence naming the field, never a crash later on.
    Lists become tuples, and null in a float field becomes NaN (the inverse of ``to_jsonable``).
    """
    return _build(cls, data, "")


def _build(cls: type[T], data: Any, path: str) -> T:
    where = f" at {path}" if path else ""
    if not isinstance(data, dict):
        if path:
            raise EngineError(f"field {path!r} must be an object ({cls.__name__}), got {_describe(data)}")
        raise EngineError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    fields = {_key(f): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise EngineError(f"unknown {cls.__name__} field(s){where}: {', '.join(unknown)}")
    missing = [
        name
        for name, f in fields.items()
        if name not in data and f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise EngineError(f"{cls.__name__}{where} lacks the field(s) {', '.join(repr(m) for m in missing)}")
    hints = typing.get_type_hints(cls)
    prefix = f"{path}." if path else ""
    kwargs = {fields[key].name: _read(fields[key], hints.get(fields[key].name, Any), value, prefix + key) for key, value in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise EngineError(f"invalid {cls.__name__}{where}: {exc}") from exc


def _read(f: dataclasses.Field, tp: Any, value: Any, name: str) -> Any:
    check = f.metadata.get(CHECK)
    if check is None:
        return _coerce(tp, value, name)
    try:
        return check(value)
    except ValueError as exc:
        raise EngineError(str(exc)) from None


def _describe(value: Any) -> str:
    """A short picture of a bad value for an error sentence (a huge list is not echoed whole)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{type(value).__name__} {text[:37]}..."


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
        raise EngineError(f"field {name!r} has an unsupported value {_describe(value)}")
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, name)
    if tp is tuple or origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise EngineError(f"field {name!r} must be a list, got {_describe(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{name}[{i}]") for i, v in enumerate(value))
        if args and len(value) != len(args):
            raise EngineError(f"field {name!r} must be a list of {len(args)} values, got {_describe(value)}")
        return tuple(_coerce(a, v, f"{name}[{i}]") for i, (a, v) in enumerate(zip(args, value))) if args else tuple(value)
    if (tp is dict or origin is dict) and not isinstance(value, dict):
        raise EngineError(f"field {name!r} must be an object, got {_describe(value)}")
    if tp is float:
        if value is None:
            return math.nan
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise EngineError(f"field {name!r} must be a number, got {_describe(value)}")
        return float(value)
    if tp is int and isinstance(value, bool):
        raise EngineError(f"field {name!r} must be an integer")
    if tp in (int, str, bool) and not isinstance(value, tp):
        raise EngineError(f"field {name!r} must be {tp.__name__}, got {_describe(value)}")
    return value


def json_loads(text: str, name: str) -> Any:
    """Parse a user's JSON, or one sentence naming the file: where it is invalid, or that it nests
    too deeply (thousands of brackets would otherwise be a RecursionError traceback)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EngineError(f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise EngineError(f"{name} is not valid JSON here: its lists or objects nest too deeply") from None
