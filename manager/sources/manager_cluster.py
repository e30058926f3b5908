"""The manager cluster as a source, the way Kueue's MultiKueue manager reads it.

Jobs carrying the queue-name label whose LocalQueue points at a ClusterQueue with a MultiKueue
AdmissionCheck (controllerName kueue.x-k8s.io/multikueue) become workloads; the check's
MultiKueueConfig lists the MultiKueueClusters, whose kubeconfigs (a Secret, key `kubeconfig`, in
the manager's own namespace `ManagerSettings.kueue_namespace`, where its RBAC lets it read
Secrets; or a file path) define the workers. The manager Job stays suspended
(spec.managedBy: kueue.x-k8s.io/multikueue) and receives its worker's Job status.

The manager cluster is list/watched through the same connection code as the workers (own
relist on 410, backoff); any change wakes one level-based pass over the cached objects, which
converges from whatever state it finds.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import load_only

from kueue_api.api_resources import KUEUE_GROUP, KUEUE_VERSION
from kueue_api.documents import DocumentError, load_yaml
from kueue_api.events import build_event
from kueue_api.jobs import JobKind
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER, QUEUE_NAME_LABEL
from kueue_api.jobs.checks import ManifestError
from kueue_api.priority import PriorityClassNotFound, PriorityClassRef
from kueue_api.timestamps import rfc3339
from kueue_api.webhooks.server import WebhookServer
from manager import states
from manager.db import clusters as cluster_queries
from manager.db import workloads as workload_queries
from manager.db.credentials import EncryptionKeyError, new_token
from manager.db.events import append_event
from manager.db.tables import WorkloadRow
from manager.dispatch.nomination import DispatchMode
from manager.jobs import parse_job, pod_group_kinds, workload_name, workload_names
from manager.priority import ClassReader, MemoReader, job_priority
from manager.remote.api_errors import status_message
from manager.remote.connection import (
    WORKLOADS,
    ClusterConnection,
    Key,
    Unreachable,
    kinds_by_cache,
)
from manager.remote.kubeconfig import KubeconfigError, load_kubeconfig
from manager.runtime import ManagerRuntime
from manager.settings import MANAGER_NAMESPACE
from manager.sources.manager_workload import (
    WAITING_FOR_WORKLOAD,
    Record,
    check_entry,
    decide,
    external_nominations,
    holds_reservation,
    owner_is_managed,
    pending_message,
    standalone_workload,
)
from manager.sources.multikueue_checks import check_condition
from manager.webhooks import manager_webhook_server

log = logging.getLogger(__name__)

SOURCE = "manager-cluster"
CLUSTER_SOURCE = "multikueue"
EVENT_COMPONENT = "mkq-manager"
WATCHED_KINDS = (
    "admissionchecks",
    "clusterqueues",
    "localqueues",
    "multikueueconfigs",
    "multikueueclusters",
)


# How many rows a pass works on at once. One after the other, a pass over 300 Jobs created
# in a burst held the first Job's dispatch for seconds behind the API calls of the others.
_PASS_CONCURRENCY = 16
T = TypeVar("T")

# What a pass reads of each workload row.
_ROW_COLUMNS = (
    WorkloadRow.id,
    WorkloadRow.namespace,
    WorkloadRow.name,
    WorkloadRow.uid,
    WorkloadRow.state,
    WorkloadRow.cancel_requested,
    WorkloadRow.remote_status,
    WorkloadRow.workload_name,
    WorkloadRow.queue,
    WorkloadRow.cluster,
    WorkloadRow.nominated,
    WorkloadRow.external_nominations,
    WorkloadRow.message,
    WorkloadRow.priority,
    WorkloadRow.priority_class,
    WorkloadRow.priority_class_kind,
    WorkloadRow.kind,
    WorkloadRow.source,
    WorkloadRow.quota_reserved,
)


async def _none_if_missing(call: Awaitable[Any]) -> Any:
    """The read's answer, or None when the object does not exist (404)."""
    try:
        return await call
    except ApiException as error:
        if error.status == 404:
            return None
        raise


@dataclass
class _Topology:
    """What the manager cluster says this pass: MultiKueue queues and their workers."""

    queue_to_config: dict[tuple[str, str], str] = field(default_factory=dict)
    queue_to_check: dict[tuple[str, str], str] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # MultiKueue checks
    configs: dict[str, list[str]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)


