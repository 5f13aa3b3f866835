"""Training batches made in a second process while the model trains.

Making a batch (random programs and renders for the sketcher, posed partial views and signed
distances for the segmentation prior) is numpy work costing half a training step or more on this
CPU; in a second process it overlaps with the model's step. A producer is a module-level
generator function ``produce(*args, knob)``: ``knob.value`` is a number the trainer may change
while it runs (a curriculum's share, say), read by the producer between batches. With
``workers=0`` the same generator runs in this process, so a run's data does not depend on the
choice (with a knob, up to when a change is seen: prefetched batches were made before it).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import EngineError

_WAIT_S = 120.0  # how often a waiting trainer checks that the producer is still alive


@dataclass
class Knob:
    """The in-process stand-in for the shared value a worker reads."""

    value: float = 0.0


def _produce(produce: Callable[..., Iterator[Any]], args: tuple, knob, chunk: int, out: mp.Queue) -> None:
    items: list[Any] = []
    for item in produce(*args, knob):
        items.append(item)
        if len(items) == chunk:
            out.put(items)
            items = []


class BatchStream:
    """Yields what ``produce(*args, knob)`` yields; ``workers=1`` runs it in a background process."""

    def __init__(
        self, produce: Callable[..., Iterator[Any]], args: tuple = (), workers: int = 1, knob: float = 0.0, chunk: int = 1, prefetch: int = 3
    ) -> None:
        if workers not in (0, 1):
            raise EngineError("training uses 0 or 1 data workers")
        self._produce, self._args, self._chunk = produce, args, chunk
        self._process: mp.Process | None = None
        self._queue: mp.Queue | None = None
        if workers:
            ctx = mp.get_context("spawn")  # no forked copy of torch's thread pools
            self._knob = ctx.Value("d", knob, lock=False)
            self._queue = ctx.Queue(maxsize=prefetch)
            self._process = ctx.Process(target=_produce, args=(produce, args, self._knob, chunk, self._queue), daemon=True)
            self._process.start()
        else:
            self._knob = Knob(knob)

    def set_knob(self, value: float) -> None:
        self._knob.value = float(value)

    def __iter__(self) -> Iterator[Any]:
        if self._queue is None:
            yield from self._produce(*self._args, self._knob)
            return
        while True:
            try:
                items = self._queue.get(timeout=_WAIT_S)
            except queue.Empty:
                # A slow producer (a large pool built first on a busy machine) is not a dead one.
                if self._process is not None and self._process.is_alive():
                    continue
                raise EngineError("the training data worker stopped producing batches") from None
            yield from items

    def close(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.join(timeout=5)
            self._process = None
        if self._queue is not None:
            self._queue.close()
            self._queue.cancel_join_thread()
            self._queue = None

    def __enter__(self) -> BatchStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
