"""The honest stand-in a dock shows until its method lands: what is coming, and no fake data."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

from .base import MethodPanel, PanelContext


def placeholder_panel(name: str, title: str, coming: str, issue: int):
    """Build a panel class that only says what the method will do and where it is tracked."""

    class Placeholder(MethodPanel):
        placeholder = True

        def __init__(self, ctx: PanelContext, parent=None) -> None:
            super().__init__(ctx, parent)
            layout = QVBoxLayout(self.body)
            label = QLabel(
                f"<h3>{title}</h3><p>{coming}</p>"
                f"<p><i>Not built yet: this panel is coming with issue #{issue}. "
                "Nothing here is computed until then.</i></p>"
            )
            label.setWordWrap(True)
            label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            label.setObjectName("placeholderText")
            layout.addWidget(label)

    Placeholder.name = name
    Placeholder.title = title
    Placeholder.__name__ = f"{name.capitalize()}Placeholder"
    return Placeholder
