"""`mkq ctl`'s mistakes are one line naming the flag or object, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mkq.cli import cli


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server answers nothing: every case below fails before a call."""
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u, namespace: team-a}}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["list", "workload", "--status", "running"],
            'error: --status: invalid status value (running). Must be "all", "pending", '
            '"admitted" or "finished"\n',
        ),
        (
            ["create", "clusterqueue", "cq", "--nominal-quota", "flavor"],
            "error: --nominal-quota 'flavor': invalid resources specification "
            "(FLAVOR:RESOURCE=QUANTITY;RESOURCE=QUANTITY, flavors separated by commas)\n",
        ),
        (
            ["create", "resourceflavor", "rf", "--node-taints", "a=b"],
            "error: invalid taint spec: a=b\n",
        ),
        (
            ["--context", "elsewhere", "list", "localqueue"],
            None,
        ),
        (
            ["--manager", "http://127.0.0.1:9", "describe", "cq", "x"],
            "error: describe reads one cluster: use --kubeconfig/--context instead of --manager "
            "(through the manager: list workload, list localqueue, list clusters, pending)\n",
        ),
        (["list", "clusters"], "error: list clusters needs --manager URL (and --token)\n"),
    ],
)
def test_a_mistake_is_one_line_and_exit_code_2(
    kubeconfig: Path, args: list[str], message: str | None
) -> None:
    result = CliRunner().invoke(cli, ["ctl", "--kubeconfig", str(kubeconfig), *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    if message is not None:
        assert result.output == message
    else:
        assert 'context "elsewhere" does not exist' in result.output


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = CliRunner().invoke(cli, ["ctl", "--kubeconfig", str(missing), "list", "cq"])
    assert result.exit_code == 2
    assert result.output == f"error: --kubeconfig: no kubeconfig at {missing}\n"


def test_an_unknown_kind_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["ctl", "stop", "job", "x"])
    assert result.exit_code == 2
    assert "'job' is not one of: clusterqueue, localqueue, workload" in result.output
