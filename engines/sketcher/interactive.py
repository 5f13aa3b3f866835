"""Engine calls behind the panel: everything it shows is computed here, off the UI thread.

Results carry ready-to-draw masks (numpy bool arrays) next to the numbers, so the panel only
turns arrays into pictures.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress, write_text

from .api import SolveRequest, render_png, solve_target, write_svg
from .edits import node_end, random_program
from .image_input import ink_mask, load_target
from .language import error_position, parse, to_text, try_parse
from .render import DEFAULT_SIZE, render, render_batch
from .search import Candidate, SearchResult, is_sketch
from .similarity import similarity
from .vocab import ADD, ANG0, ANG_CHARS, CAT_NUM, CIRCLE, NUM0, NUM_CHARS, QUAD, Tokens, rule_of


@dataclass(frozen=True)
class TreeNode:
    label: str
    children: tuple[TreeNode, ...] = ()


@dataclass(frozen=True)
class Preview:
    """A program as the editor shows it: its render, syntax tree, match, or the syntax error."""

    text: str
    ok: bool
    error: str = ""
    error_position: int | None = None  # 1-based character position
    mask: np.ndarray | None = None
    score: float | None = None  # against the drawing: outline match for a sketch, else IoU
    sketch: bool = False
    tree: TreeNode | None = None
    primitives: int = 0


@dataclass(frozen=True)
class GalleryUpdate:
    candidates: tuple[Candidate, ...]
    masks: np.ndarray  # (n, 64, 64)
    renders: int
    sketch: bool  # the candidates' scores are outline matches, not IoU


@dataclass(frozen=True)
class Conversion:
    target: np.ndarray
    result: SearchResult
    best_masks: np.ndarray
    path_masks: np.ndarray


def syntax_tree(tokens: Tokens) -> TreeNode:
    def build(i: int) -> tuple[TreeNode, int]:
        tok = tokens[i]
        if tok in (CIRCLE, QUAD):
            end = node_end(tokens, i)
            names = ("radius", "x", "y") if tok == CIRCLE else ("x", "y", "w", "h", "angle")
            leaves = []
            for name, t in zip(names, tokens[i + 1 : end]):
                value = f"{NUM_CHARS[t - NUM0]} ({t - NUM0})" if rule_of(t) == CAT_NUM else f"{ANG_CHARS[t - ANG0]} ({45 * (t - ANG0)}°)"
                leaves.append(TreeNode(f"{name} = {value}"))
            return TreeNode("Circle" if tok == CIRCLE else "Quad", tuple(leaves)), end
        left, j = build(i + 1)
        right, j = build(j)
        return TreeNode("+ union" if tok == ADD else "- subtract", (left, right)), j

    return build(0)[0]


def preview(text: str, target: np.ndarray | None = None, size: int = DEFAULT_SIZE, style: str = "auto") -> Preview:
    """The program's render and tree, scored against the drawing the way a search would score it."""
    tokens, error = try_parse(text)
    if tokens is None:
        return Preview(text, False, error or "", error_position(error or ""))
    mask = render(tokens, size)
    score, sketch = None, False
    if target is not None and target.any():
        sketch = is_sketch(target, style)
        score = float(similarity(render(tokens)[None], target, sketch)[0])
    return Preview(text, True, mask=mask, score=score, sketch=sketch, tree=syntax_tree(tokens), primitives=sum(t in (CIRCLE, QUAD) for t in tokens))


def target_from_canvas(grey: np.ndarray) -> np.ndarray:
    """The drawing (grey values, 1 = white paper) as a 64x64 ink mask.

    The canvas is always dark ink on white paper, so the paper is not guessed from the border: a
    frame or a big shape touching the edges would otherwise turn the drawing inside out.
    """
    return ink_mask(grey, DEFAULT_SIZE, background=1.0)


def target_from_file(path: str | Path) -> np.ndarray:
    return load_target(path, DEFAULT_SIZE)


def random_target(seed: int, primitives: int = 3) -> tuple[str, np.ndarray]:
    """A program from the generator (non-blank) and its render, as a target to draw from."""
    rng = random.Random(seed)
    while True:
        program = random_program(rng, rng.randint(1, primitives))
        mask = render(program)
        if mask.sum() > 20:
            return to_text(program), mask


def convert(
    target: np.ndarray, request: SolveRequest, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED, partial=None
) -> Conversion:
    """Search for a program; stream gallery updates through ``partial`` while it runs."""

    sketch = is_sketch(target, request.params.style)

    def gallery(candidates: tuple[Candidate, ...], renders: int) -> None:
        if partial is not None:
            partial(GalleryUpdate(candidates, render_batch([parse(c.program) for c in candidates]), renders, sketch))

    result = solve_target(target, request, progress, cancel, gallery)
    best = render_batch([parse(c.program) for c in result.best])
    path = render_batch([parse(s.program) for s in result.path])
    return Conversion(target, result, best, path)


def export(program: str, path: str | Path, size: int = 512) -> Path:
    """Write the program as text (.txt/.csg, or a bare name + .txt), SVG (.svg) or PNG (.png) at ``size``."""
    path = Path(path)
    if path.is_dir():  # before a bare name gets its .txt: exporting to a folder is a mistake, not folder.txt
        raise EngineError(f"cannot export to {path}: it is a folder")
    parse(program)  # a syntax error is the user's to fix, before any file is touched
    suffix = path.suffix.lower()
    if suffix in (".txt", ".csg", ""):
        return write_text(path if suffix else path.with_suffix(".txt"), program.strip() + "\n")
    if suffix == ".svg":
        return write_svg(program, path, size)
    if suffix != ".png":
        raise EngineError(f"cannot export to {suffix} files: use .txt, .svg or .png")
    return render_png(program, size, path)
