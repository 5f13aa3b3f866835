"""The paper's reverse process: an edit path from a noised program back to its target.

Walk the current and target trees together. Where they first differ (a maximal differing node),
the edit is "replace it by the target subtree" when that subtree is small (<= 2 primitives);
otherwise it is a small edit of the same rule that moves toward it: the target's operator with
its children kept when they are primitives and stood in for by their leftmost primitive when
they are not. Repeating this reaches the target; one random step of the path is a training label.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .edits import MAX_EDIT_PRIMITIVES, Edit, count_primitives, mutate, node_end, random_program
from .vocab import Tokens, arity, is_primitive


def differing_nodes(current: Tokens, target: Tokens) -> list[tuple[int, Tokens]]:
    """(position in ``current``, target subtree) for every maximal node where the trees differ."""
    diffs: list[tuple[int, Tokens]] = []

    def walk(i: int, j: int) -> tuple[int, int]:
        if current[i] == target[j]:
            i, j = i + 1, j + 1
            for _ in range(arity(current[i - 1])):
                i, j = walk(i, j)
            return i, j
        ei, ej = node_end(current, i), node_end(target, j)
        diffs.append((i, target[j:ej]))
        return ei, ej

    walk(0, 0)
    return diffs


def aligned_targets(current: Tokens, target: Tokens) -> list[int | None]:
    """For each token of ``current``, the target's token at the same place in the tree, or None
    inside a subtree whose kind differs (a dense "what should this be" label for training)."""
    out: list[int | None] = [None] * len(current)

    def walk(i: int, j: int) -> tuple[int, int]:
        out[i] = target[j]
        if current[i] == target[j]:
            i, j = i + 1, j + 1
            for _ in range(arity(current[i - 1])):
                i, j = walk(i, j)
            return i, j
        return node_end(current, i), node_end(target, j)

    walk(0, 0)
    return out


def _leftmost_primitive(tokens: Tokens) -> Tokens:
    start = next(i for i, t in enumerate(tokens) if is_primitive(t))
    return tokens[start : start + 1 + arity(tokens[start])]


def step_toward(subtree: Tokens) -> Tokens:
    """A small (<= 2 primitives) subtree of the same rule as ``subtree`` that moves toward it."""
    if count_primitives(subtree) <= MAX_EDIT_PRIMITIVES:
        return subtree
    left_end = node_end(subtree, 1)
    left, right = subtree[1:left_end], subtree[left_end:]
    return (subtree[0],) + _leftmost_primitive(left) + _leftmost_primitive(right)


def next_edits(current: Tokens, target: Tokens) -> list[Edit]:
    """Every edit the reverse process may take next (one per maximal differing node)."""
    return [Edit(pos, step_toward(sub)) for pos, sub in differing_nodes(current, target)]


def edit_path(current: Tokens, target: Tokens, rng: random.Random, max_steps: int = 64) -> list[Edit]:
    """A sequence of small edits turning ``current`` into ``target`` (random order among options)."""
    path: list[Edit] = []
    while current != target:
        if len(path) >= max_steps:
            raise RuntimeError("edit path did not converge")  # a bug, never a user error
        edit = rng.choice(next_edits(current, target))
        path.append(edit)
        current = edit.apply(current)
    return path


@dataclass(frozen=True)
class TrainingPair:
    """A noised state, the edit that moves it toward the target, and how many edits remain."""

    target: Tokens
    state: Tokens
    edit: Edit
    remaining: int


def training_pair(target: Tokens, rng: random.Random, max_mutations: int = 5, p_random: float = 0.2, max_primitives: int = 8) -> TrainingPair:
    """Noise ``target`` (1-5 small mutations, or a fully random start) and label one reverse step."""
    while True:
        if rng.random() < p_random:
            noised = random_program(rng, rng.randint(1, max_primitives))
        else:
            noised = mutate(target, rng, rng.randint(1, max_mutations))
        if noised != target:
            break
    path = edit_path(noised, target, rng)
    step = rng.randrange(len(path))
    state = noised
    for edit in path[:step]:
        state = edit.apply(state)
    return TrainingPair(target, state, path[step], len(path) - step)
