"""The three data sets a run can train on, all 16 x 16 grey images, built locally (no downloads).

- digits: scikit-learn's bundled 1797 handwritten digits (8 x 8), upsampled to 16 x 16;
- gratings: an 8-way orientation task on noisy sine gratings of random frequency and phase;
- shapes: an 8-way shape-category task (circle, ring, square, ...) with jittered pose and noise.

The train/test split is fixed (split seed 0) so that seeds only change the network, as in the
paper's multi-seed comparison. Images are standardised with the training set's mean and std.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engines.core import EngineError

from .params import DATASETS
from .stimuli import SHAPES, SIZE, random_gratings, random_shapes

GRATING_CLASSES = 8
PROCEDURAL_TRAIN = 1600
PROCEDURAL_TEST = 400


@dataclass(frozen=True)
class Dataset:
    name: str
    x_train: np.ndarray  # [N, 1, 16, 16] float32, standardised
    y_train: np.ndarray  # [N] int64
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]
    mean: float
    std: float

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def standardise(self, images: np.ndarray) -> np.ndarray:
        """Put raw probe images (e.g. gratings in [-1, 1]) on the scale the network was trained on."""
        return ((images - self.mean) / self.std).astype(np.float32)


def _upsample_digits(images: np.ndarray) -> np.ndarray:
    from scipy.ndimage import zoom

    return zoom(images, (1, SIZE / images.shape[1], SIZE / images.shape[2]), order=1).astype(np.float32)


def _stratified_split(labels: np.ndarray, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    test: list[np.ndarray] = []
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        test.append(idx[: int(round(test_fraction * len(idx)))])
    test_idx = np.sort(np.concatenate(test))
    train_idx = np.setdiff1d(np.arange(len(labels)), test_idx)
    return train_idx, test_idx


def dataset_classes(name: str) -> tuple[str, ...]:
    """A data set's class names without building its images (what a run file's network and
    classes are checked against)."""
    if name not in DATASETS:
        raise EngineError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
    if name == "digits":
        return tuple(str(d) for d in range(10))
    if name == "gratings":
        step = 180 / GRATING_CLASSES
        return tuple(f"{i * step:g}°" for i in range(GRATING_CLASSES))
    return SHAPES


@lru_cache(maxsize=4)
def load_dataset(name: str) -> Dataset:
    """Build (and cache) a data set; the same name always gives the same arrays."""
    classes = dataset_classes(name)
    rng = np.random.default_rng(0)
    if name == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        images = _upsample_digits(bunch.images.astype(np.float32) / 16.0)
        labels = bunch.target.astype(np.int64)
        train_idx, test_idx = _stratified_split(labels, 0.2, rng)
        x_train, y_train, x_test, y_test = images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]
    elif name == "gratings":
        x_train, y_train = random_gratings(PROCEDURAL_TRAIN, GRATING_CLASSES, rng)
        x_test, y_test = random_gratings(PROCEDURAL_TEST, GRATING_CLASSES, rng)
    else:
        x_train, y_train = random_shapes(PROCEDURAL_TRAIN, rng)
        x_test, y_test = random_shapes(PROCEDURAL_TEST, rng)
    mean, std = float(x_train.mean()), float(x_train.std()) or 1.0
    norm = lambda a: ((a - mean) / std)[:, None].astype(np.float32)  # noqa: E731
    for array in (x_train, x_test):
        array.setflags(write=False)
    return Dataset(name, norm(x_train), y_train, norm(x_test), y_test, classes, mean, std)
