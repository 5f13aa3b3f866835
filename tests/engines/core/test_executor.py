"""The local executor: results in item order for any worker count, a raising task is reported and
counted while the rest completes, a killed worker's task goes again once, then counts as failed.
(The same behaviour on Ray: tests/engines/test_ray.py.) How the Ray path cancels, joins and
refuses addresses is checked here against a stand-in ``ray`` module: no Ray starts."""

from __future__ import annotations

import logging
import socket
import sys
import threading
import types
from functools import partial
from pathlib import Path

import pytest

from engines.core import Cancelled, CancelToken, EngineError, executor
from engines.core.executor import ExecutorSpec, LocalExecutor, connect, current_cancel, failure_count, ray_address_problem, run_tasks

from .executor_tasks import die, square_or_raise


def test_results_are_the_same_in_order_for_any_worker_count(caplog) -> None:
    items = list(range(7))
    runs = {w: list(run_tasks(square_or_raise, items, ExecutorSpec("local", w))) for w in (1, 2)}
    for results in runs.values():
        assert [r.index for r in results] == items
        assert [r.value for r in results if r.ok] == [0, 1, 4, 25, 36]
        assert failure_count(results) == 2
        bug, mistake = results[3], results[4]
        assert bug.error == "ValueError: three is refused" and bug.crash and "square_or_raise" in bug.traceback
        assert mistake.error == "four is a user's mistake" and not mistake.crash
    assert [(r.value, r.error) for r in runs[1]] == [(r.value, r.error) for r in runs[2]]
    assert "task 3 (3) failed: ValueError: three is refused" in caplog.text  # item and traceback in the log


def test_unordered_results_cover_every_item() -> None:
    results = list(run_tasks(square_or_raise, [5, 6, 7], ExecutorSpec("local", 2), ordered=False))
    assert sorted(r.value for r in results) == [25, 36, 49]


def test_a_killed_worker_is_retried_once_then_counted(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    results = list(LocalExecutor(2).map(partial(die, str(tmp_path)), [0, 1, 2, 3]))
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert [r.value for r in results] == [0, None, 20, 30]  # item 2 died once and went again
    assert results[1].died and results[1].crash and not results[2].died
    assert failure_count(results) == 1
    assert "running it again, alone" in caplog.text


def test_inline_runs_see_the_batch_cancel_token() -> None:
    cancel = CancelToken()
    seen = []

    def task(x: int) -> int:
        seen.append(current_cancel() is cancel)
        if x == 1:
            cancel.cancel()
        return x

    with pytest.raises(Cancelled):
        list(run_tasks(task, [0, 1, 2], ExecutorSpec("local", 1), cancel))
    assert seen == [True, True]  # the third item never started


def test_bad_specs_are_user_errors() -> None:
    with pytest.raises(EngineError, match="unknown executor"):
        ExecutorSpec("dask").check()
    with pytest.raises(EngineError, match="at least 1"):
        ExecutorSpec("local", 0).check()
    with pytest.raises(EngineError, match="goes with --executor ray"):
        ExecutorSpec("local", 2, "auto").check()
    for bad in ("localhost", "head:0", "head:65536", "http://head:6379", "two words:1", ""):
        assert ray_address_problem(bad) is not None
        with pytest.raises(EngineError, match="a Ray address is 'auto' or HOST:PORT"):
            ExecutorSpec("ray", 1, bad).check()
    for good in ("auto", "10.0.0.5:6379", "head-node.example.org:6379", "[::1]:6379"):
        assert ray_address_problem(good) is None
        ExecutorSpec("ray", 1, good).check()


def test_describe_says_where_a_batch_runs() -> None:
    assert ExecutorSpec().describe() == "on this machine, 1 worker"
    assert ExecutorSpec("ray", 4, "auto").describe() == "on Ray (auto), 4 workers"
    assert ExecutorSpec("ray", 2).describe() == "on a Ray started here, 2 workers"


class FakeRay(types.ModuleType):
    """What RayExecutor and connect use of ``ray``, recording the calls; ``wait`` cancels the batch
    (as the user's Cancel would) while its first tasks are under way."""

    exceptions = types.SimpleNamespace(RayError=RuntimeError)

    def __init__(self, cancel: CancelToken | None = None) -> None:
        super().__init__("ray")
        self.cancel_token, self.initialised = cancel, False
        self.submitted: list[object] = []
        self.cancelled: list[tuple[object, bool]] = []
        self.calls: list[tuple] = []

    def is_initialized(self) -> bool:
        return self.initialised

    def init(self, **kwargs) -> None:
        self.calls.append(("init", kwargs.get("address"), kwargs.get("num_cpus")))
        self.initialised = True

    def shutdown(self) -> None:
        self.calls.append(("shutdown",))
        self.initialised = False

    def remote(self, **_options):
        return lambda fn: types.SimpleNamespace(remote=self._submit)

    def _submit(self, *_args) -> object:
        ref = object()
        self.submitted.append(ref)
        return ref

    def wait(self, refs, num_returns, timeout):
        self.cancel_token.cancel()
        return [], refs

    def cancel(self, ref, force: bool = False) -> None:
        self.cancelled.append((ref, force))


@pytest.fixture
def fake_ray(monkeypatch):
    """Installs a stand-in ``ray`` and forgets what this process joined before."""

    def install(cancel: CancelToken | None = None) -> FakeRay:
        ray = FakeRay(cancel)
        monkeypatch.setitem(sys.modules, "ray", ray)
        monkeypatch.setattr(executor, "_joined", None)
        return ray

    return install


def test_cancel_stops_the_ray_tasks_under_way(fake_ray) -> None:
    cancel = CancelToken()
    ray = fake_ray(cancel)
    ray.initialised = True  # a Ray its caller started
    with pytest.raises(Cancelled):
        list(run_tasks(square_or_raise, [1, 2, 3], ExecutorSpec("ray", 2), cancel))
    assert len(ray.submitted) == 2  # two workers: two tasks in flight, the third never sent
    assert ray.cancelled == [(ref, True) for ref in ray.submitted]  # both stopped, their workers killed


def test_a_changed_ray_choice_applies_to_the_next_batch(fake_ray) -> None:
    ray = fake_ray()
    connect(None, 1)
    connect(None, 1)  # the same choice: the Ray already started
    assert ray.calls == [("init", None, 1)]
    connect(None, 2)  # more workers: a local Ray of that size
    connect("auto")  # a cluster instead
    assert ray.calls[1:] == [("shutdown",), ("init", None, 2), ("shutdown",), ("init", "auto", None)]


def test_an_unreachable_cluster_is_one_sentence_and_keeps_the_ray_it_had(fake_ray) -> None:
    ray = fake_ray()
    connect(None, 1)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EngineError, match=rf"^cannot reach a Ray cluster at 127\.0\.0\.1:{port}: connection refused$"):
        connect(f"127.0.0.1:{port}")
    assert ray.calls == [("init", None, 1)] and ray.initialised


