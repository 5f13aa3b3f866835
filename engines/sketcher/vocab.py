"""Token ids of CSG2D programs and edits, shared by the language, the model and the decoder.

A program is held as its prefix token sequence (a tuple of ints): every token starts a syntax-tree
node, so a node is named by its token index. Parentheses are implied by the fixed arities.
"""

from __future__ import annotations

PAD, EDIT, END, ADD, SUB, CIRCLE, QUAD = range(7)
NUM0 = 7  # numbers 0..15 are NUM0..NUM0+15
ANG0 = NUM0 + 16  # angles G..N (0, 45, ..., 315 degrees) are ANG0..ANG0+7
POS = ANG0 + 8  # the "<pos i>" marker; i travels alongside as a pointer into the program
VOCAB_SIZE = POS + 1

NUM_CHARS = "0123456789ABCDEF"
ANG_CHARS = "GHIJKLMN"
OPS = {ADD: "+", SUB: "-"}

# Grammar categories: what kind of token the decoder may emit next.
CAT_S, CAT_PRIM, CAT_NUM, CAT_ANG, CAT_END = range(5)
CATEGORY_TOKENS: dict[int, tuple[int, ...]] = {
    CAT_S: (ADD, SUB, CIRCLE, QUAD),
    CAT_PRIM: (CIRCLE, QUAD),
    CAT_NUM: tuple(range(NUM0, NUM0 + 16)),
    CAT_ANG: tuple(range(ANG0, ANG0 + 8)),
    CAT_END: (END,),
}

Tokens = tuple[int, ...]


def arity(token: int) -> int:
    """Children of the node a token starts (numbers and angles are leaves)."""
    if token in (ADD, SUB):
        return 2
    if token == CIRCLE:
        return 3
    if token == QUAD:
        return 5
    return 0


def rule_of(token: int) -> int:
    """The grammar rule (CAT_S, CAT_NUM or CAT_ANG) of the node that starts with this token."""
    if token >= ANG0:
        return CAT_ANG
    if token >= NUM0:
        return CAT_NUM
    return CAT_S


def is_primitive(token: int) -> bool:
    return token == CIRCLE or token == QUAD


def child_categories(token: int) -> tuple[int, ...]:
    """Categories of a node's children, in order; inside an edit an operator's children must be
    primitives, which keeps every replacement at <= 2 primitives."""
    if token in (ADD, SUB):
        return (CAT_PRIM, CAT_PRIM)
    if token == CIRCLE:
        return (CAT_NUM, CAT_NUM, CAT_NUM)
    if token == QUAD:
        return (CAT_NUM, CAT_NUM, CAT_NUM, CAT_NUM, CAT_ANG)
    return ()


def categories_for(rule: int, replacement: Tokens) -> list[int]:
    """The grammar category of every token of a replacement, then CAT_END (training masks)."""
    stack = [rule]
    out: list[int] = []
    for tok in replacement:
        out.append(stack.pop())
        stack.extend(reversed(child_categories(tok)))
    if stack:
        raise ValueError("replacement is not a complete subtree")
    out.append(CAT_END)
    return out
