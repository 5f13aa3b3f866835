"""SVG export with real geometry: <circle> for discs, rotated <rect> for quads, and the booleans
expressed with masks (union: both drawn; subtraction: the right side painted black into the
left side's mask), so a browser draws what our renderer draws.
"""

from __future__ import annotations

from .render import CANVAS_UNITS
from .vocab import ADD, ANG0, CIRCLE, NUM0, SUB, Tokens


def to_svg(tokens: Tokens, size: int = 512, fill: str = "#000000", background: str | None = "#ffffff") -> str:
    """A standalone SVG document of ``size`` pixels showing the program's shape."""
    defs: list[str] = []
    body, _ = _node(tokens, 0, fill, defs)
    u = CANVAS_UNITS
    bg = f'<rect x="0" y="0" width="{u:g}" height="{u:g}" fill="{background}"/>' if background else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" viewBox="0 0 {u:g} {u:g}">'
        f"<defs>{''.join(defs)}</defs>{bg}{body}</svg>\n"
    )


def _node(tokens: Tokens, i: int, fill: str, defs: list[str]) -> tuple[str, int]:
    tok = tokens[i]
    if tok == CIRCLE:
        r, x, y = (t - NUM0 for t in tokens[i + 1 : i + 4])
        shape = f'<circle cx="{2 * x}" cy="{2 * y}" r="{2 * r}" fill="{fill}"/>' if r > 0 else ""
        return shape, i + 4
    if tok not in (ADD, SUB):  # quad
        x, y, w, h = (t - NUM0 for t in tokens[i + 1 : i + 5])
        degrees = 45 * (tokens[i + 5] - ANG0)
        if w <= 0 or h <= 0:
            return "", i + 6
        turn = f' transform="rotate({degrees} {2 * x} {2 * y})"' if degrees else ""
        return f'<rect x="{2 * x - w}" y="{2 * y - h}" width="{2 * w}" height="{2 * h}" fill="{fill}"{turn}/>', i + 6
    left, j = _node(tokens, i + 1, fill, defs)
    if tok == ADD:
        right, j = _node(tokens, j, fill, defs)
        return f"<g>{left}{right}</g>", j
    right, j = _node(tokens, j, "#000000", defs)  # black in a luminance mask hides
    mask_id = f"m{len(defs)}"
    u = CANVAS_UNITS
    defs.append(
        f'<mask id="{mask_id}" maskUnits="userSpaceOnUse" x="0" y="0" width="{u:g}" height="{u:g}">'
        f'<rect x="0" y="0" width="{u:g}" height="{u:g}" fill="#ffffff"/>{right}</mask>'
    )
    return f'<g mask="url(#{mask_id})">{left}</g>', j
