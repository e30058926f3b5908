"""What a user can see: the manager's REST answers and the clusters' objects (kubectl).

Every wait polls until a deadline and fails with the last thing it saw; nothing sleeps to
assert.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")
FINAL = frozenset({"Succeeded", "Failed", "Cancelled"})


class NotYet(AssertionError):
    pass


async def eventually(
    probe: Callable[[], Awaitable[T]],
    accept: Callable[[T], bool],
    *,
    within: float,
    what: str,
    interval: float = 0.3,
) -> T:
    """Poll `probe` until `accept` holds; fail after `within` seconds naming the last value."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise NotYet(f"{what}: not within {within:.0f}s; last seen: {value!r}")
        await asyncio.sleep(interval)


async def workload(api: httpx.AsyncClient, namespace: str, name: str) -> dict[str, Any] | None:
    response = await api.get(f"/workloads/{namespace}/{name}")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def _brief(record: dict[str, Any] | None) -> Any:
    if record is None:
        return None
    return {
        "state": record.get("state"),
        "cluster": record.get("cluster"),
        "message": record.get("message"),
        "attempts": [(a["cluster"], a["state"], a.get("reason")) for a in record["attempts"]],
    }


async def wait_for_state(
    api: httpx.AsyncClient,
    namespace: str,
    name: str,
    states: Iterable[str],
    *,
    within: float,
) -> dict[str, Any]:
    wanted = set(states)
    record = await eventually(
        lambda: workload(api, namespace, name),
        lambda r: r is not None and (r["state"] in wanted or r["state"] in FINAL - wanted),
        within=within,
        what=f"workload {namespace}/{name} in {sorted(wanted)}",
    )
    assert record is not None
    assert record["state"] in wanted, f"{namespace}/{name} ended {_brief(record)}"
    return record


async def wait_all_final(
    api: httpx.AsyncClient, keys: Iterable[tuple[str, str]], *, within: float
) -> dict[tuple[str, str], dict[str, Any]]:
    keys = list(keys)

    async def probe() -> dict[tuple[str, str], dict[str, Any] | None]:
        return {key: await workload(api, *key) for key in keys}

    found = await eventually(
        probe,
        lambda seen: all(r is not None and r["state"] in FINAL for r in seen.values()),
        within=within,
        what="every workload finished",
        interval=0.5,
    )
    return {key: record for key, record in found.items() if record is not None}


async def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        "--request-timeout=20s",
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    if process.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {err.decode().strip()}")
    return out.decode()


async def kubectl_items(kubeconfig: Path, resource: str, namespace: str) -> list[dict[str, Any]]:
    text = await kubectl(kubeconfig, "get", resource, "-n", namespace, "-o", "json")
    items: list[dict[str, Any]] = json.loads(text)["items"]
    return items


async def copies_of(
    kubeconfig: Path, namespace: str, job_name: str, workload_name: str
) -> list[str]:
    """The objects a worker still holds for one workload: its Workload copy, Job and pods."""
    left = []
    for workload_copy in await kubectl_items(kubeconfig, "workloads.kueue.x-k8s.io", namespace):
        if workload_copy["metadata"]["name"] == workload_name:
            left.append(f"Workload/{workload_name}")
    for job in await kubectl_items(kubeconfig, "jobs.batch", namespace):
        if job["metadata"]["name"] == job_name:
            left.append(f"Job/{job_name}")
    for pod in await kubectl_items(kubeconfig, "pods", namespace):
        labels = pod["metadata"].get("labels") or {}
        if labels.get("job-name") == job_name or labels.get("batch.kubernetes.io/job-name") == (
            job_name
        ):
            left.append(f"Pod/{pod['metadata']['name']}")
    return left


async def copies_everywhere(
    kubeconfigs: Mapping[str, Path], clusters: Iterable[str], record: dict[str, Any]
) -> dict[str, list[str]]:
    found = {}
    for cluster in clusters:
        left = await copies_of(
            kubeconfigs[cluster], record["namespace"], record["name"], record["workloadName"]
        )
        if left:
            found[cluster] = left
    return found


def ran_once(ledger: Any, name: str, cluster: str, manifest: dict[str, Any]) -> None:
    """Its pods succeeded in `cluster` only, `completions` of them (namespace team-a)."""
    succeeded = ledger.succeeded.get(f"team-a/{name}", set())
    pods = {pod.split("/", 1)[1] for pod in succeeded}
    # Which Job object (cluster/uid) each pod belonged to: one Job created twice, or one Job
    # that ran a pod twice, are different failures.
    by_job = {job: sorted(ran) for job, ran in ledger.succeeded_by_job.items() if ran & pods}
    assert {pod.split("/", 1)[0] for pod in succeeded} == {cluster}, (name, by_job)
    assert len(succeeded) == int(manifest["spec"]["completions"]), (name, by_job)
