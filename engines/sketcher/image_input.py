"""Targets from pictures: any size or format becomes a 64x64 ink mask.

For a file of unknown polarity the background is the majority colour of the border, ink is what
differs from it; a caller that knows the paper (the panel's canvas: white) passes it instead, so
ink along the border cannot flip the picture. The picture is padded to a square, averaged down,
and thresholded (lower for thin strokes, which averaging would otherwise wash out).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.core import EngineError

from .render import DEFAULT_SIZE, check_size

MAX_PIXELS = 64_000_000


def load_target(path: str | Path, size: int = DEFAULT_SIZE) -> np.ndarray:
    """Read an image file into a (size, size) bool ink mask; EngineError for anything unusable."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    if not path.is_file():
        raise EngineError(f"{path}: no such image file")
    if path.stat().st_size == 0:
        raise EngineError(f"{path.name} is empty")
    try:
        with Image.open(path) as im:
            if im.width * im.height > MAX_PIXELS:
                raise EngineError(f"{path.name} is too large ({im.width}x{im.height}); use at most {MAX_PIXELS // 1_000_000} megapixels")
            check_padded(im.width, im.height, path.name)
            im.load()
            grey = _to_grey(im)
    except Image.DecompressionBombError:  # PIL refuses it before our own size check can
        raise EngineError(f"{path.name} is too large; use at most {MAX_PIXELS // 1_000_000} megapixels") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise EngineError(f"cannot read {path.name} as an image ({exc.__class__.__name__})") from None
    return ink_mask(grey, size)


def check_padded(width: int, height: int, name: str) -> None:
    """The picture is padded to a square before it is averaged down: a long thin strip within the
    pixel limit would still need side x side floats, so the square is held to the same limit."""
    side = max(width, height)
    if side * side > MAX_PIXELS:
        raise EngineError(
            f"{name} is {width}x{height}: padded to a square it would be {side}x{side} pixels, over the limit of "
            f"{MAX_PIXELS // 1_000_000} megapixels; crop it closer to the drawing"
        )


def _to_grey(im) -> np.ndarray:
    from PIL import Image

    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        im = Image.alpha_composite(white, rgba)
    return np.asarray(im.convert("L"), dtype=np.float32) / 255.0


def ink_mask(grey: np.ndarray, size: int = DEFAULT_SIZE, background: float | None = None) -> np.ndarray:
    """(H, W) grey values in [0, 1] -> (size, size) bool ink mask.

    ``background`` is the paper's grey value when known; None takes the median of the border.
    """
    from PIL import Image

    size = check_size(size)
    if grey.ndim != 2 or grey.shape[0] < 1 or grey.shape[1] < 1:
        raise EngineError("the image has no pixels")
    if background is None:
        background = float(np.median(np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])))
    ink = np.abs(grey - background) > 0.5 * max(abs(1.0 - background), background, 0.2)
    h, w = ink.shape
    check_padded(w, h, "the image")
    side = max(h, w)
    square = np.zeros((side, side), np.float32)
    top, left = (side - h) // 2, (side - w) // 2
    square[top : top + h, left : left + w] = ink
    small = np.asarray(Image.fromarray(square).resize((size, size), Image.Resampling.BOX), dtype=np.float32)
    solid, faint = small > 0.5, small > 0.2
    mask = faint if solid.sum() < 0.5 * faint.sum() else solid
    if not mask.any():
        raise EngineError("the image holds no drawing: nothing differs from its background")
    return mask
