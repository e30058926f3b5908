"""`mkq manager migrate|serve`: the multi-cluster manager's command line."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import click
from rich.console import Console

console = Console(stderr=True)
ENVIRONMENT = click.core.ParameterSource.ENVIRONMENT


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    sys.exit(2)


@click.group()
def manager() -> None:
    """Run or migrate the multi-cluster manager."""


@manager.command()
@click.option(
    "--database-url",
    envvar="MKQ_DATABASE_URL",
    required=True,
    help="postgresql+asyncpg://... or sqlite+aiosqlite:///...",
)
def migrate(database_url: str) -> None:
    """Apply the Alembic migrations of the manager's database."""
    from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

    from manager.db.schema import migrate as run_migrations
    from manager.db.session import make_engine, redact

    async def run() -> str:
        engine = make_engine(database_url)
        try:
            return await run_migrations(engine)
        finally:
            await engine.dispose()

    try:
        with console.status(f"migrating {redact(database_url)}"):
            revision = asyncio.run(run())
    except (ArgumentError, ValueError) as error:
        _fail(f"--database-url: {error}")
    except (OperationalError, DBAPIError, OSError) as error:
        _fail(f"cannot reach the database {redact(database_url)}: {error}")
    console.print(f"database {redact(database_url)} is at revision [bold]{revision}[/bold]")


def _split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        _fail(f"--listen {listen!r}: expected HOST:PORT")
    return host, int(port)


@manager.command()
@click.option("--database-url", envvar="MKQ_DATABASE_URL", required=True)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="kubeconfig of the manager cluster (MultiKueue objects, Jobs to dispatch)",
)
@click.option("--listen", default="127.0.0.1:8080", show_default=True, help="HOST:PORT")
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="log every HTTP request (agents report several times a second per worker)",
)
@click.option(
    "--config",
    "config_file",
    envvar="MKQ_CONFIG",
    type=click.Path(dir_okay=False),
    default=None,
    help="A Kueue Configuration (config.kueue.x-k8s.io/v1beta2) whose multiKueue section "
    "sets gcInterval, origin, workerLostTimeout, dispatcherName and "
    "incrementalDispatcherConfig, and whose integrations.declarativeKinds declares job kinds "
    "by their paths; MKQ_* variables override it (env: MKQ_CONFIG).",
)
def serve(
    database_url: str,
    kubeconfig: str | None,
    listen: str,
    access_log: bool,
    config_file: str | None,
) -> None:
    """Serve the REST API and dispatch workloads to the worker clusters.

    Reads MKQ_API_TOKEN and MKQ_ENCRYPTION_KEY (and the other MKQ_* settings) from the
    environment. Refuses to start on a database that `mkq manager migrate` has not prepared.
    """
    import uvicorn
    from pydantic import ValidationError

    from kueue_api.loader import ConfigurationFileError, load_configuration
    from manager.api.app import create_app
    from manager.db.credentials import EncryptionKeyError, KubeconfigCipher
    from manager.db.schema import SchemaNotMigrated, require_migrated
    from manager.db.session import make_engine, redact
    from manager.runtime import ManagerRuntime
    from manager.server import advertised, api_server_config
    from manager.settings import configuration_warnings, load_settings
    from mkq.profiling import profiled

    host, port = _split_listen(listen)
    # The manager's own records (a worker refused a copy, a status not synced...) at INFO, as
    # the agent logs; uvicorn keeps its own format.
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    os.environ["MKQ_DATABASE_URL"] = database_url
    option = "--config"
    if click.get_current_context().get_parameter_source("config_file") is ENVIRONMENT:
        option = "MKQ_CONFIG"
    configuration = None
    if config_file is not None:
        try:
            configuration = load_configuration(config_file)
        except ConfigurationFileError as error:
            _fail(f"{option} {config_file}: {error}")
    try:
        settings = load_settings(configuration)
    except ValidationError as error:
        problems = "; ".join(
            f"MKQ_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in error.errors()
        )
        _fail(problems)
    if configuration is not None:
        for warning in configuration_warnings(configuration):
            console.print(f"[yellow]warning:[/yellow] {option} {config_file}: {warning}")
    manager_kubeconfig = None
    if kubeconfig is not None:
        from manager.remote.kubeconfig import KubeconfigError
        from manager.sources.manager_cluster import read_kubeconfig_file

        try:
            manager_kubeconfig = read_kubeconfig_file(kubeconfig)
        except (KubeconfigError, OSError) as error:
            _fail(f"--kubeconfig {kubeconfig}: {error}")

    async def check() -> None:
        KubeconfigCipher(settings.encryption_key)
        engine = make_engine(settings.database_url)
        try:
            await require_migrated(engine, redact(settings.database_url))
        finally:
            await engine.dispose()

    try:
        asyncio.run(check())
    except SchemaNotMigrated as error:
        _fail(str(error))
    except EncryptionKeyError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"cannot reach the database: {error}")

    settings = advertised(settings, host, port)
    app = create_app(lambda: ManagerRuntime.open(settings, None, manager_kubeconfig))
    console.print(f"manager listening on http://{host}:{port} (OpenAPI at /openapi.json)")
    with profiled("manager"):
        config = api_server_config(app, host, port, log_level="info")
        config.access_log = access_log
        uvicorn.Server(config).run()
