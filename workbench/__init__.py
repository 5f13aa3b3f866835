"""The Workbench shell: main window, docks, jobs, settings and the `workbench` command."""

__version__ = "0.1.0"
