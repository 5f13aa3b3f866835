import numpy as np

from engines.attention.library import build
from engines.attention.mask_cache import MaskCache
from engines.attention.representation import FlashMask


def _counting_build(calls: list):
    def build_value():
        calls.append(1)
        return object()

    return build_value


def test_equal_masks_share_one_entry_and_different_ones_do_not():
    cache, calls = MaskCache(), []
    a, b = build("sliding_window", 256), build("sliding_window", 256)  # equal content, different objects
    first = cache.get(a, "x", _counting_build(calls))
    assert cache.get(b, "x", _counting_build(calls)) is first
    assert len(calls) == 1
    cache.get(build("sliding_window", 256, {"window": 7}), "x", _counting_build(calls))
    cache.get(a, "other extra key", _counting_build(calls))
    assert len(calls) == 3


def test_the_same_vectors_in_another_mode_are_another_mask():
    cache, calls = MaskCache(), []
    indices = np.full((1, 1, 16, 1), 16, np.int32)
    cache.get(FlashMask(indices, True, 16), None, _counting_build(calls))
    cache.get(FlashMask(indices, False, 16), None, _counting_build(calls))
    assert len(calls) == 2


def test_least_recently_used_entries_leave_first():
    cache, calls = MaskCache(size=2), []
    masks = [build("sliding_window", 128, {"window": w}) for w in (1, 2, 3)]
    cache.get(masks[0], None, _counting_build(calls))
    cache.get(masks[1], None, _counting_build(calls))
    cache.get(masks[0], None, _counting_build(calls))  # refreshes masks[0]
    cache.get(masks[2], None, _counting_build(calls))  # evicts masks[1]
    assert len(calls) == 3
    cache.get(masks[0], None, _counting_build(calls))
    assert len(calls) == 3
    cache.get(masks[1], None, _counting_build(calls))
    assert len(calls) == 4
