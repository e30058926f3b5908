"""Stopping the webhook server does not wait on a review that never arrives in full.

A manager replica stepping down stops its webhook server before it can be elected again; a
request left half-sent (its body still owed) held that for aiohttp's default of 60 s.
"""

from __future__ import annotations

import asyncio
import ssl

from kueue_api.webhooks.review import Answer, Request
from kueue_api.webhooks.server import Certificates, WebhookServer


class _InMemory:
    """A CertStore with nothing stored yet and nowhere to publish."""

    def __init__(self) -> None:
        self.saved: Certificates | None = None

    async def load(self) -> Certificates | None:
        return self.saved

    async def save(self, certificates: Certificates) -> Certificates:
        self.saved = certificates
        return certificates

    async def publish(self, bundle: bytes) -> None:
        return None


def _allow(review: Request) -> Answer:
    return Answer(allowed=True)


async def test_stop_does_not_wait_for_a_review_whose_body_never_comes() -> None:
    server = WebhookServer(
        {"/validate": _allow},
        _InMemory(),
        host="127.0.0.1",
        port=0,
        names=["localhost"],
    )
    await server.start()
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=client)
    writer.write(b"POST /validate HTTP/1.1\r\nHost: hooks\r\nContent-Length: 100\r\n\r\n{")
    await writer.drain()
    await asyncio.sleep(0.2)  # the server is reading the body
    try:
        # Well under the 60 s aiohttp would wait by default.
        async with asyncio.timeout(10):
            await server.stop()
    finally:
        writer.close()
    assert await reader.read() == b""  # the half-sent request's connection was closed
