"""Dispatch throughput, submit-to-admitted latency and worker API writes per workload.

    python -m bench.dispatch.run --jobs 5000 --mode AllAtOnce --mode BestFit

Starts 4 kubesim workers in this process, the manager (`mkq manager serve`) and one agent per
worker (`mkq agent run`) as subprocesses, on a fresh Postgres database per mode, then submits
the Jobs through REST as fast as the API takes them and waits until every one has finished and
every remote copy is gone. Figures come from the manager's own records (created/admitted times)
and its metric mkq_manager_worker_api_writes_total.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import httpx
from cryptography.fernet import Fernet
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import load_kube_config_from_dict
from rich.console import Console
from rich.progress import Progress
from sqlalchemy.engine.url import make_url

from bench.dispatch.jobs import bench_job
from bench.dispatch.processes import bench_database, logged_process, wait_until
from bench.dispatch.report import write_outputs
from bench.process_stats import cpu_seconds
from kubesim import ClusterSpec, RunningCluster, jsoncodec, run_clusters
from kubesim.fault_proxy import Balancer
from kubesim.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
MKQ = str(Path(sys.executable).with_name("mkq"))
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
console = Console(stderr=True)
SUBMITTERS = 16  # concurrent POSTs of Jobs to the manager


async def _setup_queues(cluster: RunningCluster, cpu: str) -> None:
    configuration = client.Configuration()
    await load_kube_config_from_dict(cluster.kubeconfig, client_configuration=configuration)
    async with client.ApiClient(configuration=configuration) as api:
        custom = client.CustomObjectsApi(api)
        objects: list[tuple[str, str | None, dict[str, Any]]] = [
            (
                "resourceflavors",
                None,
                {"kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}},
            ),
            (
                "clusterqueues",
                None,
                {
                    "kind": "ClusterQueue",
                    "metadata": {"name": "cq"},
                    "spec": {
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu"],
                                "flavors": [
                                    {
                                        "name": "default",
                                        "resources": [{"name": "cpu", "nominalQuota": cpu}],
                                    }
                                ],
                            }
                        ],
                    },
                },
            ),
            (
                "localqueues",
                "default",
                {
                    "kind": "LocalQueue",
                    "metadata": {"name": "user-queue", "namespace": "default"},
                    "spec": {"clusterQueue": "cq"},
                },
            ),
        ]
        for plural, namespace, body in objects:
            body = {"apiVersion": f"{GROUP}/{VERSION}", **body}
            with contextlib.suppress(ApiException):
                if namespace is None:
                    await custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
                else:
                    await custom.create_namespaced_custom_object(
                        GROUP, VERSION, namespace, plural, body
                    )


def _writes(metrics_text: str) -> float:
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("mkq_manager_worker_api_writes_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def _submit(
    url: str,
    token: str,
    bodies: Iterator[dict[str, Any]],
    on_created: Callable[[], None],
    rate: float | None = None,
) -> None:
    """POST every Job to the manager, SUBMITTERS at a time: as fast as the API takes them, or
    with `rate`, the i-th Job not before i/rate seconds from the start (an offered load).

    aiohttp rather than httpx: the submitting client shares the harness process (and its CPU
    figure) with the kubesim clusters, and httpx costs several times more CPU per request."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    numbered = enumerate(bodies)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=SUBMITTERS)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        base_url=url, headers=headers, connector=connector, timeout=timeout
    ) as session:

        async def submitter() -> None:
            # One shared iterator: each Job is taken by one submitter.
            for index, body in numbered:
                if rate is not None:
                    await asyncio.sleep(start + index / rate - loop.time())
                async with session.post(
                    "/api/v1/workloads", data=jsoncodec.dumps(body)
                ) as response:
                    await response.read()
                    response.raise_for_status()
                on_created()

        await asyncio.gather(*(submitter() for _ in range(SUBMITTERS)))


