"""The topomap panel: credit-based self-organising maps against their baselines.

The panel module (pyqtgraph) is imported when the dock is first built, not at start-up.
"""

# Run files and saved comparisons (`workbench topomap compare --save FILE.topomap.json`).
FILE_SUFFIXES = (".topomap.pt", ".topomap.json")


def create_panel(ctx):
    from .panel import TopomapPanel

    return TopomapPanel(ctx)
