"""Launch a test's training function on several local processes, as `torchrun --standalone` does:
the launcher picks the rendezvous port itself (no port chosen here and raced for)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from torch.distributed.launcher.api import LaunchConfig, elastic_launch


def torchrun(fn: Callable[..., Any], processes: int, *args: str) -> dict[int, Any]:
    """``fn(*args)`` on ``processes`` local processes (``fn`` module-level, so spawn can find it); rank -> result."""
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=processes,
        run_id=uuid.uuid4().hex,
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        start_method="spawn",
    )
    return elastic_launch(config, fn)(*args)
