"""The mask library: every mask of the FlashMask paper, built directly as column intervals in O(N).

Each builder takes the sequence length ``n`` and its parameters (defaults scale with ``n``; random
ones take a seed). Document-like parameters are relative sizes ("1,1,2" is two quarters and a
half), so they survive a change of ``n``. For column ``j`` inside a document spanning rows
[s_j, e_j), the vectors follow the spec table in ``docs/attention.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines.core import EngineError

from .representation import FlashMask, check_length, full_mask, make_mask


@dataclass(frozen=True)
class Param:
    """One builder parameter, enough for a CLI ``--param k=v`` parser and a panel control."""

    name: str
    kind: str  # "int" | "float" | "sizes" (relative sizes, e.g. document lengths)
    default: Callable[[int], Any]
    help: str
    minimum: float = 0
    maximum: float | None = None  # None: bounded by n for token counts

    def parse(self, value: Any, n: int) -> Any:
        try:
            if self.kind == "sizes":
                items = value.replace(";", ",").split(",") if isinstance(value, str) else list(value)
                sizes = tuple(float(v) for v in items if str(v).strip() != "")
                if not sizes_ok(sizes):
                    raise ValueError
                if len(sizes) > n:
                    raise EngineError(f"{self.name} lists {len(sizes)} parts but the sequence has only {n} tokens")
                return sizes
            number = float(value)
            if not np.isfinite(number):
                raise ValueError
            if self.kind == "int":
                if number != int(number):
                    raise ValueError
                number = int(number)
        except (TypeError, ValueError):
            expected = {"int": "a whole number", "float": "a number", "sizes": "positive sizes with a finite sum, such as 1,1,2"}[self.kind]
            raise EngineError(f"parameter {self.name}={value!r} must be {expected}") from None
        high = n if self.maximum is None and self.kind == "int" else self.maximum
        if number < self.minimum or (high is not None and number > high):
            raise EngineError(f"parameter {self.name}={number} is out of range [{self.minimum}, {high}]")
        return number


@dataclass(frozen=True)
class MaskSpec:
    name: str
    title: str
    description: str
    builder: Callable[..., FlashMask]
    params: tuple[Param, ...] = field(default_factory=tuple)

    def defaults(self, n: int) -> dict[str, Any]:
        return {p.name: p.default(n) for p in self.params}


# Helpers -------------------------------------------------------------------------------------
def sizes_ok(sizes: tuple[float, ...]) -> bool:
    """Relative sizes are usable when each is finite and positive and so is their sum: 1e308,1e308
    adds up to infinity, which would overflow and collapse every segment into one."""
    return bool(sizes) and all(math.isfinite(s) and s > 0 for s in sizes) and math.isfinite(sum(sizes))


def segment_edges(n: int, sizes: tuple[float, ...]) -> np.ndarray:
    """Segment boundaries 0 = e_0 < ... = n from relative sizes (empty segments are dropped)."""
    if not sizes_ok(sizes):
        raise EngineError(f"relative sizes {', '.join(map(str, sizes)) or '(none)'} must be positive numbers with a finite sum")
    w = np.asarray(sizes, dtype=np.float64)
    edges = np.round(np.concatenate([[0.0], np.cumsum(w)]) / w.sum() * n).astype(np.int64)
    edges[-1] = n
    return np.unique(edges)


def _segment_of(n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the segment holding each column."""
    seg = np.searchsorted(edges, np.arange(n), side="right") - 1
    return edges[seg], edges[seg + 1]


def _c(*cols: np.ndarray) -> np.ndarray:
    return np.stack(cols, axis=-1)


# Builders ------------------------------------------------------------------------------------
def build_full(n: int) -> FlashMask:
    return full_mask(n, causal=False)


def build_causal(n: int) -> FlashMask:
    return full_mask(n, causal=True)


def build_sliding_window(n: int, window: int) -> FlashMask:
    j = np.arange(n)
    return make_mask(_c(np.minimum(j + window + 1, n)), True, n)


def build_causal_document(n: int, docs: tuple[float, ...]) -> FlashMask:
    _, e = _segment_of(n, segment_edges(n, docs))
    return make_mask(_c(e), True, n)


def build_document(n: int, docs: tuple[float, ...]) -> FlashMask:
    s, e = _segment_of(n, segment_edges(n, docs))
    return make_mask(_c(e, s), False, n)


