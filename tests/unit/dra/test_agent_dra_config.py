"""`mkq agent run --config`: the Kueue Configuration whose deviceClassMappings set the agent's
device quotas; a broken file is refused up front, naming the field."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mkq.cli import cli


def _run(tmp_path: Path, config: str) -> tuple[int, str]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    path = tmp_path / "kueue.yaml"
    path.write_text(config)
    args = ["agent", "run", "--kubeconfig", str(kubeconfig), "--cluster-name", "w1"]
    result = CliRunner().invoke(cli, [*args, "--config", str(path)])
    return result.exit_code, " ".join(result.output.split())


def test_a_configuration_with_an_unknown_field_is_refused_naming_it(tmp_path: Path) -> None:
    code, output = _run(
        tmp_path,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n"
        "  deviceClassMappings:\n  - name: gpu\n    deviceClassNames: [gpu.example.com]\n"
        "    devicClass: typo\n",
    )
    assert code == 2
    assert "resources.deviceClassMappings[0].devicClass: unknown field" in output


def test_a_file_without_a_configuration_is_refused(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n")
    assert code == 2
    assert "must hold exactly one config.kueue.x-k8s.io/v1beta2 Configuration" in output
