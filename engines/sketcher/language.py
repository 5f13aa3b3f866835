"""CSG2D text <-> token sequences: parsing with lark (errors name the position) and printing.

``to_text(parse(text)) == text`` for every valid program. Surrounding whitespace (a trailing
newline from an editor) is ignored; inside a program the grammar is strict.
"""

from __future__ import annotations

import functools
from importlib import resources

from engines.core import EngineError

from .vocab import ADD, ANG0, ANG_CHARS, CIRCLE, NUM0, NUM_CHARS, QUAD, SUB, Tokens, arity

MAX_DEPTH = 100  # operators nested in one another: the tree walks recurse, and no drawing needs more

_READABLE = {
    "$END": "the end of the program",
    "LPAR": "'('",
    "RPAR": "')'",
    "SPACE": "' '",
    "OP": "'+' or '-'",
    "NUM": "a number 0-F",
    "ANG": "an angle G-N",
}


@functools.lru_cache(maxsize=1)
def _parser():
    import lark

    grammar = resources.files(__package__).joinpath("csg2d.lark").read_text(encoding="utf-8")
    return lark.Lark(grammar, parser="lalr", maybe_placeholders=False)


def _terminal_names() -> dict[str, str]:
    names = {}
    for term in _parser().terminals:
        pattern = term.pattern
        names[term.name] = _READABLE.get(term.name) or (f"'{pattern.value}'" if pattern.type == "str" else term.name)
    return names


def _describe_error(exc, text: str, offset: int) -> str:
    import lark

    pos = getattr(exc, "pos_in_stream", None)
    if isinstance(exc, lark.exceptions.UnexpectedToken) and exc.token.type == "$END":
        pos = len(text)
    if pos is None:
        pos = len(text)
    names = _terminal_names()
    expected = sorted({names.get(e) or _READABLE.get(e, e) for e in (getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())})
    found = repr(text[pos]) if pos < len(text) else "the end of the text"
    where = f"position {pos + offset + 1}"
    end = _first_program_end(text)
    if end is not None and end <= pos < len(text):
        return f"syntax error at {where}: the program ends at position {end + offset}, but {found} follows"
    want = f"expected {' or '.join(expected)}" if expected else "unexpected input"
    return f"syntax error at {where}: {want}, found {found}"


def _first_program_end(text: str) -> int | None:
    """Where a whole program at the start of ``text`` ends (its closing parenthesis + 1), if one does:
    after it, any character is one too many, whatever the grammar would have let it continue with."""
    import lark

    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth <= 0:
            if i == 0 or depth < 0:
                return None
            try:
                _parser().parse(text[: i + 1])
            except lark.exceptions.UnexpectedInput:
                return None
            return i + 1
    return None


def parse(text: str) -> Tokens:
    """Parse CSG2D text into its token sequence; EngineError names the position of a mistake."""
    import lark

    stripped = text.strip()
    offset = len(text) - len(text.lstrip())
    if not stripped:
        raise EngineError("the program is empty")
    _check_depth(stripped, offset)
    try:
        tree = _parser().parse(stripped)
    except lark.exceptions.UnexpectedInput as exc:
        raise EngineError(_describe_error(exc, stripped, offset)) from None
    out: list[int] = []
    _emit(tree, out)
    return tuple(out)


def _check_depth(text: str, offset: int) -> None:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
            if depth > MAX_DEPTH + 1:  # + 1: the primitive's own parentheses
                raise EngineError(f"the program nests too deeply at position {i + offset + 1}: at most {MAX_DEPTH} operators inside one another")
        elif ch == ")":
            depth -= 1


def _emit(node, out: list[int]) -> None:
    kind = node.data
    if kind == "binop":
        op, left, right = node.children
        out.append(ADD if op == "+" else SUB)
        _emit(left, out)
        _emit(right, out)
    elif kind == "circle":
        out.append(CIRCLE)
        out.extend(NUM0 + NUM_CHARS.index(str(t)) for t in node.children)
    else:  # quad
        out.append(QUAD)
        out.extend(NUM0 + NUM_CHARS.index(str(t)) for t in node.children[:4])
        out.append(ANG0 + ANG_CHARS.index(str(node.children[4])))


def to_text(tokens: Tokens) -> str:
    """Print a token sequence as CSG2D text (the inverse of ``parse``)."""
    parts: list[str] = []
    end = _print(tokens, 0, parts)
    if end != len(tokens):
        raise ValueError("token sequence holds more than one program")
    return "".join(parts)


def _print(tokens: Tokens, i: int, parts: list[str]) -> int:
    tok = tokens[i]
    if tok in (ADD, SUB):
        parts.append("(+ " if tok == ADD else "(- ")
        i = _print(tokens, i + 1, parts)
        parts.append(" ")
        i = _print(tokens, i, parts)
        parts.append(")")
        return i
    if tok in (CIRCLE, QUAD):
        n = arity(tok)
        args = tokens[i + 1 : i + 1 + n]
        words = [NUM_CHARS[a - NUM0] if a < ANG0 else ANG_CHARS[a - ANG0] for a in args]
        parts.append(f"({'Circle' if tok == CIRCLE else 'Quad'} {' '.join(words)})")
        return i + 1 + n
    raise ValueError(f"token {tok} cannot start a shape")


def try_parse(text: str) -> tuple[Tokens | None, str | None]:
    """(tokens, None) or (None, the error sentence) for editors that mark errors as you type."""
    try:
        return parse(text), None
    except EngineError as exc:
        return None, str(exc)


def error_position(message: str) -> int | None:
    """The 1-based character position a syntax error sentence names (for underlining)."""
    import re

    match = re.search(r"at position (\d+)", message)
    return int(match.group(1)) if match else None
