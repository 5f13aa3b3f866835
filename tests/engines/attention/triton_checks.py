"""Run the Triton FlashMask kernels through Triton's interpreter and print their errors as JSON.

Run as ``TRITON_INTERPRET=1 python -m tests.engines.attention.triton_checks``: the variable must
be set before triton compiles the kernels, so the test runs this in a fresh interpreter.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

from engines.attention import MASKS, build, flashmask_attention

from .helpers import random_vectors


def _errors(q, k, v, mask, causal) -> list[float]:
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(1))
    results = []
    for backend in ("reference", "triton"):
        out = flashmask_attention(q, k, v, mask, causal=causal, backend=backend)
        results.append((out, *torch.autograd.grad(out, (q, k, v), grad)))
    return [float((a.double() - b.double()).abs().max()) for a, b in zip(*results)]


def main() -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    gen = torch.Generator().manual_seed(0)
    report: dict[str, list[float]] = {}
    for n in (1, 7, 37):
        q, k, v = (torch.randn(1, 2, n, 16, generator=gen).requires_grad_() for _ in range(3))
        for name in MASKS:
            mask = build(name, n)
            report[f"{name} N={n}"] = _errors(q, k, v, mask, mask.causal)
    rng = np.random.default_rng(0)
    for n_q, n_k in ((20, 45), (45, 20)):
        q = torch.randn(1, 2, n_q, 24, generator=gen).requires_grad_()  # D=24: not a power of two
        k, v = (torch.randn(1, 2, n_k, 24, generator=gen).requires_grad_() for _ in range(2))
        for causal, c in ((True, 1), (True, 2), (False, 2), (False, 4)):
            vec = torch.from_numpy(random_vectors(rng, n_q, n_k, causal, c, heads=2))
            report[f"random causal={causal} C={c} {n_q}x{n_k}"] = _errors(q, k, v, vec, causal)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
