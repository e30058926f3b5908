"""`mkq manager migrate|serve`: clear messages and exit code 2 on bad input, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cryptography.fernet import Fernet

from manager.db.schema import head_revision
from tests.integration.manager.harness import API_TOKEN
from tests.integration.manager.test_with_agents import MKQ


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MKQ, "manager", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_migrate_then_serve_refuses_a_database_it_did_not_migrate(tmp_path: Path) -> None:
    env = {"MKQ_API_TOKEN": API_TOKEN, "MKQ_ENCRYPTION_KEY": Fernet.generate_key().decode()}
    fresh = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    refused = run("serve", "--database-url", fresh, env=env)
    assert refused.returncode == 2
    assert "mkq manager migrate --database-url" in refused.stderr
    assert "Traceback" not in refused.stderr
    migrated = run("migrate", "--database-url", fresh)
    assert migrated.returncode == 0, migrated.stderr
    assert f"revision {head_revision()}" in migrated.stderr


def test_bad_urls_and_settings_are_named(tmp_path: Path) -> None:
    bad_driver = run("migrate", "--database-url", "mysql://db/x")
    assert bad_driver.returncode == 2 and "--database-url" in bad_driver.stderr
    unreachable = run("migrate", "--database-url", "postgresql+asyncpg://postgres@127.0.0.1:1/x")
    assert unreachable.returncode == 2 and "cannot reach the database" in unreachable.stderr
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    assert run("migrate", "--database-url", url).returncode == 0
    no_token = run(
        "serve", "--database-url", url, env={"MKQ_API_TOKEN": "", "MKQ_ENCRYPTION_KEY": "x"}
    )
    assert no_token.returncode == 2 and "MKQ_API_TOKEN" in no_token.stderr
    bad_key = run(
        "serve",
        "--database-url",
        url,
        env={"MKQ_API_TOKEN": API_TOKEN, "MKQ_ENCRYPTION_KEY": "not-a-key"},
    )
    assert bad_key.returncode == 2 and "MKQ_ENCRYPTION_KEY" in bad_key.stderr
    bad_listen = run(
        "serve",
        "--database-url",
        url,
        "--listen",
        "nowhere",
        env={"MKQ_API_TOKEN": API_TOKEN, "MKQ_ENCRYPTION_KEY": Fernet.generate_key().decode()},
    )
    assert bad_listen.returncode == 2 and "--listen" in bad_listen.stderr
    for result in (bad_driver, unreachable, no_token, bad_key, bad_listen):
        assert "Traceback" not in result.stderr
