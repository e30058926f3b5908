"""Alembic environment: runs revisions on a connection the caller hands over.

`manager.db.schema.migrate` opens an async engine and passes a sync-facing connection in
`config.attributes["connection"]`, so migrations run inside the caller's event loop. Running the
`alembic` command line with `-x url=...` (or sqlalchemy.url) also works.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

config = context.config


def _run_on(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=None, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run_online(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(_run_on)
        await connection.commit()
    await engine.dispose()


given = config.attributes.get("connection")
if given is not None:
    _run_on(given)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("no database URL: pass -x url=postgresql+asyncpg://...")
    asyncio.run(_run_online(url))
