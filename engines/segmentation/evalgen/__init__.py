"""The evaluation generator: rooms the object prior never trained on, scanned like real rooms.

It shares no code with the training generator (`categories.py`, `shapes.py`, `scenes.py`,
`prior_data.py`, `views.py`): other object families (desks with drawers and monitors, bookshelves
with books, beds with pillows, office chairs on five-star bases, floor lamps, plants, stacked
boxes), other arrangements, triangle meshes instead of signed-distance shapes and a ray-cast
scanner instead of hidden-point removal. tests/test_architecture.py keeps the two apart.
"""

from .scene import EvalScene, EvalSceneParams, generate_eval_scene

__all__ = ["EvalScene", "EvalSceneParams", "generate_eval_scene"]
