"""Training data: random targets, noised by small mutations, labelled by the reverse edit path.

Targets have 1-8 primitives (blank renders rejected); 20% of starts are fully random programs.
A share of targets is drawn in the sketch style (the clean render stays the current state), so the
model also reads hand drawings.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np

from engines.core import EngineError

from .editpath import TrainingPair, aligned_targets, differing_nodes, training_pair
from .edits import random_program
from .render import render_batch
from .sketch import sketch_render
from .vocab import CAT_END, CIRCLE, EDIT, END, NUM0, PAD, POS, QUAD, Tokens, arity, categories_for, rule_of

MODEL_SIZE = 64


def anchors(tokens: Tokens) -> list[tuple[float, float, float]]:
    """Per token, the centre of the primitive it belongs to in [-1, 1] image coordinates and a
    1 flag, or (0, 0, 0) for operators (they belong to no single primitive)."""
    out = [(0.0, 0.0, 0.0)] * len(tokens)
    for i, tok in enumerate(tokens):
        if tok == CIRCLE or tok == QUAD:
            x, y = (tokens[i + 2] if tok == CIRCLE else tokens[i + 1]) - NUM0, (tokens[i + 3] if tok == CIRCLE else tokens[i + 2]) - NUM0
            centre = (x / 8.0 - 1.0, y / 8.0 - 1.0, 1.0)
            for j in range(i, i + 1 + arity(tok)):
                out[j] = centre
    return out


@dataclass(frozen=True)
class DataConfig:
    # relative frequency of targets with 1, 2, ... primitives, leaning to small ones: with little
    # compute the model first has to learn to read single shapes (more weight on 3-4 primitives,
    # (4, 5, 6, 6, 3, 2, 1, 1), was tried twice: within noise of this mix over 400 targets)
    primitive_weights: tuple[int, ...] = (8, 7, 6, 5, 4, 3, 2, 2)
    max_mutations: int = 5
    p_random: float = 0.2
    sketch_fraction: float = 0.3

    @property
    def max_primitives(self) -> int:
        return len(self.primitive_weights)

    @staticmethod
    def parse_weights(text: str) -> tuple[int, ...]:
        try:
            return tuple(int(w) for w in text.split(","))
        except ValueError:
            raise EngineError(f"primitive weights {text!r} must be whole numbers separated by commas, e.g. 8,7,6,5") from None

    def __post_init__(self) -> None:
        w = self.primitive_weights
        if not 1 <= len(w) <= 12 or min(w) < 0 or sum(w) == 0:
            raise EngineError("primitive weights need 1 to 12 non-negative numbers (for 1, 2, ... primitives), not all zero")
        if not 0.0 <= self.sketch_fraction <= 1.0:
            raise EngineError(f"sketch fraction {self.sketch_fraction} must be between 0 and 1")


@dataclass
class Batch:
    """Numpy arrays for one training step (see ``model.py`` for how they are read)."""

    seq: np.ndarray  # (B, T) program, <edit>, <pos>, replacement, <end>, padding
    pointer: np.ndarray  # (B, T) node index carried by the <pos> token, else -1
    pointed: np.ndarray  # (B, T) the token at that node, else PAD
    length: np.ndarray  # (B,) program lengths L: <edit> sits at L
    pointer_target: np.ndarray  # (B,) the node the labelled edit changes
    pointer_ok: np.ndarray  # (B, T) every node the reverse path may edit next (any is right)
    fix: np.ndarray  # (B, T) for program tokens: the target's token at that tree place, else -100
    fix_category: np.ndarray  # (B, T) grammar category of each program token
    anchors: np.ndarray  # (B, T, 3) where each token's primitive sits (see ``anchors``)
    next_token: np.ndarray  # (B, T) token to predict after position t, -100 where none
    category: np.ndarray  # (B, T) grammar category of next_token (CAT_END where none)
    target: np.ndarray  # (B, 64, 64) bool
    current: np.ndarray  # (B, 64, 64) bool
    remaining: np.ndarray  # (B,) edits left on the path, this one included

    def rows(self, share: slice) -> Batch:
        """These rows of the batch: a training process's share of the global batch (padding kept)."""
        return Batch(**{f.name: getattr(self, f.name)[share] for f in fields(self)})


