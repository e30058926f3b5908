"""`mkq ctl --manager URL --token T`: every cluster's Workloads read through the manager's
REST API, with the cluster each runs in, and the manager's queue positions."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_dispatch_flow import copies, submit, wait_connected

MKQ = str(Path(sys.executable).with_name("mkq"))


async def ctl(manager: RunningManager, *args: str, token: str = API_TOKEN) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        MKQ,
        "ctl",
        "--manager",
        manager.url,
        "--token",
        token,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """A kubectl table as rows keyed by column (empty cells kept)."""
    lines = [line for line in text.splitlines() if line.strip()]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    ends = [*starts[1:], None]
    cells = [[line[a:b].strip() for a, b in zip(starts, ends, strict=True)] for line in lines]
    return cells[0], [dict(zip(cells[0], row, strict=True)) for row in cells[1:]]


async def test_workloads_across_clusters_show_the_cluster_and_positions(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        (c1, _), (c2, d2) = pairs
        await manager.register("w1", c1.kubeconfig)
        await manager.register("w2", c2.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        train = (await submit(manager, "train"))["workloadName"]
        await submit(manager, "waiting")
        await eventually(lambda: _in(train, d2))
        await d2.admit("default", train)

        async def won() -> dict[str, Any] | None:
            body = await manager.workload("default", "train")
            return body if body["cluster"] == "w2" else None

        await eventually(won)

        code, out, err = await ctl(manager, "list", "workload", "-A")
        assert code == 0, err
        headers, rows = table(out)
        assert headers == [
            "NAMESPACE",
            "NAME",
            "JOB TYPE",
            "JOB NAME",
            "LOCALQUEUE",
            "CLUSTERQUEUE",
            "STATUS",
            "POSITION IN QUEUE",
            "EXEC TIME",
            "CLUSTER",
            "AGE",
        ]
        by_job = {row["JOB NAME"]: row for row in rows}
        assert by_job["train"]["CLUSTER"] == "w2"
        assert by_job["train"]["NAME"] == train
        assert by_job["train"]["LOCALQUEUE"] == "user-queue"
        assert by_job["waiting"]["CLUSTER"] == ""
        assert by_job["waiting"]["POSITION IN QUEUE"] == "0"

        code, out, err = await ctl(manager, "pending", "localqueue", "user-queue")
        assert code == 0, err
        assert [row["NAME"] for row in table(out)[1]] == ["waiting"]

        code, out, err = await ctl(manager, "list", "clusters")
        assert code == 0, err
        states = {row["NAME"]: row["STATE"] for row in table(out)[1]}
        assert states == {"w1": "Connected", "w2": "Connected"}

        code, _, err = await ctl(manager, "list", "workload", token="wrong-token")
        assert code == 2
        assert err.startswith(f"error: manager {manager.url}: 401 ")
        assert "Traceback" not in err
        code, _, err = await ctl(manager, "list", "clusterqueue")
        assert code == 2
        assert "use --kubeconfig/--context instead of --manager" in err


async def _in(name: str, double: Any) -> bool:
    return name in await copies(double)
