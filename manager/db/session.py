"""Engine and session factory: one AsyncSession per unit of work, nothing expired on commit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from sqlalchemy import CursorResult, Executable, event
from sqlalchemy import exc as sqlalchemy_exc
from sqlalchemy.engine.url import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as AsyncSession

SessionFactory = async_sessionmaker[AsyncSession]


SUPPORTED_DRIVERS = ("postgresql+asyncpg", "sqlite+aiosqlite")


def check_database_url(url: str) -> str:
    """The URL if it names a supported async driver; ValueError saying what is expected."""
    try:
        driver = make_url(url).drivername
    except Exception as error:
        raise ValueError(f"{url!r} is not a database URL") from error
    if driver not in SUPPORTED_DRIVERS:
        raise ValueError(
            f"driver {driver!r} is not supported; use postgresql+asyncpg://... "
            "or sqlite+aiosqlite:///..."
        )
    return url


def make_engine(url: str) -> AsyncEngine:
    """An async engine; SQLite gets foreign keys on and a busy timeout for its single writer."""
    parsed = make_url(check_database_url(url))
    if parsed.get_backend_name() == "sqlite":
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    connect_args: dict[str, object] = {}
    if parsed.host in ("127.0.0.1", "localhost", "::1") and not (
        {"ssl", "sslmode"} & set(parsed.query)
    ):
        # Loopback needs no TLS, and asyncpg's default ("prefer") would negotiate it.
        connect_args["ssl"] = False
    # A pool that covers the reconcile workers plus API requests without churning connections;
    # a broken connection is discarded when it fails (no ping on every checkout). JSON columns
    # (the manifest is read on every reconcile) go through orjson.
    engine = create_async_engine(
        url,
        pool_size=24,
        max_overflow=8,
        connect_args=connect_args,
        json_serializer=_json_text,
        json_deserializer=orjson.loads,
    )
    event.listen(engine.sync_engine, "checkout", _refuse_broken_connection)
    return engine


def _refuse_broken_connection(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Keep a pooled connection that cannot work from being handed out, by what the driver
    knows locally (a ping on every checkout would cost a round trip each).

    A connection the server closed (Postgres restarted, failed over, or ended the session)
    means every connection pooled before it is as dead: the pool replaces them all as they
    are next taken, rather than each failing one request in turn. One left cancelling a
    statement (its task was cancelled mid-query) would refuse the next statement with "another
    operation is in progress": it alone is replaced.
    """
    driver = dbapi_connection.driver_connection
    if driver.is_closed():
        raise sqlalchemy_exc.InvalidatePoolError("the database closed the connection")
    if driver._protocol._is_cancelling():  # what asyncpg's own pool checks on release
        raise sqlalchemy_exc.DisconnectionError("the connection is still cancelling a statement")


def _json_text(value: object) -> str:
    return orjson.dumps(value).decode()


def make_session_factory(engine: AsyncEngine) -> SessionFactory:
    return async_sessionmaker(engine, expire_on_commit=False)


def read_sessions(sessions: SessionFactory) -> SessionFactory:
    """Sessions for reads outside any decision: on an autocommit connection.

    A plain session wraps even a single SELECT in BEGIN ... ROLLBACK, three round trips where
    one does; under Postgres' READ COMMITTED each statement sees its own snapshot either way, so
    nothing read this way is less consistent. Writes and locks still go through `sessions.begin()`.
    """
    engine: AsyncEngine = sessions.kw["bind"]
    return async_sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False
    )


def redact(url: str) -> str:
    """The URL with any password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)


async def execute_core(session: AsyncSession, statement: Executable) -> CursorResult[Any]:
    """Run a Core statement on the session's connection, inside its transaction.

    Session.execute would take an INSERT or UPDATE on a mapped class through the ORM's bulk
    paths (a third of such a statement's CPU), though nothing here needs them: the rows written
    are never the session's loaded objects. Anything already added to the session is flushed
    first, as Session.execute's autoflush would.
    """
    if session.new or session.dirty or session.deleted:
        await session.flush()
    connection = await session.connection()
    return await connection.execute(statement)


# asyncpg's answers that mean "no database right now", not "this statement is wrong": the
# server refuses connections while it starts or shuts down (57P01-57P03), or a connection broke.
_UNAVAILABLE_ASYNCPG = (
    "CannotConnectNowError",
    "AdminShutdownError",
    "CrashShutdownError",
    "ConnectionDoesNotExistError",
    "ConnectionFailureError",
    "ClientCannotConnectError",
    "PostgresConnectionError",
    "InterfaceError",
    "TooManyConnectionsError",
    # A pooled connection a cancelled statement left mid-protocol ("another operation is in
    # progress"): the connection is discarded, and a retry gets a sound one.
    "InternalClientError",
)


def _causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and what it wraps: SQLAlchemy's `orig` (the driver's error), else `__cause__`."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__


def database_unavailable(error: BaseException) -> bool:
    """Whether `error` (or what it wraps) says the database cannot be reached just now: a
    client should retry later (503), it is not a fault of the request or of the manager."""
    for current in _causes(error):
        if isinstance(current, sqlalchemy_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, (OSError, TimeoutError, sqlalchemy_exc.TimeoutError)):
            return True
        if any(c.__name__ in _UNAVAILABLE_ASYNCPG for c in type(current).__mro__):
            return True
    return False


# SQLSTATE 25006: a write in a read-only transaction (a hot standby after a failover left the
# URL pointing at it, or default_transaction_read_only set on the database or role).
_READ_ONLY_SQLSTATE = "25006"


def database_read_only(error: BaseException) -> bool:
    """Whether `error` (or what it wraps) is Postgres refusing a write because the database is
    read-only: nothing the client or the manager can fix by retrying the request as it is."""
    return any(getattr(c, "sqlstate", None) == _READ_ONLY_SQLSTATE for c in _causes(error))
