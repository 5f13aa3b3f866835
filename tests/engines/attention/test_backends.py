"""Every backend agrees with the float64 reference (1e-5, fp32): library masks, random masks,
awkward sizes, N_q != N_k, per-head masks; gradients of blocksparse match the reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.attention import MASKS, build, flashmask_attention, make_mask
from engines.attention.api import resolve_backend
from engines.attention.backends import blocksparse
from engines.core import EngineError

from .helpers import random_vectors

SIZES = (1, 7, 127, 1000, 2047)
TOL = 1e-5
MODES = [(True, 1), (True, 2), (False, 2), (False, 4)]


def _qkv(n_q: int, n_k: int, seed: int, heads: int = 2, grad: bool = False):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, heads, n_q, 16, generator=g)
    k, v = (torch.randn(1, heads, n_k, 16, generator=g) for _ in range(2))
    return [t.requires_grad_(grad) for t in (q, k, v)]


def _err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


BACKENDS = ("sdpa_dense", "blocksparse", "flex")


@pytest.mark.parametrize("n", SIZES)
def test_library_masks_match_reference(n: int) -> None:
    q, k, v = _qkv(n, n, n)
    for name in MASKS:
        mask = build(name, n)
        ref = flashmask_attention(q, k, v, mask, causal=mask.causal, backend="reference")
        for backend in BACKENDS:
            out = flashmask_attention(q, k, v, mask, causal=mask.causal, backend=backend)
            assert out.shape == q.shape and out.dtype == q.dtype
            assert _err(out, ref) < TOL, f"{backend} {name} N={n}"


@pytest.mark.parametrize("n_q,n_k", [(127, 127), (1000, 2047), (1, 7), (2047, 1000)])
def test_random_masks_match_reference_per_head_and_rectangular(n_q: int, n_k: int) -> None:
    backends = BACKENDS if (n_q, n_k) in ((127, 127), (1000, 2047)) else BACKENDS[:2]  # flex compiles per shape
    rng = np.random.default_rng(n_q + n_k)
    q, k, v = _qkv(n_q, n_k, 5)
    for causal, c in MODES:
        vec = torch.from_numpy(random_vectors(rng, n_q, n_k, causal, c, heads=2))
        ref = flashmask_attention(q, k, v, vec, causal=causal, backend="reference")
        for backend in backends:
            out = flashmask_attention(q, k, v, vec, causal=causal, backend=backend)
            assert _err(out, ref) < TOL, f"{backend} causal={causal} C={c}"


def test_blocksparse_small_tiles_and_batches() -> None:
    rng = np.random.default_rng(11)
    q, k, v = (torch.randn(3, 2, 75, 8) for _ in range(3))
    for causal, c in MODES:
        vec = random_vectors(rng, 75, 75, causal, c, heads=1, batch=3)
        mask = make_mask(vec, causal)
        ref = flashmask_attention(q, k, v, mask, causal=causal, backend="reference")
        for bq, bk in ((8, 16), (32, 8), (75, 75)):
            assert _err(blocksparse.attention(q, k, v, mask, bq, bk), ref) < TOL


@pytest.mark.parametrize("workers", ["1", "4"])
def test_blocksparse_is_the_same_with_many_workers(monkeypatch, workers: str) -> None:
    """Workers fold overlapping row bands in under per-row locks: any count gives the reference."""
    monkeypatch.setenv("FLASHMASK_THREADS", workers)
    q, k, v = _qkv(2047, 2047, 8, heads=3)
    for name in ("sliding_window", "global_sliding", "causal_document", "random_eviction"):
        mask = build(name, 2047)
        ref = flashmask_attention(q, k, v, mask, causal=mask.causal, backend="reference")
        assert _err(blocksparse.attention(q, k, v, mask), ref) < TOL, f"{name}, {workers} workers"


def test_piece_masks_past_the_budget_are_built_per_call_with_the_same_result(monkeypatch) -> None:
    """Random eviction's partial tiles all differ: kept, their masks would grow as N^2."""
    n = 1000
    mask = build("random_eviction", n)
    q, k, v = _qkv(n, n, 2, grad=True)
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(1))
    kept = blocksparse.make_plan(mask, heads=2, block_q=32, block_k=32)
    assert kept.pieces.nbytes > 100_000
    budget = 40_000
    monkeypatch.setattr(blocksparse, "STORED_MASK_BYTES", budget)
    lean = blocksparse.make_plan(mask, heads=2, block_q=32, block_k=32)
    assert 0 < lean.pieces.nbytes <= budget
    assert [t.runs for t in lean.tasks] == [t.runs for t in kept.tasks]
    ref_out = flashmask_attention(q, k, v, mask, causal=True, backend="reference")
    ref = torch.autograd.grad(ref_out, (q, k, v), grad)
    out = blocksparse.BlockSparseAttention.apply(q, k, v, lean)
    assert _err(out, ref_out) < TOL
    for which, a, b in zip("qkv", torch.autograd.grad(out, (q, k, v), grad), ref):
        assert _err(a, b) < TOL, f"d{which}"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_cancelled_job_stops_blocksparse_between_its_tasks(monkeypatch, workers: str) -> None:
    """One call at N = 128K runs for minutes: Cancel must not wait for all of it."""
    from engines.attention.workers import cancel_scope
    from engines.core import Cancelled, CancelToken

    monkeypatch.setenv("FLASHMASK_THREADS", workers)
    q, k, v = _qkv(1000, 1000, 3, grad=True)
    mask = build("sliding_window", 1000, {"window": 100})
    plan = blocksparse.make_plan(mask, heads=2, block_q=32, block_k=32, workers=int(workers))
    assert len(plan.tasks) > 20
    token, calls = CancelToken(), []
    run = blocksparse.flash_forward

    def counting(*args):
        calls.append(1)
        if len(calls) == 3:
            token.cancel()
        return run(*args)

    monkeypatch.setattr(blocksparse, "flash_forward", counting)
    with cancel_scope(token), pytest.raises(Cancelled):
        blocksparse.forward(q.detach(), k.detach(), v.detach(), plan)
    assert len(calls) < 10  # the tasks under way finish, no new one starts
    monkeypatch.setattr(blocksparse, "flash_forward", run)
    out = blocksparse.BlockSparseAttention.apply(q, k, v, plan)  # outside the scope: runs whole
    with cancel_scope(token), pytest.raises(Cancelled):
        out.sum().backward()