def build_shared_question(n: int, samples: int, answers: int, question: float) -> FlashMask:
    """Packed samples, each a question followed by answers that see the question but not each other."""
    lts = np.empty(n, dtype=np.int64)
    edges = segment_edges(n, (1.0,) * samples)
    for s0, s1 in zip(edges[:-1], edges[1:]):
        q1 = s0 + int(round(question * (s1 - s0)))
        lts[s0:q1] = s1  # question keys: visible to the whole sample
        if s1 > q1:  # answer keys: visible to the rest of their own answer only
            _, e = _segment_of(s1 - q1, segment_edges(s1 - q1, (1.0,) * answers))
            lts[q1:s1] = q1 + e
    return make_mask(_c(lts), True, n)


def build_global_sliding(n: int, global_tokens: int, left: int, right: int) -> FlashMask:
    """Global tokens see and are seen by everyone; other rows see keys within [-left, +right]."""
    j = np.arange(n)
    g = min(global_tokens, n)
    lts = np.where(j < g, n, np.minimum(j + left + 1, n))
    ute = np.maximum(g, j - right)
    return make_mask(_c(lts, np.full(n, n), np.full(n, g), ute), False, n)


def build_causal_blockwise(n: int, blocks: tuple[float, ...]) -> FlashMask:
    """In-context demonstrations that see only themselves; the last (test) block sees them all."""
    edges = segment_edges(n, blocks)
    _, e = _segment_of(n, edges)
    test_start = edges[-2] if len(edges) > 2 else n
    j = np.arange(n)
    in_test = j >= test_start
    return make_mask(_c(np.where(in_test, n, e), np.where(in_test, n, test_start)), True, n)


def build_prefix_lm(n: int, prefix: int) -> FlashMask:
    j = np.arange(n)
    return make_mask(_c(np.full(n, n), np.where(j < prefix, 0, j)), False, n)


def build_prefix_document(n: int, docs: tuple[float, ...], prefix: float) -> FlashMask:
    """Documents whose first ``prefix`` fraction is bidirectional and the rest causal."""
    s, e = _segment_of(n, segment_edges(n, docs))
    j = np.arange(n)
    in_prefix = j < s + np.round(prefix * (e - s)).astype(np.int64)
    return make_mask(_c(e, np.where(in_prefix, s, j)), False, n)


def build_qk_sparse(n: int, start: int, length: int) -> FlashMask:
    """A dropped key range [start, start+length): its keys are seen only by rows after the range."""
    j = np.arange(n)
    end = min(start + length, n)
    inside = (j >= start) & (j < end)
    return make_mask(_c(np.where(inside, j, n), np.where(inside, end, n)), True, n)


def build_random_eviction(n: int, rate: float, seed: int) -> FlashMask:
    """A KV cache that evicts each key with probability ``rate`` at a random later row."""
    rng = np.random.default_rng(seed)
    j = np.arange(n)
    evicted = rng.random(n) < rate
    row = j + 1 + np.floor(rng.random(n) * (n - j - 1)).astype(np.int64)
    return make_mask(_c(np.where(evicted & (row < n), row, n)), True, n)


_DOCS = Param("docs", "sizes", lambda n: (1.0, 1.0, 1.0, 1.0), "relative document lengths, e.g. 1,1,2")

