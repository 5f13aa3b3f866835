"""SVG export: a real SVG renderer (Qt's) draws what our renderer draws, booleans included."""

from __future__ import annotations

import random

import numpy as np
from PySide6.QtCore import QByteArray
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from engines.sketcher.edits import random_program
from engines.sketcher.language import parse
from engines.sketcher.render import foreground_iou, render
from engines.sketcher.svg import to_svg


def _rasterise(svg: str, size: int) -> np.ndarray:
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    assert renderer.isValid()
    image = QImage(size, size, QImage.Format.Format_Grayscale8)
    image.fill(255)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    stride = image.bytesPerLine()
    return np.frombuffer(image.constBits(), np.uint8, count=stride * size).reshape(size, stride)[:, :size] < 128


def test_svg_uses_real_shapes_and_masks() -> None:
    svg = to_svg(parse("(- (Circle 6 8 8) (+ (Quad 8 8 2 2 H) (Circle 1 4 4)))"))
    assert svg.count("<circle") == 2 and svg.count("<rect") >= 2
    assert 'transform="rotate(45 16 16)"' in svg and "mask=" in svg


def test_nested_subtraction_matches_the_renderer(qapp) -> None:
    program = parse("(- (Quad 8 8 8 8 G) (- (Circle 6 8 8) (Circle 3 8 8)))")  # a square with a ring cut out
    drawn = _rasterise(to_svg(program, 128), 128)
    assert foreground_iou(drawn, render(program, 128)) > 0.97


def test_random_programs_rasterise_like_the_renderer(qapp) -> None:
    rng = random.Random(12)
    scores = []
    for _ in range(40):
        program = random_program(rng, rng.randint(1, 6))
        expected = render(program, 128)
        if expected.sum() < 30:
            continue
        scores.append(foreground_iou(_rasterise(to_svg(program, 128), 128), expected))
    assert len(scores) > 20 and min(scores) > 0.95, scores
