"""The attention panel (placeholder until issue #3 lands)."""
from panels.placeholder import placeholder_panel

TITLE = 'Attention masks (FlashMask)'

Panel = placeholder_panel(
    'attention',
    TITLE,
    "Design attention masks in FlashMask's column-wise interval representation, see the tile sparsity and time real kernels live.",
    issue=3,
)


def create_panel(ctx):
    return Panel(ctx)
