"""FlashMask's column-wise mask: Paddle's ``startend_row_indices`` with its exact semantics.

For key column ``j`` the vectors give row intervals that may NOT attend to ``j`` (int32,
shape ``[B, H or 1, N_k, C]``):

* ``causal=True``,  C=1: ``[LTS]``            rows ``>= LTS`` masked (plus the causal upper part)
* ``causal=True``,  C=2: ``[LTS, LTE]``       rows in ``[LTS, LTE)`` masked (plus the causal part)
* ``causal=False``, C=2: ``[LTS, UTE]``       rows ``>= LTS`` and rows ``< UTE`` masked
* ``causal=False``, C=4: ``[LTS, LTE, UTS, UTE]`` rows in ``[LTS, LTE)`` or ``[UTS, UTE)`` masked

With ``N_q != N_k`` the causal diagonal is aligned to the bottom-right corner: row ``i`` may see
column ``j`` only when ``j <= i + (N_k - N_q)``. Everything here is NumPy and O(N): no dense mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from engines.core import EngineError

from .params import MAX_N

ALLOWED_C = {True: (1, 2), False: (2, 4)}
COLUMN_NAMES = {(True, 1): ("LTS",), (True, 2): ("LTS", "LTE"), (False, 2): ("LTS", "UTE"), (False, 4): ("LTS", "LTE", "UTS", "UTE")}


@dataclass(frozen=True, eq=False)
class FlashMask:
    """A validated ``startend_row_indices`` tensor (as NumPy int32) with its mode and query length."""

    indices: np.ndarray  # int32 [B, Hm, N_k, C]
    causal: bool
    n_q: int

    @property
    def batch(self) -> int:
        return int(self.indices.shape[0])

    @property
    def heads(self) -> int:
        return int(self.indices.shape[1])

    @property
    def n_k(self) -> int:
        return int(self.indices.shape[2])

    @property
    def c(self) -> int:
        return int(self.indices.shape[3])

    @property
    def offset(self) -> int:
        """Bottom-right causal alignment: row i sees column j only when j <= i + offset."""
        return self.n_k - self.n_q

    @property
    def column_names(self) -> tuple[str, ...]:
        return COLUMN_NAMES[(self.causal, self.c)]

    def intervals(self) -> Intervals:
        """The two masked row intervals of every column, whatever C is (empty ones become [n_q, n_q))."""
        x = self.indices.astype(np.int64)
        n = self.n_q
        full = np.full(x.shape[:3], n, dtype=np.int64)
        if self.c == 1:
            lt, ut = (x[..., 0], full), (full, full)
        elif self.c == 2 and self.causal:
            lt, ut = (x[..., 0], x[..., 1]), (full, full)
        elif self.c == 2:
            lt, ut = (x[..., 0], full), (np.zeros_like(full), x[..., 1])
        else:
            lt, ut = (x[..., 0], x[..., 1]), (x[..., 2], x[..., 3])
        (lts, lte), (uts, ute) = (_drop_empty(*lt, n), _drop_empty(*ut, n))
        return Intervals(lts, lte, uts, ute, self.causal, self.n_q, self.n_k)

    def describe(self) -> str:
        kind = "causal" if self.causal else "bidirectional"
        return f"{kind} FlashMask, C={self.c} ({', '.join(self.column_names)}), N_q={self.n_q}, N_k={self.n_k}"


@dataclass(frozen=True, eq=False)
class Intervals:
    """The normalised form every kernel uses: masked rows [lts, lte) and [uts, ute) per column, plus causal.

    Arrays are int64 ``[B, Hm, N_k]``.
    """

    lts: np.ndarray
    lte: np.ndarray
    uts: np.ndarray
    ute: np.ndarray
    causal: bool
    n_q: int
    n_k: int

    @property
    def offset(self) -> int:
        return self.n_k - self.n_q

    def causal_end(self) -> np.ndarray:
        """Rows [0, causal_end_j) are masked by causality (all zeros when not causal), shape [N_k]."""
        j = np.arange(self.n_k, dtype=np.int64)
        if not self.causal:
            return np.zeros_like(j)
        return np.clip(j - self.offset, 0, self.n_q)

    def masked_per_column(self) -> np.ndarray:
        """How many rows may not attend to each column, ``[B, Hm, N_k]`` (inclusion-exclusion)."""
        ce = np.broadcast_to(self.causal_end(), self.lts.shape)
        sets = [(np.zeros_like(ce), ce), (self.lts, self.lte), (self.uts, self.ute)]
        total = np.zeros(self.lts.shape, dtype=np.int64)
        for size in (1, 2, 3):
            for combo in combinations(sets, size):
                lo = np.maximum.reduce([c[0] for c in combo])
                hi = np.minimum.reduce([c[1] for c in combo])
                total += (1 if size % 2 else -1) * np.maximum(hi - lo, 0)
        return total

    def allowed_rows(self, rows: np.ndarray) -> np.ndarray:
        """Boolean ``[B, Hm, len(rows), N_k]``: True where those query rows may attend (O(rows x N_k))."""
        i = np.asarray(rows, dtype=np.int64)[:, None]
        j = np.arange(self.n_k, dtype=np.int64)[None, :]
        lts, lte, uts, ute = (x[:, :, None, :] for x in (self.lts, self.lte, self.uts, self.ute))
        hidden = ((i >= lts) & (i < lte)) | ((i >= uts) & (i < ute))
        if self.causal:
            hidden |= j > i + self.offset
        return ~hidden

    def head(self, b: int = 0, h: int = 0) -> HeadIntervals:
        if not (0 <= b < self.lts.shape[0] and 0 <= h < self.lts.shape[1]):
            raise EngineError(f"the mask has no batch {b} / head {h}")
        return HeadIntervals(self.causal_end(), self.lts[b, h], self.lte[b, h], self.uts[b, h], self.ute[b, h], self.offset, self.causal)


@dataclass(frozen=True, eq=False)
class HeadIntervals:
    """One batch/head's three masked row intervals per column: causal [0, ce), [lts, lte), [uts, ute)."""

    ce: np.ndarray
    lts: np.ndarray
    lte: np.ndarray
    uts: np.ndarray
    ute: np.ndarray
    offset: int
    causal: bool


