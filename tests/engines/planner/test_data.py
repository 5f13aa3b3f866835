"""Expert data: the file must not depend on how many processes simulated it; student-driven
(DAgger) data keeps the expert's labels and stops where the student fails."""
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.planner.data import episode_list, expert_episode, generate_dataset
from engines.planner.planners.diffusion_planner import default_checkpoint
from engines.planner.planners.rules import ConstantVelocityPlanner
from engines.planner.train import load_dataset
from tests.conftest import PROCESSES


def test_episode_plan_cycles_types_and_never_uses_benchmark_seeds() -> None:
    plan = episode_list(16, seed=0)
    assert len({kind for kind, _, _ in plan}) == 8
    assert all(seed >= 100_000 for _, seed, _ in plan)
    assert [noisy for _, _, noisy in plan[:4]] == [False, True, False, True]


@PROCESSES
@pytest.mark.parametrize("student", [None, default_checkpoint()], ids=["expert", "student"])
def test_two_workers_write_the_same_samples_as_one(tmp_path: Path, student: Path | None) -> None:
    # One worker drives both episodes with the same loaded student, two workers one each.
    one = generate_dataset(tmp_path / "one.npz", episodes=2, seed=3, workers=1, student=student)
    two = generate_dataset(tmp_path / "two.npz", episodes=2, seed=3, workers=2, student=student)
    assert one["samples"] == two["samples"] > 0
    with np.load(tmp_path / "one.npz") as a, np.load(tmp_path / "two.npz") as b:
        for key in ("ego", "agents", "lanes", "future", "future_valid"):
            np.testing.assert_array_equal(a[key], b[key])
        assert float(a["standing_gap"]) == 1.5  # the labelling expert's gap is recorded


def test_impossible_worker_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="workers"):
        generate_dataset(tmp_path / "x.npz", episodes=1, workers=0)
    assert not (tmp_path / "x.npz").exists()


def test_a_student_is_labelled_by_the_expert_until_it_crashes() -> None:
    # Constant velocity runs into the braking leader of this scene within about 2 s.
    driven = expert_episode("lead_braking", 2, False, student=ConstantVelocityPlanner())
    expert = expert_episode("lead_braking", 2, False)
    # The first state is the same for both, so its label is the expert's plan there.
    np.testing.assert_allclose(driven.future[0, 0], expert.future[0, 0])
    assert 0 < len(driven.inputs) < len(expert.inputs) // 2
    # Later states are the student's: it keeps its speed where the expert brakes.
    last = driven.inputs[-1]
    assert last.ego[0] > expert.inputs[len(driven.inputs) - 1].ego[0]


def test_training_reads_expert_and_student_files_together(tmp_path: Path) -> None:
    generate_dataset(tmp_path / "expert.npz", episodes=1, seed=3)
    info = generate_dataset(tmp_path / "student.npz", episodes=1, seed=3, student=default_checkpoint())
    assert info["driver"] == "diffusion_planner.pt"
    with np.load(tmp_path / "student.npz") as z:
        assert str(z["student"]) == "diffusion_planner.pt"
    one = load_dataset([tmp_path / "expert.npz"])
    both = load_dataset([tmp_path / "expert.npz", tmp_path / "student.npz"])
    assert len(both["future"]) == len(one["future"]) + info["samples"]
    np.testing.assert_array_equal(both["future"][: len(one["future"])], one["future"])


def test_the_standing_gap_moves_where_the_expert_stops() -> None:
    """`planner data --standing-gap`: the labels' expert stops that much further behind a stopped leader."""
    from engines.planner.planners.rules import EXPERT_IDM, ExpertPlanner
    from engines.planner.procedural import generate
    from engines.planner.scene import Scene
    from engines.planner.simulation import run_episode

    scene = Scene(generate("lead_braking", 1009))  # the leader brakes to a stop ahead of the ego
    stops = {}
    for gap in (EXPERT_IDM.stopped_gap, EXPERT_IDM.stopped_gap + 1.5):
        rollout = run_episode(scene, ExpertPlanner(standing_gap=gap), reactive=True)
        stops[gap] = float(rollout.agents[-1, 0, 0] - rollout.ego[-1, 0])  # centre to centre, along +x
    low, high = sorted(stops)
    assert rollout.agents[-1, 0, 3] == 0.0  # the leader stands
    # IDM brakes short of its desired gap after a hard-braking leader, so here 1.5 m more desired
    # gap is 0.58 m more at the stop (6.05 -> 6.63 m centre to centre)
    assert 0.4 < stops[high] - stops[low] < 1.5
    with pytest.raises(EngineError, match="standing gap must be 0 to 10 m"):
        generate_dataset(Path("unused.npz"), episodes=1, standing_gap=-1.0)
