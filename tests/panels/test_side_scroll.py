"""The control columns scroll vertically and are never cut off at their right edge."""

from __future__ import annotations

from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

from panels.base import side_scroll


def test_a_side_column_is_at_least_as_wide_as_its_widest_control(qtbot) -> None:
    content = QWidget()
    wide = QLineEdit()
    wide.setMinimumWidth(500)
    QVBoxLayout(content).addWidget(wide)
    scroll = side_scroll(content, max_width=300)
    qtbot.addWidget(scroll)
    assert scroll.minimumWidth() >= 500
    assert scroll.maximumWidth() == scroll.minimumWidth()  # the cap never cuts a control off
    scroll.resize(scroll.minimumWidth(), 200)
    scroll.show()
    qtbot.waitExposed(scroll)
    assert scroll.viewport().width() >= wide.minimumWidth()


def test_a_narrow_column_keeps_room_to_grow_up_to_its_cap(qtbot) -> None:
    content = QWidget()
    QVBoxLayout(content).addWidget(QLineEdit())
    scroll = side_scroll(content, max_width=430)
    qtbot.addWidget(scroll)
    assert scroll.minimumWidth() < 430 == scroll.maximumWidth()
