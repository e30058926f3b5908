"""Applying the Alembic migrations and refusing to run on a database that lacks them."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations

# __path__ works whether `migrations` was installed as a regular or a namespace package.
MIGRATIONS_DIR = Path(next(iter(migrations.__path__))).resolve()


class SchemaNotMigrated(RuntimeError):
    """The database has no manager schema, or an older one than this build expects."""


def alembic_config() -> Config:
    """An Alembic config built in code, so no alembic.ini is needed anywhere."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no Alembic revisions under {MIGRATIONS_DIR}")
    return head


async def migrate(engine: AsyncEngine) -> str:
    """Upgrade the database to the newest revision; returns that revision."""

    def upgrade(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")

    async with engine.begin() as connection:
        await connection.run_sync(upgrade)
    return head_revision()


async def current_revision(engine: AsyncEngine) -> str | None:
    def read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(read)


async def require_migrated(engine: AsyncEngine, url_for_message: str) -> None:
    """Raise SchemaNotMigrated with the command that fixes it, unless the schema is current."""
    current = await current_revision(engine)
    head = head_revision()
    if current == head:
        return
    found = "no mkq schema" if current is None else f"schema revision {current}"
    raise SchemaNotMigrated(
        f"the database has {found}, this manager needs revision {head}; "
        f"run: mkq manager migrate --database-url {url_for_message}"
    )
