"""The background data worker yields the same batches, in the same order, as the in-process path."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from engines.core import EngineError
from engines.core.batch_stream import BatchStream
from engines.sketcher.data import TRAINING_GROUP, DataConfig, training_batches


def _take(workers: int, n: int) -> list:
    with BatchStream(training_batches, (11, 4, DataConfig()), workers, chunk=TRAINING_GROUP) as stream:
        return list(itertools.islice(stream, n))


def test_worker_and_in_process_streams_are_identical() -> None:
    local, remote = _take(0, 10), _take(1, 10)  # 10 > one group of 8: the second group follows
    assert len(local) == len(remote) == 10
    for a, b in zip(local, remote):
        assert np.array_equal(a.seq, b.seq)
        assert np.array_equal(a.target, b.target)
        assert np.array_equal(a.next_token, b.next_token)
    assert not all(np.array_equal(local[0].target, b.target) for b in local[1:])


def knob_values(start: int, knob) -> Iterator[tuple[int, float]]:
    """A producer that reports what it read: its counter and the knob."""
    for i in itertools.count(start):
        yield i, knob.value


@pytest.mark.parametrize("workers", [0, 1])
def test_the_knob_reaches_the_producer(workers: int) -> None:
    with BatchStream(knob_values, (5,), workers, knob=0.25, prefetch=1) as stream:
        items = iter(stream)
        first = next(items)
        assert first == (5, 0.25)
        stream.set_knob(0.75)
        later = [next(items) for _ in range(6)]  # at most the prefetched ones were made before the change
    assert [i for i, _ in later] == list(range(6, 12))
    assert later[-1][1] == 0.75


def test_other_worker_counts_are_refused() -> None:
    with pytest.raises(EngineError, match="0 or 1 data workers"):
        BatchStream(knob_values, (0,), workers=2)
