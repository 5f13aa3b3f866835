"""`workbench segmentation validate-prior`: held-out-category mask IoU against calling every point object."""

from __future__ import annotations

import json
from pathlib import Path


def test_validate_prior_prints_each_prior_beside_the_trivial_baseline(cli, tmp_path: Path) -> None:
    from engines.segmentation.prior import shipped_prior_path

    proc = cli("segmentation", "validate-prior", "--prior", str(shipped_prior_path()), "--n", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["samples"] == 4 and data["categories"] == ["plant", "rack", "ladder_like"]
    (name, iou), = data["mask_iou"].items()
    assert name.endswith("prior.pt") and 0 < iou <= 1 and 0 < data["trivial_iou"] < 1
    human = cli("segmentation", "validate-prior", "--n", "4")
    assert human.returncode == 0 and "everything is object" in human.stdout and "shipped" in human.stdout
    bad = tmp_path / "bad.pt"
    bad.write_text("no")
    proc = cli("segmentation", "validate-prior", "--prior", str(bad), "--n", "4")
    assert proc.returncode == 2 and "not a segmentation prior" in proc.stderr
