"""Per-mask structures (our tile plan, Flex's BlockMask) reused while the mask stays the same.

Both are pure functions of the mask's vectors, and a training loop or the panel's live timing
calls attention with one mask many times: building them once per distinct mask is what Flex's
own documentation asks of its BlockMask. The key is the vectors' content (a 128-bit BLAKE2 digest),
not the object, so an equal mask rebuilt by the caller is a hit too. Both backends use it, so the
benchmark compares kernels with the same treatment.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Callable, Hashable, TypeVar

from .representation import FlashMask

T = TypeVar("T")


def mask_key(mask: FlashMask) -> tuple:
    digest = hashlib.blake2b(mask.indices.tobytes(), digest_size=16).digest()
    return (digest, mask.indices.shape, str(mask.indices.dtype), mask.causal, mask.n_q)


class MaskCache:
    """A small thread-safe LRU map from (mask content, extra key) to what was built for it."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._items: OrderedDict[tuple, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, mask: FlashMask, extra: Hashable, build: Callable[[], T]) -> T:
        key = (mask_key(mask), extra)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[return-value]
        value = build()  # outside the lock: two threads may build the same thing once each, harmlessly
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value
