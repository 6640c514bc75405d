"""The driver of a LocalCluster run keeps a bounded record of the tasks it ran, whatever their number.

The LocalCluster's scheduler and the client live in the driver's process. Every batched stream between them and
the workers keeps its last ``distributed.admin.low-level-log-length`` batches of messages (each with the pickled
task it carried), as do the scheduler's event and transition logs: 1000 of each by default, about 36 KB per task
in the driver over the first thousand tasks. ``connect`` shortens them; these tests start a real LocalCluster,
run tasks that each carry a fresh payload, and measure what the driver still holds (traced memory, not time).

The tasks are sent as a sweep sends them (ordercube.pipeline.run.on_cluster): through a window that never
drains, inside one span. Sent one at a time instead, each task would leave a span and a task group on the
scheduler for good (dask/distributed#7977): 3.9-6.8 KB per task measured, which is not the logs' growth.
"""

from __future__ import annotations

import gc
import os
import tracemalloc

import dask
import pytest
from distributed import as_completed, span

from ordercube.pipeline.run.cluster import LOW_LEVEL_LOG_LENGTH, connect

PAYLOAD = 20_000  # bytes carried by each task (a Task with its chunks and sources is a few KB)
WINDOW = 4  # tasks in flight, as a sweep on one single-threaded worker keeps them


def _run(client, tasks: int) -> None:
    """``tasks`` tasks, each with a new payload, through a window of WINDOW in flight: a new task is sent (in a
    batch of its own) as each result arrives, inside one span, as a sweep does."""
    futures = as_completed()
    with span("ordercube sweep"):
        for _ in range(min(WINDOW, tasks)):
            futures.add(client.submit(len, os.urandom(PAYLOAD), pure=False))
        sent = min(WINDOW, tasks)
        for future in futures:
            assert future.result(timeout=60) == PAYLOAD, "a task of the LocalCluster did not return its payload's length"
            future.release()
            if sent < tasks:
                futures.add(client.submit(len, os.urandom(PAYLOAD), pure=False))
                sent += 1


def _held_after_collection() -> tracemalloc.Snapshot:
    """What the driver holds after a full collection, as blocks with where they were allocated."""
    gc.collect()
    return tracemalloc.take_snapshot()


def _payload_blocks(snapshot: tracemalloc.Snapshot) -> int:
    """The blocks of at least a payload's size that distributed allocated: a pickled task or message that carries
    a payload (what else the process allocates meanwhile, in a thread of another test, is not counted)."""
    made_by_dask = snapshot.filter_traces([tracemalloc.Filter(True, "*/distributed/*")])
    return sum(1 for trace in made_by_dask.traces if trace.size >= PAYLOAD)


@pytest.fixture(scope="module")
def client():
    with connect(workers=1, scheduler=None, scheduler_file=None, dashboard_address=None) as client:
        _run(client, LOW_LEVEL_LOG_LENGTH)  # warm-up: imports, the worker's first task, the logs filled once
        yield client


@pytest.mark.timeout(300)
def test_the_driver_holds_no_more_payloads_than_its_logs_can_after_many_tasks(client):
    """After 2N tasks (N five times the logs' length), the blocks of a payload's size or more that distributed
    holds in the driver are at most what the bounded logs can hold: two streams carry each task's payload (the
    client's to the scheduler, the scheduler's to the worker), each keeping LOW_LEVEL_LOG_LENGTH batches of up to
    WINDOW tasks. Without the bound each task leaves two, over 1,100 blocks here (48 KB per 20 KB task measured).
    Blocks, not bytes: the scheduler's own records of each task (task groups, metrics; 0.3-3.6 KB per task
    measured, varying with the load) are not what this bounds. The count is not compared between N and 2N: how
    many tasks a logged batch carries varies with the load, so it moves within the bound by hundreds."""
    tasks = 5 * LOW_LEVEL_LOG_LENGTH
    bound = 2 * WINDOW * (LOW_LEVEL_LOG_LENGTH + 1)  # the logs, and the tasks of one window not yet forgotten
    tracemalloc.start(1)
    try:
        _run(client, tasks)
        after_n = _held_after_collection()
        _run(client, tasks)
        after_2n = _held_after_collection()
    finally:
        tracemalloc.stop()
    held = _payload_blocks(after_2n)
    if held > bound:
        grown = "\n".join(f"{stat.size_diff / tasks:+.0f} B per task from\n" + "\n".join(stat.traceback.format()[-8:])
                          for stat in after_2n.compare_to(after_n, "traceback")[:3])
        pytest.fail(f"the driver holds {held} blocks of {PAYLOAD} bytes or more after {2 * tasks} tasks, more than the "
                    f"{bound} its logs can hold: a record of the tasks run is not bounded (see "
                    f"distributed.admin.low-level-log-length in cluster.py). What grew most from {tasks} tasks on:\n{grown}")


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
