"""The Triton FlashMask kernels: exact forward and backward under the interpreter, and they
compile for real GPUs (sm_80, bf16) even on a machine without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_forward_and_gradients_match_reference_under_the_interpreter() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run(
        [sys.executable, "-m", "tests.engines.attention.triton_checks"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(report) == 3 * 12 + 8
    bad = {case: errs for case, errs in report.items() if max(errs) >= 1e-5}
    assert not bad, bad


def test_kernels_compile_for_a_gpu_target() -> None:
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from engines.attention.backends import triton_kernels as tk

    pointers = {tk.flashmask_fwd: 7, tk.flashmask_bwd_dkdv: 10, tk.flashmask_bwd_dq: 9}
    for fn, n_ptr in pointers.items():
        consts = dict(CAUSAL=True, BLOCK_M=64, BLOCK_N=64, BLOCK_D=128, HEAD_D=128, PRECISION="tf32")
        signature = {}
        for i, name in enumerate(fn.arg_names):
            if name in consts:
                signature[name] = "constexpr"
            elif i < n_ptr:
                signature[name] = "*fp32" if name in ("Lse", "Delta") else "*i32" if name in ("Vec", "MM") else "*bf16"
            else:
                signature[name] = "fp32" if name == "sm_scale" else "i32"
        try:
            compiled = triton.compile(ASTSource(fn, signature, constexprs=consts), target=GPUTarget("cuda", 80, 32), options={"num_warps": 4})
        except RuntimeError as exc:  # a triton build without the NVIDIA tool chain
            if "ptxas" in str(exc) or "backend" in str(exc).lower():
                pytest.skip(f"no NVIDIA tool chain in this triton: {exc}")
            raise
        assert "cubin" in compiled.asm, fn.__name__
