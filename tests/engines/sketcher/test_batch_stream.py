"""The background data worker yields the same batches, in the same order, as the in-process path."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from engines.core import EngineError
from engines.sketcher.batch_stream import BatchStream
from engines.sketcher.data import DataConfig


def _take(workers: int, n: int) -> list:
    with BatchStream(seed=11, batch_size=4, data=DataConfig(), workers=workers) as stream:
        return list(itertools.islice(stream, n))


def test_worker_and_in_process_streams_are_identical() -> None:
    local, remote = _take(0, 10), _take(1, 10)  # 10 > one group of 8: the second group follows
    assert len(local) == len(remote) == 10
    for a, b in zip(local, remote):
        assert np.array_equal(a.seq, b.seq)
        assert np.array_equal(a.target, b.target)
        assert np.array_equal(a.next_token, b.next_token)
    assert not all(np.array_equal(local[0].target, b.target) for b in local[1:])


def test_other_worker_counts_are_refused() -> None:
    with pytest.raises(EngineError, match="0 or 1 data workers"):
        BatchStream(seed=0, batch_size=4, data=DataConfig(), workers=2)
