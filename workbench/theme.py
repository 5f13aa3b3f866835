"""Dark and light themes: Fusion style with a palette, and matching pyqtgraph colours."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("light", "dark")


def _dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor(37, 37, 38), QColor(45, 45, 48), QColor(220, 220, 220)
    roles = {
        QPalette.ColorRole.Window: window,
        QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base,
        QPalette.ColorRole.AlternateBase: window,
        QPalette.ColorRole.ToolTipBase: window,
        QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: window,
        QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor(255, 80, 80),
        QPalette.ColorRole.Highlight: QColor(42, 130, 218),
        QPalette.ColorRole.HighlightedText: QColor(255, 255, 255),
        QPalette.ColorRole.Link: QColor(90, 160, 240),
        QPalette.ColorRole.PlaceholderText: QColor(140, 140, 140),
    }
    for role, color in roles.items():
        p.setColor(role, color)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(120, 120, 120))
    return p


def apply_theme(app: QApplication, theme: str) -> None:
    """Apply a theme to the whole application, plots included (for plots created afterwards)."""
    app.setStyle("Fusion")
    app.setPalette(_dark_palette() if theme == "dark" else app.style().standardPalette())
    app.setProperty("workbenchTheme", theme)
    try:
        import pyqtgraph as pg
    except ImportError:  # pragma: no cover - pyqtgraph is a dependency
        return
    pg.setConfigOptions(
        background="#1e1e1e" if theme == "dark" else "w",
        foreground="#dddddd" if theme == "dark" else "k",
        antialias=True,
    )


def current_theme(app: QApplication) -> str:
    return str(app.property("workbenchTheme") or "light")
