"""The schema comes from the migrations, and the service refuses an unmigrated database."""

from __future__ import annotations

import secrets

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import inspect

from manager.db.schema import SchemaNotMigrated, current_revision, head_revision, migrate
from manager.db.session import make_engine
from manager.db.tables import Base
from manager.runtime import ManagerRuntime
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN
from tests.postgres import admin, database_url, drop


async def test_migrations_create_every_table_and_column_the_models_use(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            columns = await connection.run_sync(
                lambda sync: {
                    table: {c["name"] for c in inspect(sync).get_columns(table)}
                    for table in inspect(sync).get_table_names()
                }
            )
        assert await current_revision(engine) == head_revision()
    finally:
        await engine.dispose()
    for table in Base.metadata.sorted_tables:
        assert table.name in columns
        assert {c.name for c in table.columns} == columns[table.name]


async def test_the_manager_refuses_an_unmigrated_database_and_migrate_fixes_it() -> None:
    name = f"mkq_test_{secrets.token_hex(4)}"
    url = database_url(name)
    await admin(f'CREATE DATABASE "{name}"')
    settings = ManagerSettings(
        database_url=url, api_token=API_TOKEN, encryption_key=Fernet.generate_key().decode()
    )
    try:
        with pytest.raises(SchemaNotMigrated, match="mkq manager migrate --database-url"):
            await ManagerRuntime.open(settings)
        engine = make_engine(url)
        try:
            assert await migrate(engine) == head_revision()
            assert await migrate(engine) == head_revision()  # idempotent
        finally:
            await engine.dispose()
        runtime = await ManagerRuntime.open(settings)
        await runtime.close()
    finally:
        await drop(name)
