"""The two exceptions every engine shares: one for the user, one for cancellation."""


class EngineError(Exception):
    """A problem the user can act on, said in one clear sentence.

    The GUI shows it inline in the panel; the CLI prints ``error: <sentence>`` and exits with 2.
    Never raise it for a bug: bugs keep their traceback.
    """


class Cancelled(Exception):
    """Raised between steps when the user cancelled the job."""
