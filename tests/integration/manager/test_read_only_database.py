"""A read-only database (a hot standby left behind a failover, or default_transaction_read_only
set on it): writes are answered 503 with what to do, reads still answer, nothing crashes."""

from __future__ import annotations

import secrets

from cryptography.fernet import Fernet

from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, serve_manager
from tests.integration.manager.test_api_input import job
from tests.postgres import admin, create_migrated, drop


async def test_a_read_only_database_answers_writes_with_503_and_still_serves_reads() -> None:
    name = f"mkq_read_only_{secrets.token_hex(4)}"
    url = await create_migrated(name)
    try:
        settings = ManagerSettings(
            database_url=url, api_token=API_TOKEN, encryption_key=Fernet.generate_key().decode()
        )
        async with serve_manager(settings) as manager:
            accepted = await manager.client.post("/api/v1/workloads", json=job("before"))
            assert accepted.status_code == 201, accepted.text

        # New connections start read-only, as they would on a standby.
        await admin(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        async with serve_manager(settings) as manager:
            refused = await manager.client.post("/api/v1/workloads", json=job("after"))
            assert refused.status_code == 503, refused.text
            assert refused.headers["Retry-After"] == "2"
            message = refused.json()["error"]["message"]
            assert "read-only" in message and "MKQ_DATABASE_URL" in message, message

            cancel = await manager.client.delete("/api/v1/workloads/default/before")
            assert cancel.status_code == 503, cancel.text

            # Reads go on: what was accepted before is still there, and is still Pending.
            listed = await manager.client.get("/api/v1/workloads")
            assert listed.status_code == 200, listed.text
            assert [(w["name"], w["state"]) for w in listed.json()["items"]] == [
                ("before", "Pending")
            ]
            assert (await manager.client.get("/readyz")).status_code == 200
    finally:
        await drop(name)