def sample_target(rng: random.Random, primitive_weights: tuple[int, ...]) -> tuple:
    while True:
        count = rng.choices(range(1, len(primitive_weights) + 1), primitive_weights)[0]
        program = random_program(rng, count)
        if render_batch([program], MODEL_SIZE)[0].any():
            return program


def make_batch(pairs: list[TrainingPair], target_images: np.ndarray) -> Batch:
    """Lay out token sequences for teacher forcing; images come from the caller."""
    rows = []
    for p in pairs:
        rows.append(list(p.state) + [EDIT, POS] + list(p.edit.replacement) + [END])
    t_max = max(len(r) for r in rows)
    b = len(pairs)
    seq = np.full((b, t_max), PAD, np.int64)
    pointer = np.full((b, t_max), -1, np.int64)
    pointed = np.full((b, t_max), PAD, np.int64)
    next_token = np.full((b, t_max), -100, np.int64)
    category = np.full((b, t_max), CAT_END, np.int64)
    length = np.zeros(b, np.int64)
    pointer_ok = np.zeros((b, t_max), bool)
    fix = np.full((b, t_max), -100, np.int64)
    fix_category = np.full((b, t_max), CAT_END, np.int64)
    anchor = np.zeros((b, t_max, 3), np.float32)
    for i, (p, row) in enumerate(zip(pairs, rows)):
        state_anchors = anchors(p.state)
        anchor[i, : len(p.state)] = state_anchors
        anchor[i, len(p.state) + 1] = state_anchors[p.edit.pos]  # <pos i> looks where node i sits
        pointer_ok[i, [pos for pos, _ in differing_nodes(p.state, p.target)]] = True
        for j, (tok, want) in enumerate(zip(p.state, aligned_targets(p.state, p.target))):
            fix_category[i, j] = rule_of(tok)
            if want is not None:
                fix[i, j] = want
        n = len(p.state)
        seq[i, : len(row)] = row
        length[i] = n
        pointer[i, n + 1] = p.edit.pos
        pointed[i, n + 1] = p.state[p.edit.pos]
        cats = categories_for(rule_of(p.state[p.edit.pos]), p.edit.replacement)
        # the <pos> token predicts the first replacement token, the last one predicts <end>
        next_token[i, n + 1 : len(row) - 1] = row[n + 2 :]
        category[i, n + 1 : len(row) - 1] = cats
    return Batch(
        seq=seq,
        pointer=pointer,
        pointed=pointed,
        length=length,
        pointer_target=np.array([p.edit.pos for p in pairs], np.int64),
        pointer_ok=pointer_ok,
        fix=fix,
        fix_category=fix_category,
        anchors=anchor,
        next_token=next_token,
        category=category,
        target=target_images,
        current=render_batch([p.state for p in pairs], MODEL_SIZE),
        remaining=np.array([p.remaining for p in pairs], np.int64),
    )


def sample_batches(rng: random.Random, count: int, size: int, cfg: DataConfig = DataConfig()) -> list[Batch]:
    """``count`` fresh batches of (target image, noised program, next reverse edit) examples.

    Examples are drawn together and grouped by length so that little compute goes to padding.
    """
    np_rng = np.random.default_rng(rng.getrandbits(63))
    targets = [sample_target(rng, cfg.primitive_weights) for _ in range(count * size)]
    pairs = [training_pair(t, rng, cfg.max_mutations, cfg.p_random, cfg.max_primitives) for t in targets]
    images = render_batch(targets, MODEL_SIZE)
    for i, t in enumerate(targets):
        if rng.random() < cfg.sketch_fraction:
            images[i] = sketch_render(t, np_rng, MODEL_SIZE)
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].state) + len(pairs[i].edit.replacement))
    batches = [make_batch([pairs[i] for i in chunk], images[chunk]) for chunk in (order[k : k + size] for k in range(0, len(order), size))]
    rng.shuffle(batches)
    return batches


TRAINING_GROUP = 8  # batches drawn together (grouped by length inside, see ``sample_batches``)


def training_batches(seed: int, size: int, cfg: DataConfig, knob=None) -> Iterator[Batch]:
    """The endless training stream of one seed (the producer of ``engines.core.batch_stream``)."""
    rng = random.Random(seed)
    while True:
        yield from reversed(sample_batches(rng, TRAINING_GROUP, size, cfg))
