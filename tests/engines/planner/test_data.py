"""Expert data: the file must not depend on how many processes simulated it."""
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.planner.data import episode_list, generate_dataset


def test_episode_plan_cycles_types_and_never_uses_benchmark_seeds() -> None:
    plan = episode_list(16, seed=0)
    assert len({kind for kind, _, _ in plan}) == 8
    assert all(seed >= 100_000 for _, seed, _ in plan)
    assert [noisy for _, _, noisy in plan[:4]] == [False, True, False, True]


def test_two_workers_write_the_same_samples_as_one(tmp_path: Path) -> None:
    one = generate_dataset(tmp_path / "one.npz", episodes=2, seed=3, workers=1)
    two = generate_dataset(tmp_path / "two.npz", episodes=2, seed=3, workers=2)
    assert one["samples"] == two["samples"] > 0
    with np.load(tmp_path / "one.npz") as a, np.load(tmp_path / "two.npz") as b:
        for key in ("ego", "agents", "lanes", "future", "future_valid"):
            np.testing.assert_array_equal(a[key], b[key])


def test_impossible_worker_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="workers"):
        generate_dataset(tmp_path / "x.npz", episodes=1, workers=0)
    assert not (tmp_path / "x.npz").exists()
