"""Every batch command takes --executor local|ray and --ray-address (issue 58); a bad pairing is one user error."""

from __future__ import annotations

import pytest

from engines.core import EngineError
from workbench.cli.common import executor_spec
from workbench.cli.main import build_parser

BATCH = (
    ["planner", "bench"],
    ["planner", "suite"],
    ["planner", "data", "--out", "x.npz"],
    ["planner", "train", "--minutes", "1", "--out", "x.pt"],
    ["sketcher", "bench"],
    ["topomap", "bench"],
)


@pytest.mark.parametrize("command", BATCH, ids=lambda c: " ".join(c[:2]))
def test_every_batch_command_takes_the_executor_flags(command: list[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(command).executor == "local"
    args = parser.parse_args([*command, "--executor", "ray", "--ray-address", "auto", "--workers", "3"])
    spec = executor_spec(args, args.workers)
    assert (spec.kind, spec.address, spec.workers) == ("ray", "auto", 3)


def test_a_ray_address_without_ray_is_refused() -> None:
    args = build_parser().parse_args(["planner", "bench", "--ray-address", "auto"])
    with pytest.raises(EngineError, match="--ray-address goes with --executor ray"):
        executor_spec(args, args.workers)
