"""Files a run's maps go out as: PNG images, one NPZ of every map, a CSV of unit statistics, and
the trained weights (NPZ of the state dict). Every file is written atomically."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from engines.core import EngineError, atomic_path, write_text

from .maps import LayerMaps
from .render import save_png, scalar_rgb, upscale
from .runview import RunView

CELL = 24  # pixels per unit in exported PNGs


def pinwheel_overlay(image: np.ndarray, layer: LayerMaps, cell: int = CELL) -> np.ndarray:
    """The map enlarged, with pinwheel centres drawn as white (+1/2) or black (-1/2) dots."""
    from PIL import Image, ImageDraw

    big = Image.fromarray(upscale(image, cell))
    draw = ImageDraw.Draw(big)
    radius = max(3, cell // 5)
    for p in layer.pinwheels:
        x, y = (p.col + 0.5) * cell, (p.row + 0.5) * cell
        fill, outline = ((255, 255, 255), (0, 0, 0)) if p.sign > 0 else ((0, 0, 0), (255, 255, 255))
        draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=fill, outline=outline)
    return np.asarray(big)


def map_images(view: RunView) -> dict[str, np.ndarray]:
    """Every map picture by file name: three maps and the per-class d' row per layer, and the kernels."""
    images: dict[str, np.ndarray] = {}
    for layer in view.layers:
        for kind in ("category", "orientation", "frequency"):
            image = layer.images[kind]
            images[f"{layer.name}-{kind}.png"] = pinwheel_overlay(image, layer) if kind == "orientation" else upscale(image, CELL)
        tiles = [upscale(scalar_rgb(layer.stats.dprime[c], layer.side), CELL // 2) for c in range(len(view.classes))]
        gap = np.full((tiles[0].shape[0], 4, 3), 255, np.uint8)
        images[f"{layer.name}-dprime-per-class.png"] = np.concatenate([x for tile in tiles for x in (tile, gap)][:-1], axis=1)
    images["kernels.png"] = upscale(view.kernels, 6)
    return images


def check_targets(paths: list[Path]) -> None:
    """Refuse a set of files before writing any of them, so a failed export leaves nothing new behind."""
    for path in paths:
        if path.is_dir():
            raise EngineError(f"cannot write {path}: it is a folder (nothing was written)")


def export_pngs(view: RunView, out_dir: Path) -> list[Path]:
    images = {Path(out_dir) / name: picture for name, picture in map_images(view).items()}
    check_targets(list(images))
    for path, picture in images.items():
        save_png(path, picture)
    return list(images)


def maps_arrays(view: RunView) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {
        "classes": np.array(view.classes),
        "orientations": np.array(view.orientations),
        "frequencies": np.array(view.frequencies),
        "kernels": view.record.snapshots[-1].kernels,
        "snapshot_epochs": np.array([s.epoch for s in view.snapshots]),
    }
    for layer in view.layers:
        s = layer.stats
        prefix = layer.name + "/"
        arrays.update(
            {
                prefix + "dprime": s.dprime.reshape(-1, layer.side, layer.side),
                prefix + "dprime_relu": s.dprime_relu.reshape(-1, layer.side, layer.side),
                prefix + "orientation": s.orientation.reshape(layer.side, layer.side),
                prefix + "orientation_selectivity": s.orientation_selectivity.reshape(layer.side, layer.side),
                prefix + "frequency": s.frequency.reshape(layer.side, layer.side),
                prefix + "frequency_selectivity": s.frequency_selectivity.reshape(layer.side, layer.side),
                prefix + "pinwheels": np.array([[p.row, p.col, p.sign] for p in layer.pinwheels]).reshape(-1, 3),
                prefix + "smoothness_distances": layer.smoothness.distances,
                prefix + "smoothness_curve": layer.smoothness.curve,
                prefix + "smoothness_shuffled_mean": layer.smoothness.shuffled_mean,
                prefix + "smoothness_shuffled_std": layer.smoothness.shuffled_std,
                prefix + "smoothness_score": np.array(layer.smoothness.score),
                prefix + "relu_smoothness_score": np.array(layer.relu_smoothness.score),
                prefix + "orientation_smoothness_score": np.array(layer.orientation_smoothness.score),
            }
        )
        if layer.detail is not None:
            arrays[prefix + "tuning"] = layer.detail.tuning
            arrays[prefix + "class_means"] = layer.detail.class_means
        arrays[prefix + "dprime_over_training"] = np.stack([snap.layers[view.layer_names.index(layer.name)].stats.dprime for snap in view.snapshots])
    return arrays


def export_npz(view: RunView, path: Path) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **maps_arrays(view))
    return Path(path)


def units_csv(view: RunView) -> str:
    """One row per unit: grid position, preferences, selectivities, best class and every d'."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "layer",
            "unit",
            "row",
            "col",
            "orientation_deg",
            "orientation_selectivity",
            "frequency_cycles",
            "frequency_selectivity",
            "best_class",
            "best_dprime",
        ]
        + [f"dprime_{c}" for c in view.classes]
    )
    for layer in view.layers:
        s = layer.stats
        for k in range(layer.width):
            r, c = divmod(k, layer.side)
            writer.writerow(
                [
                    layer.name,
                    k,
                    r,
                    c,
                    f"{s.orientation[k]:.2f}",
                    f"{s.orientation_selectivity[k]:.4f}",
                    f"{s.frequency[k]:g}",
                    f"{s.frequency_selectivity[k]:.4f}",
                    view.classes[int(s.dprime[:, k].argmax())],
                    f"{s.dprime[:, k].max():.4f}",
                ]
                + [f"{v:.4f}" for v in s.dprime[:, k]]
            )
    return buffer.getvalue()


def export_csv(view: RunView, path: Path) -> Path:
    return write_text(path, units_csv(view))


def export_weights(view: RunView, path: Path) -> Path:
    """The trained network's state dict as NPZ (readable without torch)."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise EngineError(f"weights are exported as .npz; {path.name} has another suffix")
    arrays = {k: v.detach().cpu().numpy() for k, v in view.record.state.items()}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    return path


def export_all(view: RunView, out_dir: Path) -> dict[str, list[str]]:
    """What `workbench topomap maps RUN --out DIR` writes; every target is checked first."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise EngineError(f"{out_dir} is a file, not a folder")
    npz, table, weights = out_dir / "maps.npz", out_dir / "units.csv", out_dir / "weights.npz"
    check_targets([npz, table, weights])
    pngs = export_pngs(view, out_dir)
    export_npz(view, npz)
    export_csv(view, table)
    export_weights(view, weights)
    return {"png": [str(p) for p in pngs], "npz": [str(npz)], "csv": [str(table)], "weights": [str(weights)]}
