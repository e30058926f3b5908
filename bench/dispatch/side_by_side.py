"""`mkq bench compare --dispatch`: Kueue's MultiKueue beside mkq's manager, one after the other
on freshly started control planes of the same programs, with the same queues, the same Jobs and
the same client rate.

Each run starts four control planes (mkq/realk8s: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK nodes): `manager` and the workers `worker-cpu`, `worker-tas` and
`worker-gpu` (the demo's node pools, 32 CPUs each). Both sides get the same Kueue objects: in
the manager cluster a ClusterQueue of QUOTA_CPU CPUs dispatched through a MultiKueue admission
check to the three workers, and in each worker a ClusterQueue of as many. A worker can thus hold
a copy of every workload the manager has reserved: with AllAtOnce's copies in every worker, a
smaller worker quota fills with copies that lost the election elsewhere and wait to be deleted,
and the run measures that queue rather than the dispatch.

- Kueue: Kueue's manager (bench/peers/kueue, the pinned release) on each of the four; the
  manager's MultiKueue uses its default dispatcher (AllAtOnce: a copy to every worker, the first
  to admit wins).
- mkq: `mkq manager serve` over a fresh Postgres database and `mkq agent run` on each worker and
  on the manager cluster, as deployed, with their admission webhooks registered (Kueue's are
  not, peer.py: that costs mkq, not Kueue); the manager's default dispatcher is AllAtOnce, as
  Kueue's, and `dispatcher` names another (BestFit: one worker where the workload fits now).

The harness posts the Jobs to the manager cluster at `qps` (16 requests in flight at most),
written as Kueue's Job webhook leaves them (suspended, managedBy MultiKueue), and measures both
sides alike from outside (bench.dispatch.compare). Pair i runs Kueue first when i is even
(0-based) and mkq first when it is odd, so a trend in the machine's load falls on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import yaml
from cryptography.fernet import Fernet
from rich.console import Console
from rich.progress import Progress
from sqlalchemy.engine.url import make_url

from bench.dispatch.compare import (
    DispatchComparison,
    DispatchFigures,
    Observation,
    admitted_offsets,
    figures,
    writes_between,
    writes_by_resource,
)
from bench.dispatch.jobs import bench_job
from bench.dispatch.processes import bench_database, logged_process, wait_until
from bench.dispatch.report import write_plot
from bench.peers.kueue.multikueue import kubeconfig_secret
from bench.process_stats import cpu_seconds, peak_rss_kib
from kubesim.ports import free_port
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER
from manager.settings import MANAGER_NAMESPACE
from mkq.realk8s.clusters import RealCluster, clusters_running, kubectl
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ADMISSION_CHECKS, CLUSTER_QUEUES, JOBS, WORKLOADS, ResourceType

MANAGER = "manager"
WORKERS = ("worker-cpu", "worker-tas", "worker-gpu")
NAMESPACE = "bench"
QUEUE = "user-queue"
CLUSTER_QUEUE = "bench"
FLAVOR = "default"
CHECK = "dispatch"
QUOTA_CPU = 24  # the manager's ClusterQueue and each worker's, in CPUs
SUBMITTERS = 16  # requests in flight at most
READY_WITHIN = 180.0
MKQ = str(Path(sys.executable).with_name("mkq"))
SIDES = ("kueue", "mkq")
console = Console(stderr=True)


@dataclass(frozen=True)
class DispatchRequest:
    jobs: int
    qps: float
    repeat: int
    out: Path
    time_limit_s: float
    database_url: str
    command: str
    # mkq's manager's requests per second to each worker (MKQ_WORKER_QPS, bursts of twice
    # that); None: the manager's default. Kueue's MultiKueue builds its worker clients from the
    # kubeconfig alone, so client-go's defaults hold there (5 per second, bursts of 10:
    # k8s.io/client-go/rest/config.go); 5 runs mkq under the same limit.
    worker_qps: float | None = None
    dispatcher: str | None = None  # mkq's MKQ_DISPATCHER; None: the manager's default
    keep: Path | None = None  # keep each run's logs (clusters, Kueue, mkq) here
    run_for: str = "1s"
    job_cpu: str = "100m"


# ---- what both sides are given ------------------------------------------------------------


def _kueue_object(kind: str, name: str, spec: dict[str, Any], **meta: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


def _queues(cpu: int, checks: Sequence[str]) -> list[dict[str, Any]]:
    cluster_queue: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if checks:
        cluster_queue["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": check} for check in checks]
        }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        _kueue_object("ResourceFlavor", FLAVOR, {}),
        _kueue_object("ClusterQueue", CLUSTER_QUEUE, cluster_queue),
        _kueue_object("LocalQueue", QUEUE, {"clusterQueue": CLUSTER_QUEUE}, namespace=NAMESPACE),
    ]


def manager_setup(workers: Sequence[str]) -> list[dict[str, Any]]:
    """The manager cluster's objects: a queue dispatched through MultiKueue to every worker
    (Kueue's documented MultiKueue setup)."""
    clusters = [
        _kueue_object(
            "MultiKueueCluster",
            worker,
            {
                "clusterSource": {
                    "kubeConfig": {"locationType": "Secret", "location": f"{worker}-kubeconfig"}
                }
            },
        )
        for worker in workers
    ]
    return [
        _kueue_object(
            "AdmissionCheck",
            CHECK,
            {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": "workers",
                },
            },
        ),
        _kueue_object("MultiKueueConfig", "workers", {"clusters": list(workers)}),
        *clusters,
        *_queues(QUOTA_CPU, [CHECK]),
    ]


