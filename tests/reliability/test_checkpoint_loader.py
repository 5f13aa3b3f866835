"""No checkpoint runs code: a pickle whose __reduce__ creates a marker file goes to every loader
path of the CLI; each must refuse it with one `error:` line (exit 2) and the marker must not exist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engines.core import EngineError
from engines.core.checkpoint import read_checkpoint, sha256, shipped_checkpoints
from workbench.cli.main import main

os.environ.setdefault("WORKBENCH_THREADS", "1")


class Payload:
    """Unpickling this calls open(marker, "w"): the file appears if, and only if, the pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.pt"
    torch.save({"format": "x", "config": {}, "model": {}, "hook": Payload(marker)}, path)
    return path, marker


SCENE = "resources/segmentation/example_scene.ply"
# Each command line names the hostile file as {e} and a scratch folder as {t}.
COMMANDS = {
    "planner run --checkpoint": "planner run --type straight --checkpoint {e}",
    "planner suite --checkpoint": "planner suite --n 1 --no-commonroad --latency-replans 0 --workers 1 --planners diffusion --checkpoint {e}",
    "planner data --student": "planner data --episodes 1 --workers 1 --student {e} --out {t}/d.npz",
    "planner train --init": "planner train --minutes 0.01 --init {e} --out {t}/new.pt --data {t}/none.npz",
    "planner train (resume --out)": "planner train --minutes 0.01 --out {e} --data {t}/none.npz",
    "planner average": "planner average {e} {e} --out {t}/avg.pt",
    "sketcher solve --checkpoint": "sketcher solve --target resources/sketcher/example.png --budget 10 --checkpoint {e}",
    "sketcher bench --checkpoint": "sketcher bench --targets 1 --primitives 1 --budget 10 --checkpoint {e}",
    "segmentation run --prior": f"segmentation run {SCENE} --prior {{e}} --out {{t}}/o.ply",
    "segmentation run --policy": f"segmentation run {SCENE} --agent ppo --policy {{e}} --out {{t}}/o.ply",
    "topomap maps (run file)": "topomap maps {e} --out {t}/maps",
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_malicious_checkpoint_runs_nothing(name: str, evil, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    path, marker = evil
    code = main([*COMMANDS[name].format(e=path, t=tmp_path).split(), "--quiet"])
    err = capsys.readouterr().err
    assert not marker.exists(), f"{name}: the checkpoint ran code"
    assert code == 2, err
    assert err.startswith("error:") and "Traceback" not in err and err.count("\n") == 1, err


def test_bare_tensor_is_an_engine_error(tmp_path: Path) -> None:
    path = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), path)
    with pytest.raises(EngineError, match="holds a Tensor"):
        read_checkpoint(path, "planner checkpoint", keys=("config",))


def test_format_and_keys_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"format": "someone-else", "model": {}}, path)
    with pytest.raises(EngineError, match="its format is 'someone-else'"):
        read_checkpoint(path, "planner checkpoint", fmt="workbench-planner-checkpoint")
    with pytest.raises(EngineError, match="no 'config' entry"):
        read_checkpoint(path, "planner checkpoint", keys=("model", "config"))
    with pytest.raises(EngineError, match="of version None"):
        read_checkpoint(path, "run file", version=1)


def test_truncated_file_is_an_engine_error(tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    torch.save({"model": {"w": torch.ones(100)}}, good)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(good.read_bytes()[:200])
    with pytest.raises(EngineError, match="truncated or corrupt"):
        read_checkpoint(bad, "planner checkpoint")


def test_shipped_checkpoints_load_safely_and_are_hashed() -> None:
    shipped = shipped_checkpoints()
    assert {"planner/diffusion_planner.pt", "sketcher/model.pt", "segmentation/prior.pt", "segmentation/policy.pt"} <= set(shipped)
    from engines.core import resource_path

    for name, digest in shipped.items():
        assert len(digest) == 64 and digest == sha256(resource_path(*name.split("/")))
        assert isinstance(read_checkpoint(resource_path(*name.split("/")), "checkpoint"), dict)