def _drop_empty(start: np.ndarray, end: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Write empty intervals as [n, n) so block min/max never see a phantom interval."""
    empty = start >= end
    return np.where(empty, n, start), np.where(empty, n, end)


def make_mask(indices, causal: bool, n_q: int | None = None) -> FlashMask:
    """Validate a ``startend_row_indices`` array (any int array-like) and wrap it.

    Accepts ``[B, H, N_k, C]``, or ``[N_k, C]`` / ``[N_k]`` for one batch and head. ``n_q``
    defaults to ``N_k``. Raises EngineError naming the first bad column.
    """
    arr = np.asarray(indices)
    if arr.dtype.kind not in "iu":
        whole = arr.dtype.kind == "f" and arr.size and np.all(np.abs(arr) < 2.0**62) and np.all(arr == np.round(arr))
        if whole:  # (NaN and infinity fail the first test; 1e308 would wrap round in int64)
            arr = arr.astype(np.int64)
        else:
            raise EngineError(f"startend_row_indices must hold integers, got {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim == 2:
        arr = arr[None, None]
    if arr.ndim != 4:
        raise EngineError(f"startend_row_indices must have shape [B, H, N_k, C], got {list(arr.shape)}")
    b, h, n_k, c = arr.shape
    causal = bool(causal)
    if c not in ALLOWED_C[causal]:
        mode = "causal" if causal else "non-causal"
        raise EngineError(f"a {mode} FlashMask needs C in {ALLOWED_C[causal]} columns, got C={c}")
    if b < 1 or h < 1 or n_k < 1:
        raise EngineError(f"startend_row_indices is empty (shape {list(arr.shape)})")
    if n_q is None:
        n_q = n_k
    check_length(n_q, "the query length n_q")
    n_q = int(n_q)
    if arr.min() < 0 or arr.max() > n_q:
        bad = np.argwhere((arr < 0) | (arr > n_q))[0]
        name = COLUMN_NAMES[(causal, c)][bad[3]]
        raise EngineError(f"column {bad[2]}{_where(bad, b, h)}: {name}={int(arr[tuple(bad)])} is outside the rows 0..{n_q}")
    pairs = [(0, 1)] if (causal and c == 2) else ([(0, 1), (2, 3)] if c == 4 else [])
    for s, e in pairs:
        inverted = arr[..., s] > arr[..., e]
        if inverted.any():
            bad = np.argwhere(inverted)[0]
            names = COLUMN_NAMES[(causal, c)]
            raise EngineError(
                f"column {bad[2]}{_where(bad, b, h)}: {names[s]}={int(arr[bad[0], bad[1], bad[2], s])} > "
                f"{names[e]}={int(arr[bad[0], bad[1], bad[2], e])}; an interval's start must not exceed its end"
            )
    return FlashMask(np.ascontiguousarray(arr, dtype=np.int32), causal, n_q)


def check_length(n: object, what: str = "sequence length") -> None:
    """One limit for every length a user gives (library N, a file's n_q): a float would be truncated
    silently and a typo like 10^12 would allocate far more memory than the machine has."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1 or n > MAX_N:
        raise EngineError(f"{what} {n!r} must be a whole number from 1 to {MAX_N}")


def _where(idx, b: int, h: int) -> str:
    parts = []
    if b > 1:
        parts.append(f"batch {idx[0]}")
    if h > 1:
        parts.append(f"head {idx[1]}")
    return f" ({', '.join(parts)})" if parts else ""


def full_mask(n_q: int, n_k: int | None = None, causal: bool = False) -> FlashMask:
    """No masking beyond causality (what ``startend_row_indices=None`` means)."""
    n_k = n_q if n_k is None else n_k
    if causal:
        return make_mask(np.full((n_k, 1), n_q), True, n_q)
    return make_mask(np.stack([np.full(n_k, n_q), np.zeros(n_k)], axis=1), False, n_q)


def as_mask(startend_row_indices, causal: bool, n_q: int, n_k: int) -> FlashMask:
    """What the attention API accepts: None, a FlashMask, a torch tensor or any int array."""
    if startend_row_indices is None:
        return full_mask(n_q, n_k, causal)
    if isinstance(startend_row_indices, FlashMask):
        mask = startend_row_indices
        if mask.causal != bool(causal):
            raise EngineError(f"the mask was built with causal={mask.causal} but the call says causal={bool(causal)}")
    else:
        data = startend_row_indices
        if hasattr(data, "detach"):
            data = data.detach().cpu().numpy()
        mask = make_mask(data, causal, n_q)
    if mask.n_q != n_q or mask.n_k != n_k:
        raise EngineError(f"the mask is for N_q={mask.n_q}, N_k={mask.n_k} but q has {n_q} rows and k has {n_k}")
    return mask
