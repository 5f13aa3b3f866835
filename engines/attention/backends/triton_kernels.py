"""FlashMask in Triton: forward and backward kernels that skip fully masked tiles.

Every kernel classifies its (query tile, key block) pairs on the fly from the per-block min/max
table (FlashMask's 8 vectors, ``[B, Hm, 8, T_k]``): fully masked tiles are skipped before K/V or
Q/dO are loaded, unmasked tiles never build an element mask, and only partial tiles read the
interval vectors (``[B, Hm, 4, N_k]``) to mask elements. Rows that see no key get output 0 and a
log-sum-exp of +inf, which zeroes their probabilities in the backward pass.

Importing this module imports triton; set ``TRITON_INTERPRET=1`` *before* importing it to run the
kernels on CPU tensors through Triton's interpreter (slow, for tests at small sizes).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _classify(mm, tk, T_K, r0, r1, c0, c1, offset, CAUSAL: tl.constexpr):
    """(covered, missed) for rows [r0, r1) x key block tk = columns [c0, c1)."""
    lts_min = tl.load(mm + 0 * T_K + tk)
    lts_max = tl.load(mm + 1 * T_K + tk)
    lte_min = tl.load(mm + 2 * T_K + tk)
    lte_max = tl.load(mm + 3 * T_K + tk)
    uts_min = tl.load(mm + 4 * T_K + tk)
    uts_max = tl.load(mm + 5 * T_K + tk)
    ute_min = tl.load(mm + 6 * T_K + tk)
    ute_max = tl.load(mm + 7 * T_K + tk)
    covered = ((r0 >= lts_max) & (r1 <= lte_min)) | ((r0 >= uts_max) & (r1 <= ute_min))
    missed = ((r1 <= lts_min) | (r0 >= lte_max)) & ((r1 <= uts_min) | (r0 >= ute_max))
    if CAUSAL:
        covered = covered | (c0 > r1 - 1 + offset)
        missed = missed & (c1 - 1 <= r0 + offset)
    return covered, missed


@triton.jit
def _hidden(vec, rows, cols, N_K, offset, CAUSAL: tl.constexpr):
    """Element mask of a partial tile: True where row may NOT attend column (or out of range)."""
    inside = cols < N_K
    lts = tl.load(vec + 0 * N_K + cols, mask=inside, other=0)
    lte = tl.load(vec + 1 * N_K + cols, mask=inside, other=0)
    uts = tl.load(vec + 2 * N_K + cols, mask=inside, other=0)
    ute = tl.load(vec + 3 * N_K + cols, mask=inside, other=0)
    r = rows[:, None]
    hidden = ((r >= lts[None, :]) & (r < lte[None, :])) | ((r >= uts[None, :]) & (r < ute[None, :]))
    if CAUSAL:
        hidden = hidden | (cols[None, :] > r + offset)
    return hidden | (cols[None, :] >= N_K)


@triton.jit
def flashmask_fwd(
    Q,
    K,
    V,
    Out,
    Lse,
    Vec,
    MM,
    s_qb,
    s_qh,
    s_qm,
    s_kb,
    s_kh,
    s_kn,
    s_vb,
    s_vh,
    s_vn,
    s_ob,
    s_oh,
    s_om,
    s_vec_b,
    s_vec_h,
    s_mm_b,
    s_mm_h,
    H,
    N_Q,
    N_K,
    T_K,
    offset,
    sm_scale,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    HEAD_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    r0 = pid_m * BLOCK_M
    r1 = tl.minimum(r0 + BLOCK_M, N_Q)
    rows = r0 + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    d_ok = d[None, :] < HEAD_D
    q = tl.load(Q + b * s_qb + h * s_qh + rows[:, None] * s_qm + d[None, :], mask=(rows[:, None] < N_Q) & d_ok, other=0.0)
    vec = Vec + b * s_vec_b + h * s_vec_h
    mm = MM + b * s_mm_b + h * s_mm_h
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = N_K
    if CAUSAL:
        hi = tl.minimum(N_K, tl.maximum(r1 + offset, 0))
    for start_n in range(0, hi, BLOCK_N):
        c1 = tl.minimum(start_n + BLOCK_N, N_K)
        covered, missed = _classify(mm, start_n // BLOCK_N, T_K, r0, r1, start_n, c1, offset, CAUSAL)
        if not covered:
            cols = start_n + tl.arange(0, BLOCK_N)
            kv_ok = (cols[:, None] < N_K) & d_ok
            k = tl.load(K + b * s_kb + h * s_kh + cols[:, None] * s_kn + d[None, :], mask=kv_ok, other=0.0)
            v = tl.load(V + b * s_vb + h * s_vh + cols[:, None] * s_vn + d[None, :], mask=kv_ok, other=0.0)
            qk = tl.dot(q, tl.trans(k), input_precision=PRECISION) * sm_scale
            if (not missed) or (c1 - start_n < BLOCK_N):
                qk = tl.where(_hidden(vec, rows, cols, N_K, offset, CAUSAL), float("-inf"), qk)
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.exp(qk - m_safe[:, None])
            alpha = tl.exp(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
            m_i = m_new
    seen = l_i > 0
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    lse = tl.where(seen, m_i + tl.log(tl.where(seen, l_i, 1.0)), float("inf"))
    row_ok = rows < N_Q
    tl.store(Out + b * s_ob + h * s_oh + rows[:, None] * s_om + d[None, :], out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok)
    tl.store(Lse + pid_bh * N_Q + rows, lse, mask=row_ok)


@triton.jit
def flashmask_bwd_dkdv(
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DK,
    DV,
    Vec,
    MM,
    s_qb,
    s_qh,
    s_qm,
    s_kb,
    s_kh,
    s_kn,
    s_vb,
    s_vh,
    s_vn,
    s_vec_b,
    s_vec_h,
    s_mm_b,
    s_mm_h,
    H,
    N_Q,
    N_K,
    T_K,
    offset,
    sm_scale,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    HEAD_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One key block per program: loop over the query tiles that are not fully masked.

    Q/DO use the q strides, K/DK and V/DV the k/v strides (the gradients are allocated alike)."""
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    c0 = pid_n * BLOCK_N
    c1 = tl.minimum(c0 + BLOCK_N, N_K)
    cols = c0 + tl.arange(0, BLOCK_N)
    d = tl.arange(0, BLOCK_D)
    d_ok = d[None, :] < HEAD_D
    kv_ok = (cols[:, None] < N_K) & d_ok
    k = tl.load(K + b * s_kb + h * s_kh + cols[:, None] * s_kn + d[None, :], mask=kv_ok, other=0.0)
    v = tl.load(V + b * s_vb + h * s_vh + cols[:, None] * s_vn + d[None, :], mask=kv_ok, other=0.0)
    vec = Vec + b * s_vec_b + h * s_vec_h
    mm = MM + b * s_mm_b + h * s_mm_h
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    lo = 0
    if CAUSAL:
        lo = (tl.maximum(c0 - offset, 0) // BLOCK_M) * BLOCK_M
    for start_m in range(lo, N_Q, BLOCK_M):
        r1 = tl.minimum(start_m + BLOCK_M, N_Q)
        covered, missed = _classify(mm, pid_n, T_K, start_m, r1, c0, c1, offset, CAUSAL)
        if not covered:
            rows = start_m + tl.arange(0, BLOCK_M)
            row_ok = rows < N_Q
            q_ptrs = b * s_qb + h * s_qh + rows[:, None] * s_qm + d[None, :]
            q = tl.load(Q + q_ptrs, mask=row_ok[:, None] & d_ok, other=0.0)
            do = tl.load(DO + q_ptrs, mask=row_ok[:, None] & d_ok, other=0.0)
            lse = tl.load(Lse + pid_bh * N_Q + rows, mask=row_ok, other=float("inf"))
            delta = tl.load(Delta + pid_bh * N_Q + rows, mask=row_ok, other=0.0)
            qk = tl.dot(q, tl.trans(k), input_precision=PRECISION) * sm_scale
            p = tl.exp(qk - lse[:, None])
            if (not missed) or (c1 - c0 < BLOCK_N):
                p = tl.where(_hidden(vec, rows, cols, N_K, offset, CAUSAL), 0.0, p)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
            dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    out_ptrs = b * s_kb + h * s_kh + cols[:, None] * s_kn + d[None, :]
    tl.store(DK + out_ptrs, (dk * sm_scale).to(DK.dtype.element_ty), mask=kv_ok)
    tl.store(DV + b * s_vb + h * s_vh + cols[:, None] * s_vn + d[None, :], dv.to(DV.dtype.element_ty), mask=kv_ok)


@triton.jit
def flashmask_bwd_dq(
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DQ,
    Vec,
    MM,
    s_qb,
    s_qh,
    s_qm,
    s_kb,
    s_kh,
    s_kn,
    s_vb,
    s_vh,
    s_vn,
    s_vec_b,
    s_vec_h,
    s_mm_b,
    s_mm_h,
    H,
    N_Q,
    N_K,
    T_K,
    offset,
    sm_scale,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    HEAD_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One query tile per program: loop over the key blocks that are not fully masked."""
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    r0 = pid_m * BLOCK_M
    r1 = tl.minimum(r0 + BLOCK_M, N_Q)
    rows = r0 + tl.arange(0, BLOCK_M)
    row_ok = rows < N_Q
    d = tl.arange(0, BLOCK_D)
    d_ok = d[None, :] < HEAD_D
    q_ptrs = b * s_qb + h * s_qh + rows[:, None] * s_qm + d[None, :]
    q = tl.load(Q + q_ptrs, mask=row_ok[:, None] & d_ok, other=0.0)
    do = tl.load(DO + q_ptrs, mask=row_ok[:, None] & d_ok, other=0.0)
    lse = tl.load(Lse + pid_bh * N_Q + rows, mask=row_ok, other=float("inf"))
    delta = tl.load(Delta + pid_bh * N_Q + rows, mask=row_ok, other=0.0)
    vec = Vec + b * s_vec_b + h * s_vec_h
    mm = MM + b * s_mm_b + h * s_mm_h
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = N_K
    if CAUSAL:
        hi = tl.minimum(N_K, tl.maximum(r1 + offset, 0))
    for start_n in range(0, hi, BLOCK_N):
        c1 = tl.minimum(start_n + BLOCK_N, N_K)
        covered, missed = _classify(mm, start_n // BLOCK_N, T_K, r0, r1, start_n, c1, offset, CAUSAL)
        if not covered:
            cols = start_n + tl.arange(0, BLOCK_N)
            kv_ok = (cols[:, None] < N_K) & d_ok
            k = tl.load(K + b * s_kb + h * s_kh + cols[:, None] * s_kn + d[None, :], mask=kv_ok, other=0.0)
            v = tl.load(V + b * s_vb + h * s_vh + cols[:, None] * s_vn + d[None, :], mask=kv_ok, other=0.0)
            qk = tl.dot(q, tl.trans(k), input_precision=PRECISION) * sm_scale
            p = tl.exp(qk - lse[:, None])
            if (not missed) or (c1 - start_n < BLOCK_N):
                p = tl.where(_hidden(vec, rows, cols, N_K, offset, CAUSAL), 0.0, p)
            dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
            ds = p * (dp - delta[:, None])
            dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    tl.store(DQ + q_ptrs, (dq * sm_scale).to(DQ.dtype.element_ty), mask=row_ok[:, None] & d_ok)
