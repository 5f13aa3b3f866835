"""The prior's wide training families: exact distances of the extra primitives, varied objects
standing on the floor, held-out families kept out of training, and density-normalised inputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from engines.segmentation.prior import encoder_inputs
from engines.segmentation.prior_categories import HELD_OUT, WIDE, make_wide
from engines.segmentation.prior_data import HELD_OUT_CATEGORIES, TRAIN_CATEGORIES, ObjectPool
from engines.segmentation.prior_shapes import Capsule, Sphere, Tilted, Torus
from engines.segmentation.shapes import Box


@pytest.mark.parametrize(
    "part",
    [
        Sphere((0.1, 0.0, 0.3), 0.35),
        Capsule((-0.3, 0.1, 0.0), (0.4, -0.2, 0.6), 0.12),
        Torus((0.0, 0.1, 0.2), 0.4, 0.08),
        Torus((0.0, 0.1, 0.2), 0.3, 0.05, upright=True),
        Tilted(Box((0.0, 0.2, 0.3), (0.3, 0.05, 0.3)), (0.0, 0.25, 0.0), roll=-0.3, yaw=0.4),
    ],
)
def test_extra_primitive_sdf_is_the_distance_to_its_surface(part) -> None:
    rng = np.random.default_rng(1)
    q = rng.uniform(-1.0, 1.0, (400, 3))
    brute = cKDTree(part.sample(60000, np.random.default_rng(0))).query(q)[0]
    assert np.allclose(np.abs(part.sdf(q)), brute, atol=0.02)
    assert np.abs(part.sdf(part.sample(500, rng))).max() < 1e-6


def test_capsule_and_torus_samples_are_spread_evenly_over_their_area() -> None:
    rng = np.random.default_rng(2)
    torus = Torus((0.0, 0.0, 0.0), 0.5, 0.2)
    pts = torus.sample(40000, rng)
    outer = np.hypot(pts[:, 0], pts[:, 1]) > 0.5  # the outer half of the tube has (R + 2r/pi) / (R - 2r/pi) times the inner's area
    ratio = outer.sum() / (~outer).sum()
    assert ratio == pytest.approx((0.5 + 0.4 / np.pi) / (0.5 - 0.4 / np.pi), rel=0.05)
    cap = Capsule((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 0.1)
    pts = cap.sample(40000, rng)
    on_caps = ((pts[:, 0] < 0) | (pts[:, 0] > 1)).mean()
    assert on_caps == pytest.approx(cap.area() and 4 * np.pi * 0.01 / cap.area(), abs=0.01)


@pytest.mark.parametrize("name", sorted({**WIDE, **HELD_OUT}))
def test_every_family_stands_on_the_floor_and_varies(name: str) -> None:
    rng = np.random.default_rng(3)
    shapes = [make_wide(name, rng) for _ in range(6)]
    extents = []
    for shape in shapes:
        pts = shape.sample_surface(1500, rng)
        assert np.abs(shape.sdf(pts)).max() < 1e-5
        lo, hi = shape.bounds(20000)
        assert abs(lo[2]) < 0.01 and np.abs(lo[:2] + hi[:2]).max() < 0.1  # on the floor, centred (tilted round parts: by a cover)
        extents.append(pts.max(0) - pts.min(0))
    assert np.ptp(np.array(extents), axis=0).max() > 0.1  # random proportions, not one object
    assert len({len(s.parts) for s in shapes}) > 1  # random part structure


def test_held_out_families_never_enter_training() -> None:
    assert set(HELD_OUT_CATEGORIES) == set(HELD_OUT) and not set(HELD_OUT_CATEGORIES) & set(TRAIN_CATEGORIES)
    assert set(WIDE) <= set(TRAIN_CATEGORIES) and "chair" in TRAIN_CATEGORIES
    pool = ObjectPool(40, np.random.default_rng(4))
    seen = {e.shape.category for e in pool.entries}
    assert not seen & set(HELD_OUT_CATEGORIES) and len(seen) >= 10


def test_room_share_sets_how_often_room_generator_objects_are_drawn() -> None:
    from engines.segmentation.categories import CATEGORIES
    from engines.segmentation.prior_data import category_weights

    room = np.array([c in CATEGORIES for c in TRAIN_CATEGORIES])
    for share in (0.0, 0.5, 0.75, 1.0):
        w = category_weights(TRAIN_CATEGORIES, share)
        assert w.sum() == pytest.approx(1.0) and w[room].sum() == pytest.approx(share)
    assert np.allclose(category_weights(HELD_OUT_CATEGORIES, 0.9), 1 / len(HELD_OUT_CATEGORIES))  # one source: uniform
    only_rooms = ObjectPool(12, np.random.default_rng(3), room_share=1.0)
    assert {e.shape.category for e in only_rooms.entries} <= set(CATEGORIES)
    no_rooms = ObjectPool(12, np.random.default_rng(3), room_share=0.0)
    assert not {e.shape.category for e in no_rooms.entries} & set(CATEGORIES)


def test_voxel_inputs_do_not_follow_the_density() -> None:
    rng = np.random.default_rng(5)
    sparse = np.column_stack([rng.uniform(-0.4, 0.4, (2000, 2)), np.zeros(2000)])  # a plane
    dense = rng.normal(0, 0.01, (20000, 3)) + [0.2, 0.2, 0.2]  # a tiny, heavily sampled blob
    crop = np.concatenate([sparse, dense])
    near_blob = lambda x: (np.linalg.norm(x - [0.2, 0.2, 0.2], axis=1) < 0.05).mean()  # noqa: E731
    assert near_blob(encoder_inputs(crop, 256, 0.0, rng)) > 0.8  # plain subsampling: the blob crowds out the plane
    assert near_blob(encoder_inputs(crop, 256, 0.03, rng)) < 0.1  # voxels: each occupied cell counts once
    assert encoder_inputs(crop[:100], 256, 0.03, rng).shape == (256, 3)  # fewer points than asked: drawn with replacement


def test_an_even_mix_draws_the_objects_it_drew_before_room_share_existed() -> None:
    """validate-prior's crops and a seed's training stream stay what the recorded numbers were measured on
    (the draws of the code before room_share, pinned)."""
    held_out = ObjectPool(12, np.random.default_rng(777), HELD_OUT_CATEGORIES)
    assert [e.shape.category for e in held_out.entries] == [
        "ladder_like",
        "rack",
        "rack",
        "ladder_like",
        "plant",
        "ladder_like",
        "plant",
        "ladder_like",
        "ladder_like",
        "plant",
        "ladder_like",
        "plant",
    ]
    training = ObjectPool(12, np.random.default_rng(5))
    assert [e.shape.category for e in training.entries] == [
        "storage",
        "seat",
        "bed",
        "storage",
        "assembly",
        "vessel",
        "bench",
        "storage",
        "sofa_like",
        "sofa",
        "table_like",
        "storage",
    ]
