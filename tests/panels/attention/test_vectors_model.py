"""The vectors table's model on its own: what it refuses before the engine sees an edit."""

from __future__ import annotations

import numpy as np

from engines.attention.representation import MAX_N
from panels.attention.vectors_model import VectorsModel


def test_a_number_beyond_any_mask_is_the_out_of_range_sentence_not_an_overflow(qapp) -> None:
    """ "99999999999999999999" raised OverflowError (only ValueError was caught)."""
    model = VectorsModel()
    model.set_vectors(np.full((8, 2), 8), ("LTS", "LTE"))
    said: list[str] = []
    edits: list[np.ndarray] = []
    model.rejected.connect(said.append)
    model.edited.connect(edits.append)
    assert not model.setData(model.index(3, 1), "99999999999999999999")
    assert said == [f"column 3: LTE=99999999999999999999 is outside the rows of any mask (0..N_q, N_q at most {MAX_N})"]
    assert not edits and model.values[3, 1] == 8
    assert model.setData(model.index(3, 1), "5") and edits[-1][3, 1] == 5  # an in-range number still goes to the engine