class ManagerClusterSource:
    def __init__(
        self,
        runtime: ManagerRuntime,
        kubeconfig: dict[str, Any],
        *,
        kueue_namespace: str = MANAGER_NAMESPACE,
        interval: float = 30.0,
    ) -> None:
        self._runtime = runtime
        self._namespace = kueue_namespace
        self._interval = interval
        # The kinds of the manager cluster's own jobs, and of every row (a REST submission
        # of any kind the manager dispatches may wait in a manager-cluster queue).
        self._kinds = runtime.settings.job_kinds()
        self._dispatched = runtime.settings.dispatched_kinds()
        self._group_kinds = pod_group_kinds(self._dispatched)
        self._connection = ClusterConnection(
            "manager-cluster",
            kubeconfig,
            origin=runtime.settings.origin,
            listener=self,
            settings=dataclasses.replace(runtime.settings.connection_settings(), kinds=self._kinds),
            selectors={
                **{kind: None for kind in WATCHED_KINDS},
                **dict.fromkeys(kinds_by_cache(self._kinds), QUEUE_NAME_LABEL),
                WORKLOADS: None,
            },
        )
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._synced_status: dict[tuple[str, str], str] = {}
        # Row id -> the names of its Workloads after the first (_follower_names).
        self._followers: dict[int, list[str]] = {}
        self._listed = False  # the caches hold a listing (kept while the cluster is away)
        self._kubeconfig_digest: dict[str, str] = {}
        self.passes = 0
        settings = runtime.settings
        self.webhooks: WebhookServer | None = None
        if settings.webhook_port is not None and settings.webhook_url is not None:
            self.webhooks = manager_webhook_server(
                self._connection,
                self._kinds,
                kueue_namespace,
                host=settings.webhook_host,
                port=settings.webhook_port,
                url=settings.webhook_url,
            )
        self._serving: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._runtime.dispatcher.on_change(self._wake.set)  # worker status to copy back
        self._runtime.dispatcher.follower_reserved = self.follower_reserved
        self._connection.start()
        self._task = asyncio.create_task(self._run(), name="manager-cluster-source")
        if self.webhooks is not None:
            self._serving = asyncio.create_task(
                self._serve_webhooks(self.webhooks), name="manager-webhooks"
            )

    async def _serve_webhooks(self, server: WebhookServer) -> None:
        """Serve once the caches are listed (a decision needs the queues and checks)."""
        while True:
            if self._connection.ready:
                try:
                    await server.start()
                    log.info("manager cluster webhooks served on port %s", server.port)
                    return
                except Exception as error:
                    log.warning("manager cluster webhooks could not start yet: %s", error)
            await asyncio.sleep(1.0)

    async def stop(self) -> None:
        if self._serving is not None:
            self._serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        if self.webhooks is not None:
            await self.webhooks.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._connection.stop()

    # ---- what the watch says (ConnectionListener) -----------------------------------------

    async def cluster_connected(self, connection: ClusterConnection) -> None:
        self._listed = True
        self._wake.set()

    async def cluster_unhealthy(
        self, connection: ClusterConnection, state: str, reason: str, message: str
    ) -> None:
        log.warning("manager cluster %s: %s: %s", state, reason, message)

    def object_changed(self, connection: ClusterConnection, kind: str, key: Key) -> None:
        self._wake.set()

    def wake(self) -> None:
        """Run a pass soon (a REST submission into a manager-cluster queue needs its Workload)."""
        self._wake.set()

    async def _run(self) -> None:
        """A pass after every burst of changes (and every `interval` to be safe)."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            await asyncio.sleep(0.05)  # let a burst of events land in the cache first
            self._wake.clear()
            if not self._connection.ready:
                continue
            try:
                await self.sync_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("manager cluster pass failed")
                self._wake.set()
                await asyncio.sleep(1.0)

    # ---- one pass --------------------------------------------------------------------------

    @property
    def _api(self) -> client.ApiClient:
        api = self._connection.api_client
        if api is None:
            raise Unreachable("NotConnected", "the manager cluster is not connected")
        return api

    async def sync_once(self) -> None:
        topology = self._read_topology()
        await self._sync_workers(topology)
        await self._sync_checks(topology)
        await self._sync_jobs(topology)
        self.passes += 1

    def _list(self, kind: str) -> list[dict[str, Any]]:
        return list(self._connection.caches[kind].values())

    def _read_topology(self) -> _Topology:
        checks = {
            ac["metadata"]["name"]: ((ac.get("spec") or {}).get("parameters") or {}).get("name")
            for ac in self._list("admissionchecks")
            if (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER
        }
        topology = _Topology()
        topology.checks = {
            ac["metadata"]["name"]: ac
            for ac in self._list("admissionchecks")
            if ac["metadata"]["name"] in checks
        }
        cq_config: dict[str, str] = {}
        cq_check: dict[str, str] = {}
        for cq in self._list("clusterqueues"):
            strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
            names = [c.get("name") for c in strategy.get("admissionChecks") or []]
            names += list((cq.get("spec") or {}).get("admissionChecks") or [])
            for name in names:
                if checks.get(name):
                    cq_config[cq["metadata"]["name"]] = str(checks[name])
                    cq_check[cq["metadata"]["name"]] = str(name)
        cluster_queues: dict[tuple[str, str], str] = {}
        for lq in self._list("localqueues"):
            target = (lq.get("spec") or {}).get("clusterQueue")
            meta = lq["metadata"]
            cluster_queues[(meta["namespace"], meta["name"])] = str(target or "")
            if target in cq_config:
                topology.queue_to_config[(meta["namespace"], meta["name"])] = cq_config[target]
                topology.queue_to_check[(meta["namespace"], meta["name"])] = cq_check[target]
        # Kueue labels the MultiKueue metrics with the ClusterQueue, not the LocalQueue.
        self._runtime.metrics.set_cluster_queues(cluster_queues)
        used = set(cq_config.values())
        for config in self._list("multikueueconfigs"):
            if config["metadata"]["name"] in used:
                topology.configs[config["metadata"]["name"]] = list(
                    (config.get("spec") or {}).get("clusters") or []
                )
        wanted = {name for names in topology.configs.values() for name in names}
        for cluster in self._list("multikueueclusters"):
            if cluster["metadata"]["name"] in wanted:
                topology.clusters[cluster["metadata"]["name"]] = cluster
        return topology

    # ---- workers -----------------------------------------------------------------------------

    async def _kubeconfig_of(self, cluster: dict[str, Any]) -> tuple[str | None, str, str]:
        """(kubeconfig text or None, reason, message) from a MultiKueueCluster's source."""
        source = ((cluster.get("spec") or {}).get("clusterSource") or {}).get("kubeConfig") or {}
        location = source.get("location")
        if not location:
            return None, "BadConfig", "spec.clusterSource.kubeConfig.location is not set"
        if source.get("locationType", "Secret") == "Path":
            path = Path(location)
            if ".." in path.parts or not path.is_absolute():
                return None, "BadConfig", f"path {location!r} must be absolute without '..'"
            try:
                return await asyncio.to_thread(path.read_text), "", ""
            except OSError as error:
                return None, "BadConfig", f"cannot read {location}: {error.strerror}"
        core = client.CoreV1Api(self._api)
        try:
            secret = await core.read_namespaced_secret(location, self._namespace)
        except ApiException as error:
            if error.status == 404:
                return None, "BadConfig", f"secret {self._namespace}/{location} not found"
            raise
        data = (secret.data or {}).get("kubeconfig")
        if not data:
            return None, "BadConfig", f"secret {self._namespace}/{location} has no kubeconfig key"
        return base64.b64decode(data).decode(), "", ""

    async def _sync_workers(self, topology: _Topology) -> None:
        runtime = self._runtime
        for name, cluster in topology.clusters.items():
            text, reason, message = await self._kubeconfig_of(cluster)
            if text is not None:
                try:
                    load_kubeconfig(text)
                except KubeconfigError as error:
                    text, reason, message = None, "BadKubeConfig", str(error)
            if text is None:
                await self._set_active(cluster, False, reason, message)
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()
            if self._kubeconfig_digest.get(name) != digest:
                await self._store_cluster(name, text)
                self._kubeconfig_digest[name] = digest
            connection = runtime.dispatcher.connections.get(name)
            if connection is not None and connection.ready:
                await self._set_active(cluster, True, "Active", "Connected")
            elif connection is not None and connection.reason:
                await self._set_active(
                    cluster, False, "ClientConnectionFailed", connection.message or ""
                )
        async with runtime.sessions() as session:
            stored = [
                r.name
                for r in await cluster_queries.list_clusters(session)
                if r.source == CLUSTER_SOURCE
            ]
        for name in stored:
            if name not in topology.clusters:
                await runtime.dispatcher.remove_cluster(name)
                async with runtime.decide() as session:
                    await cluster_queries.delete_cluster(session, name)
                self._kubeconfig_digest.pop(name, None)

    async def _store_cluster(self, name: str, text: str) -> None:
        runtime = self._runtime
        now = runtime.clock.now()
        encrypted = runtime.cipher.encrypt(text)
        async with runtime.decide() as session:
            row = await cluster_queries.get_cluster(session, name)
            if row is None:
                await cluster_queries.add_cluster(
                    session,
                    name=name,
                    kubeconfig_encrypted=encrypted,
                    token_digest=runtime.tokens.digest(new_token()),
                    source=CLUSTER_SOURCE,
                    now=now,
                )
                await append_event(
                    session,
                    at=now,
                    kind="ClusterRegistered",
                    message="from MultiKueueCluster",
                    cluster=name,
                )
            elif self._stored_kubeconfig(row.kubeconfig_encrypted) == text:
                # Registered already (through REST, or before a restart) with this very
                # kubeconfig: its connection stays, so no request in flight on it is cut.
                return
            else:
                row.kubeconfig_encrypted = encrypted
        await runtime.dispatcher.reconnect_cluster(name)

    async def _sync_checks(self, topology: _Topology) -> None:
        """Each MultiKueue check's Active condition in Kueue's words (`multikueue_checks`), and
        the dispatcher's cluster order per queue: the order of its MultiKueueConfig.

        Existence is read from the caches, not the topology: the topology keeps only configs a
        ClusterQueue uses, and Kueue reports on every MultiKueue check, used or not.
        """
        dispatcher = self._runtime.dispatcher
        connected = dispatcher.ready_connections()
        configs = {
            config["metadata"]["name"]: list((config.get("spec") or {}).get("clusters") or [])
            for config in self._list("multikueueconfigs")
        }
        existing = {cluster["metadata"]["name"] for cluster in self._list("multikueueclusters")}
        for check in topology.checks.values():
            parameters = (check.get("spec") or {}).get("parameters")
            active, reason, message = check_condition(parameters, configs, existing, connected)
            await self._set_active(check, active, reason, message, "admissionchecks")
        # Kueue's incremental dispatcher goes down spec.clusters in order
        # (pkg/controller/workloaddispatcher/incrementaldispatcher.go).
        dispatcher.cluster_order = {
            queue: tuple(topology.configs.get(config, ()))
            for queue, config in topology.queue_to_config.items()
        }

    def _stored_kubeconfig(self, encrypted: bytes) -> str | None:
        try:
            return self._runtime.cipher.decrypt(encrypted)
        except EncryptionKeyError:
            return None  # stored under another key: replace it

    async def _set_active(
        self,
        cluster: dict[str, Any],
        active: bool,
        reason: str,
        message: str,
        plural: str = "multikueueclusters",
    ) -> None:
        """Keep the Active condition of a MultiKueueCluster or AdmissionCheck true to the facts."""
        status = "True" if active else "False"
        current = [
            c
            for c in (cluster.get("status") or {}).get("conditions") or []
            if c.get("type") == "Active"
        ]
        message = message[:1000] or reason
        if current and (
            current[0].get("status"),
            current[0].get("reason"),
            current[0].get("message"),
        ) == (status, reason, message):
            # Kueue rewrites the condition when any of the three changed (cmpConditionState in
            # pkg/controller/admissionchecks/multikueue/admissioncheck.go).
            return
        condition = {
            "type": "Active",
            "status": status,
            "reason": reason,
            "message": message,
            # The time of the last change of status, not of every rewording.
            "lastTransitionTime": current[0].get("lastTransitionTime")
            if current and current[0].get("status") == status
            else rfc3339(self._runtime.clock.now()),
            "observedGeneration": (cluster.get("metadata") or {}).get("generation", 0),
        }
        custom = client.CustomObjectsApi(self._api)
        with contextlib.suppress(ApiException):
            await custom.patch_cluster_custom_object_status(
                KUEUE_GROUP,
                KUEUE_VERSION,
                plural,
                cluster["metadata"]["name"],
                {"status": {"conditions": [condition]}},
                _content_type="application/merge-patch+json",  # type: ignore[call-arg]
            )

    # ---- jobs ---------------------------------------------------------------------------------

    async def _sync_jobs(self, topology: _Topology) -> None:
        caches = self._connection.kinds_by_cache
        jobs = [job for cache in caches for job in self._list(cache)]
        present: dict[tuple[str, str], dict[str, Any]] = {}
        for job in jobs:
            meta = job["metadata"]
            queue = (meta.get("labels") or {}).get(QUEUE_NAME_LABEL)
            if (meta["namespace"], queue) not in topology.queue_to_config:
                continue
            present[(meta["namespace"], meta["name"])] = job
        async with self._runtime.sessions() as session:
            rows = list(
                (
                    await session.execute(
                        select(WorkloadRow)
                        .options(load_only(*_ROW_COLUMNS))
                        .where(
                            or_(
                                WorkloadRow.source == SOURCE,
                                WorkloadRow.quota_reserved.is_not(None),
                            )
                        )
                    )
                ).scalars()
            )
        known = {(r.namespace, r.name): r for r in rows if r.source == SOURCE}
        new_jobs: list[dict[str, Any]] = []
        mirrored: list[tuple[dict[str, Any], WorkloadRow]] = []
        for key, job in present.items():
            row = known.get(key)
            if row is None:
                new_jobs.append(job)
            elif row.uid == job["metadata"].get("uid") and (
                row.state not in states.FINAL_STATES or row.remote_status
            ):
                mirrored.append((job, row))

        # The rows are independent of one another, so each step works on many at once; the
        # Workloads Kueue there has just reserved quota for go to the dispatcher first, before
        # this pass records the jobs that came since the last one.
        async def sync_workload(row: WorkloadRow) -> None:
            check = topology.queue_to_check.get((row.namespace, row.queue))
            job = present.get((row.namespace, row.name)) if row.source == SOURCE else None
            await self._sync_workload(row, check, job)

        # Rows with quota_reserved None were sent without a manager-cluster queue (REST into
        # a worker's).
        await _each([row for row in rows if row.quota_reserved is not None], sync_workload)
        classes = MemoReader(self)  # the new jobs of this pass share their class reads
        await _each(new_jobs, lambda job: self._admit_job(job, classes))
        # The check's state before the jobs' status: a job that ran shows Admitted on its
        # Workload before its mirrored end finishes it, as under Kueue's MultiKueue.
        await _each(mirrored, lambda pair: self._sync_status(*pair))
        live = {row.id for row in rows}
        for row_id in [row_id for row_id in self._followers if row_id not in live]:
            del self._followers[row_id]
        for key, row in known.items():
            gone = key not in present or present[key]["metadata"].get("uid") != row.uid
            if gone and row.state not in states.FINAL_STATES and not row.cancel_requested:
                await self._cancel(row, "its Job was deleted from the manager cluster")

    def multikueue_queue(self, namespace: str, name: str) -> bool | None:
        """Whether the manager cluster's LocalQueue `namespace/name` exists and its
        ClusterQueue dispatches through MultiKueue (a REST submission into it then waits for
        quota there, as a job created in the cluster does). From the last listing when the
        cluster is briefly away; None before it was ever listed (nobody can tell yet)."""
        if not self._listed:
            return None
        return (namespace, name) in self._read_topology().queue_to_config

    async def _admit_job(self, job: dict[str, Any], classes: ClassReader) -> None:
        """Record a manager-cluster job; it is dispatched once Kueue there reserves its quota.
        Its priority comes from the manager cluster's classes, read through `classes`."""
        runtime = self._runtime
        meta = job["metadata"]
        try:
            parsed = parse_job(job, self._kinds)
        except ManifestError as error:
            log.warning(
                "Job %s/%s cannot be dispatched: %s", meta["namespace"], meta["name"], error
            )
            return
        kind = self._kinds.named(parsed.kind)
        if not kind.is_suspended(job) and kind.managed_by(job) != MULTIKUEUE_CONTROLLER:
            # Kueue's webhook would have suspended it at creation; do it now, before it runs here.
            with contextlib.suppress(ApiException):
                await self._patch_job(kind, meta["namespace"], meta["name"], kind.suspend_patch())
        uid = str(meta.get("uid") or "")
        try:
            priority = await job_priority(parsed, classes)
        except ApiException as error:
            log.info(
                "Job %s/%s: priority classes not read: %s",
                meta["namespace"],
                meta["name"],
                error.reason,
            )
            return  # the next pass tries again
        if isinstance(priority, PriorityClassNotFound):
            # Kueue on the manager cluster makes no Workload for it until the class exists.
            log.warning("Job %s/%s: %s", meta["namespace"], meta["name"], priority.message)
            return
        now = runtime.clock.now()
        row = workload_queries.new_workload_row(
            parsed,
            uid=uid,
            workload_name=workload_name(kind, parsed.name, uid),
            priority=priority,
            source=SOURCE,
            now=now,
            message=WAITING_FOR_WORKLOAD,
            quota_reserved=False,
        )
        try:
            await workload_queries.insert_submitted(
                runtime.dispatcher.writer, row, f"from the manager cluster, queue {parsed.queue}"
            )
        except IntegrityError:
            return  # the same name was submitted through REST; that one is dispatched
        runtime.dispatcher.workload_added(row)

    # ---- manager.priority.ClassReader: the manager cluster's priority classes ----------

    async def read_custom(
        self, plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        custom = client.CustomObjectsApi(self._api)
        found: dict[str, Any] | None = await _none_if_missing(
            custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, plural, name)
        )
        return found

    async def read_priority_class(self, name: str) -> dict[str, Any] | None:
        found = await _none_if_missing(client.SchedulingV1Api(self._api).read_priority_class(name))
        return None if found is None else dict(self._api.sanitize_for_serialization(found))

    async def list_priority_classes(self) -> list[dict[str, Any]]:
        found = await client.SchedulingV1Api(self._api).list_priority_class()
        return [dict(self._api.sanitize_for_serialization(item)) for item in found.items]

    async def _sync_status(self, job: dict[str, Any], row: WorkloadRow) -> None:
        """Copy the worker Job's status to the manager's Job (which never runs itself)."""
        remote = row.remote_status
        if remote is None:
            return
        kind = self._kinds.named(row.kind)
        if not kind.status_mirrors_now(job, remote, winner=row.cluster):
            return
        digest = hashlib.sha256(json.dumps(remote, sort_keys=True).encode()).hexdigest()
        key = (row.namespace, row.name)
        if self._synced_status.get(key) == digest:
            return
        # A merge patch keeps what it does not name: a field the worker's Job dropped (`active`
        # once it finished, the pods of an emptied `uncountedTerminatedPods`) is cleared
        # explicitly, or kube-apiserver refuses the mix.
        patch = merge_patch_to(job.get("status") or {}, remote)
        try:
            await self._patch_job(kind, row.namespace, row.name, {"status": patch}, "status")
            self._synced_status[key] = digest
        except ApiException as error:
            log.info(
                "status of %s %s/%s not synced: %s: %s",
                kind.resource.kind,
                row.namespace,
                row.name,
                error.reason,
                status_message(error),
            )

    async def _patch_job(
        self, kind: JobKind, namespace: str, name: str, patch: dict[str, Any], part: str = ""
    ) -> None:
        """Merge-patch a manager-cluster job of `kind` (`part` "status": its status)."""
        custom = client.CustomObjectsApi(self._api)
        patch_object = (
            custom.patch_namespaced_custom_object_status
            if part == "status"
            else custom.patch_namespaced_custom_object
        )
        resource = kind.resource
        await patch_object(
            resource.group,
            resource.version,
            namespace,
            resource.plural,
            name,
            patch,
            _content_type="application/merge-patch+json",  # type: ignore[call-arg]
        )

    async def _sync_workload(
        self, row: WorkloadRow, check: str | None, job: dict[str, Any] | None
    ) -> None:
        """Follow the manager's Workload of a workload under a manager-cluster queue: dispatch
        it while Kueue there holds its quota, and write the MultiKueue check's state."""
        key = (row.namespace, row.workload_name)
        workload = self._connection.caches[WORKLOADS].get(key)
        standalone = row.source != SOURCE
        if standalone:
            await self._sync_followers(row, check)
        if workload is None:
            if row.state in states.FINAL_STATES or row.cancel_requested:
                return
            if standalone:
                await self._create_standalone(row, row.workload_name, 0)
                return
            await self._record(row, False, WAITING_FOR_WORKLOAD)
            return
        if standalone and (row.cancel_requested or row.state == states.CANCELLED):
            await self._delete_workload(key)
            return
        if check is None:
            # Its queue no longer dispatches through MultiKueue (or is gone): it waits.
            await self._record(row, False, pending_message(workload))
            return
        record = Record(row.state, row.cluster, list(row.nominated or []), row.message, standalone)
        external = self._runtime.settings.dispatcher is DispatchMode.EXTERNAL
        decision = decide(
            record,
            workload,
            check,
            rfc3339(self._runtime.clock.now()),
            owner_managed=owner_is_managed(job, self._kinds) if job is not None else (True, ""),
            external=external,
        )
        named = external_nominations(workload) if external and row.cluster is None else None
        if named is not None and named != (row.external_nominations or None):
            async with self._runtime.decide() as session:
                await workload_queries.set_external_nominations(session, row.id, named)
            row.external_nominations = named
            self._runtime.dispatcher.enqueue(row.id)
        written = decision.status is not None and await self._write_workload_status(
            workload, decision.status
        )
        if written and decision.status is not None:
            await self._announce(workload, check, decision.status)
        if row.state not in states.FINAL_STATES:
            await self._record(row, decision.reserved, decision.message)

    async def _record(self, row: WorkloadRow, reserved: bool, message: str | None) -> None:
        """Store whether the manager's quota holds the workload, and why it waits; wake its
        reconcile when that changes."""
        shown = message if not reserved and row.cluster is None else row.message
        if row.quota_reserved == reserved and (reserved or row.message == shown):
            return
        values: dict[str, Any] = {"quota_reserved": reserved}
        if not reserved and row.cluster is None and row.state != states.EVICTED:
            values["message"] = shown
        elif reserved and row.quota_reserved is False and row.cluster is None:
            values["message"] = None  # it no longer waits on the manager: the workers say next
        change = workload_queries.workload_change(row.id, values, now=self._runtime.clock.now())
        if await self._runtime.dispatcher.writer.write(change) is None:
            return
        row.quota_reserved = reserved
        row.message = values.get("message", row.message)
        self._runtime.dispatcher.enqueue(row.id)

    async def _sync_followers(self, row: WorkloadRow, check: str | None) -> None:
        """The manager's Workloads of a REST submission's other groups (a LeaderWorkerSet's
        after the first: manager.jobs.workload_names), each followed as Kueue's MultiKueue
        follows a component Workload of its own: made beside the first and deleted with it;
        while the first's winner holds it, its check goes Ready once its copy is admitted
        there (the dispatcher sends the copy once this Workload holds quota:
        follower_reserved), and Retry when that copy is evicted."""
        names = await self._follower_names(row)
        ending = row.cancel_requested or row.state in states.FINAL_STATES
        at = rfc3339(self._runtime.clock.now())
        for index, name in enumerate(names, start=1):
            key = (row.namespace, name)
            workload = self._connection.caches[WORKLOADS].get(key)
            if ending:
                if workload is not None:
                    await self._delete_workload(key)
                continue
            if workload is None:
                await self._create_standalone(row, name, index)
                continue
            if check is None:
                continue
            dispatcher = self._runtime.dispatcher
            admitted = row.cluster is not None and dispatcher.copy_admitted(row.cluster, key)
            record = Record(row.state, row.cluster if admitted else None, (), None, True)
            decision = decide(record, workload, check, at)
            written = decision.status is not None and await self._write_workload_status(
                workload, decision.status
            )
            if written and decision.status is not None:
                await self._announce(workload, check, decision.status)
            if row.cluster is not None and decision.reserved and not admitted:
                dispatcher.enqueue(row.id)  # its copy goes to the winner

    async def _follower_names(self, row: WorkloadRow) -> list[str]:
        """The names of a row's Workloads after its first; read once per row."""
        kind = self._group_kinds.get(row.kind)
        if kind is None:
            return []
        names = self._followers.get(row.id)
        if names is None:
            manifest = await self._manifest(row)
            names = workload_names(kind, manifest, row.uid)[1:] if manifest is not None else []
            self._followers[row.id] = names
        return names

    def follower_reserved(self, key: tuple[str, str]) -> bool:
        """Whether the manager's Workload `key` (namespace, name) holds quota here."""
        workload = self._connection.caches[WORKLOADS].get(key)
        return workload is not None and holds_reservation(workload)

    async def _manifest(self, row: WorkloadRow) -> dict[str, Any] | None:
        async with self._runtime.sessions() as session:
            manifest: dict[str, Any] | None = (
                await session.execute(select(WorkloadRow.manifest).where(WorkloadRow.id == row.id))
            ).scalar_one_or_none()
        return manifest

    async def _create_standalone(self, row: WorkloadRow, name: str, index: int) -> None:
        manifest = await self._manifest(row)
        if manifest is None:
            return
        body = standalone_workload(
            self._dispatched.named(row.kind),
            manifest,
            workload_name=name,
            priority_class=PriorityClassRef.named(row.priority_class, row.priority_class_kind),
            priority=row.priority,
            index=index,
        )
        custom = client.CustomObjectsApi(self._api)
        try:
            await custom.create_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, row.namespace, WORKLOADS, body
            )
        except ApiException as error:
            if error.status != 409:
                log.info(
                    "Workload %s/%s not created in the manager cluster: %s: %s",
                    row.namespace,
                    name,
                    error.reason,
                    status_message(error),
                )

    async def _delete_workload(self, key: tuple[str, str]) -> None:
        custom = client.CustomObjectsApi(self._api)
        with contextlib.suppress(ApiException):
            await custom.delete_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, key[0], WORKLOADS, key[1]
            )

    async def _announce(self, workload: dict[str, Any], check: str, status: dict[str, Any]) -> None:
        """A `MultiKueue` Event on the manager's Workload when the check changed state, in
        its message's words, as Kueue's MultiKueue controller records it. Best effort."""
        before = (check_entry(workload, check) or {}).get("state")
        after = next((e for e in status.get("admissionChecks") or [] if e["name"] == check), None)
        if after is None or after.get("state") == before:
            return
        event = build_event(
            {"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "Workload", **workload},
            "Warning" if after["state"] in ("Retry", "Rejected") else "Normal",
            "MultiKueue",
            str(after.get("message") or after["state"]),
            self._runtime.clock.now(),
            EVENT_COMPONENT,
        )
        core = client.CoreV1Api(self._api)
        try:
            await core.create_namespaced_event(
                event["metadata"]["namespace"],
                event,
                _request_timeout=self._runtime.settings.worker_request_timeout_seconds,
            )
        except (ApiException, TimeoutError, OSError) as error:
            log.debug("event on Workload %s not posted: %s", workload["metadata"]["name"], error)

    async def _write_workload_status(
        self, workload: dict[str, Any], status: dict[str, Any]
    ) -> bool:
        """Merge-patch the status, on the version read (a 409 means Kueue there changed it
        meanwhile: the next pass decides again on the new one). True when written."""
        meta = workload["metadata"]
        custom = client.CustomObjectsApi(self._api)
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
        try:
            await custom.patch_namespaced_custom_object_status(
                KUEUE_GROUP,
                KUEUE_VERSION,
                meta["namespace"],
                WORKLOADS,
                meta["name"],
                patch,
                _content_type="application/merge-patch+json",  # type: ignore[call-arg]
            )
        except ApiException as error:
            if error.status == 409:
                self._wake.set()
                return False
            log.info(
                "status of Workload %s/%s not written: %s: %s",
                meta["namespace"],
                meta["name"],
                error.reason,
                status_message(error),
            )
            return False
        return True

    async def _cancel(self, row: WorkloadRow, message: str) -> None:
        runtime = self._runtime
        async with runtime.decide() as session:
            fresh = await workload_queries.get_workload_by_id(session, row.id, for_update=True)
            if fresh is None or fresh.state in states.FINAL_STATES:
                return
            fresh.cancel_requested = True
            await append_event(
                session,
                at=runtime.clock.now(),
                kind="CancelRequested",
                message=message,
                workload_id=row.id,
            )
        runtime.dispatcher.enqueue(row.id)


def merge_patch_to(current: Any, desired: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns `current` into `desired`: what `current`
    has and `desired` lacks is nulled at every depth (a patch of `{}` would leave an object's
    old keys in place); lists and scalars are replaced whole."""
    if not isinstance(current, dict) or not isinstance(desired, dict):
        return desired
    patch: dict[str, Any] = {key: None for key in current if key not in desired}
    for key, value in desired.items():
        patch[key] = merge_patch_to(current[key], value) if key in current else value
    return patch


async def _each(items: Sequence[T], work: Callable[[T], Awaitable[None]]) -> None:
    """`work` on every item, _PASS_CONCURRENCY at a time; the first failure cancels the rest
    (the pass is tried again)."""
    limit = asyncio.Semaphore(_PASS_CONCURRENCY)

    async def one(item: T) -> None:
        async with limit:
            await work(item)

    async with asyncio.TaskGroup() as group:
        for item in items:
            group.create_task(one(item))


def read_kubeconfig_file(path: str) -> dict[str, Any]:
    try:
        with open(path) as handle:
            data = load_yaml(handle.read())
    except DocumentError as error:
        raise KubeconfigError(f"{path}: {error}") from error
    if not isinstance(data, dict):
        raise KubeconfigError(f"{path} is not a kubeconfig")
    load_kubeconfig(data)
    return data
