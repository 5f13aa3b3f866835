"""Beam search over syntax-tree edits under a renderer-call budget (model or random proposals).

Each round takes the best ``beam`` programs found so far, asks the proposer for ``proposals``
edits of each, drops programs already seen, renders the rest in one batch and scores them
against the target (IoU for filled targets, outline match for sketches, plus a small bonus
for the model's log-probability). When the best match has not improved for ``polish_after``
renders, the best program is hill-climbed before the beam goes on: its numbers (``polish.py``),
then for a filled target that is already close, parts fitted to the pixels it gets wrong
(``residual.py``). A sketch match that reaches the goal is settled: number changes are taken
while its edge moves closer to the strokes on average.
The best candidates stream out after every round; the search stops at the goal, at the budget,
or when cancelled. Parents are kept, so the edit path from the start to any candidate can be
replayed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .decode import Proposer
from .edits import Edit, count_primitives, random_program
from .language import parse, to_text
from .params import SearchParams
from .polish import numeric_edits
from .render import foreground_iou, mean_iou, render_batch
from .residual import RESIDUAL_FROM, residual_edits
from .similarity import looks_like_strokes, outline_distance, similarity
from .vocab import CIRCLE, NUM0, QUAD, Tokens

EMPTY_PROGRAM: Tokens = (CIRCLE, NUM0, NUM0, NUM0)  # "(Circle 0 0 0)": a radius-0 disc draws nothing
LOGPROB_WEIGHT = 1e-3
SIZE_PENALTY = 4e-3  # per primitive: of two programs that look alike, keep the simpler one


@dataclass(frozen=True)
class Candidate:
    program: str
    score: float  # what the search ranks by (IoU, or outline match for sketches)
    iou: float  # foreground IoU of the render with the target as given
    renders: int  # renderer calls spent when it was found
    depth: int  # edits from its start


@dataclass(frozen=True)
class PathStep:
    program: str
    edit: str  # "" for the start, else "replace node at token i by ..."
    score: float


@dataclass(frozen=True)
class SearchResult:
    program: str
    score: float
    iou: float
    mean_iou: float
    renders: int
    seconds: float
    solved: bool  # the goal was reached (a sketch match may settle below it afterwards)
    sketch: bool
    proposer: str
    best: tuple[Candidate, ...]
    path: tuple[PathStep, ...]
    curve: tuple[tuple[int, float], ...]  # (renders, best score) after each round


@dataclass
class _Node:
    tokens: Tokens
    score: float
    iou: float
    rank: float
    renders: int
    depth: int
    parent: Tokens | None
    edit: Edit | None
    image: np.ndarray = field(repr=False)
    look: bytes = field(repr=False)  # the packed render: equal pictures, equal looks


def is_sketch(target: np.ndarray, style: str) -> bool:
    """Whether ``target`` is judged as a line drawing (outline match) rather than filled (IoU)."""
    return style == "sketch" or (style == "auto" and looks_like_strokes(target))


def has_empty_primitive(tokens: Tokens) -> bool:
    """Whether a primitive of zero area (radius, width or height 0) is in the program."""
    for i, t in enumerate(tokens):
        if t == CIRCLE and tokens[i + 1] == NUM0:
            return True
        if t == QUAD and NUM0 in (tokens[i + 3], tokens[i + 4]):
            return True
    return False


def _describe(edit: Edit, before: Tokens) -> str:
    from .edits import node_end
    from .vocab import ANG0, ANG_CHARS, NUM_CHARS

    old = before[edit.pos : node_end(before, edit.pos)]

    def text(tokens: Tokens) -> str:
        t = tokens[0]
        if len(tokens) == 1 and t >= NUM0:
            return NUM_CHARS[t - NUM0] if t < ANG0 else ANG_CHARS[t - ANG0]
        return to_text(tokens)

    return f"token {edit.pos}: {text(old)} -> {text(edit.replacement)}"


def solve(
    target: np.ndarray,
    proposer: Proposer,
    params: SearchParams = SearchParams(),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    partial: Callable[[tuple[Candidate, ...], int], None] | None = None,
    top: int = 8,
) -> SearchResult:
    """Search for a program whose render matches ``target`` ((S, S) bool, S = 64); after every round
    ``partial(best candidates, renders so far)`` streams the gallery."""
    if target.ndim != 2 or target.shape[0] != target.shape[1]:
        raise EngineError("the target must be a square image")
    if not target.any():
        raise EngineError("the target image is empty: draw something first")
    size = target.shape[0]
    sketch = is_sketch(target, params.style)
    started = time.perf_counter()
    rng = random.Random(params.seed)
    nodes: dict[Tokens, _Node] = {}
    renders = 0
    curve: list[tuple[int, float]] = []

    def add(programs: list[Tokens], parents: list[Tokens | None], edits: list[Edit | None], logps: list[float]) -> None:
        nonlocal renders
        if not programs:
            return
        images = render_batch(programs, size)
        scores = similarity(images, target, sketch)
        ious = foreground_iou(images, target)
        renders += len(programs)
        for p, par, e, lp, img, s, iou in zip(programs, parents, edits, logps, images, scores, ious):
            depth = 0 if par is None else nodes[par].depth + 1
            rank = float(s) + LOGPROB_WEIGHT * lp - SIZE_PENALTY * count_primitives(p)
            nodes[p] = _Node(p, float(s), float(iou), rank, renders, depth, par, e, img, np.packbits(img).tobytes())

    if params.start.strip():
        starts = [parse(params.start)]
    else:
        starts = [EMPTY_PROGRAM] + [random_program(rng, rng.randint(1, 2)) for _ in range(params.beam - 1)]
    starts = list(dict.fromkeys(starts))[: params.budget]
    add(starts, [None] * len(starts), [None] * len(starts), [0.0] * len(starts))

    def best_nodes(n: int) -> list[_Node]:
        """The best matches (highest score, simpler first on ties), one per picture: the gallery and the result."""
        out, looks = [], set()
        for node in sorted(nodes.values(), key=lambda x: (-x.score, -x.rank)):
            if node.look not in looks:
                looks.add(node.look)
                out.append(node)
                if len(out) == n:
                    break
        return out

    def beam_nodes(n: int, per_shape: int) -> list[_Node]:
        """What to expand next: by rank (score, a little log-probability, minus size)."""
        ranked = sorted(nodes.values(), key=lambda x: (-x.rank, len(x.tokens)))
        # keep the beam diverse: at most ``per_shape`` programs with the same tree shape
        # (operators and primitive kinds), so one good-looking shape cannot take every slot
        # and one program per picture: programs that draw the same (a parent plus an invisible
        # part) would otherwise fill the beam with copies of one state
        chosen, seen, looks = [], {}, set()
        for node in ranked:
            shape = tuple(t for t in node.tokens if t < NUM0)
            if seen.get(shape, 0) < per_shape and node.look not in looks:
                seen[shape] = seen.get(shape, 0) + 1
                looks.add(node.look)
                chosen.append(node)
                if len(chosen) == n:
                    break
        return chosen

    def publish() -> None:
        best = best_nodes(1)[0]
        curve.append((renders, best.score))
        progress(min(renders / params.budget, 1.0), f"{renders} renders, best {'match' if sketch else 'IoU'} {best.score:.3f}")
        if partial is not None:
            partial(tuple(_candidate(n) for n in best_nodes(top)), renders)

    def try_edits(node: _Node, edits: list[Edit]) -> list[_Node]:
        """Render the unseen programs ``edits`` make of ``node`` (within the budget)."""
        fresh: dict[Tokens, Edit] = {}
        for edit in edits:
            child = edit.apply(node.tokens)
            if child not in nodes and not has_empty_primitive(child):
                fresh.setdefault(child, edit)
        chosen = list(fresh.items())[: params.budget - renders]
        add([c for c, _ in chosen], [node.tokens] * len(chosen), [e for _, e in chosen], [0.0] * len(chosen))
        return [nodes[c] for c, _ in chosen]

    def best_of(new: list[_Node]) -> _Node | None:
        return max(new, key=lambda n: n.score, default=None)

    def polish(node: _Node) -> None:
        """Hill-climb ``node``: its numbers first, then (filled targets) parts fitted to its wrong pixels."""
        while renders < params.budget and node.score < params.goal:
            polished.add(node.tokens)
            better = best_of(try_edits(node, numeric_edits(node.tokens)))
            if (better is None or better.score <= node.score) and params.residual and not sketch and node.score >= RESIDUAL_FROM:
                better = best_of(try_edits(node, residual_edits(node.tokens, node.image, target)))
            if better is None or better.score <= node.score:
                return
            node = better

    def settle(node: _Node) -> _Node:
        """Climb a sketch match at the goal by number changes while its edge lies closer to the strokes.

        The outline match counts stroke pixels within 2 px, so once it is reached many neighbouring
        programs tie; the one whose edge lies closest to the strokes on average (both ways) is the
        best guess at the drawn shape. The climb may leave the tie: a drawing's parameters are
        jittered and its strokes wobble, so the match at 2 px is a coarse guide there (sketches of
        4 seeds, 400 in all: 313 solved against 299 when the match had to stay where it was).
        """
        dist = float(outline_distance(node.image[None], target)[0])
        while renders < params.budget:
            edits = numeric_edits(node.tokens)
            try_edits(node, edits)  # renders the ones not seen yet
            around = [nodes[c] for c in dict.fromkeys(e.apply(node.tokens) for e in edits) if c in nodes]
            if not around:
                return node
            d = outline_distance(np.stack([n.image for n in around]), target)
            i = int(d.argmin())
            if d[i] >= dist - 1e-9:
                return node
            node, dist = around[i], float(d[i])
        return node

    publish()
    stale = 0
    polished: set[Tokens] = set()
    best_score, gained_at = best_nodes(1)[0].score, renders
    while renders < params.budget and best_nodes(1)[0].score < params.goal:
        cancel.raise_if_cancelled()
        best = best_nodes(1)[0]
        if best.score > best_score:
            best_score, gained_at = best.score, renders
        if params.polish_after and renders - gained_at >= params.polish_after and best.tokens not in polished:
            polish(best)
            gained_at = renders
            publish()
            continue
        beam = beam_nodes(params.beam, per_shape=max(1, params.beam // 4))
        proposals = proposer.propose(target, [n.tokens for n in beam], np.stack([n.image for n in beam]), params.proposals)
        fresh: dict[Tokens, tuple[Tokens, Edit, float]] = {}
        for node, props in zip(beam, proposals):
            for prop in props:
                child = prop.edit.apply(node.tokens)
                if has_empty_primitive(child):
                    continue  # draws like a smaller program: not worth a render
                if child not in nodes and child not in fresh:
                    fresh[child] = (node.tokens, prop.edit, prop.logprob)
        chosen = list(fresh.items())[: params.budget - renders]
        stale = stale + 1 if not chosen else 0
        if stale >= 20:
            break  # the proposer keeps suggesting programs already seen
        add([c for c, _ in chosen], [v[0] for _, v in chosen], [v[1] for _, v in chosen], [v[2] for _, v in chosen])
        publish()

    best = best_nodes(1)[0]
    solved = best.score >= params.goal
    if sketch and params.polish_after and solved:
        best = settle(best)
    path: list[PathStep] = []
    node: _Node | None = best
    while node is not None:
        parent = nodes[node.parent] if node.parent is not None else None
        path.append(PathStep(to_text(node.tokens), "" if parent is None else _describe(node.edit, parent.tokens), node.score))
        node = parent
    path.reverse()
    return SearchResult(
        program=to_text(best.tokens),
        score=best.score,
        iou=best.iou,
        mean_iou=float(mean_iou(best.image, target)),
        renders=renders,
        seconds=round(time.perf_counter() - started, 3),
        solved=solved,
        sketch=sketch,
        proposer=proposer.name,
        best=tuple(_candidate(n) for n in [best] + [n for n in best_nodes(top) if n.look != best.look][: top - 1]),
        path=tuple(path),
        curve=tuple(curve),
    )


def _candidate(node: _Node) -> Candidate:
    return Candidate(to_text(node.tokens), round(node.score, 4), round(node.iou, 4), node.renders, node.depth)
