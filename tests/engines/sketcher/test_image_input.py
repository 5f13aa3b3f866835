"""Pictures of any size and format become 64x64 targets; unusable files get one clear error."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from engines.core import EngineError
from engines.sketcher.image_input import load_target
from engines.sketcher.language import parse
from engines.sketcher.render import foreground_iou, render


def _disc_picture(path: Path, size: tuple[int, int], ink: int = 0, paper: int = 255, mode: str = "L") -> None:
    image = Image.new(mode, size, paper if mode == "L" else (255, 255, 255, 0))
    draw = ImageDraw.Draw(image)
    side = min(size)
    x0, y0 = (size[0] - side) / 2, (size[1] - side) / 2
    # (Circle 5 8 8): centre of the canvas, radius 10/32 of the side
    box = [x0 + side * (16 - 10) / 32, y0 + side * (16 - 10) / 32, x0 + side * (16 + 10) / 32, y0 + side * (16 + 10) / 32]
    draw.ellipse(box, fill=ink if mode == "L" else (0, 0, 0, 255))
    image.save(path)


@pytest.mark.parametrize("size", [(64, 64), (700, 700), (33, 33)])
def test_pictures_of_any_size_are_resized(tmp_path: Path, size: tuple[int, int]) -> None:
    path = tmp_path / "disc.png"
    _disc_picture(path, size)
    target = load_target(path)
    assert target.shape == (64, 64)
    assert foreground_iou(target, render(parse("(Circle 5 8 8)"))) > 0.9


def test_wide_pictures_are_padded_to_a_square(tmp_path: Path) -> None:
    path = tmp_path / "wide.png"
    _disc_picture(path, (900, 500))  # the disc spans 5/16 of the height, centred
    target = load_target(path)
    ys, xs = np.nonzero(target)
    assert abs(xs.mean() - 31.5) < 1 and abs(ys.mean() - 31.5) < 1
    expected = np.pi * (20 * 500 / 900) ** 2  # radius 20 pixels of 64, shrunk with the padding
    assert abs(target.sum() - expected) < 0.15 * expected


def test_light_on_dark_and_transparent_pictures(tmp_path: Path) -> None:
    dark = tmp_path / "dark.jpg"
    _disc_picture(dark, (256, 256), ink=255, paper=0)
    clear = tmp_path / "clear.png"
    _disc_picture(clear, (256, 256), mode="RGBA")
    for path in (dark, clear):
        assert foreground_iou(load_target(path), render(parse("(Circle 5 8 8)"))) > 0.9


def test_thin_strokes_survive_downsizing(tmp_path: Path) -> None:
    image = Image.new("L", (1024, 1024), 255)
    ImageDraw.Draw(image).ellipse([300, 300, 700, 700], outline=0, width=10)
    path = tmp_path / "outline.png"
    image.save(path)
    target = load_target(path)
    assert target.sum() > 40 and not target[28:36, 28:36].any()  # a ring, not a disc


def test_unusable_files_are_one_clear_error(tmp_path: Path) -> None:
    blank = tmp_path / "blank.png"
    Image.new("L", (100, 100), 255).save(blank)
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"this is not a picture")
    for path, message in [(blank, "no drawing"), (empty, "empty"), (junk, "cannot read"), (tmp_path / "missing.png", "no such")]:
        with pytest.raises(EngineError, match=message):
            load_target(path)


def test_a_decompression_bomb_is_refused_by_size(tmp_path: Path) -> None:
    """A tiny file whose header claims 10^10 pixels: PIL refuses it on open, which must read as ours."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    bomb = tmp_path / "bomb.png"
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    bomb.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b""))
    with pytest.raises(EngineError, match="too large"):
        load_target(bomb)


def test_target_is_boolean_ink() -> None:
    assert np.asarray(render(parse("(Circle 1 1 1)"))).dtype == bool
