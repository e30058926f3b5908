"""Concurrent reads share one fetch; a failed fetch fails every caller that shared it."""

from __future__ import annotations

import asyncio

import pytest

from manager.dispatch.batch_reads import CoalescingLoader


async def test_loads_started_together_share_one_fetch() -> None:
    fetched: list[list[int]] = []

    async def fetch(keys: list[int]) -> dict[int, str]:
        fetched.append(sorted(keys))
        await asyncio.sleep(0)
        return {k: f"row {k}" for k in keys if k != 3}

    loader = CoalescingLoader(fetch)
    results = await asyncio.gather(*(loader.load(k) for k in [1, 2, 3, 2]))
    assert results == ["row 1", "row 2", None, "row 2"]
    assert fetched == [[1, 2, 3]]
    # A load after the window closed starts a fetch of its own.
    assert await loader.load(4) == "row 4"
    assert fetched == [[1, 2, 3], [4]]


async def test_a_failed_fetch_fails_everyone_who_shared_it() -> None:
    async def fetch(keys: list[int]) -> dict[int, str]:
        raise ConnectionError("database went away")

    loader = CoalescingLoader(fetch)
    results = await asyncio.gather(*(loader.load(k) for k in [1, 2]), return_exceptions=True)
    assert [type(r) for r in results] == [ConnectionError, ConnectionError]


async def test_a_cancelled_leader_does_not_strand_the_others() -> None:
    started = asyncio.Event()

    async def fetch(keys: list[int]) -> dict[int, str]:
        started.set()
        await asyncio.sleep(60)
        return {}

    loader = CoalescingLoader(fetch)
    leader = asyncio.create_task(loader.load(1))
    follower = asyncio.create_task(loader.load(2))
    await started.wait()
    leader.cancel()
    with pytest.raises(RuntimeError, match="cancelled"):
        await asyncio.wait_for(follower, 5)
    with pytest.raises(asyncio.CancelledError):
        await leader
