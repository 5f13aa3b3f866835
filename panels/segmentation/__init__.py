"""The segmentation panel (GrabS): a 3-D viewer for point clouds, their segments and the agent.

Importing this package stays light (no pyqtgraph, torch or Open3D): the shell reads
``FILE_SUFFIXES`` from it to route files, and builds the panel only when it is shown.
"""
TITLE = "3D segmentation (GrabS)"
FILE_SUFFIXES: tuple[str, ...] = (".ply", ".pcd", ".xyz", ".pts", ".npz")


def create_panel(ctx):
    from .panel import SegmentationPanel

    return SegmentationPanel(ctx)
