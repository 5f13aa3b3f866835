"""The replay arrays: a scene previewed at t = 0 draws the same road and starting boxes as frame 0
of a run of it."""
from __future__ import annotations

import numpy as np

from engines.planner.procedural import generate
from engines.planner.replay import build_replay, preview_replay
from engines.planner.api import RunParams, run


def test_preview_matches_frame_zero_of_a_run() -> None:
    sc = generate("cut_in", 3)
    preview = preview_replay(sc)
    replay = build_replay(run(RunParams(type="cut_in", seed=3, planner="constant_velocity"), scenario=sc).episode)
    assert len(preview.frames) == 1 and preview.first_violation is None and not preview.violations
    assert "t = 0" in preview.summary and f"{len(sc.agents)} agents" in preview.summary
    first, start = replay.frames[0], preview.frames[0]
    np.testing.assert_allclose(start.agents, first.agents, atol=1e-9)
    np.testing.assert_allclose(start.ego_box, first.ego_box, atol=1e-9)
    assert start.labels == first.labels
    assert len(start.samples) == len(start.chosen) == 0  # nothing planned yet
    assert preview.bounds == replay.bounds and len(preview.lanes) == len(replay.lanes)
    np.testing.assert_array_equal(preview.drivable, replay.drivable)


def test_preview_leaves_out_agents_that_enter_later() -> None:
    from dataclasses import replace

    sc = generate("dense_traffic", 1)
    late = replace(sc, agents=sc.agents[:-1] + (replace(sc.agents[-1], start_step=20),))
    assert len(preview_replay(late).frames[0].labels) == len(sc.agents) - 1
