"""Training on several processes or machines with torch.distributed (DDP), launched by torchrun.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous address; without them (one
process) every helper here is a no-op, so a training loop written with them behaves exactly as
before. Each process takes its share of one global batch, DDP averages the gradients, and all
processes stay in step: they agree on the clock and on when to stop, and only rank 0 writes
checkpoints and reports progress.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .errors import EngineError


@dataclass(frozen=True)
class Group:
    """This process's place among the training processes (rank 0 of 1 when run alone)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    def share(self, batch: int) -> slice:
        """This process's rows of a global batch of ``batch`` rows (each takes an equal share)."""
        if batch % self.world:
            raise EngineError(f"the batch of {batch} does not split evenly over {self.world} training processes")
        n = batch // self.world
        return slice(self.rank * n, (self.rank + 1) * n)

    def wrap(self, module: torch.nn.Module) -> torch.nn.Module:
        """``module`` under DistributedDataParallel (gradients averaged over the processes), or as it is alone."""
        if self.world == 1:
            return module
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [self.local_rank] if torch.distributed.get_backend() == "nccl" else None
        return DistributedDataParallel(module, device_ids=device_ids)

    def agree_max(self, values: list[float]) -> list[float]:
        """Each value's maximum over the processes (the clock, stop and cancel flags): every
        process then takes the same decision at the same step."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self._device())
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return t.tolist()

    def mean(self, values: list[float]) -> list[float]:
        """Each value's mean over the processes (their losses on their shares of the batch)."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self._device())
        torch.distributed.all_reduce(t)
        return (t / self.world).tolist()

    def wait_all(self) -> None:
        """Return once every process got here: they leave training together, after rank 0 wrote the
        checkpoint, so no process tears down its connections while another still uses them."""
        if self.world > 1:
            torch.distributed.barrier()

    def _device(self) -> torch.device:
        return torch.device("cuda", self.local_rank) if torch.distributed.get_backend() == "nccl" else torch.device("cpu")


class LossModule(torch.nn.Module):
    """``loss(model, *args)`` as one call of a module that holds ``model``: the form
    DistributedDataParallel wraps (it averages the gradients of what a call of its module computed)."""

    def __init__(self, model: torch.nn.Module, loss: Callable[..., Any]) -> None:
        super().__init__()
        self.model = model
        self.loss = loss

    def forward(self, *args: Any) -> Any:
        return self.loss(self.model, *args)


def launched() -> bool:
    """Whether torchrun (or another launcher) started this process as one of several."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def rank() -> int:
    """This process's rank under torchrun (0 when alone), before or without a process group."""
    return int(os.environ.get("RANK", "0"))


def setup(device: torch.device | None = None) -> Group:
    """Join the process group torchrun set up (gloo on CPU, nccl on GPU); alone: rank 0 of 1."""
    if not launched():
        return Group()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if device is not None and device.type == "cuda" else "gloo")
    return Group(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def finish() -> None:
    """Leave the process group, if this process joined one (after training, or when it failed)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def launch_local(fn: Callable[..., Any], processes: int, *args: str) -> dict[int, Any]:
    """``fn(*args)`` on ``processes`` local processes, as `torchrun --standalone` starts them (the
    launcher picks the rendezvous port itself, none is chosen here and raced for); rank -> result.
    ``fn`` must be module-level, so the spawned processes can find it."""
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

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
