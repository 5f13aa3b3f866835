"""What a session file keeps of the attention panel, read by ``engines.core.serial.from_dict``.

Qt-free. A setting the session lacks takes its default, as it always has; one it has must pass its
check (``panels.session_checks``), and a preset's parameters, custom vectors and a painting are
checked as the engine checks them, or nothing of the session is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engines.attention import library
from engines.attention.params import CPU_BACKENDS, DIM_RANGE, HEADS_RANGE, MAX_N, OPERATIONS, SOURCES, TILE_RANGE
from engines.core import EngineError, from_dict
from panels.session_checks import choice, flag, mapping, named, number, optional, setting, shown, text, whole

LIVE_REPEATS_RANGE = (1, 50)  # the panel's: more repeats would lag behind the edits a live timing follows
MAX_SESSION_INTS = 1 << 18  # custom vectors larger than this are not written into session files
PRESETS = (*library.MASKS, "custom")


def _object(cls: type, key: str):
    """A nested object of the session, read as its own dataclass."""
    return lambda value, _key: from_dict(cls, mapping(value, key))


def _backends(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list of {', '.join(CPU_BACKENDS)}, not {shown(value)}")
    return tuple(choice(b, "timing backend", CPU_BACKENDS) for b in value)


@dataclass(frozen=True, eq=False)
class Vectors:
    """Custom FlashMask vectors as a session keeps them."""

    indices: np.ndarray  # int [B, H, N_k, C]
    causal: bool
    n_q: int | None = None


def _vectors(value: Any, key: str) -> Vectors:
    """Custom vectors, validated as the engine does."""
    from engines.attention.representation import make_mask

    vectors = named(value, key, ("indices", "causal", "n_q"))
    if "indices" not in vectors or "causal" not in vectors:
        raise ValueError(f"vectors must give indices and causal, not {shown(value)}")
    causal = flag(vectors["causal"], "vectors causal")
    n_q = vectors.get("n_q")
    if n_q is not None:
        n_q = whole(n_q, "vectors n_q", 1, MAX_N)
    try:
        indices = np.asarray(vectors["indices"])
        make_mask(indices, causal, n_q)
        return Vectors(indices.astype(np.int64), causal, n_q)
    except (EngineError, ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"vectors are not FlashMask vectors: {exc}") from None


def _painting(value: Any, key: str) -> np.ndarray:
    """A painted mask (rows of 0/1), validated as the engine does."""
    from engines.attention.dense import from_dense

    try:
        painted = np.asarray(value)
        if painted.ndim != 2:
            raise EngineError(f"it must be rows of 0/1, not an array of shape {list(painted.shape)}")
        from_dense(painted)
        return painted.astype(bool)
    except (EngineError, ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{key} is not a mask: {exc}") from None


def preset_params(preset: str, n: int, params: dict[str, Any]) -> dict[str, Any]:
    """A preset's parameters: each known to the preset and of its widget's kind and range, then
    checked together by the engine (a token count within N, sizes that parse)."""
    spec = library.MASKS[preset]
    kinds = {p.name: p for p in spec.params}
    out: dict[str, Any] = {}
    for name, value in params.items():
        p = kinds[choice(name, f"{preset} parameter", kinds)]
        key = f"parameter {name}"
        if p.kind == "int":
            out[name] = whole(value, key, int(p.minimum), int(p.maximum) if p.maximum is not None else MAX_N)
        elif p.kind == "float":
            out[name] = number(value, key, float(p.minimum), float(p.maximum) if p.maximum is not None else 1e9)
        else:
            out[name] = text(value, key)
    try:
        library.resolve_params(preset, n, out)
    except EngineError as exc:
        raise ValueError(str(exc)) from None
    return out


@dataclass(frozen=True)
class Compose:
    on: bool = setting(flag, "compose on", default=False)
    with_: str | None = setting(optional(choice), "compose with", library.MASKS, json_key="with")
    operation: str = setting(choice, "compose operation", OPERATIONS, default=OPERATIONS[0])


@dataclass(frozen=True)
class Timing:
    backends: tuple[str, ...] = setting(_backends, "timing backends", default=tuple(b for b in CPU_BACKENDS if b != "flex"))
    heads: int = setting(whole, "timing heads", *HEADS_RANGE, default=8)
    dim: int = setting(whole, "timing dim", *DIM_RANGE, default=64)
    repeats: int = setting(whole, "timing repeats", *LIVE_REPEATS_RANGE, default=3)
    live: bool = setting(flag, "timing live", default=True)
    sweep: bool = setting(flag, "timing sweep", default=True)


@dataclass(frozen=True, eq=False)
class AttentionSession:
    source: str = setting(choice, "source", SOURCES, default="preset")
    preset: str = setting(choice, "preset", PRESETS, default="causal_document")
    n: int = setting(whole, "n", 1, MAX_N, default=2048)
    params: dict[str, Any] = setting(mapping, "params", default_factory=dict)
    compose: Compose = setting(_object(Compose, "compose"), "compose", default=Compose())
    tile: int = setting(whole, "tile", *TILE_RANGE, default=128)
    overlay: bool = setting(flag, "overlay", default=True)
    timing: Timing = setting(_object(Timing, "timing"), "timing", default=Timing())
    vectors: Vectors | None = setting(_vectors, "vectors")  # kept for source "vectors" when small enough
    painted: np.ndarray | None = setting(_painting, "painted")  # 0/1 rows, kept for source "dense"


def read_session(state: Any) -> AttentionSession:
    """A session's attention settings, every one checked (a preset's parameters against the preset
    and N, as they go together) before any is applied; EngineError names the first bad one."""
    session = from_dict(AttentionSession, mapping(state, "its settings"))
    if session.preset not in library.MASKS:
        return session
    try:
        return replace(session, params=preset_params(session.preset, session.n, session.params))
    except ValueError as exc:
        raise EngineError(str(exc)) from None