MASKS: dict[str, MaskSpec] = {
    spec.name: spec
    for spec in (
        MaskSpec("full", "Full", "every row sees every key (no mask)", build_full),
        MaskSpec("causal", "Causal", "row i sees keys j <= i", build_causal),
        MaskSpec(
            "sliding_window",
            "Sliding window",
            "causal, each row sees the last `window` keys and itself",
            build_sliding_window,
            (Param("window", "int", lambda n: max(1, n // 8), "keys before the row that stay visible"),),
        ),
        MaskSpec("causal_document", "Causal document", "packed documents, causal inside each", build_causal_document, (_DOCS,)),
        MaskSpec("document", "Document", "packed documents, bidirectional inside each", build_document, (_DOCS,)),
        MaskSpec(
            "shared_question",
            "Shared question",
            "samples of a question and answers; answers see the question, not each other",
            build_shared_question,
            (
                Param("samples", "int", lambda n: 2, "packed samples", 1),
                Param("answers", "int", lambda n: 3, "answers per sample", 1),
                Param("question", "float", lambda n: 0.4, "fraction of each sample that is the question", 0, 1),
            ),
        ),
        MaskSpec(
            "global_sliding",
            "Global + sliding window",
            "bidirectional window plus global tokens at the start",
            build_global_sliding,
            (
                Param("global_tokens", "int", lambda n: max(1, n // 64), "leading tokens that see and are seen by all"),
                Param("left", "int", lambda n: max(1, n // 16), "keys to the left each row sees"),
                Param("right", "int", lambda n: max(1, n // 16), "keys to the right each row sees"),
            ),
        ),
        MaskSpec(
            "causal_blockwise",
            "Causal blockwise",
            "in-context demonstration blocks; the last block (the test) sees all",
            build_causal_blockwise,
            (Param("blocks", "sizes", lambda n: (1.0, 1.0, 1.0, 1.0, 2.0), "relative block lengths; the last is the test block"),),
        ),
        MaskSpec(
            "prefix_lm",
            "Prefix-LM causal",
            "a bidirectional prefix, causal after it",
            build_prefix_lm,
            (Param("prefix", "int", lambda n: n // 4, "tokens in the bidirectional prefix"),),
        ),
        MaskSpec(
            "prefix_document",
            "Prefix document",
            "packed documents, each with a bidirectional prefix then causal",
            build_prefix_document,
            (_DOCS, Param("prefix", "float", lambda n: 0.25, "fraction of each document that is its prefix", 0, 1)),
        ),
        MaskSpec(
            "qk_sparse",
            "QK-sparse",
            "causal with a dropped key range that only later rows see",
            build_qk_sparse,
            (
                Param("start", "int", lambda n: n // 4, "first dropped key"),
                Param("length", "int", lambda n: n // 4, "dropped keys"),
            ),
        ),
        MaskSpec(
            "random_eviction",
            "Random eviction",
            "causal KV cache that evicts keys at random later rows",
            build_random_eviction,
            (
                Param("rate", "float", lambda n: 0.5, "probability that a key gets evicted", 0, 1),
                Param("seed", "int", lambda n: 0, "random seed", 0, 2**31 - 1),
            ),
        ),
    )
}


def sweep_params(name: str, n: int, params: dict[str, Any] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """A family of masks around ``name`` whose sparsity varies, for the latency-vs-rho plot.

    Masks with a size knob sweep it; the others (full, causal, ...) fall back to sliding windows.
    Returns the family's mask name and one parameter set per point, from dense to sparse.
    """
    base = resolve_params(name, n, params)
    counts = [(1.0,) * k for k in (1, 2, 4, 8, 16) if k <= n]
    fractions = [f for f in (0.75, 0.5, 0.25, 0.125, 0.0625)]
    if name in ("causal_document", "document", "prefix_document"):
        return name, [{**base, "docs": d} for d in counts]
    if name == "causal_blockwise":
        return name, [{**base, "blocks": d + (1.0,)} for d in counts]
    if name == "shared_question":
        return name, [{**base, "samples": len(d)} for d in counts]
    if name == "global_sliding":
        return name, [{**base, "left": max(1, int(f * n / 2)), "right": max(1, int(f * n / 2))} for f in fractions]
    if name == "random_eviction":
        return name, [{**base, "rate": r} for r in (0.0, 0.25, 0.5, 0.75, 1.0)]
    if name == "qk_sparse":
        return name, [{**base, "start": 0, "length": max(1, int(f * n))} for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
    if name == "prefix_lm":
        return "causal_document", [{"docs": d} for d in counts]
    window = resolve_params("sliding_window", n)
    return "sliding_window", [{**window, "window": max(1, int(f * n))} for f in fractions]


def resolve_params(name: str, n: int, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults for ``n`` overridden by ``params`` (strings from the CLI are parsed), all checked."""
    spec = mask_spec(name)
    check_length(n)
    given = dict(params or {})
    known = {p.name: p for p in spec.params}
    unknown = sorted(set(given) - set(known))
    if unknown:
        hint = ", ".join(known) if known else "none"
        raise EngineError(f"the {name} mask has no parameter {', '.join(unknown)} (its parameters: {hint})")
    return {p.name: p.parse(given[p.name], n) if p.name in given else p.default(n) for p in spec.params}


def build(name: str, n: int, params: dict[str, Any] | None = None) -> FlashMask:
    """Build a library mask of length ``n``."""
    return mask_spec(name).builder(n, **resolve_params(name, n, params))


def mask_spec(name: str) -> MaskSpec:
    if name not in MASKS:
        raise EngineError(f"unknown mask {name!r}; choose from {', '.join(MASKS)}")
    return MASKS[name]
