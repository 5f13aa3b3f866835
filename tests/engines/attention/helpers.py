"""Independent ground truth for the tests: masks written element by element from their definitions."""

from __future__ import annotations

import numpy as np


def dense_from_rules(vectors: np.ndarray, causal: bool, n_q: int) -> np.ndarray:
    """Paddle's rules, applied literally with loops: True where row i may attend column j."""
    n_k, c = vectors.shape
    allowed = np.ones((n_q, n_k), dtype=bool)
    for j in range(n_k):
        x = vectors[j]
        for i in range(n_q):
            if causal and j > i + (n_k - n_q):
                allowed[i, j] = False
            elif causal and c == 1:
                allowed[i, j] = not (i >= x[0])
            elif causal and c == 2:
                allowed[i, j] = not (x[0] <= i < x[1])
            elif c == 2:
                allowed[i, j] = not (i >= x[0] or i < x[1])
            else:
                allowed[i, j] = not (x[0] <= i < x[1] or x[2] <= i < x[3])
    return allowed


def random_vectors(rng: np.random.Generator, n_q: int, n_k: int, causal: bool, c: int, heads: int = 1, batch: int = 1) -> np.ndarray:
    """Random valid startend_row_indices [B, H, N_k, C] (intervals well-formed, values in [0, n_q])."""
    a = rng.integers(0, n_q + 1, size=(batch, heads, n_k, c))
    if (causal and c == 2) or c == 4:
        a[..., 0:2] = np.sort(a[..., 0:2], axis=-1)
    if c == 4:
        a[..., 2:4] = np.sort(a[..., 2:4], axis=-1)
    # Make some columns unmasked and some fully masked, the edge cases kernels get wrong.
    a[:, :, ::5, 0] = n_q
    if c == 4 or causal and c == 2:
        a[:, :, ::5, 1] = n_q
    if c == 2 and not causal:
        a[:, :, ::5, 1] = 0
    if c == 4:
        a[:, :, ::5, 2:4] = 0
    a[:, :, 3::7, 0] = 0  # LTS = 0: the column is hidden from every row (or every row below UTE)
    if c == 4:
        a[:, :, 3::7, 1] = n_q
    return a.astype(np.int32)


def allowed_by_definition(name: str, n: int, params: dict) -> np.ndarray:
    """Each library mask written from its English definition (i = query row, j = key column)."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    causal = j <= i

    def segment_ids(edges: list[int]) -> np.ndarray:
        return np.searchsorted(np.asarray(edges), np.arange(n), side="right") - 1

    if name == "full":
        return np.ones((n, n), dtype=bool)
    if name == "causal":
        return causal
    if name == "sliding_window":
        return causal & (i - j <= params["window"])
    if name in ("causal_document", "document", "prefix_document"):
        edges = params["edges"]
        doc = segment_ids(edges)
        same = doc[:, None] == doc[None, :]
        if name == "causal_document":
            return same & causal
        if name == "document":
            return same
        starts = np.asarray(edges)[doc]
        ends = np.asarray(edges)[doc + 1]
        prefix_end = starts + np.round(params["prefix"] * (ends - starts)).astype(int)
        in_prefix = np.arange(n) < prefix_end
        return same & (in_prefix[None, :] | causal)
    if name == "shared_question":
        sample, part = params["sample"], params["part"]  # part: -1 question, else answer index
        same_sample = sample[:, None] == sample[None, :]
        key_is_question = (part == -1)[None, :]
        same_answer = part[:, None] == part[None, :]
        return causal & same_sample & (key_is_question | same_answer)
    if name == "global_sliding":
        g, left, right = params["global_tokens"], params["left"], params["right"]
        return (i < g) | (j < g) | ((j >= i - left) & (j <= i + right))
    if name == "causal_blockwise":
        block = segment_ids(params["edges"])
        test = block == block.max()
        return causal & ((block[:, None] == block[None, :]) | test[:, None])
    if name == "prefix_lm":
        return (j < params["prefix"]) | causal
    if name == "qk_sparse":
        o, length = params["start"], params["length"]
        dropped = (j >= o) & (j < o + length) & (i < o + length)
        return causal & ~dropped
    raise KeyError(name)
