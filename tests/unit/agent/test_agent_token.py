"""Where `mkq agent run` takes its manager token from: a file or the environment keep it out of
`ps`; bad input is exit code 2 naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mkq.commands import agent as agent_command


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The token each run would start the agent with (the agent itself is not started)."""
    tokens: list[str | None] = []

    def record(kubeconfig: str, context: str | None, config: object, console: object) -> None:
        tokens.append(config.token)  # type: ignore[attr-defined]

    async def run(*args: object) -> None:
        record(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(agent_command, "_run", run)
    return tokens


def _invoke(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    argv = ["run", "--kubeconfig", str(kubeconfig), "--cluster-name", "w1"]
    argv += ["--manager-url", "http://127.0.0.1:1", *extra]
    result = CliRunner().invoke(agent_command.agent, argv, env=env or {})
    return result.exit_code, result.output


def test_token_from_the_environment(tmp_path: Path, started: list[str | None]) -> None:
    code, _ = _invoke(tmp_path, env={"MKQ_AGENT_TOKEN": "from-env"})
    assert code == 0
    assert started == ["from-env"]


def test_token_from_a_file(tmp_path: Path, started: list[str | None]) -> None:
    (tmp_path / "token").write_text("from-file\n")
    code, _ = _invoke(tmp_path, "--token-file", str(tmp_path / "token"))
    assert code == 0
    assert started == ["from-file"]


def test_an_empty_token_file_is_refused(tmp_path: Path, started: list[str | None]) -> None:
    (tmp_path / "token").write_text("\n")
    code, output = _invoke(tmp_path, "--token-file", str(tmp_path / "token"))
    assert code == 2
    assert "--token-file" in output and "empty" in output
    assert started == []


def test_a_missing_token_file_is_refused(tmp_path: Path, started: list[str | None]) -> None:
    code, output = _invoke(tmp_path, "--token-file", str(tmp_path / "absent"))
    assert code == 2
    assert "--token-file" in output
    assert started == []


def test_two_token_sources_are_refused(tmp_path: Path, started: list[str | None]) -> None:
    (tmp_path / "token").write_text("a\n")
    code, output = _invoke(
        tmp_path, "--token-file", str(tmp_path / "token"), env={"MKQ_AGENT_TOKEN": "b"}
    )
    assert code == 2
    assert "one way" in output
    assert started == []
