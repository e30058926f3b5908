"""The work queue: keys are de-duplicated and never processed concurrently."""

import asyncio

from worker_agent.backoff import Backoff
from worker_agent.workqueue import WorkQueue


async def test_a_key_added_many_times_is_processed_once() -> None:
    queue = WorkQueue()
    for _ in range(5):
        queue.add("ns/a")
    queue.add("ns/b")
    assert len(queue) == 2
    assert await queue.get() == "ns/a"
    assert await queue.get() == "ns/b"


async def test_a_key_added_while_processing_comes_back_after_done() -> None:
    queue = WorkQueue()
    queue.add("ns/a")
    key = await queue.get()
    queue.add("ns/a")
    assert len(queue) == 0  # not handed to a second worker while the first holds it
    queue.done(key)
    assert await queue.get() == "ns/a"
    queue.done("ns/a")
    assert queue.idle


async def test_a_waiting_worker_wakes_on_add() -> None:
    queue = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("ns/x")
    assert await asyncio.wait_for(getter, 5) == "ns/x"


async def test_delayed_adds_arrive_later() -> None:
    queue = WorkQueue()
    queue.add_after("ns/a", 0.05)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 5) == "ns/a"


async def test_shutdown_releases_waiting_workers() -> None:
    from worker_agent.workqueue import ShutDown

    queue = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shut_down()
    try:
        await asyncio.wait_for(getter, 5)
    except ShutDown:
        pass
    else:
        raise AssertionError("get() should raise ShutDown")


def test_backoff_grows_and_is_capped() -> None:
    backoff = Backoff(base=1, factor=2, cap=10, jitter=0)
    assert [backoff.delay(n) for n in range(6)] == [1, 2, 4, 8, 10, 10]


async def test_a_key_wakes_one_waiting_worker_and_a_cancelled_one_hands_it_on() -> None:
    queue = WorkQueue()
    first, second = (asyncio.create_task(queue.get()) for _ in range(2))
    await asyncio.sleep(0)
    queue.add("ns/a")
    first.cancel()  # woken for the key, but cancelled before it could take it
    assert await asyncio.wait_for(second, 5) == "ns/a"
    third = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("ns/b")
    await asyncio.sleep(0)
    assert third.done()
    assert first.cancelled()
