"""Training batches made in a separate process while the model trains.

Making a batch (random programs, mutations, reverse paths, renders) is pure Python and numpy and
costs about half of a single-threaded training step on this CPU; in a second process it overlaps
with the model's step. One producer fed by one seeded generator yields exactly the batches the
in-process path would, in the same order, so a run's data does not depend on the choice.
"""
from __future__ import annotations

import multiprocessing as mp
import queue
import random
from typing import Iterator

from engines.core import EngineError

from .data import Batch, DataConfig, sample_batches

GROUP = 8  # batches drawn together (grouped by length inside, see ``sample_batches``)
_PREFETCH = 3  # groups waiting in the queue
_WAIT_S = 120.0  # a producer that makes nothing for this long has died


def _produce(seed: int, batch_size: int, data: DataConfig, out: mp.Queue) -> None:
    rng = random.Random(seed)
    while True:
        out.put(sample_batches(rng, GROUP, batch_size, data))


class BatchStream:
    """Yields training batches; ``workers=1`` makes them in a background process, 0 in this one."""

    def __init__(self, seed: int, batch_size: int, data: DataConfig, workers: int = 1) -> None:
        if workers not in (0, 1):
            raise EngineError("the sketcher's training uses 0 or 1 data workers")
        self._seed, self._batch_size, self._data = seed, batch_size, data
        self._process: mp.Process | None = None
        self._queue: mp.Queue | None = None
        if workers:
            ctx = mp.get_context("spawn")  # no forked copy of torch's thread pools
            self._queue = ctx.Queue(maxsize=_PREFETCH)
            self._process = ctx.Process(target=_produce, args=(seed, batch_size, data, self._queue), daemon=True)
            self._process.start()

    def __iter__(self) -> Iterator[Batch]:
        rng = random.Random(self._seed)
        while True:
            if self._queue is None:
                group = sample_batches(rng, GROUP, self._batch_size, self._data)
            else:
                try:
                    group = self._queue.get(timeout=_WAIT_S)
                except queue.Empty:
                    raise EngineError("the training data worker stopped producing batches") from None
            yield from reversed(group)  # the order the in-process loop always used (pop from the end)

    def close(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.join(timeout=5)
            self._process = None
        if self._queue is not None:
            self._queue.close()
            self._queue.cancel_join_thread()
            self._queue = None

    def __enter__(self) -> "BatchStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
