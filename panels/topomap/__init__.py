"""The topomap panel (placeholder until issue #7 lands)."""
from panels.placeholder import placeholder_panel

TITLE = 'Topographic maps (CB-SOM)'

Panel = placeholder_panel(
    'topomap',
    TITLE,
    'Train topographic networks with credit-based self-organising maps and look at their cortical maps.',
    issue=7,
)


def create_panel(ctx):
    return Panel(ctx)
