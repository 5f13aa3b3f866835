"""The sketcher panel (placeholder until issue #4 lands)."""
from panels.placeholder import placeholder_panel

TITLE = 'Sketcher (tree diffusion)'

Panel = placeholder_panel(
    'sketcher',
    TITLE,
    'Draw a sketch and get a CSG graphics program found by edits on its syntax tree plus search.',
    issue=4,
)


def create_panel(ctx):
    return Panel(ctx)
