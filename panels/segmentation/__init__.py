"""The segmentation panel (placeholder until issue #5 lands)."""
from panels.placeholder import placeholder_panel

TITLE = '3D segmentation (GrabS)'

Panel = placeholder_panel(
    'segmentation',
    TITLE,
    'Object segmentation of 3D point clouds without scene labels: a learned object prior and an agent that finds objects by querying it, with a 3D viewer for the results.',
    issue=5,
)


def create_panel(ctx):
    return Panel(ctx)
