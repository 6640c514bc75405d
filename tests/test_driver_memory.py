"""The driver of a LocalCluster run keeps a bounded record of the tasks it ran, whatever their number.

The LocalCluster's scheduler and the client live in the driver's process. Every batched stream between them and
the workers keeps its last ``distributed.admin.low-level-log-length`` batches of messages (each with the pickled
task it carried), as do the scheduler's event and transition logs: 1000 of each by default, about 36 KB per task
in the driver over the first thousand tasks. ``connect`` shortens them; these tests start a real LocalCluster,
run tasks that each carry a fresh payload, and measure what the driver still holds (traced memory, not time).
"""

from __future__ import annotations

import gc
import os
import tracemalloc

import dask
import pytest

from ordercube.pipeline.run.cluster import LOW_LEVEL_LOG_LENGTH, connect

PAYLOAD = 20_000  # bytes carried by each task (a Task with its chunks and sources is a few KB)


def _run(client, tasks: int) -> None:
    """``tasks`` tasks, one at a time (each in its own batch, as a sweep's window sends them), each with a new payload."""
    for _ in range(tasks):
        future = client.submit(len, os.urandom(PAYLOAD), pure=False)
        assert future.result(timeout=60) == PAYLOAD, "a task of the LocalCluster did not return its payload's length"
        future.release()


def _held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@pytest.fixture(scope="module")
def client():
    with connect(workers=1, scheduler=None, scheduler_file=None, dashboard_address=None) as client:
        _run(client, LOW_LEVEL_LOG_LENGTH)  # warm-up: imports, the worker's first task, the logs filled once
        yield client


@pytest.mark.timeout(300)
def test_the_driver_holds_no_more_after_twice_as_many_tasks(client):
    """Memory held after 2N tasks minus after N (N well past the logs' length) is far below one payload per task:
    without the bound, each of the N further tasks leaves its payload in the logs (48 KB per 20 KB task measured)."""
    tasks = 3 * LOW_LEVEL_LOG_LENGTH
    tracemalloc.start()
    try:
        _run(client, tasks)
        after_n = _held()
        _run(client, tasks)
        after_2n = _held()
    finally:
        tracemalloc.stop()
    per_task = (after_2n - after_n) / tasks
    assert per_task < PAYLOAD / 4, (
        f"the driver grew by {per_task:.0f} bytes per task between {tasks} and {2 * tasks} tasks of {PAYLOAD} bytes "
        "each: a record of the tasks run is not bounded (see distributed.admin.low-level-log-length in cluster.py)")


def test_the_local_clusters_logs_have_the_bounded_length(client):
    """The streams' message logs, the scheduler's transition and event logs: at most LOW_LEVEL_LOG_LENGTH entries."""
    _run(client, 2 * LOW_LEVEL_LOG_LENGTH)
    scheduler = client.cluster.scheduler
    logs = {"client -> scheduler": client.scheduler_comm.recent_message_log,
            "scheduler transitions": scheduler.transition_log,
            **{f"scheduler events {name}": topic.events for name, topic in scheduler._broker._topics.items()},
            **{f"scheduler -> {name}": stream.recent_message_log for name, stream in scheduler.stream_comms.items()}}
    for name, log in logs.items():
        assert log.maxlen == LOW_LEVEL_LOG_LENGTH, f"{name}: kept up to {log.maxlen} entries"
        assert len(log) <= LOW_LEVEL_LOG_LENGTH, f"{name}: holds {len(log)} entries"
    assert len(logs) >= 4, f"expected the client's and a worker's streams, transitions and events, found {list(logs)}"


def test_a_length_the_user_set_is_kept():
    with dask.config.set({"distributed.admin.low-level-log-length": 7}):
        with connect(workers=1, scheduler=None, scheduler_file=None, dashboard_address=None) as client:
            assert client.scheduler_comm.recent_message_log.maxlen == 7
            assert client.cluster.scheduler.transition_log.maxlen == 7