async def run_mode(
    mode: str,
    jobs: int,
    *,
    base_url: str,
    workers: int,
    run_for: str,
    job_cpu: str,
    cluster_cpu: str,
    within: float,
    worker_qps: float | None,
    submit_rate: float | None = None,
    replicas: int = 1,
) -> dict[str, Any]:
    """One run; with `replicas` > 1 the manager is that many `mkq manager serve` processes
    over the database (one leads: manager.leadership) behind a balancer on the API's port,
    as behind a Service, and the manager's CPU is theirs together."""
    token = secrets.token_urlsafe(16)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    specs = [ClusterSpec(name=f"w{i + 1}", crds=[CRDS]) for i in range(workers)]
    async with bench_database(base_url) as database_url, run_clusters(specs) as clusters:
        for cluster in clusters:
            await _setup_queues(cluster, cluster_cpu)
        env = {
            "MKQ_API_TOKEN": token,
            "MKQ_ENCRYPTION_KEY": Fernet.generate_key().decode(),
            "MKQ_DISPATCHER": mode,
        }
        if worker_qps is not None:
            env["MKQ_WORKER_QPS"] = str(worker_qps)
            env["MKQ_WORKER_BURST"] = str(int(worker_qps * 2))
        async with contextlib.AsyncExitStack() as stack:
            ports = [port] if replicas == 1 else [free_port() for _ in range(replicas)]
            managers = [
                await stack.enter_async_context(
                    logged_process(
                        MKQ,
                        "manager",
                        "serve",
                        "--database-url",
                        database_url,
                        "--listen",
                        f"127.0.0.1:{replica_port}",
                        env={**env, "MKQ_REPLICA_NAME": f"replica-{index}"},
                        log_name=f"{mode}-manager-{index}",
                    )
                )
                for index, replica_port in enumerate(ports)
            ]
            if replicas > 1:
                balancer = Balancer(ports, port=port)
                await balancer.start()
                stack.push_async_callback(balancer.close)
            api = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
            )

            async def ready() -> bool:
                try:
                    return (await api.get("/readyz")).status_code == 200
                except httpx.TransportError:
                    return False

            await wait_until(ready, 60)
            agents: list[asyncio.subprocess.Process] = []
            for cluster in clusters:
                response = await api.post(
                    "/api/v1/clusters",
                    json={"name": cluster.name, "kubeconfig": cluster.kubeconfig},
                )
                agent_token = response.json()["token"]
                agent = await stack.enter_async_context(
                    logged_process(
                        MKQ,
                        "agent",
                        "run",
                        "--kubeconfig",
                        str(cluster.kubeconfig_path),
                        "--cluster-name",
                        cluster.name,
                        "--manager-url",
                        url,
                        "--token",
                        agent_token,
                        "--no-leader-elect",
                        env={},
                        log_name=f"{mode}-agent-{cluster.name}",
                    )
                )
                agents.append(agent)

            async def connected() -> bool:
                items = (await api.get("/api/v1/clusters")).json()["items"]
                return all(c["state"] == "Connected" for c in items)

            await wait_until(connected, 60)
            await asyncio.sleep(3)  # first capacity reports
            db = await asyncpg.connect(
                make_url(database_url)
                .set(drivername="postgresql")
                .render_as_string(hide_password=False)
            )
            cpu_before = {
                "manager": sum(cpu_seconds(m.pid) for m in managers),
                "agents": sum(cpu_seconds(a.pid) for a in agents),
                "harness": time.process_time(),
            }
            started = time.monotonic()
            with Progress(console=console, transient=True) as progress:
                submitted = progress.add_task(f"{mode}: submitting", total=jobs)
                admitted = progress.add_task(f"{mode}: admitted", total=jobs)
                finished = progress.add_task(f"{mode}: finished", total=jobs)

                async def counts() -> tuple[int, int, int]:
                    row = await db.fetchrow(
                        "SELECT count(*) FILTER (WHERE admitted_at IS NOT NULL OR state IN "
                        "('Succeeded','Failed')), count(*) FILTER (WHERE state IN "
                        "('Succeeded','Failed')), count(*) FILTER (WHERE cleanup_pending) "
                        "FROM workloads"
                    )
                    return int(row[0]), int(row[1]), int(row[2])

                async def settled() -> bool:
                    done_admitted, done, cleaning = await counts()
                    progress.update(admitted, completed=done_admitted)
                    progress.update(finished, completed=done)
                    return done == jobs and cleaning == 0

                await _submit(
                    url,
                    token,
                    (
                        bench_job(
                            index,
                            run_for,
                            job_cpu,
                            namespace="default",
                            queue="user-queue",
                            spec={},
                        )
                        for index in range(jobs)
                    ),
                    lambda: progress.advance(submitted),
                    submit_rate,
                )
                await wait_until(settled, within)
            wall = time.monotonic() - started
            backends = await db.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            )
            cpu = {
                # Backends of this run's database (the pool's are opened during the run).
                "postgres": sum(cpu_seconds(int(b["pid"])) for b in backends),
                "manager": sum(cpu_seconds(m.pid) for m in managers) - cpu_before["manager"],
                "agents": sum(cpu_seconds(a.pid) for a in agents) - cpu_before["agents"],
                # The 4 kubesim API servers with their controllers, and the submitting client.
                "harness": time.process_time() - cpu_before["harness"],
            }
            await asyncio.sleep(2)  # last deletes counted
            rows = await db.fetch(
                "SELECT w.created_at, w.dispatched_at, w.admitted_at, w.state, "
                "count(a.id) AS attempts FROM workloads w JOIN dispatch_attempts a "
                "ON a.workload_id = w.id GROUP BY w.id"
            )
            await db.close()
            # Each replica counts its own writes (only a leader's are nonzero): all of them.
            metrics = [
                (await api.get(f"http://127.0.0.1:{replica_port}/metrics")).text
                for replica_port in ports
            ]
    latencies = sorted(
        (r["admitted_at"] - r["created_at"]).total_seconds()
        for r in rows
        if r["admitted_at"] is not None
    )
    to_dispatch = sorted(
        (r["dispatched_at"] - r["created_at"]).total_seconds()
        for r in rows
        if r["dispatched_at"] is not None
    )
    dispatch_to_admitted = sorted(
        (r["admitted_at"] - r["dispatched_at"]).total_seconds()
        for r in rows
        if r["admitted_at"] is not None and r["dispatched_at"] is not None
    )
    admitted_times = [r["admitted_at"] for r in rows if r["admitted_at"] is not None]
    first_submit = min(r["created_at"] for r in rows)
    span = (max(admitted_times) - first_submit).total_seconds()
    # How fast the API took the Jobs: no admission rate can beat it.
    submit_span = (max(r["created_at"] for r in rows) - first_submit).total_seconds()
    writes = sum(_writes(text) for text in metrics)
    return {
        "mode": mode,
        "replicas": replicas,
        "jobs": jobs,
        "workers": workers,
        "succeeded": sum(1 for r in rows if r["state"] == "Succeeded"),
        "wallSeconds": round(wall, 1),
        "admittedPerSecond": round(len(latencies) / span, 1) if span > 0 else None,
        "submitToAdmittedP50Seconds": round(statistics.median(latencies), 3),
        "submitToAdmittedP99Seconds": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
        "submittedPerSecond": round(len(rows) / submit_span, 1) if submit_span > 0 else None,
        # The offered load (--submit-rate), or None: as fast as the API takes them.
        "offeredPerSecond": submit_rate,
        "submitToDispatchedP50Seconds": round(statistics.median(to_dispatch), 3),
        "dispatchedToAdmittedP50Seconds": round(statistics.median(dispatch_to_admitted), 3),
        "workerApiWritesPerWorkload": round(writes / jobs, 2),
        "copiesPerWorkload": round(sum(r["attempts"] for r in rows) / jobs, 2),
        # CPU milliseconds per workload, submit to cleanup: steadier than rates on a shared host.
        "cpuMsPerWorkload": {k: round(1000 * v / jobs, 1) for k, v in cpu.items()},
        "loadAverage": os.getloadavg()[0],
        # Popped by main() for the plot; not part of the printed summary.
        "admittedAtSeconds": [(t - first_submit).total_seconds() for t in admitted_times],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--mode", action="append", choices=["AllAtOnce", "BestFit", "Incremental"])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--run-for", default="1s")
    parser.add_argument("--job-cpu", default="100m")
    parser.add_argument("--cluster-cpu", default="20")
    parser.add_argument("--within", type=float, default=1800.0)
    parser.add_argument(
        "--worker-qps",
        type=float,
        default=None,
        help="the manager's write rate limit per worker (MKQ_WORKER_QPS; default: the "
        "manager's own default)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "MKQ_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument(
        "--submit-rate",
        type=float,
        default=None,
        help="submit Jobs at this rate (per second) instead of as fast as the API takes them: "
        "latency at an offered load the system can sustain, rather than a backlog's drain time",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write summary.json, table.md (figures against the targets) and plot.png here",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        action="append",
        help="manager replicas over one database (repeat to compare: --replicas 1 "
        "--replicas 3); default 1",
    )
    args = parser.parse_args()
    if args.submit_rate is not None and args.submit_rate <= 0:
        parser.error("--submit-rate must be a positive number of Jobs per second")
    results = []
    timelines: dict[str, list[float]] = {}
    runs = [
        (mode, replicas)
        for mode in args.mode or ["AllAtOnce", "BestFit"]
        for replicas in args.replicas or [1]
    ]
    if any(replicas < 1 for _, replicas in runs):
        parser.error("--replicas must be at least 1")
    for mode, replicas in runs:
        result = asyncio.run(
            run_mode(
                mode,
                args.jobs,
                base_url=args.database_url,
                workers=args.workers,
                run_for=args.run_for,
                job_cpu=args.job_cpu,
                cluster_cpu=args.cluster_cpu,
                within=args.within,
                worker_qps=args.worker_qps,
                submit_rate=args.submit_rate,
                replicas=replicas,
            )
        )
        label = mode if len(runs) == len({m for m, _ in runs}) else f"{mode} x{replicas}"
        timelines[label] = result.pop("admittedAtSeconds")
        console.print(result)
        results.append(result)
    if args.out is not None:
        write_outputs(results, timelines, args.out)
        console.print(f"wrote {args.out}/summary.json, table.md, plot.png")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
