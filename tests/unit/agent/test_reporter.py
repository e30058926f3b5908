"""Reports to the manager survive a manager that is down, and retries keep their reportId."""

import asyncio
from datetime import UTC, datetime

from aiohttp import web

from worker_agent.backoff import Backoff
from worker_agent.reporter import Reporter

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORKLOAD = {
    "metadata": {"name": "job-a", "namespace": "team", "uid": "u-1"},
    "status": {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "count": 2, "flavors": {"cpu": "default"}}],
        }
    },
}


class ManagerStub:
    """Accepts reports after `failures` refusals, recording every attempt."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[dict] = []
        self.tokens: list[str] = []
        self.accepted = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.attempts.append(await request.json())
        self.tokens.append(request.headers.get("Authorization", ""))
        if len(self.attempts) <= self.failures:
            return web.json_response({"error": {"reason": "Unavailable"}}, status=503)
        self.accepted.set()
        return web.json_response({"accepted": True, "duplicate": False})


async def serve(stub: ManagerStub) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/api/v1/clusters/{name}/reports", stub.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}"


def capacity() -> list[dict]:
    return [
        {
            "clusterQueue": "cq",
            "flavor": "default",
            "resource": "cpu",
            "nominal": "9",
            "usage": "2",
            "pending": "0",
        }
    ]


async def test_a_refused_report_is_retried_with_the_same_id() -> None:
    stub = ManagerStub(failures=2)
    runner, url = await serve(stub)
    reporter = Reporter(
        url,
        "w1",
        "secret",
        capacity,
        lambda: NOW,
        interval=0,
        backoff=Backoff(base=0.01, cap=0.05, jitter=0),
    )
    reporter.start()
    try:
        reporter.admitted(WORKLOAD)
        reporter.finished(WORKLOAD, True, "done")
        await asyncio.wait_for(stub.accepted.wait(), 10)
    finally:
        await reporter.stop()
        await runner.cleanup()
    assert len(stub.attempts) == 3
    assert len({a["reportId"] for a in stub.attempts}) == 1
    report = stub.attempts[-1]
    assert report["admissions"][0]["clusterQueue"] == "cq"
    assert report["admissions"][0]["podSets"] == [
        {"name": "main", "count": 2, "flavors": {"cpu": "default"}}
    ]
    assert report["finishes"][0]["state"] == "Succeeded"
    assert report["capacity"] == capacity()
    assert set(stub.tokens) == {"Bearer secret"}


async def test_items_queue_while_the_manager_is_unreachable() -> None:
    reporter = Reporter(
        "http://127.0.0.1:9",  # nothing listens on the discard port
        "w1",
        "secret",
        capacity,
        lambda: NOW,
        interval=0,
        backoff=Backoff(base=0.01, cap=0.02, jitter=0),
    )
    reporter.start()
    try:
        reporter.admitted(WORKLOAD)
        for _ in range(200):
            if reporter.failures >= 2:
                break
            await asyncio.sleep(0.01)
        reporter.evicted(WORKLOAD, "Preempted")
    finally:
        await reporter.stop()
    assert reporter.failures >= 2
    assert reporter.backlog == 2  # the report in flight and the eviction queued behind it


async def test_a_report_the_manager_cannot_read_does_not_block_later_ones() -> None:
    attempts: list[dict] = []
    accepted = asyncio.Event()
    first = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        attempts.append(body)
        first.set()
        if len(attempts) == 1:
            return web.json_response({"error": {"reason": "Invalid"}}, status=422)
        accepted.set()
        return web.json_response({"accepted": True, "duplicate": False})

    app = web.Application()
    app.router.add_post("/api/v1/clusters/{name}/reports", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    reporter = Reporter(url, "w1", "t", capacity, lambda: NOW, interval=0)
    reporter.start()
    try:
        reporter.admitted(WORKLOAD)
        await asyncio.wait_for(first.wait(), 10)
        reporter.finished(WORKLOAD, False, "boom")
        await asyncio.wait_for(accepted.wait(), 10)
    finally:
        await reporter.stop()
        await runner.cleanup()
    assert reporter.rejected == 1
    assert attempts[0]["reportId"] != attempts[1]["reportId"]
    assert attempts[1]["finishes"][0]["state"] == "Failed"
