"""The demo's embedded store: the same migrations and API work on SQLite (aiosqlite).

This checks SQLite support itself; every other manager test runs on Postgres."""

from __future__ import annotations

from pathlib import Path

from cryptography.fernet import Fernet

from manager.db.schema import migrate
from manager.db.session import make_engine
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, eventually, serve_manager
from tests.integration.manager.test_api_input import job


async def test_the_manager_runs_on_a_migrated_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'manager.db'}"
    engine = make_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    settings = ManagerSettings(
        database_url=url, api_token=API_TOKEN, encryption_key=Fernet.generate_key().decode()
    )
    async with serve_manager(settings) as manager:
        created = await manager.client.post("/api/v1/workloads", json=job("on-sqlite"))
        assert created.status_code == 201, created.text
        assert created.json()["createdAt"].endswith("Z")
        await manager.client.delete("/api/v1/workloads/default/on-sqlite")

        async def cancelled() -> bool:
            return (await manager.workload("default", "on-sqlite"))["state"] == "Cancelled"

        await eventually(cancelled)
