"""The in-process CLI runner the CLI tests use gives what a process gives and leaves pytest's
process as it found it (a leak here would slow or change every test after it)."""

from __future__ import annotations

import importlib
import json
import os

import torch

from ..conftest import run_cli, run_cli_here

device = importlib.import_module("engines.core.device")  # the module, not ``engines.core.device()``


def test_a_command_inside_the_process_answers_as_its_own_process_and_leaves_no_trace() -> None:
    threads, applied, environ, cwd = torch.get_num_threads(), device._threads_applied, dict(os.environ), os.getcwd()
    args = ("planner", "run", "--type", "straight", "--planner", "idm", "--json")
    here, there = run_cli_here(*args, env={"WORKBENCH_THREADS": "3"}), run_cli(*args, env={"WORKBENCH_THREADS": "3"})
    assert here.returncode == there.returncode == 0, here.stderr + there.stderr
    assert json.loads(here.stdout)["cls"] == json.loads(there.stdout)["cls"]
    # the command set torch's threads (3) and the environment for this process: both put back
    assert (torch.get_num_threads(), device._threads_applied, dict(os.environ), os.getcwd()) == (threads, applied, environ, cwd)
    failed = run_cli_here("planner", "run", "--type", "highway9")
    assert failed.returncode == 2 and failed.stderr.startswith("error:") and "Traceback" not in failed.stderr
