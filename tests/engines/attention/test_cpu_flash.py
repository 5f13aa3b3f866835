"""The private fused CPU flash ops, wrapped in engines/attention/cpu_flash.py, behave as we rely on."""

from __future__ import annotations

import math

import torch

from engines.attention.cpu_flash import NO_KEY_LSE, flash_backward, flash_forward, masked_value, merge_into


def _dense(q, k, v, bias=None):
    s = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias.double()
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


def test_forward_returns_output_and_natural_log_sum_exp() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 70, 16) for _ in range(3))
    out, lse = flash_forward(q, k, v)
    ref_out, ref_lse = _dense(q, k, v)
    assert out.shape == (2, 3, 70, 16) and lse.shape == (2, 3, 70)
    assert (out.double() - ref_out).abs().max() < 1e-5 and (lse.double() - ref_lse).abs().max() < 1e-4


def test_key_ranges_merge_exactly_and_masked_rows_drop_out() -> None:
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 50, 8) for _ in range(3))
    bias = torch.zeros(50, 30)
    bias[:5] = masked_value(torch.float32)  # rows 0-4 see nothing in the first range
    a = flash_forward(q, k[:, :, :30], v[:, :, :30], bias)
    b = flash_forward(q, k[:, :, 30:], v[:, :, 30:])
    assert (a[1][..., :5] < NO_KEY_LSE).all()  # the finite mask value gives a huge negative lse
    out, lse = a[0].clone(), a[1].clone()
    merge_into(out, lse, *b)
    full_bias = torch.zeros(50, 50)
    full_bias[:5, :30] = float("-inf")
    ref_out, ref_lse = _dense(q, k, v, full_bias)
    assert (out.double() - ref_out).abs().max() < 1e-5 and (lse.double() - ref_lse).abs().max() < 1e-4


def test_merging_into_untouched_rows_takes_the_piece_and_strided_views_work() -> None:
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 1, 12, 8) for _ in range(3))
    acc, lse = torch.zeros(1, 1, 12, 8), torch.full((1, 1, 12), float("-inf"))
    band = q[0].as_strided((3, 1, 4, 8), (32, 96, 8, 1))  # rows 0-3, 4-7, 8-11 as a batch of three
    keys = k[0].as_strided((3, 1, 4, 8), (32, 96, 8, 1))
    values = v[0].as_strided((3, 1, 4, 8), (32, 96, 8, 1))
    out, part = flash_forward(band, keys, values)
    merge_into(acc.view(3, 1, 4, 8), lse.view(3, 1, 4), out, part)
    for i in range(3):  # block-diagonal attention: each band of rows sees its own four keys
        rows = slice(4 * i, 4 * i + 4)
        ref_out, ref_lse = _dense(q[:, :, rows], k[:, :, rows], v[:, :, rows])
        assert (acc[:, :, rows].double() - ref_out).abs().max() < 1e-6 and (lse[:, :, rows].double() - ref_lse).abs().max() < 1e-5


def test_backward_of_key_and_query_pieces_sums_to_the_whole() -> None:
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 2, 90, 16, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, 2, 90, 16)
    ref = _dense(q, k, v)[0].float()
    rq, rk, rv = torch.autograd.grad(ref, (q, k, v), grad)
    out, lse = flash_forward(q.detach(), k.detach(), v.detach())
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for rows in (slice(0, 40), slice(40, 90)):
        for cols in (slice(0, 25), slice(25, 90)):
            gq, gk, gv = flash_backward(
                grad[:, :, rows], q[:, :, rows].detach(), k[:, :, cols].detach(), v[:, :, cols].detach(), out[:, :, rows], lse[:, :, rows]
            )
            dq[:, :, rows] += gq
            dk[:, :, cols] += gk
            dv[:, :, cols] += gv
    for mine, truth in ((dq, rq), (dk, rk), (dv, rv)):
        assert (mine - truth).abs().max() < 1e-5
