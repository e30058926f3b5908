"""The agent's HTTP endpoints: /healthz (the process runs), /readyz (caches synced), /metrics."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST


class HealthServer:
    """A small aiohttp server on a port (0 picks a free one)."""

    def __init__(
        self,
        ready: Callable[[], bool],
        metrics: Callable[[], bytes],
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._ready = ready
        self._metrics = metrics
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="caches not synced")

    async def _metrics_page(self, _: web.Request) -> web.Response:
        body = self._metrics()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics_page)
        # A probe still open when the agent stops is not waited for (aiohttp waits 60 s).
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self._port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
