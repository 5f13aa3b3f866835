"""The `workbench` command. Each method adds its group in ``workbench/cli/<method>.py``:

    def register(sub: argparse._SubParsersAction) -> None   # adds `workbench <method> ...`
    def demo(out: pathlib.Path, progress: ProgressFn, cancel: CancelToken) -> dict  # optional

Handlers use the helpers in ``common`` so every command follows the same rules: ``--json`` prints
one JSON object on stdout, progress goes to stderr, user mistakes raise EngineError (exit 2).
"""
