"""What the CLI and the panel call: load the shipped model, solve a target, render, export.

Kept free of torch at import time; the model is loaded (once) on first use.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, atomic_path, no_progress, resource_path, write_text

from .language import parse
from .params import SearchParams
from .render import DEFAULT_SIZE, check_size, render
from .search import SearchResult, solve

_lock = threading.Lock()
_models: dict[str, object] = {}


def default_checkpoint() -> Path:
    return resource_path("sketcher", "model.pt")


def load_model(path: str | Path | None = None):
    """The edit model from a checkpoint (the shipped one by default), cached per path."""
    from .train import build_model, load_checkpoint

    path = Path(path) if path else default_checkpoint()
    if not path.is_file():
        raise EngineError(f"the edit model checkpoint {path} is missing: train one with `workbench sketcher train`, or use random mutations")
    key = str(path.resolve())
    with _lock:
        if key not in _models:
            model = build_model(load_checkpoint(path))
            model.eval()
            _models[key] = model
        return _models[key]


def make_proposer(kind: str = "model", seed: int = 0, temperature: float = 1.0, checkpoint: str | Path | None = None):
    from .decode import ModelProposer, RandomProposer

    if kind == "random":
        return RandomProposer(seed)
    if kind == "model":
        return ModelProposer(load_model(checkpoint), temperature=temperature, seed=seed)
    raise EngineError(f"unknown proposer {kind!r}: use model or random")


@dataclass(frozen=True)
class SolveRequest:
    params: SearchParams = SearchParams()
    proposer: str = "model"
    checkpoint: str = ""


def solve_target(
    target: np.ndarray,
    request: SolveRequest = SolveRequest(),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    partial=None,
) -> SearchResult:
    """Convert a (64, 64) ink mask into a program (``partial`` as in ``search.solve``)."""
    if target.shape != (DEFAULT_SIZE, DEFAULT_SIZE):
        raise EngineError(f"the target must be {DEFAULT_SIZE}x{DEFAULT_SIZE} (load pictures with load_target)")
    proposer = make_proposer(request.proposer, request.params.seed, request.params.temperature, request.checkpoint or None)
    return solve(target, proposer, request.params, progress, cancel, partial)


def png_path(out: str | Path) -> Path:
    """The path a render is written to as PNG; refused when its name says another format."""
    if Path(out).suffix.lower() != ".png":
        raise EngineError(f"{Path(out).name}: a render is written as .png (or .svg with 'sketcher render')")
    return Path(out)


def render_png(program: str, size: int, out: str | Path) -> Path:
    """Write the program's render as a black-on-white PNG (atomically)."""
    from PIL import Image

    png_path(out)
    mask = render(parse(program), check_size(size))
    with atomic_path(out) as tmp:
        Image.fromarray(np.where(mask, 0, 255).astype(np.uint8)).save(tmp, format="PNG")
    return Path(out)


def write_svg(program: str, out: str | Path, size: int = 512) -> Path:
    from .svg import to_svg

    return write_text(out, to_svg(parse(program), check_size(size)))