def worker_setup() -> list[dict[str, Any]]:
    return _queues(QUOTA_CPU, [])


def multikueue_job(index: int, run_for: str, cpu: str) -> dict[str, Any]:
    """A Job as Kueue's webhook leaves it for a MultiKueue queue: suspended, managed by
    MultiKueue."""
    spec = {"suspend": True, "managedBy": MULTIKUEUE_CONTROLLER}
    return bench_job(index, run_for, cpu, namespace=NAMESPACE, queue=QUEUE, spec=spec)


def _apply(cluster: RealCluster, documents: Sequence[Mapping[str, Any]]) -> None:
    kubectl(cluster, "apply", "--server-side", "--filename=-", stdin=yaml.safe_dump_all(documents))


# ---- watching and measuring ---------------------------------------------------------------


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _job_of(workload: Mapping[str, Any]) -> str | None:
    for owner in (workload.get("metadata") or {}).get("ownerReferences") or ():
        if owner.get("kind") == "Job":
            return str(owner.get("name"))
    return None


@dataclass
class _Seen:
    """What the harness saw, in time.monotonic() seconds, by Job name."""

    submitted: dict[str, float] = field(default_factory=dict)
    admitted: dict[str, float] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def workload(self, obj: Mapping[str, Any]) -> None:
        job = _job_of(obj)
        if job is not None and job not in self.admitted and _true(obj, "Admitted"):
            self.admitted[job] = time.monotonic()

    def job(self, obj: Mapping[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        if name in self.finished or name in self.failed:
            return
        if _true(obj, "Complete"):
            self.finished[name] = time.monotonic()
        elif _true(obj, "Failed"):
            self.failed[name] = json.dumps((obj.get("status") or {}).get("conditions"))

    def observation(self) -> Observation:
        return Observation(dict(self.submitted), dict(self.admitted), dict(self.finished))


async def _follow(
    client: KubeClient, rt: ResourceType, on_object: Callable[[Mapping[str, Any]], None]
) -> None:
    """List, then watch NAMESPACE's objects of `rt`, calling `on_object` on each state seen,
    until cancelled; a watch that ends resumes where it was, one that expired lists again."""
    version = ""
    while True:
        if not version:
            items, version = await client.list(rt, NAMESPACE)
            for item in items:
                on_object(item)
        try:
            async for event in client.watch(rt, version, NAMESPACE, timeout_seconds=60):
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    version = ""
                    break
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    on_object(obj)
        except ApiError as error:
            if not error.gone:
                raise
            version = ""


async def _create(client: KubeClient, body: dict[str, Any]) -> None:
    """Create one Job, retried while kube-apiserver asks to (429) or briefly fails (5xx), as
    client-go retries; an exact repeat after a lost answer is taken as done."""
    for attempt in range(20):
        try:
            await client.create(JOBS, body)
            return
        except ApiError as error:
            if error.status == 409 and attempt > 0:
                return
            if error.status != 429 and error.status < 500:
                raise
        await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
    raise RuntimeError(f"Job {NAMESPACE}/{body['metadata']['name']}: not created in 20 tries")


async def _submit(client: KubeClient, request: DispatchRequest, seen: _Seen) -> None:
    """Post every Job, the i-th not before i/qps seconds from the start."""
    start = time.monotonic()
    numbered = enumerate(range(request.jobs))

    async def submitter() -> None:
        for index, _ in numbered:  # one shared iterator: each Job is taken once
            await asyncio.sleep(start + index / request.qps - time.monotonic())
            body = multikueue_job(index, request.run_for, request.job_cpu)
            seen.submitted[body["metadata"]["name"]] = time.monotonic()
            await _create(client, body)

    await asyncio.gather(*(submitter() for _ in range(SUBMITTERS)))


def _writes(clusters: Mapping[str, RealCluster]) -> dict[str, float]:
    """kube-apiserver's write counts so far, summed over the clusters."""
    total: dict[str, float] = {}
    for cluster in clusters.values():
        with cluster.admin_http(timeout=30) as http:
            response = http.get("/metrics")
            response.raise_for_status()
        for key, value in writes_by_resource(response.text).items():
            total[key] = total.get(key, 0.0) + value
    return total


async def _queues_active(clusters: Mapping[str, RealCluster]) -> None:
    """Until every cluster's ClusterQueue is Active and the manager's admission check too: the
    side is ready to take work."""
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, cluster in clusters.items():
            clients[name] = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
            stack.push_async_callback(clients[name].close)

        async def active() -> bool:
            try:
                check = await clients[MANAGER].get(ADMISSION_CHECKS, CHECK)
                queues = [await c.get(CLUSTER_QUEUES, CLUSTER_QUEUE) for c in clients.values()]
            except ApiError:
                return False
            return _true(check, "Active") and all(_true(q, "Active") for q in queues)

        await wait_until(active, READY_WITHIN, "every ClusterQueue and the check Active")


@dataclass(frozen=True)
class _Parts:
    """A side's processes, by part, whose CPU and memory are its cost; `extra_cpu` adds what
    is not a process of its own (the Postgres backends of mkq's database)."""

    pids: Mapping[str, Sequence[int]]
    extra_cpu: Callable[[], Awaitable[dict[str, float]]] | None = None


def _cpu(parts: _Parts) -> dict[str, float]:
    return {part: sum(cpu_seconds(pid) for pid in pids) for part, pids in parts.pids.items()}


async def _measure(
    clusters: Mapping[str, RealCluster], request: DispatchRequest, parts: _Parts, side: str
) -> tuple[DispatchFigures, list[float]]:
    """Submit the Jobs and watch them through to completion; the side's figures and its
    admissions' offsets (for the plot)."""
    await _queues_active(clusters)
    client = await KubeClient.from_kubeconfig(str(clusters[MANAGER].kubeconfig_path))
    seen = _Seen()
    followers = [
        asyncio.create_task(_follow(client, WORKLOADS, seen.workload), name="bench-workloads"),
        asyncio.create_task(_follow(client, JOBS, seen.job), name="bench-jobs"),
    ]
    try:
        writes_before = await asyncio.to_thread(_writes, clusters)
        cpu_before = _cpu(parts)
        extra_before = await parts.extra_cpu() if parts.extra_cpu else {}
        with Progress(console=console, transient=True) as progress:
            bars = {
                what: progress.add_task(f"{side}: {what}", total=request.jobs)
                for what in ("submitted", "admitted", "finished")
            }

            async def done() -> bool:
                for follower in followers:
                    if follower.done():
                        follower.result()  # a watch that failed ends the run with its error
                progress.update(bars["submitted"], completed=len(seen.submitted))
                progress.update(bars["admitted"], completed=len(seen.admitted))
                progress.update(bars["finished"], completed=len(seen.finished))
                if seen.failed:
                    name, conditions = next(iter(seen.failed.items()))
                    raise RuntimeError(f"{side}: Job {NAMESPACE}/{name} failed: {conditions}")
                return len(seen.finished) == request.jobs

            submitting = asyncio.create_task(_submit(client, request, seen))
            try:
                await wait_until(done, request.time_limit_s, f"{side}: every Job complete")
            finally:
                submitting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await submitting
        cpu_after = _cpu(parts)
        extra_after = await parts.extra_cpu() if parts.extra_cpu else {}
        writes_after = await asyncio.to_thread(_writes, clusters)
    finally:
        for follower in followers:
            follower.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
        await client.close()
    cpu = {part: cpu_after[part] - cpu_before[part] for part in cpu_after}
    for part, value in extra_after.items():
        cpu[part] = value - extra_before.get(part, 0.0)
    peak_kib = sum(peak_rss_kib(pid) or 0 for pids in parts.pids.values() for pid in pids)
    one, five, fifteen = os.getloadavg()
    observation = seen.observation()
    result = figures(
        observation,
        writes_between(writes_before, writes_after),
        cpu,
        peak_kib / 1024,
        (round(one, 2), round(five, 2), round(fifteen, 2)),
    )
    return result, admitted_offsets(observation)


# ---- the two sides ------------------------------------------------------------------------


@contextlib.contextmanager
def _fresh_clusters(directory: Path) -> Iterator[dict[str, RealCluster]]:
    with clusters_running(directory / "clusters", (MANAGER, *WORKERS)) as clusters:
        yield clusters


def run_kueue(request: DispatchRequest, directory: Path) -> tuple[DispatchFigures, list[float]]:
    """Kueue's MultiKueue on fresh control planes."""
    from bench.peers.kueue.multikueue import multikueue_running

    with _fresh_clusters(directory) as clusters:
        workers = {name: clusters[name] for name in WORKERS}
        with multikueue_running(clusters[MANAGER], workers, directory / "kueue") as processes:
            for name in WORKERS:
                _apply(clusters[name], worker_setup())
            _apply(clusters[MANAGER], manager_setup(WORKERS))
            parts = _Parts({"kueue": [p.pid for p in processes.values()]})
            return asyncio.run(_measure(clusters, request, parts, "Kueue"))


def run_mkq(request: DispatchRequest, directory: Path) -> tuple[DispatchFigures, list[float]]:
    """mkq's manager and agents on fresh control planes."""
    from mkq.demo.system import agent_namespace, install_crds, manager_webhook_secret

    with _fresh_clusters(directory) as clusters:
        install_crds(clusters.values())
        for name in WORKERS:
            _apply(clusters[name], [agent_namespace(), *worker_setup()])
        secrets_ = [kubeconfig_secret(clusters[w], MANAGER_NAMESPACE) for w in WORKERS]
        _apply(clusters[MANAGER], [agent_namespace(), manager_webhook_secret(), *secrets_])
        _apply(clusters[MANAGER], manager_setup(WORKERS))
        return asyncio.run(_mkq_measured(clusters, request, directory / "logs"))


@contextlib.asynccontextmanager
async def _mkq_running(
    clusters: Mapping[str, RealCluster],
    database_url: str,
    worker_qps: float | None,
    dispatcher: str | None,
    logs: Path,
) -> AsyncIterator[_Parts]:
    """The manager, then an agent per worker (with its token) and on the manager cluster."""
    async with contextlib.AsyncExitStack() as stack:
        port, webhook_port = free_port(), free_port()
        token = secrets.token_urlsafe(24)
        env = {
            "MKQ_DATABASE_URL": database_url,
            "MKQ_API_TOKEN": token,
            "MKQ_ENCRYPTION_KEY": Fernet.generate_key().decode(),
            "MKQ_KUEUE_NAMESPACE": MANAGER_NAMESPACE,
            "MKQ_WEBHOOK_PORT": str(webhook_port),
            "MKQ_WEBHOOK_HOST": "127.0.0.1",
            "MKQ_WEBHOOK_URL": f"https://127.0.0.1:{webhook_port}",
        }
        if dispatcher is not None:
            env["MKQ_DISPATCHER"] = dispatcher
        if worker_qps is not None:
            env["MKQ_WORKER_QPS"] = f"{worker_qps:g}"
            env["MKQ_WORKER_BURST"] = str(max(1, round(2 * worker_qps)))
        url = f"http://127.0.0.1:{port}"
        manager = await stack.enter_async_context(
            logged_process(
                MKQ,
                "manager",
                "serve",
                "--kubeconfig",
                str(clusters[MANAGER].kubeconfig_path),
                "--listen",
                f"127.0.0.1:{port}",
                env=env,
                log_name="manager",
                log_dir=logs,
            )
        )
        api = await stack.enter_async_context(
            httpx.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
            )
        )

        async def ready() -> bool:
            if manager.returncode is not None:
                raise RuntimeError(f"mkq's manager exited ({manager.returncode}): see {logs}")
            try:
                return (await api.get("/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await wait_until(ready, 60, "mkq's manager answered /readyz")
        agents = []
        for name in (*WORKERS, MANAGER):
            argv = [MKQ, "agent", "run", "--kubeconfig", str(clusters[name].kubeconfig_path)]
            argv += ["--cluster-name", name, "--no-leader-elect"]
            webhook = free_port()
            argv += ["--webhook-port", str(webhook), "--webhook-host", "127.0.0.1"]
            argv += ["--webhook-url", f"https://127.0.0.1:{webhook}"]
            agent_env: dict[str, str] = {}
            if name != MANAGER:  # Kueue on the manager cluster reports to no manager
                argv += ["--manager-url", url]
                agent_env["MKQ_AGENT_TOKEN"] = await _agent_token(api, clusters[name])
            agents.append(
                await stack.enter_async_context(
                    logged_process(*argv, env=agent_env, log_name=f"agent-{name}", log_dir=logs)
                )
            )

        async def connected() -> bool:
            items = (await api.get("/api/v1/clusters")).json()["items"]
            return len(items) == len(WORKERS) and all(c["state"] == "Connected" for c in items)

        await wait_until(connected, READY_WITHIN, "every worker Connected to mkq's manager")
        database = await asyncpg.connect(
            make_url(database_url)
            .set(drivername="postgresql")
            .render_as_string(hide_password=False)
        )
        stack.push_async_callback(database.close)

        async def postgres_cpu() -> dict[str, float]:
            rows = await database.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            )
            return {"postgres": sum(cpu_seconds(int(row["pid"])) for row in rows)}

        yield _Parts(
            {"manager": [manager.pid], "agents": [agent.pid for agent in agents]}, postgres_cpu
        )


async def _agent_token(api: httpx.AsyncClient, worker: RealCluster) -> str:
    """Register the worker and take its agent's token; when the manager registered it first
    from its MultiKueueCluster, a new token for it."""
    response = await api.post(
        "/api/v1/clusters",
        json={"name": worker.name, "kubeconfig": yaml.safe_dump(worker.kubeconfig)},
    )
    if response.status_code == 409:
        response = await api.post(f"/api/v1/clusters/{worker.name}/token")
    response.raise_for_status()
    return str(response.json()["token"])


async def _mkq_measured(
    clusters: Mapping[str, RealCluster], request: DispatchRequest, logs: Path
) -> tuple[DispatchFigures, list[float]]:
    async with (
        bench_database(request.database_url) as database_url,
        _mkq_running(clusters, database_url, request.worker_qps, request.dispatcher, logs) as parts,
    ):
        return await _measure(clusters, request, parts, "mkq")


# ---- pairs --------------------------------------------------------------------------------


def compare(
    request: DispatchRequest, announce: Callable[[str], None] = lambda _: None
) -> tuple[DispatchComparison, dict[str, Any]]:
    """Run the pairs, write compare.json, compare.md and compare.png; returns the comparison
    and the JSON document."""
    pairs: list[tuple[DispatchFigures, DispatchFigures]] = []
    timelines: dict[str, list[float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="mkq-dispatch-compare-"))
    for index in range(request.repeat):
        order = SIDES if index % 2 == 0 else SIDES[::-1]
        results: dict[str, DispatchFigures] = {}
        for side in order:
            announce(f"pair {index + 1} of {request.repeat}: {_name(side)}")
            run = run_kueue if side == "kueue" else run_mkq
            directory = scratch / f"pair-{index + 1}-{side}"
            try:
                results[side], offsets = run(request, directory)
            except Exception as error:
                # The clusters' and the side's logs stay for a look.
                raise RuntimeError(f"{error} (logs: {directory})") from error
            if request.keep is not None:
                _keep_logs(directory, request.keep / directory.name)
            shutil.rmtree(directory, ignore_errors=True)
            timelines[f"{_name(side)}, pair {index + 1}"] = offsets
        pairs.append((results["mkq"], results["kueue"]))
    shutil.rmtree(scratch, ignore_errors=True)
    comparison = DispatchComparison(request.jobs, pairs)
    out = request.out
    document = {
        **comparison.as_json(),
        "command": request.command,
        "qps": request.qps,
        "jobRunsFor": request.run_for,
        "jobCpu": request.job_cpu,
        "mkqWorkerQps": request.worker_qps,
        "mkqDispatcher": request.dispatcher,
        "order": "pair i runs Kueue first when i is odd (1, 3, ...), mkq first otherwise",
        "files": {
            "json": str(out / "compare.json"),
            "table": str(out / "compare.md"),
            "plot": str(out / "compare.png"),
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "compare.md").write_text(f"`{request.command}`\n\n" + comparison.markdown())
    write_plot(timelines, out / "compare.png", title="mkq bench compare --dispatch")
    return comparison, document


def _keep_logs(directory: Path, target: Path) -> None:
    """Every log of a run (its clusters', Kueue's, mkq's), without the clusters' data."""
    for log in directory.rglob("*.log"):
        destination = target / log.relative_to(directory)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, destination)


def _name(side: str) -> str:
    return "MultiKueue" if side == "kueue" else "mkq"
