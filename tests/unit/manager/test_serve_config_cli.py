"""`mkq manager serve --config FILE` / MKQ_CONFIG: a broken Kueue Configuration is refused up
front with exit code 2, naming the file and the field, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.fernet import Fernet

from mkq.cli import cli

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Set through monkeypatch so that what `serve` writes to os.environ is undone after.
    monkeypatch.setenv("MKQ_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'mkq.db'}")
    monkeypatch.setenv("MKQ_API_TOKEN", "0123456789abcdef")
    monkeypatch.setenv("MKQ_ENCRYPTION_KEY", Fernet.generate_key().decode())
    monkeypatch.delenv("MKQ_CONFIG", raising=False)


def _serve(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["manager", "serve", *args], env=env)
    traceback = "" if result.exc_info is None else repr(result.exc_info[1])
    return result.exit_code, " ".join(result.output.split()), traceback


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kueue.yaml"
    path.write_text(text)
    return path


def test_a_bad_field_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + "multiKueue:\n  workerLostTimeout: soon\n")
    code, output, raised = _serve(["--config", str(path)])
    assert code == 2, output
    assert f"--config {path}" in output
    assert "multiKueue.workerLostTimeout: 'soon' is not a duration" in output
    assert "Traceback" not in output
    assert raised == "SystemExit(2)"


def test_mkq_config_is_named_when_the_file_came_from_it(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + "multiKueue:\n  origin: 'not a label'\n")
    code, output, _ = _serve([], env={"MKQ_CONFIG": str(path)})
    assert code == 2, output
    assert f"MKQ_CONFIG {path}" in output
    assert "multiKueue.origin: Invalid value" in output


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    code, output, _ = _serve(["--config", str(tmp_path / "absent.yaml")])
    assert code == 2, output
    assert "absent.yaml" in output and "cannot read" in output


def test_a_good_file_is_taken_and_what_it_asks_that_is_not_done_is_said(tmp_path: Path) -> None:
    """The file passes; start-up goes on to the database check (unmigrated here: exit 2)."""
    text = HEADER + "multiKueue:\n  gcInterval: 0s\n  clusterProfile:\n    accessProviders: []\n"
    path = _write(tmp_path, text)
    code, output, _ = _serve(["--config", str(path)])
    assert "warning:" in output and "multiKueue.clusterProfile is not supported" in output
    assert code == 2
    assert "mkq manager migrate" in output  # refused for the database, not for the file
