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
