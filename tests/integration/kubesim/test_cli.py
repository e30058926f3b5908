"""`mkq kubesim serve` as an operator runs it."""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
from pathlib import Path

import pytest

from .conftest import KUEUE_CRDS

MKQ = str(Path(sys.executable).with_name("mkq"))
GENERATOR = "/work/shared/kueue-perf/tas/generator.yaml"


async def _run(*argv: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


@pytest.mark.kubectl
async def test_serve_writes_a_kubeconfig_kubectl_can_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "cluster.kubeconfig"
    server = await asyncio.create_subprocess_exec(
        MKQ,
        "kubesim",
        "serve",
        "--name",
        "cli",
        "--nodes",
        GENERATOR,
        "--crds",
        str(KUEUE_CRDS),
        "--kubeconfig-out",
        str(kubeconfig),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        for _ in range(300):
            if kubeconfig.exists() and kubeconfig.stat().st_size:
                break
            await asyncio.sleep(0.1)
        kubectl = shutil.which("kubectl")
        assert kubectl is not None
        code, out, err = await _run(
            kubectl,
            "--kubeconfig",
            str(kubeconfig),
            "--cache-dir",
            str(tmp_path / "cache"),
            "get",
            "nodes",
            "-l",
            "cloud.provider.com/topology-rack=rack-3",
            "-o",
            "name",
        )
        assert code == 0, err
        assert len(out.split()) == 64
    finally:
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(server.wait(), 20)
    assert server.returncode == 0


async def test_bad_node_profile_exits_2_naming_the_field(tmp_path: Path) -> None:
    profile = tmp_path / "nodes.yaml"
    profile.write_text("nodes:\n- namePrefix: a\n  count: -1\n")
    code, _, err = await _run(MKQ, "kubesim", "serve", "--nodes", str(profile))
    assert code == 2
    assert "nodes[0].count" in err
