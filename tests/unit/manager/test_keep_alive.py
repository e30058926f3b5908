"""The REST API keeps idle connections open longer than its clients' pools do.

At equal idle times a request sent as the server closes its connection gets no answer at all
("Server disconnected without sending a response"); only the client may close first.
"""

from __future__ import annotations

import httpx

from manager.server import api_server_config


def test_the_server_outlasts_httpx_and_aiohttp_idle_connections() -> None:
    config = api_server_config(object(), "127.0.0.1", 8080)
    httpx_idle = httpx.Limits().keepalive_expiry or 0.0
    # aiohttp (kubernetes-asyncio's transport) documents 15 s for TCPConnector's keepalive.
    aiohttp_idle = 15.0
    assert config.timeout_keep_alive > max(httpx_idle, aiohttp_idle)
