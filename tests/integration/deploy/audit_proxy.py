"""An auditing reverse proxy in front of a kubesim cluster, like an API server's audit log.

A client given `kubeconfig` (the cluster's, with the server pointed here) works as before, and
every request it sends is noted as the RBAC permission it needs. Watches are streamed through.
"""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
from aiohttp import web

from kubesim import RunningCluster

from .api_calls import ApiCall, request_call

_HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


class AuditProxy:
    def __init__(self, cluster: RunningCluster) -> None:
        self.cluster = cluster
        self.calls: list[ApiCall] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def kubeconfig(self) -> dict[str, Any]:
        """The cluster's kubeconfig (plain HTTP, same token) aimed at the proxy."""
        config = copy.deepcopy(self.cluster.kubeconfig)
        for entry in config["clusters"]:
            entry["cluster"] = {"server": self.url}
        return config

    async def __aenter__(self) -> AuditProxy:
        self._session = aiohttp.ClientSession(
            self.cluster.url, timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False
        )
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        call = request_call(request.method, request.path, dict(request.query))
        if call is not None:
            self.calls.append(call)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        body = await request.read()
        async with self._session.request(
            request.method,
            request.rel_url.path_qs,
            headers=headers,
            data=body or None,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    response.headers[name] = value
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