def test_rows_without_a_visible_key_are_zero() -> None:
    q, k, v = _qkv(20, 20, 1)
    mask = build("qk_sparse", 20, {"start": 0, "length": 8})  # rows 0..7 see no key
    for backend in ("reference", "sdpa_dense", "blocksparse"):
        out = flashmask_attention(q, k, v, mask, causal=True, backend=backend)
        assert out[:, :, :8].abs().max() == 0 and out[:, :, 8:].abs().min() > 0


@pytest.mark.parametrize("n", [1, 7, 127, 1000])
def test_blocksparse_gradients_match_reference(n: int) -> None:
    q, k, v = _qkv(n, n, n, grad=True)
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(3))
    names = list(MASKS) if n <= 127 else ["causal", "global_sliding", "qk_sparse", "random_eviction"]
    for name in names:
        mask = build(name, n)
        ref = torch.autograd.grad(flashmask_attention(q, k, v, mask, causal=mask.causal, backend="reference"), (q, k, v), grad)
        mine = torch.autograd.grad(flashmask_attention(q, k, v, mask, causal=mask.causal, backend="blocksparse"), (q, k, v), grad)
        for which, a, b in zip("qkv", mine, ref):
            assert _err(a, b) < TOL, f"d{which} {name} N={n}"


def test_blocksparse_gradients_on_random_rectangular_masks() -> None:
    rng = np.random.default_rng(4)
    for n_q, n_k in ((90, 200), (200, 90)):
        q, k, v = _qkv(n_q, n_k, 9, grad=True)
        grad = torch.randn(q.shape)
        for causal, c in MODES:
            vec = torch.from_numpy(random_vectors(rng, n_q, n_k, causal, c, heads=2))
            ref = torch.autograd.grad(flashmask_attention(q, k, v, vec, causal=causal, backend="reference"), (q, k, v), grad)
            mask = make_mask(vec.numpy(), causal, n_q)
            mine = torch.autograd.grad(blocksparse.attention(q, k, v, mask, 32, 16), (q, k, v), grad)
            for a, b in zip(mine, ref):
                assert _err(a, b) < TOL


def test_auto_picks_blocksparse_on_the_cpu_and_none_means_no_mask() -> None:
    """On CPU tensors "auto" is blocksparse; a None mask is plain causal or plain full attention."""
    q, k, v = _qkv(33, 33, 2)
    assert resolve_backend("auto", q) == "blocksparse"
    causal = flashmask_attention(q, k, v, None, causal=True)
    assert torch.equal(causal, flashmask_attention(q, k, v, None, causal=True, backend="blocksparse"))
    assert _err(causal, torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)) < TOL
    full = flashmask_attention(q, k, v, None, causal=False)
    assert _err(full, torch.nn.functional.scaled_dot_product_attention(q, k, v)) < TOL


@pytest.mark.parametrize(
    "change,fragment",
    [
        (lambda q, k, v, m: (q[0], k, v, m), "q must be a 4-D tensor"),
        (lambda q, k, v, m: (q, k, v[:, :, :5], m), "k and v must have the same shape"),
        (lambda q, k, v, m: (q, k[:, :1], v[:, :1], m), "must agree on batch, heads and head dim"),
        (lambda q, k, v, m: (q, k, v, torch.zeros(1, 3, 8, 1, dtype=torch.int32)), "the mask has 3 heads"),
        (lambda q, k, v, m: (q, k, v, torch.zeros(2, 1, 8, 1, dtype=torch.int32)), "the mask has batch 2"),
        (lambda q, k, v, m: (q, k, v, torch.zeros(1, 1, 9, 1, dtype=torch.int32)), "N_q=8, N_k=9 but q has 8 rows and k has 8"),
        (lambda q, k, v, m: (q.long(), k, v, m), "floating-point"),
    ],
)
def test_mismatched_inputs_get_one_sentence(change, fragment: str) -> None:
    q, k, v = _qkv(8, 8, 0)
    mask = torch.full((1, 1, 8, 1), 8, dtype=torch.int32)
    args = change(q, k, v, mask)
    with pytest.raises(EngineError) as info:
        flashmask_attention(*args[:3], args[3], causal=True, backend="blocksparse")
    assert fragment in str(info.value)


def test_backend_limits_are_explained() -> None:
    q, k, v = _qkv(8, 8, 0, grad=True)
    with pytest.raises(EngineError, match="unknown backend 'fast'"):
        flashmask_attention(q, k, v, backend="fast")
    with pytest.raises(EngineError, match="inference-only"):
        flashmask_attention(q, k, v, backend="flex")
    with pytest.raises(EngineError, match="needs a CUDA GPU"):
        flashmask_attention(q, k, v, backend="triton")
