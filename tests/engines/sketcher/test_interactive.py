"""What the panel shows, computed by the engine: previews, syntax trees, targets, exports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engines.core import EngineError
from engines.sketcher import interactive
from engines.sketcher.api import SolveRequest
from engines.sketcher.language import parse
from engines.sketcher.render import render
from engines.sketcher.search import SearchParams
from engines.sketcher.similarity import outline, sketch_match


def test_preview_of_a_valid_program() -> None:
    target = render(parse("(Circle 6 8 8)"))
    view = interactive.preview("(- (Circle 6 8 8) (Quad 8 8 2 2 H))", target, 128)
    assert view.ok and view.mask.shape == (128, 128) and view.primitives == 2
    assert not view.sketch and 0.8 < view.score < 1.0
    assert view.tree.label == "- subtract"
    circle, quad = view.tree.children
    assert circle.label == "Circle" and [c.label for c in circle.children] == ["radius = 6 (6)", "x = 8 (8)", "y = 8 (8)"]
    assert quad.children[-1].label == "angle = H (45°)"


def test_preview_of_a_line_drawing_scores_the_outline_match() -> None:
    strokes = outline(render(parse("(Quad 8 8 6 4 G)")))
    view = interactive.preview("(Quad 8 8 6 5 G)", strokes)  # 2 px off top and bottom: within the match
    assert view.sketch and view.score == pytest.approx(float(sketch_match(render(parse("(Quad 8 8 6 5 G)"))[None], strokes)[0]))
    assert view.score == 1.0
    filled = interactive.preview("(Quad 8 8 6 5 G)", strokes, style="filled")
    assert not filled.sketch and filled.score < 0.2


def test_preview_of_a_broken_program_names_the_position() -> None:
    view = interactive.preview("(+ (Circle 1 2 3) (Quad 1 2 3 4))")
    assert not view.ok and view.error_position == 32 and "expected ' '" in view.error


def test_targets_from_canvas_and_generator() -> None:
    grey = np.ones((512, 512), np.float32)
    grey[128:384, 128:384] = 0.0
    target = interactive.target_from_canvas(grey)
    assert target.shape == (64, 64) and target[32, 32] and not target[5, 5]
    program, mask = interactive.random_target(7)
    assert np.array_equal(mask, render(parse(program)))
    with pytest.raises(EngineError, match="no drawing"):
        interactive.target_from_canvas(np.ones((512, 512), np.float32))


def test_canvas_ink_along_the_border_does_not_flip_the_drawing() -> None:
    # a thin frame along the edges, then a filled shape over the top three quarters: the border
    # is mostly ink in both, yet the canvas is always dark ink on white paper
    frame = np.ones((512, 512), np.float32)
    frame[:14], frame[-14:], frame[:, :14], frame[:, -14:] = 0.0, 0.0, 0.0, 0.0
    target = interactive.target_from_canvas(frame)
    assert target[0, 32] and target[32, 0] and not target[32, 32]
    assert target.mean() < 0.15
    big = np.ones((512, 512), np.float32)
    big[:384] = 0.0
    target = interactive.target_from_canvas(big)
    assert target[:48].all() and not target[48:].any()


def test_convert_streams_and_returns_masks_for_the_path() -> None:
    target = render(parse("(Circle 5 8 8)"))
    updates = []
    conversion = interactive.convert(target, SolveRequest(SearchParams(budget=300, style="filled"), "random"), partial=updates.append)
    assert updates and updates[-1].masks.shape[0] == len(updates[-1].candidates)
    assert conversion.path_masks.shape == (len(conversion.result.path), 64, 64)
    assert conversion.best_masks.shape[0] == len(conversion.result.best)


def test_exports(tmp_path: Path) -> None:
    program = "(- (Circle 6 8 8) (Quad 8 8 2 2 H))"
    assert interactive.export(program, tmp_path / "p.txt").read_text() == program + "\n"
    assert "<mask" in interactive.export(program, tmp_path / "p.svg").read_text()
    png = interactive.export(program, tmp_path / "p.png", 300)
    assert Image.open(png).size == (300, 300)
    with pytest.raises(EngineError, match="cannot export"):
        interactive.export(program, tmp_path / "p.gif")
    with pytest.raises(EngineError, match="syntax error"):
        interactive.export("(Circle 1", tmp_path / "q.svg")
    assert not (tmp_path / "q.svg").exists()


def test_export_to_a_folder_or_an_unwritable_place_is_one_sentence(tmp_path: Path) -> None:
    program = "(Circle 6 8 8)"
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(EngineError, match="it is a folder"):
        interactive.export(program, folder)
    assert not (tmp_path / "folder.txt").exists()
    (tmp_path / "x.txt").mkdir()
    with pytest.raises(EngineError, match="it is a folder"):
        interactive.export(program, tmp_path / "x")
    assert interactive.export(program, tmp_path / "bare") == tmp_path / "bare.txt"
    with pytest.raises(EngineError, match="cannot create the folder"):
        interactive.export(program, tmp_path / "bare.txt" / "inside.svg")
