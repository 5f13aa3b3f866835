"""Syntax-tree surgery on token sequences: node spans, edits, random programs, small mutations.

An edit replaces the node that starts at token ``pos`` by a subtree of the same grammar rule.
"Small" follows the paper: a mutation picks a node holding at most 2 primitives (the primitive
count is drawn uniformly first) and replaces it by a different random subtree of at most 2.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .vocab import ADD, ANG0, CAT_ANG, CAT_NUM, CIRCLE, NUM0, QUAD, SUB, Tokens, arity, is_primitive, rule_of

MAX_EDIT_PRIMITIVES = 2


@dataclass(frozen=True)
class Edit:
    """Replace the node starting at token ``pos`` by ``replacement`` (tokens of the same rule)."""

    pos: int
    replacement: Tokens

    def apply(self, tokens: Tokens) -> Tokens:
        end = node_end(tokens, self.pos)
        return tokens[: self.pos] + self.replacement + tokens[end:]


def node_end(tokens: Tokens, pos: int) -> int:
    """Index one past the last token of the node starting at ``pos``."""
    need = 1
    i = pos
    while need:
        need += arity(tokens[i]) - 1
        i += 1
    return i


def primitive_counts(tokens: Tokens) -> list[int]:
    """For every node (token index), how many primitives its subtree holds (one backward pass)."""
    counts = [0] * len(tokens)
    stack: list[int] = []
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        n = arity(tok)
        children = stack[len(stack) - n :] if n else []
        if n:
            del stack[len(stack) - n :]
        counts[i] = 1 if is_primitive(tok) else sum(children)
        stack.append(counts[i])
    return counts


def count_primitives(tokens: Tokens) -> int:
    return sum(1 for t in tokens if is_primitive(t))


def random_primitive(rng: random.Random) -> Tokens:
    if rng.random() < 0.5:
        return (CIRCLE, *(NUM0 + rng.randrange(16) for _ in range(3)))
    return (QUAD, *(NUM0 + rng.randrange(16) for _ in range(4)), ANG0 + rng.randrange(8))


def random_program(rng: random.Random, n_primitives: int) -> Tokens:
    """A random tree with exactly ``n_primitives`` primitives (random shape, ops and numbers)."""
    if n_primitives <= 1:
        return random_primitive(rng)
    left = rng.randint(1, n_primitives - 1)
    op = ADD if rng.random() < 0.5 else SUB
    return (op,) + random_program(rng, left) + random_program(rng, n_primitives - left)


def random_subtree(rng: random.Random, rule: int, max_primitives: int = MAX_EDIT_PRIMITIVES) -> Tokens:
    """A random replacement for a node of ``rule`` (one number, one angle, or a small shape)."""
    if rule == CAT_NUM:
        return (NUM0 + rng.randrange(16),)
    if rule == CAT_ANG:
        return (ANG0 + rng.randrange(8),)
    return random_program(rng, rng.randint(1, max_primitives))


def random_mutation(tokens: Tokens, rng: random.Random, max_primitives: int = MAX_EDIT_PRIMITIVES) -> Edit:
    """The paper's small mutation: a node with <= 2 primitives becomes a different random subtree."""
    counts = primitive_counts(tokens)
    by_count: dict[int, list[int]] = {}
    for i, c in enumerate(counts):
        if c <= max_primitives:
            by_count.setdefault(c, []).append(i)
    positions = by_count[rng.choice(sorted(by_count))]
    pos = rng.choice(positions)
    end = node_end(tokens, pos)
    old = tokens[pos:end]
    rule = rule_of(tokens[pos])
    while True:
        new = random_subtree(rng, rule, max_primitives)
        if new != old:
            return Edit(pos, new)


def mutate(tokens: Tokens, rng: random.Random, steps: int) -> Tokens:
    """Apply ``steps`` small mutations in a row (the forward "noise" process)."""
    for _ in range(steps):
        tokens = random_mutation(tokens, rng).apply(tokens)
    return tokens