def _server(reply: bytes | None) -> tuple[socket.socket, threading.Thread]:
    """A local server that sends ``reply`` to the first client (None: says nothing until it leaves)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(64)
            if reply is not None:
                conn.sendall(reply)
            conn.settimeout(10)
            try:
                conn.recv(64)  # until the client hangs up
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.parametrize("reply", [b"HTTP/1.1 400 Bad Request\r\n\r\n", None], ids=["a web server", "a silent port"])
def test_a_port_that_is_not_a_ray_head_is_one_sentence_without_ray_retrying(fake_ray, monkeypatch, reply) -> None:
    ray = fake_ray()
    monkeypatch.setattr(executor, "REACH_TIMEOUT_S", 0.5)
    server, thread = _server(reply)
    address = f"127.0.0.1:{server.getsockname()[1]}"
    with server, pytest.raises(EngineError, match=rf"^{address} answers, but not as a Ray cluster: give the head node's address"):
        connect(address)
    thread.join(5)
    assert ray.calls == []  # ray.init never tried it


def test_an_http2_server_passes_the_check_as_a_ray_head_does(fake_ray) -> None:
    ray = fake_ray()
    settings = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # what a Ray head's GCS (gRPC) sends first: an empty SETTINGS frame
    server, thread = _server(settings)
    address = f"127.0.0.1:{server.getsockname()[1]}"
    with server:
        connect(address)
    thread.join(5)
    assert ray.calls == [("init", address, None)]


def test_a_cluster_of_another_ray_version_is_one_sentence(fake_ray, monkeypatch) -> None:
    ray = fake_ray()
    mismatch = (
        "Version mismatch: The cluster was started with:\n    Ray: 2.40.0\n    Python: 3.10.12\n"
        "This process on node 10.0.0.5 was started with:\n    Ray: 2.48.0\n    Python: 3.11.7\n"
    )  # Ray's own wording
    monkeypatch.setattr(ray, "init", lambda **kwargs: (_ for _ in ()).throw(RuntimeError(mismatch)))
    with pytest.raises(EngineError) as err:
        connect("auto")
    assert str(err.value) == (
        "the Ray cluster at auto runs Ray 2.40.0 on Python 3.10.12, this machine Ray 2.48.0 on Python 3.11.7: install the same versions on both"
    )
