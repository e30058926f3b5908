"""Cluster and real modes: an API server, the real agent, and Kueue's runner, on the wall clock.

This is what Kueue's performance runner does against envtest + minimalkueue:

- the scheduler (here: `mkq agent run`, a separate process, as minimalkueue is) runs against
  an API server with the Kueue CRDs and, for TAS, the nodes. In cluster mode that is kubesim,
  in this process. In real mode it is a real kube-apiserver and etcd (mkq/realk8s) and nothing
  else, as envtest starts them, with the request limits Kueue's runner gives envtest's; the
  runner creates the TAS nodes and writes their status, as Kueue's generator does;
- a generator creates the objects, then every workloads set of every ClusterQueue creates its
  Workloads on its own schedule (sleep creationIntervalMs, create, repeat);
- a watcher records every Workload and ClusterQueue observation into Kueue's recorder
  (`metrics.Recorder`); when it sees a workload admitted it marks it Finished `runtimeMs`
  later (counted from when it saw the admission); an eviction voids that finish. Kueue's
  runner also clears the quota reservation of an evicted Workload, because Kueue's
  controllers leave bare Workloads alone; the agent does that itself, so this runner does not;
- the run ends when creation is over and no active ClusterQueue has pending or reserving
  workloads; `wallMs` is the scheduler process's lifetime up to then, as Kueue measures
  minimalkueue's.

The runner speaks plain HTTP (aiohttp) to either API server: it is a test harness, not a
component.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import ssl
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from bench.process_stats import peak_rss_kib
from bench.scheduler.metrics import NS_PER_MS, CQEvent, Recorder, WLEvent
from bench.scheduler.scenario import (
    CLASS_LABEL,
    RUNNING_TIME_LABEL,
    Arrival,
    Scenario,
    workload_object,
)
from bench.scheduler.simulation import ProgressCallback, Sample
from kubesim import jsoncodec  # orjson when installed: the runner shares kubesim's process
from kubesim.ports import free_port
from kueue_api.timestamps import rfc3339
from mkq.realk8s.clusters import STOP_WITH_PARENT

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
# What Kueue's runner adds to envtest's kube-apiserver (test/performance/scheduler/runner/main.go):
# its ~15,000 workloads overwhelm the default in-flight limits.
ENVTEST_REQUEST_LIMITS = ("--max-requests-inflight=800", "--max-mutating-requests-inflight=400")
BACKENDS = ("kubesim", "real")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
JSON_PATCH = "application/json-patch+json"
_JSON_BODY = {"Content-Type": "application/json"}

Obj = dict[str, Any]


class ClusterRunError(RuntimeError):
    """The cluster run could not start or did not finish in time."""


@dataclass
class ClusterStats:
    wall_ms: int = 0
    admissions: int = 0
    evictions: int = 0
    finishes: int = 0
    agent_startup_ms: int = 0
    agent_cpu_s: float = 0.0
    harness_cpu_s: float = 0.0  # this process: kubesim and the runner
    agent_peak_memory_mib: float = 0.0
    real_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None  # set when the run stopped before every workload finished


@dataclass(frozen=True)
class ApiServer:
    """Where the run's API server answers, and how to reach it."""

    url: str
    kubeconfig: Path
    headers: dict[str, str]
    ssl_context: ssl.SSLContext | None
    real: bool


@contextlib.asynccontextmanager
async def kubesim_api_server(scenario: Scenario) -> AsyncIterator[ApiServer]:
    """kubesim in this process, with the Kueue CRDs and the scenario's nodes."""
    from kubesim import ClusterSpec, run_clusters

    spec = ClusterSpec(
        name="bench",
        nodes=node_profile(scenario),
        crds=sorted(CRD_DIR.glob("*.yaml")),
        kubeconfig_scheme="http",
    )
    async with run_clusters([spec]) as clusters:
        cluster = clusters[0]
        yield ApiServer(
            cluster.url,
            cluster.kubeconfig_path,
            {"Authorization": f"Bearer {cluster.token}"},
            None,
            real=False,
        )


