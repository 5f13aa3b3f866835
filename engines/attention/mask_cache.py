"""Per-mask structures (our tile plan, Flex's BlockMask) reused while the mask stays the same.

Both are pure functions of the mask's vectors, and a training loop or the panel's live timing
calls attention with one mask many times: building them once per distinct mask is what Flex's
own documentation asks of its BlockMask. The key is the vectors' content (a 128-bit BLAKE2 digest),
not the object, so an equal mask rebuilt by the caller is a hit too. Both backends use it, so the
benchmark compares kernels with the same treatment.

The cache holds more entries than the benchmark has library masks: it times them in rotation, and
an LRU smaller than the rotation misses every time (with 8 entries for 12 masks each call rebuilt
its plan: 12 ms of a 150 ms sliding-window call, 186 ms of a random-eviction one). Entries are
also bounded by their bytes, because one plan can hold large piece masks (random eviction at
N = 8192: 129 MiB).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from .representation import FlashMask

T = TypeVar("T")


def mask_key(mask: FlashMask) -> tuple:
    digest = hashlib.blake2b(mask.indices.tobytes(), digest_size=16).digest()
    return (digest, mask.indices.shape, str(mask.indices.dtype), mask.causal, mask.n_q)


class MaskCache:
    """A thread-safe LRU map from (mask content, extra key) to what was built for it, bounded by
    entries and by the bytes ``weigh`` reports (the newest entry always stays)."""

    def __init__(self, size: int = 32, budget_bytes: int = 512 * 2**20, weigh: Callable[[object], int] = lambda _: 0) -> None:
        self.size, self.budget_bytes, self.weigh = size, budget_bytes, weigh
        self._items: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, mask: FlashMask, extra: Hashable, build: Callable[[], T]) -> T:
        key = (mask_key(mask), extra)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]  # type: ignore[return-value]
        value = build()  # outside the lock: two threads may build the same thing once each, harmlessly
        weight = self.weigh(value)
        with self._lock:
            if key in self._items:
                self._bytes -= self._items[key][1]
            self._items[key] = (value, weight)
            self._items.move_to_end(key)
            self._bytes += weight
            while len(self._items) > 1 and (len(self._items) > self.size or self._bytes > self.budget_bytes):
                self._bytes -= self._items.popitem(last=False)[1][1]
        return value
