"""Which points belong together by distance: the connected parts of a point set."""
from __future__ import annotations

import numpy as np


def connected_parts(points: np.ndarray, link: float) -> np.ndarray:
    """Connected-part label of every point (points closer than ``link`` are linked)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    pairs = cKDTree(points).query_pairs(link, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(points), len(points)))
    return connected_components(graph, directed=False)[1]


def mean_neighbours(points: np.ndarray, radius: float, sample: int = 500, seed: int = 0) -> float:
    """Average number of points within ``radius`` of a point (estimated from a sample of them)."""
    from scipy.spatial import cKDTree

    if len(points) == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    probe = points[rng.choice(len(points), min(sample, len(points)), replace=False)]
    return float(cKDTree(points).query_ball_point(probe, radius, return_length=True, workers=1).mean())


def thinned(points: np.ndarray, radius: float, max_neighbours: float) -> np.ndarray:
    """Indices, in order, of a subset no denser than ``max_neighbours`` points within ``radius`` on
    average: one point per voxel, the voxels growing until that holds. Linking points by distance
    costs their neighbour count, so a dense scan of one object (thousands of points within a link)
    would take minutes and gigabytes; a scan as sparse as the procedural rooms is returned whole."""
    idx = np.arange(len(points))
    voxel = radius / 16
    while mean_neighbours(points[idx], radius) > max_neighbours:
        _, first = np.unique(np.floor(points / voxel).astype(np.int64), axis=0, return_index=True)
        idx = np.sort(first)
        voxel *= 1.5
    return idx
