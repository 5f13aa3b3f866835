"""The two room generators' names, one vocabulary for the engine, the CLI and the panel.

``train``: `scenes.py`, the rooms the prior and the policy are trained and tuned on (and today's
benchmark). ``eval``: `evalgen/`, other object families and arrangements, scanned; nothing is
trained or tuned on them. The two share no object code (tests/test_architecture.py).
"""

from __future__ import annotations

GENERATORS: tuple[str, ...] = ("train", "eval")
