"""Write what a widget shows (OpenGL views included) to a PNG, atomically."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QWidget

from engines.core import EngineError, atomic_path


def grab_image(widget: QWidget) -> QImage:
    return widget.grab().toImage()


def require_png(path: Path) -> Path:
    """The PNG path to write: ".png" added to a bare name, any other suffix refused (checked before
    a long run, not after it)."""
    path = Path(path)
    if not path.suffix:
        return path.with_suffix(".png")
    if path.suffix.lower() != ".png":
        raise EngineError(f"{path.name}: screenshots are written as .png files")
    return path


def grab_to_png(widget: QWidget, path: Path) -> Path:
    path = require_png(path)
    image = grab_image(widget)
    if image.isNull() or image.width() == 0:
        raise EngineError("the view is empty (is the window shown?)")
    with atomic_path(path) as tmp:
        if not image.save(str(tmp), "PNG"):
            raise EngineError(f"could not write the PNG {path}")
    return path


def is_blank(image: QImage, tolerance: int = 8) -> bool:
    """True when (almost) every pixel has one colour: a failed render or an empty widget."""
    small = image.scaled(64, 64).convertToFormat(QImage.Format.Format_RGB32)
    first = small.pixel(0, 0)
    r0, g0, b0 = (first >> 16) & 255, (first >> 8) & 255, first & 255
    for y in range(small.height()):
        for x in range(small.width()):
            p = small.pixel(x, y)
            if abs(((p >> 16) & 255) - r0) > tolerance or abs(((p >> 8) & 255) - g0) > tolerance or abs((p & 255) - b0) > tolerance:
                return False
    return True