@contextlib.asynccontextmanager
async def real_api_server(scenario: Scenario) -> AsyncIterator[ApiServer]:
    """A fresh etcd and kube-apiserver (as envtest starts them), with the Kueue CRDs; the
    scenario's nodes are created by `_setup`, as Kueue's generator creates them."""
    from mkq.realk8s.clusters import start_clusters, stop_clusters
    from mkq.realk8s.jobset import apply_established

    directory = Path(tempfile.mkdtemp(prefix="mkq-bench-real-"))
    try:
        clusters = await asyncio.to_thread(
            start_clusters,
            directory,
            ["bench"],
            tie_to_parent=True,
            api_server_only=True,
            apiserver_flags=ENVTEST_REQUEST_LIMITS,
        )
        try:
            cluster = clusters["bench"]
            files = sorted(CRD_DIR.glob("*.yaml"))
            names = [f"{file.stem.split('_', 1)[1]}.kueue.x-k8s.io" for file in files]
            await asyncio.to_thread(apply_established, cluster, files, names)
            context = ssl.create_default_context(cafile=str(cluster.pki.ca_cert))
            context.load_cert_chain(
                str(cluster.pki.client_cert("admin")), str(cluster.pki.client_key("admin"))
            )
            yield ApiServer(cluster.server, cluster.kubeconfig_path, {}, context, real=True)
        finally:
            await asyncio.to_thread(stop_clusters, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _condition(obj: Obj, kind: str) -> Obj | None:
    for condition in obj.get("status", {}).get("conditions") or ():
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _is_true(obj: Obj, kind: str) -> bool:
    condition = _condition(obj, kind)
    return condition is not None and condition.get("status") == "True"


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _milli_of(value: object) -> int:
    from bench.scheduler.quantity import parse_milli

    try:
        return parse_milli(value)
    except ValueError:
        return 0


def node_profile(scenario: Scenario) -> dict[str, Any]:
    """kubesim's node profile: the TAS topology of the generator, or no nodes (as envtest)."""
    topology = scenario.topology
    if topology is None:
        return {"nodes": []}
    levels = []
    for index, (name, label, count) in enumerate(
        zip(topology.level_names, topology.level_labels, topology.counts_per_parent, strict=True)
    ):
        level: dict[str, Any] = {"name": name, "count": count, "nodeLabel": label}
        if index == len(topology.level_labels) - 1:
            level["capacity"] = {"cpu": topology.node_cpu, "memory": topology.node_memory}
        levels.append(level)
    return {"topology": {"levels": levels, "labels": {"tas-node-group": "tas"}}}


def _path_for(obj: Obj) -> str:
    kind = obj["kind"]
    meta = obj["metadata"]
    if kind == "Namespace":
        return "/api/v1/namespaces"
    if kind == "Node":
        return "/api/v1/nodes"
    plural = {
        "ResourceFlavor": "resourceflavors",
        "Cohort": "cohorts",
        "ClusterQueue": "clusterqueues",
        "Topology": "topologies",
        "LocalQueue": "localqueues",
        "Workload": "workloads",
    }[kind]
    if "namespace" in meta:
        return f"{KUEUE}/namespaces/{meta['namespace']}/{plural}"
    return f"{KUEUE}/{plural}"


class _Client:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def create(self, obj: Obj) -> Obj:
        for attempt in range(20):
            async with self.session.post(
                self.url + _path_for(obj), data=jsoncodec.dumps(obj), headers=_JSON_BODY
            ) as response:
                if response.status in (200, 201):
                    return await response.json()  # type: ignore[no-any-return]
                body = await response.text()
                if response.status == 409:
                    return {}
                if response.status in (429, 500, 503) and attempt < 19:
                    await asyncio.sleep(0.05 * (attempt + 1))
                    continue
                raise ClusterRunError(
                    f"creating {obj['kind']}/{obj['metadata']['name']}: {response.status} {body}"
                )
        raise ClusterRunError("unreachable")

    async def create_node(self, node: Obj) -> None:
        """A node as Kueue's generator makes one (its test utility CreateNodesWithStatus):
        created, its status (capacity, allocatable, Ready) written, as kube-apiserver ignores
        status on create, and then, Ready, without the not-ready taint kube-apiserver's
        TaintNodesByCondition admission gave it (no node controller here takes it off)."""
        name = node["metadata"]["name"]
        await self.create({k: v for k, v in node.items() if k != "status"})
        await self._merge_patch(f"/api/v1/nodes/{name}/status", {"status": node["status"]})
        created = await self.get(f"/api/v1/nodes/{name}")
        taints = (created.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
        if kept != taints:
            await self._merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": kept or None}})

    async def _merge_patch(self, path: str, patch: Obj) -> None:
        async with self.session.patch(
            self.url + path,
            data=jsoncodec.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as response:
            if response.status >= 300:
                raise ClusterRunError(f"patching {path}: {response.status} {await response.text()}")

    async def patch_status(self, obj: Obj, patch: Any, content_type: str) -> int:
        meta = obj["metadata"]
        path = f"{KUEUE}/namespaces/{meta['namespace']}/workloads/{meta['name']}/status"
        async with self.session.patch(
            self.url + path,
            data=jsoncodec.dumps(patch),
            headers={"Content-Type": content_type},
        ) as response:
            await response.read()
            return response.status

    async def get(self, path: str) -> Obj:
        async with self.session.get(self.url + path) as response:
            return await response.json()  # type: ignore[no-any-return]

    async def watch(self, path: str) -> AsyncIterator[tuple[str, Obj]]:
        """Watch from now on, reconnecting from the last resourceVersion when cut."""
        listing = await self.get(path)
        version = listing.get("metadata", {}).get("resourceVersion", "")
        for item in listing.get("items") or ():
            yield "ADDED", item
        while True:
            params = {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": version}
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            async with self.session.get(
                self.url + path, params=params, timeout=timeout
            ) as response:
                if response.status != 200:
                    await asyncio.sleep(0.1)
                    listing = await self.get(path)
                    version = listing.get("metadata", {}).get("resourceVersion", "")
                    continue
                async for line in response.content:
                    if not line.strip():
                        continue
                    event = jsoncodec.loads(line)
                    obj = event.get("object") or {}
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        yield event["type"], obj


class ClusterRun:
    """One cluster-mode run; `run()` fills `recorder` and returns the stats."""

    def __init__(
        self,
        scenario: Scenario,
        recorder: Recorder,
        progress: ProgressCallback | None = None,
        time_limit_s: float = 3600.0,
        agent_command: list[str] | None = None,
        agent_log: Path | None = None,
        backend: str = "kubesim",
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
        self.backend = backend
        self.scenario = scenario
        self.recorder = recorder
        self.progress = progress
        self.time_limit_s = time_limit_s
        self.agent_command = agent_command
        self.agent_log = agent_log
        self.stats = ClusterStats()
        self._origin_mono = 0
        self._origin_wall = 0
        self._by_key = {arrival.key: arrival for arrival in scenario.arrivals}
        self._finishing: set[str] = set()
        self._finished: set[str] = set()
        self._admitted: set[str] = set()
        self._tokens: dict[str, int] = defaultdict(int)
        # workloads seen without an admission since their last admission ended
        self._released: set[str] = set()
        self._generation_done = asyncio.Event()
        self._all_finished = asyncio.Event()
        self._cq_latest: dict[str, CQEvent] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def _now_ns(self) -> int:
        return time.monotonic_ns() - self._origin_mono

    def _wall_to_ns(self, moment: datetime | None) -> int | None:
        if moment is None:
            return None
        return int(moment.timestamp() * 1e9) - self._origin_wall

    async def run(self) -> ClusterStats:
        started = time.perf_counter()
        api_server = real_api_server if self.backend == "real" else kubesim_api_server
        async with api_server(self.scenario) as target:
            connector = aiohttp.TCPConnector(limit=64, ssl=target.ssl_context or False)
            async with aiohttp.ClientSession(
                headers=target.headers, connector=connector
            ) as session:
                client = _Client(session, target.url)
                await self._setup(client, target.real)
                children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
                own_before = resource.getrusage(resource.RUSAGE_SELF)
                port = free_port()
                self._origin_mono = time.monotonic_ns()
                self._origin_wall = time.time_ns()
                agent = await self._start_agent(target.kubeconfig, port)
                try:
                    await self._wait_ready(session, agent, port)
                    self.stats.agent_startup_ms = self._now_ns() // NS_PER_MS
                    try:
                        await self._drive(client, agent)
                    except ClusterRunError as error:
                        self.stats.error = str(error)
                finally:
                    self.stats.wall_ms = self._now_ns() // NS_PER_MS
                    peak_kib = peak_rss_kib(agent.pid)
                    await self._stop_agent(agent)
                    for task in self._tasks:
                        task.cancel()
                    await asyncio.gather(*self._tasks, return_exceptions=True)
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                own = resource.getrusage(resource.RUSAGE_SELF)
                self.stats.harness_cpu_s = (own.ru_utime - own_before.ru_utime) + (
                    own.ru_stime - own_before.ru_stime
                )
                self.stats.agent_cpu_s = (children.ru_utime - children_before.ru_utime) + (
                    children.ru_stime - children_before.ru_stime
                )
                # RUSAGE_CHILDREN's peak is the largest of every child this process ever
                # reaped (a control plane's kube-apiserver, Kueue's runner), so the agent's own
                # high-water mark is read from /proc while it still runs.
                self.stats.agent_peak_memory_mib = (peak_kib or children.ru_maxrss) / 1024
        self.stats.real_s = time.perf_counter() - started
        return self.stats

    async def _setup(self, client: _Client, create_nodes: bool) -> None:
        objects = self.scenario.setup_objects()
        nodes = [o for o in objects if o["kind"] == "Node"]
        objects = [o for o in objects if o["kind"] != "Node"]
        if create_nodes:
            await asyncio.gather(*(client.create_node(node) for node in nodes))
        for obj in objects:
            if obj["kind"] in ("Namespace", "ResourceFlavor", "Topology", "Cohort"):
                await client.create(obj)
        await asyncio.gather(
            *(client.create(o) for o in objects if o["kind"] == "ClusterQueue"),
        )
        await asyncio.gather(*(client.create(o) for o in objects if o["kind"] == "LocalQueue"))

    async def _wait_ready(
        self, session: aiohttp.ClientSession, agent: asyncio.subprocess.Process, port: int
    ) -> None:
        """Creation starts once the agent's caches are synced (its /readyz), so admission
        times do not include Python's start-up; wallMs still does, as Kueue's includes
        minimalkueue's."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if agent.returncode is not None:
                raise ClusterRunError(f"the agent exited with code {agent.returncode}")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.05)
        raise ClusterRunError("the agent was not ready after 120 s")

    async def _start_agent(self, kubeconfig: Path, port: int) -> asyncio.subprocess.Process:
        # The agent ends with this process, however it ends (as the control plane does).
        command = [
            *STOP_WITH_PARENT,
            *(
                self.agent_command
                or [
                    sys.executable,
                    "-c",
                    "from mkq.cli import main; main()",
                    "agent",
                    "run",
                    "--kubeconfig",
                    str(kubeconfig),
                    "--cluster-name",
                    "bench",
                    "--no-leader-elect",
                    "--metrics-port",
                    str(port),
                ]
            ),
        ]
        if self.agent_log is not None:
            self.agent_log.parent.mkdir(parents=True, exist_ok=True)
            with self.agent_log.open("wb") as log:
                return await asyncio.create_subprocess_exec(
                    *command,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                )
        return await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    async def _stop_agent(self, agent: asyncio.subprocess.Process) -> None:
        if agent.returncode is None:
            agent.send_signal(signal.SIGINT)
            try:
                async with asyncio.timeout(10):
                    await agent.wait()
            except TimeoutError:
                agent.kill()
                await agent.wait()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drive(self, client: _Client, agent: asyncio.subprocess.Process) -> None:
        for queue in self.scenario.queues:
            self.recorder.record_cq(
                CQEvent(0, queue.name, queue.class_name, queue.cohort, 0, queue.nominal_milli, 0, 0)
            )
        watchers = [
            asyncio.ensure_future(self._watch_workloads(client)),
            asyncio.ensure_future(self._watch_cluster_queues(client)),
        ]
        generator = asyncio.ensure_future(self._generate(client))
        ender = asyncio.ensure_future(self._all_finished.wait())
        agent_exit = asyncio.ensure_future(agent.wait())
        try:
            done, _ = await asyncio.wait(
                [ender, agent_exit, generator, *watchers],
                timeout=self.time_limit_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
            while generator in done and not generator.exception() and ender not in done:
                # creation finished: keep waiting for the end (or a failure)
                done, _ = await asyncio.wait(
                    [ender, agent_exit, *watchers],
                    timeout=self.time_limit_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not done:
                    break
            if ender in done:
                return
            for task in done:
                if task is not ender and task.exception() is not None:
                    raise ClusterRunError(f"the run failed: {task.exception()}")
            if agent_exit in done:
                raise ClusterRunError(f"the agent exited with code {agent.returncode}")
            raise ClusterRunError(
                f"not finished after {self.time_limit_s:.0f} s: {len(self._finished)} of "
                f"{len(self.scenario.arrivals)} workloads finished"
            )
        finally:
            for task in (*watchers, generator, ender, agent_exit):
                task.cancel()
            await asyncio.gather(*watchers, generator, ender, agent_exit, return_exceptions=True)

    async def _generate(self, client: _Client) -> None:
        by_set: dict[tuple[str, int], list[Arrival]] = defaultdict(list)
        for arrival in self.scenario.arrivals:
            by_set[(arrival.queue.name, arrival.set_index)].append(arrival)
        await asyncio.gather(
            *(self._generate_set(client, arrivals) for arrivals in by_set.values())
        )
        self._generation_done.set()
        self._check_end()

    async def _generate_set(self, client: _Client, arrivals: list[Arrival]) -> None:
        previous = 0
        for arrival in arrivals:
            await asyncio.sleep((arrival.time_ms - previous) / 1000)
            previous = arrival.time_ms
            await client.create(workload_object(arrival))

    async def _watch_workloads(self, client: _Client) -> None:
        async for kind, obj in client.watch(f"{KUEUE}/workloads"):
            if kind == "DELETED":
                continue
            self._on_workload(client, obj)

    def _on_workload(self, client: _Client, obj: Obj) -> None:
        meta = obj.get("metadata", {})
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        arrival = self._by_key.get(key)
        if arrival is None:
            return
        admitted_condition = _condition(obj, "Admitted")
        admitted = admitted_condition is not None and admitted_condition.get("status") == "True"
        evicted = _is_true(obj, "Evicted")
        finished = _is_true(obj, "Finished")
        admission_ns = None
        if admitted and admitted_condition is not None:
            admission_ns = self._wall_to_ns(
                _parse_time(admitted_condition.get("lastTransitionTime"))
            )
        self.recorder.record_wl(
            WLEvent(
                time_ns=self._now_ns(),
                uid=key,
                namespace=meta.get("namespace", ""),
                name=meta.get("name", ""),
                class_name=meta.get("labels", {}).get(CLASS_LABEL, arrival.class_name),
                creation_ns=self._wall_to_ns(_parse_time(meta.get("creationTimestamp"))),
                admission_ns=admission_ns,
                admitted=admitted,
                evicted=evicted,
                finished=finished,
            )
        )
        if finished:
            if key not in self._finished:
                self._finished.add(key)
                self.stats.finishes += 1
                if self.progress is not None:
                    self.progress(
                        len(self._finished),
                        len(self.scenario.arrivals),
                        self._now_ns() // NS_PER_MS,
                    )
                self._check_end()
            return
        if key in self._finishing and (evicted or not admitted):
            # the admission this runner was timing is gone (preempted): its finish is void, and
            # the workload waits again; the agent releases the quota of an evicted bare
            # Workload itself (Kueue's runner has to, as Kueue's controllers do not)
            self._finishing.discard(key)
            self._released.discard(key)
            self.stats.evictions += 1
        if not admitted:
            self._released.add(key)
        if admitted and key in self._released:
            # a new admission: the first one, or one after the evicted one was released
            self._released.discard(key)
            self._finishing.add(key)
            self._tokens[key] += 1
            self.stats.admissions += 1
            runtime_ms = int(meta.get("labels", {}).get(RUNNING_TIME_LABEL, arrival.runtime_ms))
            self._spawn(self._finish_later(client, obj, key, runtime_ms, self._tokens[key]))

    async def _finish_later(
        self, client: _Client, obj: Obj, key: str, runtime_ms: int, token: int
    ) -> None:
        await asyncio.sleep(runtime_ms / 1000)
        if key not in self._finishing or self._tokens[key] != token:
            return  # evicted meanwhile
        condition = {
            "type": "Finished",
            "status": "True",
            "reason": "ByTest",
            "message": "By test runner",
            "lastTransitionTime": rfc3339(datetime.now(UTC)),
        }
        # Only the admission this runner timed may finish. The agent may have evicted the
        # workload since the runner's last look (its eviction keeps the admission until the
        # quota is released), so each try reads the workload and writes only if that read is
        # still current (the patch tests its resourceVersion).
        timed = (obj.get("status") or {}).get("admission")
        meta = obj["metadata"]
        path = f"{KUEUE}/namespaces/{meta['namespace']}/workloads/{meta['name']}"
        for _ in range(50):
            current = await client.get(path)
            status = current.get("status") or {}
            evicted = any(
                c.get("type") == "Evicted" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            if current.get("kind") != "Workload" or evicted or status.get("admission") != timed:
                return  # gone, or not the admission timed: its eviction is seen on the watch
            version = current["metadata"]["resourceVersion"]
            patch = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": "add", "path": "/status/conditions/-", "value": condition},
            ]
            code = await client.patch_status(obj, patch, JSON_PATCH)
            if code < 300 or code == 404:
                return
            await asyncio.sleep(0.05)

    async def _watch_cluster_queues(self, client: _Client) -> None:
        classes = {queue.name: queue for queue in self.scenario.queues}
        async for kind, obj in client.watch(f"{KUEUE}/clusterqueues"):
            name = obj.get("metadata", {}).get("name", "")
            queue = classes.get(name)
            if queue is None or kind == "DELETED":
                continue
            status = obj.get("status", {})
            usage = 0
            for flavor in status.get("flavorsUsage") or ():
                for res in flavor.get("resources") or ():
                    if res.get("name") == "cpu":
                        usage = _milli_of(res.get("total", 0))
                break
            event = CQEvent(
                time_ns=self._now_ns(),
                name=name,
                class_name=obj.get("metadata", {}).get("labels", {}).get(CLASS_LABEL, "")
                or queue.class_name,
                cohort=queue.cohort,
                usage_milli=usage,
                quota_milli=queue.nominal_milli,
                pending=int(status.get("pendingWorkloads") or 0),
                reserving=int(status.get("reservingWorkloads") or 0),
                active=_is_true(obj, "Active"),
            )
            self.recorder.record_cq(event)
            self._cq_latest[name] = event
            self._sample()

    def _sample(self) -> None:
        usage: dict[str, int] = defaultdict(int)
        pending = running = 0
        for event in self._cq_latest.values():
            usage[event.class_name] += event.usage_milli
            pending += event.pending
            running += event.reserving
        self.stats.samples.append(
            Sample(self._now_ns() // NS_PER_MS, dict(usage), pending, running)
        )

    def _check_end(self) -> None:
        if self._generation_done.is_set() and len(self._finished) == len(self.scenario.arrivals):
            self._all_finished.set()


def run_cluster(
    scenario: Scenario,
    recorder: Recorder,
    progress: ProgressCallback | None = None,
    time_limit_s: float = 3600.0,
    agent_log: Path | None = None,
    backend: str = "kubesim",
) -> ClusterStats:
    """Run a cluster-mode (kubesim) or real-mode benchmark to completion (blocking)."""
    run = ClusterRun(
        scenario, recorder, progress, time_limit_s, agent_log=agent_log, backend=backend
    )
    return asyncio.run(run.run())
