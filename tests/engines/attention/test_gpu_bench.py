"""The prepared GPU benchmark refuses cleanly without a GPU (its numbers need one)."""

from __future__ import annotations

import pytest
import torch

from engines.attention import gpu_bench


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: run the benchmark itself")
def test_without_a_gpu_it_says_so_and_exits_2(capsys) -> None:
    assert gpu_bench.main(["--n", "256", "--masks", "causal"]) == 2
    assert "error: no CUDA device" in capsys.readouterr().err
