"""Status writes that only report: the latest wish per object is written, decisions skip them."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from worker_agent.resources import CLUSTER_QUEUES, WORKLOADS
from worker_agent.status_writes import StatusWrites
from worker_agent.writer import Mutation, ObjectWriter


class FakeWriter:
    """Records the statuses written; fails the first `failures` writes."""

    def __init__(self, failures: int = 0) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes = 0
        self.failures = failures

    async def update(self, rt: object, key: str, mutate: Mutation, status: bool = False) -> Any:
        await asyncio.sleep(0)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("connection reset")
        written = mutate(self.objects.get(key, {"status": {}}))
        if written is not None:
            self.writes += 1
            self.objects[key] = written
        return written


def reason(text: str) -> Mutation:
    return lambda obj: {**obj, "status": {"reason": text}}


async def settle(writes: StatusWrites) -> None:
    for _ in range(200):
        if writes.idle:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("status writes did not settle")


async def test_only_the_latest_wish_for_an_object_is_written() -> None:
    fake = FakeWriter()
    writes = StatusWrites(cast(ObjectWriter, fake))
    for text in ("first", "second", "third"):
        writes.want(WORKLOADS, "ns/a", reason(text))
    writes.want(CLUSTER_QUEUES, "cq", reason("active"))
    writes.start()
    try:
        await settle(writes)
    finally:
        await writes.stop()
    assert fake.objects["ns/a"]["status"] == {"reason": "third"}
    assert fake.objects["cq"]["status"] == {"reason": "active"}
    assert fake.writes == 2


async def test_a_dropped_wish_is_not_written() -> None:
    fake = FakeWriter()
    writes = StatusWrites(cast(ObjectWriter, fake))
    writes.want(WORKLOADS, "ns/a", reason("pending"))
    writes.drop(WORKLOADS, "ns/a")
    writes.start()
    try:
        await settle(writes)
    finally:
        await writes.stop()
    assert fake.objects == {}


async def test_a_failed_write_is_retried() -> None:
    fake = FakeWriter(failures=2)
    writes = StatusWrites(cast(ObjectWriter, fake))
    writes.want(WORKLOADS, "ns/a", reason("pending"))
    writes.start()
    try:
        await settle(writes)
    finally:
        await writes.stop()
    assert fake.objects["ns/a"]["status"] == {"reason": "pending"}
