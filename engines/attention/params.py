"""The attention engine's vocabulary: backend names, mask sources, sizes and their ranges, and the
timing settings, which the engine checks and the panel, the CLI and session files all import.

``TimingSettings`` checks itself when built (``__post_init__``): settings that exist are valid, and
the sentence is the same from the panel, the CLI or Python. Importing this module stays light.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.core import EngineError

BACKENDS: tuple[str, ...] = ("reference", "sdpa_dense", "blocksparse", "flex", "triton")  # autograd: reference, blocksparse, triton
CPU_BACKENDS: tuple[str, ...] = ("sdpa_dense", "flex", "blocksparse")  # what the panel and the benchmark time on the CPU
SOURCES: tuple[str, ...] = ("preset", "vectors", "dense", "compose")  # where a mask comes from (``view.MaskRequest.kind``)
OPERATIONS: tuple[str, ...] = ("intersection", "union")  # how two masks compose
MAX_N = 1 << 20  # a million tokens: the vectors stay small, but keep typos from eating the memory
TILE_RANGE = (1, 4096)  # tile size of the overlay, rho and the ideal speed-up
HEADS_RANGE = (1, 64)
DIM_RANGE = (1, 512)
BATCH_RANGE = (1, 64)
REPEATS_RANGE = (1, 1000)
BLOCK_RANGE = (16, 4096)  # tile size of the kernels that plan by tiles


@dataclass(frozen=True)
class TimingSettings:
    """Shapes and repeats; q/k/v are seeded normal fp32 tensors ``[batch, heads, N, dim]``."""

    heads: int = 8
    dim: int = 64
    batch: int = 1
    backends: tuple[str, ...] = CPU_BACKENDS
    repeats: int = 5
    warmup: int = 1
    block: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value, (low, high) in (
            ("heads", self.heads, HEADS_RANGE),
            ("dim", self.dim, DIM_RANGE),
            ("batch", self.batch, BATCH_RANGE),
            ("repeats", self.repeats, REPEATS_RANGE),
            ("block", self.block, BLOCK_RANGE),
        ):
            if not low <= value <= high:
                raise EngineError(f"{name}={value} is out of range [{low}, {high}]")
        if self.warmup < 0:
            raise EngineError("warmup must not be negative")
        unknown = [b for b in self.backends if b not in BACKENDS]
        if unknown or not self.backends:
            raise EngineError(f"unknown backend(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(BACKENDS)}")
