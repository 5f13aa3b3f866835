"""Checks for the values a session file gives a panel, one wording for all panels.

A panel checks every value before it applies any, so a bad session changes nothing; each check
returns the value it accepts or raises ValueError with one sentence that names the key and the
bad value ("seed must be a whole number from 0 to 1000000, not 'x'"). Qt-free: a panel passes its
widgets' ranges and names in.

A panel's saved state is a frozen dataclass (``panels/<method>/session.py``) whose fields are made
with ``setting(check, key, ...)``; ``engines.core.serial.from_dict`` reads a session into it,
calling each field's check, so there is no hand-written loop over keys.
"""

from __future__ import annotations

import dataclasses
import math
import reprlib
from collections.abc import Callable, Collection
from typing import Any

from engines.core.serial import CHECK, KEY


def whole(value: Any, key: str, low: int, high: int) -> int:
    """An int from ``low`` to ``high``: JSON true/false is no number, a float is refused rather than
    truncated, and the range keeps a huge value from overflowing a Qt widget's int."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key} must be a whole number from {low} to {high}, not {shown(value)}")
    return value


def number(value: Any, key: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite int or float, as a float, from ``low`` to ``high`` (no range when both are left
    out): NaN and infinity would poison every computation downstream, and a bool is no number."""
    if not _finite(value) or not low <= value <= high:
        span = "" if (low, high) == (-math.inf, math.inf) else f" from {low} to {high}"
        raise ValueError(f"{key} must be a number{span}, not {shown(value)}")
    return float(value)


def flag(value: Any, key: str) -> bool:
    """JSON true or false only: ``bool("false")`` is True, so nothing else is taken for one."""
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, not {shown(value)}")
    return value


def text(value: Any, key: str) -> str:
    """A string (a file name, a combo's text), never a number or list turned into one."""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text, not {shown(value)}")
    return value


def choice(value: Any, key: str, names: Collection[str]) -> str:
    """One of ``names``; the sentence lists them, so the user can fix the file."""
    if not isinstance(value, str) or value not in names:
        raise ValueError(f"unknown {key} {shown(value)} (choose {', '.join(names)})")
    return value


def mapping(value: Any, key: str) -> dict[str, Any]:
    """A JSON object, before its entries are looked up by name."""
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be an object of name: value, not {shown(value)}")
    return value


def named(value: Any, key: str, names: Collection[str]) -> dict[str, Any]:
    """An object keyed only by ``names`` (some may be missing): an unknown name is a typo or a
    session from another version, and is said rather than silently dropped."""
    for name in mapping(value, key):
        choice(name, key, names)
    return value


def _finite(value: Any) -> bool:
    """An int (never infinite, however large) or a finite float; not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def shown(value: Any) -> str:
    """The bad value as every sentence here shows it (a panel's own checks use it too): its repr,
    cut short so a pasted array stays one line."""
    return reprlib.repr(value)


def optional(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check``, except that JSON null is taken as it is (no choice made when it was saved)."""

    def read(value: Any, key: str, *args: Any) -> Any:
        return None if value is None else check(value, key, *args)

    return read


def setting(
    check: Callable[..., Any], key: str, *args: Any, default: Any = None, default_factory: Any = dataclasses.MISSING, json_key: str | None = None
) -> Any:
    """A field of a panel's session dataclass, read by ``check(value, key, *args)`` when the session
    has it (``engines.core.serial.from_dict`` calls it: its sentence names ``key``) and ``default``
    when it has not. ``json_key`` is the session's name for it where that is no Python name ("class")."""
    metadata: dict[str, Any] = {CHECK: lambda value: check(value, key, *args)}
    if json_key is not None:
        metadata[KEY] = json_key
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)
