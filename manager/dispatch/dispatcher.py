"""The dispatcher shell: reconciles each workload from the database and the cluster caches.

Level-based, as controller-runtime reconcilers are: any event only enqueues a workload id; the
reconcile reads the current state (Postgres + the watch caches) and moves it one step on. So a
replayed event, a restart or a relist is harmless. Decisions come from the pure functions in
`nomination` and `remote_state`; this module does the I/O around them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy import select

from kueue_api.jobs import DispatchedKind
from kueue_api.priority import PriorityClassRef
from kueue_api.quantity import Quantity, QuantityError
from manager import states
from manager.db import clusters as cluster_queries
from manager.db import workloads as workload_queries
from manager.db.credentials import KubeconfigCipher
from manager.db.events import EventSpec, append_event
from manager.db.fence import Fence, deciding
from manager.db.guarded import GuardedWriter
from manager.db.records import AttemptRecord, WorkloadReader, WorkloadRecord
from manager.db.session import SessionFactory, read_sessions
from manager.db.tables import AttemptRow, ClusterRow, WorkloadRow
from manager.dispatch import preemption, refusals
from manager.dispatch.batch_reads import CoalescingLoader
from manager.dispatch.eviction import take_back
from manager.dispatch.nomination import (
    Candidate,
    DispatchConfig,
    DispatchMode,
    Nomination,
    WorkloadDemand,
    candidate_from_report,
    nominate,
)
from manager.dispatch.remote_state import (
    WAITING_REASONS,
    CopyState,
    earliest_admitted,
    is_terminating,
    job_state,
    waiting_reason,
    waiting_summary,
    workload_copy_state,
)
from manager.dispatch.timing import Clock, is_lost
from manager.dispatch.workqueue import WorkQueue
from manager.jobs import pod_group_kinds, workload_copy, workload_names
from manager.metrics import ManagerMetrics
from manager.remote.api_errors import status_message, status_reason
from manager.remote.connection import (
    JOBS,
    LOCAL_QUEUES,
    WORKLOADS,
    ClusterConnection,
    ConnectionSettings,
    Key,
    Unreachable,
    job_caches,
    kinds_by_cache,
)
from manager.remote.kubeconfig import KubeconfigError, load_kubeconfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DispatcherSettings:
    origin: str = "multikueue"
    dispatch: DispatchConfig = field(default_factory=DispatchConfig)
    worker_lost_timeout: timedelta = timedelta(minutes=15)
    capacity_freshness: timedelta = timedelta(seconds=60)
    # One preemption at a time: how long the single worker offered a workload that needs
    # preemption keeps it before the next cheapest is offered it instead.
    preemption_round_timeout: timedelta = timedelta(minutes=2)
    # Real-time periods of the housekeeping loops; timeouts themselves read the injected clock.
    resync_seconds: float = 30.0
    gc_seconds: float = 60.0
    lost_check_seconds: float = 5.0
    workers: int = 16
    # How long the first reconcile to read waits for others to share its query (see
    # batch_reads): a few milliseconds of latency for one read instead of many under a backlog.
    read_window_seconds: float = 0.002
    connection: ConnectionSettings = field(default_factory=ConnectionSettings)


_UNSEEN: tuple[object, ...] = ("unseen",)


def _signature(
    kind: str, obj: dict[str, Any] | None, kinds: Mapping[str, DispatchedKind]
) -> tuple[object, ...] | None:
    """The part of a remote object (in the cache `kind`; `kinds`: each job cache's kind) the
    reconcile acts on."""
    if obj is None:
        return None
    if kind == WORKLOADS:
        state = workload_copy_state(obj)
        return (state.admitted, state.finished, state.evicted_reason, state.uid, state.terminating)
    job = job_state(kinds[kind], obj)
    return (job.finished, job.started, (obj.get("metadata") or {}).get("uid"))


def _inert(kind: str, signature: tuple[object, ...] | None) -> bool:
    """A copy or Job that is neither admitted, started, finished nor evicted: nothing to do."""
    if signature is None:
        return False
    if kind == WORKLOADS:
        admitted, finished, evicted, _, _ = signature
        return not admitted and finished is None and evicted is None
    finished, started, _ = signature
    return finished is None and not started


def _report_stands(seen: CopyState | None) -> bool:
    """An agent's report may be ahead of the watch; a copy the watch already shows evicted,
    finished or being deleted overrules it."""
    return seen is None or (
        seen.evicted_reason is None and seen.finished is None and not seen.terminating
    )


@dataclass
class _Capacity:
    at: datetime
    entries: list[dict[str, Any]]
    # Requests (milli) sent per ClusterQueue since this report.
    sent: dict[str, dict[str, int]] = field(default_factory=dict)


class Dispatcher:
    def __init__(
        self,
        sessions: SessionFactory,
        cipher: KubeconfigCipher,
        settings: DispatcherSettings,
        clock: Clock,
        metrics: ManagerMetrics,
        fence: Fence | None = None,
    ) -> None:
        """`fence`: the epoch this replica leads under, when several may run (manager.leadership);
        then every decision the dispatcher commits is refused once another replica leads."""
        self._sessions = sessions
        fence = fence or Fence(enabled=False)
        self._decide = functools.partial(deciding, sessions, fence)
        self._reads = read_sessions(sessions)
        self.writer = GuardedWriter(sessions.kw["bind"], fence)
        self._reader = WorkloadReader(sessions.kw["bind"])
        self._cipher = cipher
        self.settings = settings
        self._clock = clock
        self._metrics = metrics
        self.connections: dict[str, ClusterConnection] = {}
        self._kinds = settings.connection.kinds
        self._job_caches = job_caches(self._kinds)
        self._kinds_by_cache = kinds_by_cache(self._kinds)
        self._group_kinds = pod_group_kinds(self._kinds)
        self._queue: WorkQueue[int] = WorkQueue()
        self._rows = CoalescingLoader(self._reader.by_ids, window=settings.read_window_seconds)
        self._tasks: list[asyncio.Task[None]] = []
        # (namespace, workload name) and (namespace, job name) -> workload id.
        self._by_workload_name: dict[Key, int] = {}
        self._by_job_name: dict[Key, int] = {}
        self._capacity: dict[str, _Capacity] = {}
        # (namespace, LocalQueue) -> the clusters of its MultiKueueConfig in order, set by the
        # manager-cluster source; the Incremental mode nominates in this order (queues not in
        # it, REST-only ones, by name).
        self.cluster_order: dict[Key, tuple[str, ...]] = {}
        # Copies this manager created and has not yet seen deleted: (cluster, kind, key).
        self._expected: set[tuple[str, str, Key]] = set()
        # What the reconcile last could have seen of each remote object (see object_changed).
        self._signatures: dict[tuple[str, str, Key], tuple[object, ...] | None] = {}
        # Event-loop time of each workload's last reconcile; the resync skips recent ones.
        self._reconciled_at: dict[int, float] = {}
        self.started = False
        # Stopped for good (a deposed leader's): the next term gets a new Dispatcher.
        self.stopped = False
        self._change_listeners: list[Callable[[], None]] = []
        # Workload id -> when (loop time) its copy was first seen finished ahead of its Job.
        self._job_end_seen: dict[int, float] = {}
        # Writes to a worker that no reconcile waits for (a copy sent, a loser's copies
        # removed), the last per (cluster, workload key), each after the one before it: a
        # worker that hangs delays its own copies, never another cluster's Job.
        self._remote_ops: dict[tuple[str, Key], tuple[str, asyncio.Task[None]]] = {}
        # Whether the manager cluster's Workload (namespace, name) holds quota there: set by
        # the manager-cluster source; a follower of a workload held there waits for its own.
        self.follower_reserved: Callable[[Key], bool] | None = None

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback` after the dispatcher commits a change of some workload's state."""
        self._change_listeners.append(callback)

    def _changed(self) -> None:
        for callback in self._change_listeners:
            callback()

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        async with self._reads() as session:
            ids = await workload_queries.ids_needing_work(session)
            rows = (
                await session.execute(select(WorkloadRow).where(WorkloadRow.id.in_(ids)))
            ).scalars()
            for row in rows:
                self._index(row)
            clusters = await cluster_queries.list_clusters(session)
        for cluster in clusters:
            if cluster.capacity is not None and cluster.capacity_reported_at is not None:
                self._capacity[cluster.name] = _Capacity(
                    cluster.capacity_reported_at, list(cluster.capacity)
                )
            self._connect(cluster)
        for _ in range(self.settings.workers):
            self._spawn(self._queue.run_worker(self._reconcile_safely), "reconcile")
        self._spawn(self._periodic(self.settings.resync_seconds, self._resync), "resync")
        self._spawn(self._periodic(self.settings.gc_seconds, self._collect_garbage), "gc")
        self._spawn(
            self._periodic(self.settings.lost_check_seconds, self.check_lost_workers), "lost"
        )
        for workload_id in ids:
            self._queue.add(workload_id)
        self.started = True

    def _spawn(self, coroutine: Any, name: str) -> None:
        self._tasks.append(asyncio.create_task(coroutine, name=f"dispatcher-{name}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        operations = [task for _, task in self._remote_ops.values()]
        for task in operations:
            task.cancel()
        await asyncio.gather(*operations, return_exceptions=True)
        self._remote_ops.clear()
        self._queue.close()
        await asyncio.gather(*(c.stop() for c in self.connections.values()))
        self.connections.clear()
        self.started = False
        self.stopped = True

    async def _periodic(self, seconds: float, action: Any) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await action()
            except Exception:
                log.exception("periodic %s failed", getattr(action, "__name__", action))

    # ---- clusters --------------------------------------------------------------------------

    def _connect(self, row: ClusterRow) -> None:
        try:
            kubeconfig, _ = load_kubeconfig(self._cipher.decrypt(row.kubeconfig_encrypted))
        except (KubeconfigError, ValueError) as error:
            log.error("cluster %s: stored kubeconfig unusable: %s", row.name, error)
            kubeconfig = {}
        connection = ClusterConnection(
            row.name,
            kubeconfig,
            origin=self.settings.origin,
            listener=self,
            settings=self.settings.connection,
            count_write=self._metrics.count_write,
        )
        self.connections[row.name] = connection
        connection.start()

    async def add_cluster(self, name: str) -> None:
        async with self._reads() as session:
            row = await cluster_queries.get_cluster(session, name)
        if row is not None and name not in self.connections:
            self._connect(row)

    async def reconnect_cluster(self, name: str) -> None:
        """Connect anew (its kubeconfig changed); the cluster keeps its workloads."""
        connection = self.connections.pop(name, None)
        if connection is not None:
            await connection.stop()
        await self.add_cluster(name)

    async def remove_cluster(self, name: str) -> list[int]:
        """Forget a cluster; its undecided or running workloads go back to dispatch.

        While it still answers, our copies there are deleted first, so none is left behind.
        """
        connection = self.connections.pop(name, None)
        if connection is not None:
            if connection.ready:
                with contextlib.suppress(Unreachable, ApiException):
                    for kind in self._job_caches.values():
                        for key in list(connection.caches[kind]):
                            await connection.delete_job(*key, kind=kind)
                    for key in list(connection.caches[WORKLOADS]):
                        await connection.delete_workload(*key)
            await connection.stop()
        self._capacity.pop(name, None)
        self._metrics.cluster_connected.labels(cluster=name).set(0)
        affected = await self._evict_cluster(name, "ClusterDeleted", mark_lost=False)
        return affected

    def stale_copy_reader(self, cluster: str) -> Callable[[str, str, str], bool]:
        """Whether a uid names an earlier Workload copy in `cluster` (ClusterConnection's
        `stale_copy`); nothing is known stale of a cluster not connected."""

        def read(namespace: str, name: str, uid: str) -> bool:
            connection = self.connections.get(cluster)
            return connection is not None and connection.stale_copy(namespace, name, uid)

        return read

    def ready_connections(self) -> dict[str, ClusterConnection]:
        return {n: c for n, c in self.connections.items() if c.ready}

    async def cluster_connected(self, connection: ClusterConnection) -> None:
        """After a (re)list: remove stale copies first, then let the cluster take work again."""
        now = self._clock.now()
        await self._remove_stale_copies(connection)
        async with self._decide() as session:
            row = await cluster_queries.get_cluster(session, connection.name)
            was = row.state if row else None
            await cluster_queries.mark_connected(session, connection.name, now)
            if was != states.CLUSTER_CONNECTED:
                await append_event(
                    session,
                    at=now,
                    kind="ClusterConnected",
                    message="connected",
                    cluster=connection.name,
                )
        self._metrics.cluster_connected.labels(cluster=connection.name).set(1)
        self._changed()
        for workload_id in set(self._by_workload_name.values()):
            self._queue.add(workload_id)

    async def cluster_unhealthy(
        self, connection: ClusterConnection, state: str, reason: str, message: str
    ) -> None:
        now = self._clock.now()
        async with self._decide() as session:
            row = await cluster_queries.get_cluster(session, connection.name)
            if row is None:
                return
            first = row.unreachable_since is None
            await cluster_queries.mark_unhealthy(
                session, connection.name, state=state, reason=reason, message=message, now=now
            )
            if first:
                await append_event(
                    session,
                    at=now,
                    kind="ClusterUnreachable",
                    message=f"{reason}: {message}",
                    cluster=connection.name,
                )
        self._metrics.cluster_connected.labels(cluster=connection.name).set(0)
        self._changed()

    def object_changed(self, connection: ClusterConnection, kind: str, key: Key) -> None:
        if kind == LOCAL_QUEUES:
            return
        workload_id = (
            self._by_workload_name.get(key) if kind == WORKLOADS else self._by_job_name.get(key)
        )
        obj = connection.caches[kind].get(key)
        if obj is None:
            self._expected.discard((connection.name, kind, key))
        if workload_id is None:
            return
        # Level-based, but only when something the reconcile reads changed: status churn that
        # does not (pending messages, pod counts) would only cost no-op reconciles.
        signature = _signature(kind, obj, self._kinds_by_cache)
        marker = (connection.name, kind, key)
        before = self._signatures.get(marker, _UNSEEN)
        if before == signature:
            return
        self._signatures[marker] = signature
        if obj is None:
            self._signatures.pop(marker, None)
        elif before is _UNSEEN and marker in self._expected and _inert(kind, signature):
            return  # our own create coming back, with nothing yet to act on
        self._queue.add(workload_id)

    # ---- workloads in and out ----------------------------------------------------------------

    def _index(self, row: WorkloadRow | WorkloadRecord) -> None:
        for name in (row.workload_name, *self._followers(row)):
            self._by_workload_name[(row.namespace, name)] = row.id
        self._by_job_name[(row.namespace, row.name)] = row.id

    def _unindex(self, row: WorkloadRow | WorkloadRecord) -> None:
        for name in (row.workload_name, *self._followers(row)):
            self._by_workload_name.pop((row.namespace, name), None)
        self._by_job_name.pop((row.namespace, row.name), None)
        self._reconciled_at.pop(row.id, None)

    def _followers(self, row: WorkloadRow | WorkloadRecord) -> list[str]:
        """The names of a workload's other Workloads (a LeaderWorkerSet's groups after the
        first), which only its winner gets: Kueue's MultiKueue races the primary component
        Workload alone and sends the others where it won (nominateAndSynchronizeWorkers,
        pkg/controller/admissionchecks/multikueue/workload.go)."""
        kind = self._group_kinds.get(row.kind)
        if kind is None:
            return []
        return workload_names(kind, row.manifest, row.uid)[1:]

    def workload_added(self, row: WorkloadRow) -> None:
        self._index(row)
        self._queue.add(row.id)

    def id_of(self, namespace: str, name: str) -> int | None:
        """The id of a workload this dispatcher is working on, by its Job's name."""
        return self._by_job_name.get((namespace, name))

    def enqueue(self, workload_id: int) -> None:
        self._queue.add(workload_id)

    def queue_length(self) -> int:
        return len(self._queue)

    # ---- reconcile -------------------------------------------------------------------------

    async def _reconcile_safely(self, workload_id: int) -> None:
        try:
            await self.reconcile(workload_id)
        except Unreachable as error:
            log.info("workload %s: a cluster is unreachable (%s); retrying", workload_id, error)
            self._queue.add_after(workload_id, 2.0)
        except ApiException as error:
            log.warning(
                "workload %s: API error %s %s; retrying", workload_id, error.status, error.reason
            )
            self._queue.add_after(workload_id, 2.0)
        except Exception:
            log.exception("workload %s: reconcile failed; retrying", workload_id)
            self._queue.add_after(workload_id, 5.0)

    async def reconcile(self, workload_id: int) -> None:
        self._reconciled_at[workload_id] = asyncio.get_running_loop().time()
        row = await self._rows.load(workload_id)
        if row is None:
            return
        if row.state in states.FINAL_STATES and not row.cleanup_pending:
            self._unindex(row)  # finished and cleaned up: late events about it change nothing
            return
        if row.state in states.FINAL_STATES or row.cancel_requested:
            await self._finalize(row)
        elif row.quota_reserved is False:
            await self._withdraw(row)
        elif row.cluster is not None:
            await self._follow_winner(row)
        else:
            await self._dispatch(row)

    async def _withdraw(self, row: WorkloadRecord) -> None:
        """A workload whose manager-cluster quota is not (or no longer) reserved has no copy
        anywhere: Kueue's MultiKueue removes the remote objects of a Workload evicted on the
        manager, and dispatches it again only once it holds quota there."""
        reason = "EvictedOnManagerCluster"
        if row.cluster is not None:
            await self._requeue(
                row, reason, "its quota in the manager cluster's ClusterQueue was released"
            )
            return
        for conn in self.ready_connections().values():
            self._remove_copies_soon(row, conn)
        if workload_queries.active_attempts(row) or row.state == states.DISPATCHED:
            change = workload_queries.workload_change(
                row.id,
                {"state": states.PENDING, "nominated": [], "round_started_at": None},
                now=self._clock.now(),
                removal=workload_queries.AttemptRemoval(reason),
            )
            if await self.writer.write(change) is not None:
                self._changed()

    def _in_background(
        self,
        conn: ClusterConnection,
        row: WorkloadRecord,
        kind: str,
        work: Callable[[], Awaitable[object]],
    ) -> None:
        """Run `work` (a write to `conn` about `row`) without holding the reconcile, after the
        operation before it on the same copy; a failure reconciles the workload again."""
        key = (conn.name, (row.namespace, row.workload_name))
        previous = self._remote_ops.get(key)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait({previous[1]})
            try:
                await work()
            except Unreachable as error:
                log.info("workload %s: %s %s: %s", row.id, kind, conn.name, error)
                self._queue.add_after(row.id, 2.0)
            except ApiException as error:
                log.warning(
                    "workload %s: %s %s: %s", row.id, kind, conn.name, status_message(error)
                )
                self._queue.add_after(row.id, 2.0)
            except Exception:
                log.exception("workload %s: %s %s failed", row.id, kind, conn.name)
                self._queue.add_after(row.id, 5.0)
            finally:
                if self._remote_ops.get(key, (None, None))[1] is task:
                    del self._remote_ops[key]

        task = asyncio.create_task(run(), name=f"dispatcher-{kind}-{conn.name}")
        self._remote_ops[key] = (kind, task)

    def _pending_op(self, conn: ClusterConnection, row: WorkloadRecord) -> str | None:
        entry = self._remote_ops.get((conn.name, (row.namespace, row.workload_name)))
        return entry[0] if entry is not None else None

    def _has_copies(self, row: WorkloadRecord, conn: ClusterConnection) -> bool:
        wkey, jkey = (row.namespace, row.workload_name), (row.namespace, row.name)
        jobs = self._job_caches[row.kind]
        copy_ = conn.caches[WORKLOADS].get(wkey)
        return (
            (copy_ is not None and not is_terminating(copy_))
            or jkey in conn.caches[jobs]
            or (conn.name, WORKLOADS, wkey) in self._expected
            or (conn.name, jobs, jkey) in self._expected
            or self._pending_op(conn, row) == "send"
            or any(
                (row.namespace, name) in conn.caches[WORKLOADS]
                or (conn.name, WORKLOADS, (row.namespace, name)) in self._expected
                for name in self._followers(row)
            )
        )

    def _remove_copies_soon(self, row: WorkloadRecord, conn: ClusterConnection) -> None:
        """The copies in `conn` of a workload that does not need them go in the background."""
        if self._pending_op(conn, row) != "remove" and self._has_copies(row, conn):
            self._in_background(conn, row, "remove", lambda: self._delete_copies(row, conn))

    async def _delete_copies(self, row: WorkloadRecord, conn: ClusterConnection) -> bool:
        """Delete the workload's Workload and Job copies in one cluster; True if any was there.

        A copy still being sent there is waited for first, so it is not created after this.
        """
        found = False
        wkey, jkey = (row.namespace, row.workload_name), (row.namespace, row.name)
        pending = self._remote_ops.get((conn.name, wkey))
        if pending is not None and pending[1] is not asyncio.current_task():
            await asyncio.wait({pending[1]})
        jobs = self._job_caches[row.kind]
        if jkey in conn.caches[jobs] or (conn.name, jobs, jkey) in self._expected:
            await conn.delete_job(row.namespace, row.name, kind=jobs)
            self._expected.discard((conn.name, jobs, jkey))
            found = True
        for name in (row.workload_name, *self._followers(row)):
            key = (row.namespace, name)
            copy_ = conn.caches[WORKLOADS].get(key)
            if copy_ is not None and is_terminating(copy_):
                found = True  # deleted already: its worker lets it go when it is done with it
            elif copy_ is not None or (conn.name, WORKLOADS, key) in self._expected:
                await conn.delete_workload(row.namespace, name)
                self._expected.discard((conn.name, WORKLOADS, key))
                found = True
        return found

    async def _finalize(self, row: WorkloadRecord) -> None:
        """A finished or cancelled workload: record the end, remove every copy, forget it."""
        now = self._clock.now()
        if row.state not in states.FINAL_STATES:
            async with self._decide() as session:
                fresh = await workload_queries.get_workload_by_id(session, row.id, for_update=True)
                if fresh is None:
                    return
                if fresh.state not in states.FINAL_STATES:
                    fresh.state = states.CANCELLED
                    fresh.finished_at = now
                    fresh.message = "cancelled by request"
                    fresh.cleanup_pending = True
                    await append_event(
                        session,
                        at=now,
                        kind="Cancelled",
                        message="cancelled by request",
                        workload_id=fresh.id,
                    )
        elif not await self._keep_final_status(row):
            return  # cleanup stays pending: the resync brings it back
        await self._remove_remote(row, now)

    async def _keep_final_status(self, row: WorkloadRecord) -> bool:
        """Record the winner's Job's final status before its copies go, when the workload
        ended without it: its agent's report finished it (a report carries no Job status), or
        its copy's end came before the watch showed the Job's. The manager cluster's Job gets
        its status from this record; Kueue's MultiKueue likewise copies the remote Job's status
        (reading it from the worker) before it finishes the local Workload, and tries again
        when it cannot (SyncJob in pkg/controller/admissionchecks/multikueue/workload.go).

        False while the winner's worker cannot be asked (not connected) and has not been away
        for the worker-lost timeout since the end: its copies stay until then. Unreachable
        propagates from a read that fails: the reconcile is retried; but a worker that refuses
        the read (401, 403) would refuse it forever, so the copies go without the status."""
        if row.cluster is None or row.job_created_at is None or row.state == states.CANCELLED:
            return True
        jobs = self._job_caches[row.kind]
        kind = self._kinds_by_cache[jobs]
        if row.remote_status is not None and kind.finished({"status": row.remote_status}):
            return True
        conn = self.connections.get(row.cluster)
        if conn is None:
            return True  # the cluster was removed: nothing to read, nothing to remove there
        if not conn.ready:
            ended = row.finished_at or self._clock.now()
            return self._clock.now() - ended >= self.settings.worker_lost_timeout
        key = (row.namespace, row.name)
        job_obj = conn.caches[jobs].get(key) or conn.tombstones[jobs].get(key)
        if job_obj is None or not job_state(kind, job_obj).finished:
            try:
                job_obj = await conn.read_job(row.namespace, row.name, jobs)
            except Unreachable as error:
                if not error.refused:
                    raise
                log.warning(
                    "workload %s/%s: its Job's final status in %s is not kept: %s (the "
                    "manager's identity there may get jobs: deploy/base/manager-access)",
                    row.namespace,
                    row.name,
                    row.cluster,
                    error.message,
                )
                return True
        status = (job_obj or {}).get("status")
        if not status or status == row.remote_status:
            return True  # the Job is gone (deleted with its TTL): its status with it
        change = workload_queries.workload_change(
            row.id, {"remote_status": status}, now=self._clock.now()
        )
        if await self.writer.write(change) is not None:
            row.remote_status = status
            self._changed()
        return True

    async def _remove_remote(
        self, row: WorkloadRecord, now: datetime, *, attempts_ended: bool = False
    ) -> None:
        """Delete every remote copy of a finished workload, then record that none is left.

        If a delete fails, the workload stays `cleanup_pending` and its retried reconcile
        comes back here through `_finalize`. `attempts_ended`: the caller's own transaction
        already ended every active attempt (a final workload gets no new one).
        """
        for conn in self.ready_connections().values():
            await self._delete_copies(row, conn)
        change = workload_queries.workload_change(
            row.id,
            {"cleanup_pending": False},
            now=now,
            removal=None
            if attempts_ended
            else workload_queries.AttemptRemoval("Finished", keep_reason=True),
        )
        if await self.writer.write(change) is None:
            return
        self._unindex(row)
        self._changed()

    async def _follow_winner(self, row: WorkloadRecord) -> None:
        assert row.cluster is not None
        conn = self.connections.get(row.cluster)
        if conn is None or not conn.ready:
            self._remove_losing_copies(row)
            return  # the lost-worker check decides when to give up on it
        wkey, jkey = (row.namespace, row.workload_name), (row.namespace, row.name)
        copy_live = wkey in conn.caches[WORKLOADS]
        copy_obj = conn.caches[WORKLOADS].get(wkey) or conn.tombstones[WORKLOADS].get(wkey)
        jobs = self._job_caches[row.kind]
        job_obj = conn.caches[jobs].get(jkey)
        grave = conn.tombstones[jobs].get(jkey) if job_obj is None else None
        job_kind = self._kinds_by_cache[jobs]
        if grave is not None and (not copy_live or job_state(job_kind, grave).finished):
            # A Job deleted after it finished (TTL) still tells how it ended, so it is never
            # created again. An unfinished grave next to a live copy may be an earlier
            # incarnation's, and is not read.
            job_obj = grave
        copy_st = workload_copy_state(copy_obj) if copy_obj is not None else None
        job_st = job_state(job_kind, job_obj) if job_obj is not None else None
        result = (job_st.finished if job_st else None) or (copy_st.finished if copy_st else None)
        if result is not None:
            job_end_unseen = job_st is not None and job_st.started and not job_st.finished
            if job_end_unseen and jkey in conn.caches[jobs] and self._awaiting_job_end(row.id):
                # The copy says finished before the watch showed the Job's own end: wait a
                # moment for it, so the status copied back is the final one.
                self._queue.add_after(row.id, 0.5)
                return
            self._job_end_seen.pop(row.id, None)
            message = (job_st.message if job_st and job_st.finished else None) or (
                copy_st.finished_message if copy_st else None
            )
            await self._finish(row, result, message, job_obj)
            return
        job_live = jkey in conn.caches[jobs] or (conn.name, jobs, jkey) in self._expected
        if copy_st is not None and copy_live and copy_st.evicted_reason and not copy_st.admitted:
            await self._requeue(row, f"Evicted:{copy_st.evicted_reason}", "evicted by its worker")
            return
        copy_going = copy_live and copy_st is not None and copy_st.terminating
        if (copy_going or not copy_live) and (conn.name, WORKLOADS, wkey) not in self._expected:
            # Kueue's MultiKueue retries as soon as no admitted remote is left in a reachable
            # winner (pkg/controller/admissionchecks/multikueue/workload.go, step 6a): a Job
            # there without its Workload would wait suspended, or run outside any quota.
            if row.job_created_at is None or job_live:
                await self._requeue(
                    row,
                    "RemoteWorkloadDeleted",
                    "the winner's Workload copy disappeared before its Job ran"
                    if row.job_created_at is None
                    else "the winner's Workload copy disappeared while its Job was there",
                )
            else:
                await self._finish(
                    row,
                    states.FAILED,
                    "the winner's Job and Workload were deleted before their final "
                    "status was seen; not run again",
                    None,
                )
            return
        self._remove_losing_copies(row)
        if not await self._send_followers(row, conn):
            return
        now = self._clock.now()
        changes: dict[str, Any] = {}
        if not job_live:
            if row.job_created_at is None:
                changes["job_created_at"] = now
                if not await self._save(
                    row,
                    changes,
                    event=EventSpec(
                        "JobCreating", f"creating the Job in {row.cluster}", row.cluster
                    ),
                ):
                    self._queue.add(row.id)  # evicted or finished since the read
                    return
                changes = {}
            body = self._kinds.named(row.kind).worker_copy(
                row.manifest,
                workload_name=row.workload_name,
                origin=self.settings.origin,
                origin_uid=row.uid,
            )
            try:
                await conn.create_job(body)
            except ApiException as error:
                if not await self._refused(row, conn, error, row.kind):
                    raise
                return
            self._expected.add((conn.name, jobs, jkey))
        if job_st is not None and job_st.started and row.state == states.ADMITTED:
            changes.update(state=states.RUNNING, started_at=now)
        status = (job_obj or {}).get("status")
        if status is not None and status != row.remote_status:
            changes["remote_status"] = status
        others_active = [
            a for a in workload_queries.active_attempts(row) if a.cluster != row.cluster
        ]
        if changes or others_active:
            await self._save(
                row,
                changes,
                remove_attempts_except=row.cluster if others_active else None,
                reason="LostElection",
            )

    async def _send_followers(self, row: WorkloadRecord, conn: ClusterConnection) -> bool:
        """The winner gets the workload's other Workloads it lacks (_followers), before the
        object whose pods join them; under a manager-cluster queue each once its own
        Workload there holds quota, as MultiKueue syncs a component Workload once it is
        reserved. False when the winner refused one."""
        kind = self._kinds.named(row.kind)
        for index, name in enumerate(self._followers(row), start=1):
            key = (row.namespace, name)
            if key in conn.caches[WORKLOADS] or (conn.name, WORKLOADS, key) in self._expected:
                continue
            held = row.quota_reserved is not None
            if held and (self.follower_reserved is None or not self.follower_reserved(key)):
                continue
            body = workload_copy(
                kind,
                row.manifest,
                workload_name=name,
                origin=self.settings.origin,
                priority_class=PriorityClassRef.named(row.priority_class, row.priority_class_kind),
                priority=row.priority,
                index=index,
            )
            try:
                await conn.create_workload(body)
            except ApiException as error:
                if not await self._refused(row, conn, error, "Workload copy"):
                    raise
                return False
            self._expected.add((conn.name, WORKLOADS, key))
        return True

    def copy_admitted(self, cluster: str, key: Key) -> bool:
        """Whether the Workload copy `key` is admitted in `cluster`, as its watch shows it."""
        conn = self.connections.get(cluster)
        obj = conn.caches[WORKLOADS].get(key) if conn is not None else None
        return obj is not None and workload_copy_state(obj).admitted

    def _remove_losing_copies(self, row: WorkloadRecord) -> None:
        """Every copy outside the winner goes, in the background: only the winner ever gets a
        Job, and a loser that hangs must not hold it (a failed delete is retried by the
        reconcile the garbage collector asks for)."""
        for name, other in self.ready_connections().items():
            if name != row.cluster:
                self._remove_copies_soon(row, other)

    def _awaiting_job_end(self, workload_id: int, grace: float = 3.0) -> bool:
        """True for `grace` seconds (real time: it waits on watch ordering, not a timeout of
        the workload) after a finished copy was first seen next to an unfinished Job."""
        now = asyncio.get_running_loop().time()
        first = self._job_end_seen.setdefault(workload_id, now)
        return now - first < grace

    async def _save(
        self,
        row: WorkloadRecord,
        changes: dict[str, Any],
        *,
        event: EventSpec | None = None,
        remove_attempts_except: str | None = None,
        reason: str = "",
    ) -> bool:
        """Record a step of following the winner; False if it is no longer the winner."""
        change = workload_queries.workload_change(
            row.id,
            changes,
            now=self._clock.now(),
            won_by=row.cluster,
            removal=workload_queries.AttemptRemoval(reason, keep_cluster=remove_attempts_except)
            if remove_attempts_except is not None
            else None,
            event=event,
        )
        if await self.writer.write(change) is None:
            return False
        self._changed()
        return True

    async def _finish(
        self, row: WorkloadRecord, result: str, message: str | None, job_obj: dict[str, Any] | None
    ) -> None:
        now = self._clock.now()
        assert row.cluster is not None  # only the winner's Job or copy ends a workload
        finish = workload_queries.finishing(
            row.id,
            ran_in=row.cluster,
            result=result,
            message=message,
            remote_status=job_obj.get("status") if job_obj is not None else None,
            now=now,
        )
        if await self.writer.write(finish) is None:
            return  # another finish recorded it first
        self._metrics.finished_workload(
            row.namespace, row.queue, row.priority_class, result, row.created_at, now
        )
        self._changed()
        # The remote objects go now, without another read of the row this call just finished.
        await self._remove_remote(row, now, attempts_ended=True)

    async def _requeue(self, row: WorkloadRecord, reason: str, message: str) -> None:
        """Give up on the winner (evicted, or its copy gone): remove its copies, dispatch again."""
        assert row.cluster is not None
        conn = self.connections.get(row.cluster)
        if conn is not None and conn.ready:
            await self._delete_copies(row, conn)
        await self._evict_workloads([row.id], row.cluster, reason, message, states.ATTEMPT_EVICTED)
        self._queue.add(row.id)

    async def _refused(
        self, row: WorkloadRecord, conn: ClusterConnection, error: ApiException, what: str
    ) -> bool:
        """End the workload's attempt in `conn` when the worker refused its copy (a 4xx that
        another try would get again); False when the error is one to retry.

        The workload shows the worker's message, and goes on with the other clusters; a winner
        that refused its Job gives its Workload copy (and its quota) back and is dispatched
        again, as after an eviction.
        """
        reason = refusals.refusal_reason(error.status or 0, status_reason(error))
        if reason is None:
            return False
        message = f"{conn.name} refused the {what}: {status_message(error)}"
        log.warning("workload %s/%s: %s", row.namespace, row.name, message)
        self._metrics.copy_refused(conn.name, reason)
        if row.cluster == conn.name:
            await self._delete_copies(row, conn)
        now = self._clock.now()
        async with self._decide() as session:
            fresh = await workload_queries.get_workload_by_id(session, row.id, for_update=True)
            if fresh is None or fresh.state in states.FINAL_STATES:
                return True
            evicted = await take_back(
                session,
                fresh,
                conn.name,
                reason=reason,
                message=message,
                attempt_state=states.ATTEMPT_REFUSED,
                now=now,
            )
            if not evicted:
                fresh.message = message
                await append_event(
                    session,
                    at=now,
                    kind="Refused",
                    message=message,
                    workload_id=fresh.id,
                    cluster=conn.name,
                )
        self._changed()
        self._queue.add(row.id)
        return True

    async def _evict_workloads(
        self, ids: Iterable[int], cluster: str, reason: str, message: str, attempt_state: str
    ) -> None:
        now = self._clock.now()
        async with self._decide() as session:
            for workload_id in ids:
                row = await workload_queries.get_workload_by_id(
                    session, workload_id, for_update=True
                )
                if row is None or row.state in states.FINAL_STATES:
                    continue
                if await take_back(
                    session,
                    row,
                    cluster,
                    reason=reason,
                    message=message,
                    attempt_state=attempt_state,
                    now=now,
                ):
                    self._metrics.evicted_on_worker(
                        row.namespace, row.queue, row.priority_class, reason
                    )
        self._changed()

    async def _dispatch(self, row: WorkloadRecord) -> None:
        ready = connected = self.ready_connections()
        admissions: list[tuple[str, datetime | None]] = []
        active = {a.cluster: a for a in workload_queries.active_attempts(row)}
        wkey = (row.namespace, row.workload_name)
        for cluster, attempt in active.items():
            conn = ready.get(cluster)
            obj = conn.caches[WORKLOADS].get(wkey) if conn is not None else None
            seen = workload_copy_state(obj) if obj is not None else None
            if (
                conn is None
                or self._pending_op(conn, row) == "remove"
                or (seen is not None and conn.stale_copy(*wkey, seen.uid or ""))
            ):
                # A copy being removed, or whose delete was sent (the watch may show it a moment
                # longer), is an earlier try's: its admission would hand the Job to a Workload
                # on its way out. A new copy is sent once it is gone.
                continue
            if seen is not None and seen.electable:
                admissions.append((cluster, seen.admitted_at))
            elif attempt.admitted_at is not None and _report_stands(seen):
                admissions.append((cluster, attempt.admitted_at))
        winner = earliest_admitted(admissions)
        if winner is not None:
            await self._elect(row, winner)
            return
        if not ready:
            return  # nothing to send to: each worker's (re)connection looks at it again
        await self._note_waiting(row, active, ready)
        # Copies in clusters without an active attempt are stale (an earlier try): remove them.
        # So is a Job anywhere while no cluster has won (a requeued winner's, whose delete
        # failed): with it goes the copy it would run under, which is then sent again.
        jobs = self._job_caches[row.kind]
        for name, conn in ready.items():
            if name not in active or (row.namespace, row.name) in conn.caches[jobs]:
                self._remove_copies_soon(row, conn)
        now = self._clock.now()
        # Clusters that refused the workload's copy are not asked again (for a while, or for
        # good when the copy itself was refused): dispatch.refusals.
        excluded = refusals.exclusions(row.attempts, now)
        if excluded:
            ready = {name: conn for name, conn in ready.items() if name not in excluded}
            retry = [e.until for e in excluded.values() if e.until is not None]
            if retry:
                delay = (min(retry) - now).total_seconds()
                self._queue.add_after(row.id, max(delay, 0.5))
        demand = WorkloadDemand(
            requests=self._requests_milli(row),
            nominated=tuple(row.nominated),
            round_started_at=row.round_started_at,
            external=tuple(row.external_nominations)
            if row.external_nominations is not None
            else None,
        )
        candidates = [self._candidate(conn, row, now) for conn in ready.values()]
        order = self.cluster_order.get((row.namespace, row.queue), ())
        choice = nominate(self.settings.dispatch, demand, candidates, now, order=order)
        step = self._preemption_step(row, ready, active, choice, now)
        choice = step.choice
        targets = [name for name in choice.clusters if name in ready]
        # A copy in a worker that is not connected (its watch relisting, its health check
        # failing) is left alone, as Kueue's MultiKueue leaves the remotes of a cluster whose
        # client reconnects (remoteClientsForAC, pkg/controller/admissionchecks/multikueue/
        # workload.go): only the worker-lost timeout gives it up. Withdrawing it would throw
        # its admission away at every blip, and race the delete against its next nomination.
        withdrawn = [name for name in active if name in connected and name not in choice.clusters]
        withdrawn += [name for name in step.restarted if name not in withdrawn]
        new = [name for name in targets if name not in active or name in step.restarted]
        if (
            new
            or withdrawn
            or list(choice.clusters) != list(row.nominated)
            or (choice.round_started_at != row.round_started_at)
        ):
            events = []
            if step.message is not None and (new or withdrawn):
                events.append(EventSpec("PreemptionNominated", step.message, step.nominee))
            if new:
                events.append(EventSpec("Nominated", "copies sent to " + ", ".join(new)))
            recorded = await self.writer.write(
                workload_queries.nomination(
                    row.id,
                    clusters=list(choice.clusters),
                    round_started_at=choice.round_started_at,
                    withdrawn={
                        name: step.withdrawn_reasons.get(name, "NotNominated") for name in withdrawn
                    },
                    new=[
                        (name, preemption.NOMINEE, step.message)
                        if name == step.nominee
                        else (name, None, None)
                        for name in new
                    ],
                    events=events,
                    now=now,
                )
            )
            if recorded is None:
                # A cluster won or a cancel came since the read: look again.
                self._queue.add(row.id)
                return
        for name in withdrawn:
            if name in ready and name not in targets:
                self._remove_copies_soon(row, ready[name])
        body = workload_copy(
            self._kinds.named(row.kind),
            row.manifest,
            workload_name=row.workload_name,
            origin=self.settings.origin,
            priority_class=PriorityClassRef.named(row.priority_class, row.priority_class_kind),
            priority=row.priority,
        )
        missing = [
            n
            for n in targets
            if wkey not in ready[n].caches[WORKLOADS]
            and (n, WORKLOADS, wkey) not in self._expected
            and self._pending_op(ready[n], row) != "send"
        ]
        # Sent in the background: a worker that hangs on its copy holds neither this
        # reconcile nor the election of a copy another worker admits meanwhile.
        for name in missing:
            conn = ready[name]
            self._in_background(
                conn, row, "send", functools.partial(self._send_copy, conn, body, row)
            )
        if choice.recheck_at is not None:
            delay = (choice.recheck_at - now).total_seconds()
            self._queue.add_after(row.id, min(max(delay, 0.5), self.settings.resync_seconds))

    async def _note_waiting(
        self,
        row: WorkloadRecord,
        active: Mapping[str, AttemptRow | AttemptRecord],
        ready: Mapping[str, ClusterConnection],
    ) -> None:
        """Each copy's attempt says why its worker keeps it waiting (the worker's Kueue's
        words, as MultiKueue shows a remote's QuotaReserved=False), and so does the workload
        while no worker admits it. Written only when that changes."""
        wkey = (row.namespace, row.workload_name)
        waits: dict[str, tuple[str, str]] = {}
        changed: dict[int, tuple[str, str]] = {}
        for cluster, attempt in active.items():
            conn = ready.get(cluster)
            obj = conn.caches[WORKLOADS].get(wkey) if conn is not None else None
            waiting = waiting_reason(obj) if obj is not None else None
            if waiting is None:
                continue
            waits[cluster] = waiting
            keeps_own = attempt.reason is not None and attempt.reason not in WAITING_REASONS
            if not keeps_own and (attempt.reason, attempt.message) != waiting:
                changed[attempt.id] = waiting
        summary = waiting_summary(waits) if waits and len(waits) == len(active) else None
        if not changed and (summary is None or summary == row.message):
            return
        async with self._decide() as session:
            await workload_queries.note_waiting(session, row.id, changed, summary)
        self._changed()

    async def _send_copy(
        self, conn: ClusterConnection, body: dict[str, Any], row: WorkloadRecord
    ) -> None:
        try:
            await conn.create_workload(body)
        except ApiException as error:
            if not await self._refused(row, conn, error, "Workload copy"):
                self._metrics.copy_failed(conn.name)
                raise
            return
        self._expected.add((conn.name, WORKLOADS, (row.namespace, row.workload_name)))
        self._metrics.copy_sent(row.namespace, row.queue, conn.name)
        if row.state == states.PENDING:
            self._metrics.first_copy_sent(row.created_at, self._clock.now())
        self._note_sent(conn, row)

    async def _elect(self, row: WorkloadRecord, cluster: str) -> None:
        now = self._clock.now()
        won = await self.writer.write(workload_queries.election(row.id, cluster, now)) is not None
        self._changed()
        if not won:
            self._queue.add(row.id)  # someone else decided first: look at what they decided
            return
        self._metrics.won(
            row.namespace, row.queue, row.priority_class, cluster, row.created_at, now
        )
        # Go on from what the election wrote instead of reading it back: the other copies go
        # and the Job is created in this same reconcile.
        row.cluster, row.state, row.admitted_at, row.message = cluster, states.ADMITTED, now, None
        for attempt in workload_queries.active_attempts(row):
            if attempt.cluster == cluster and attempt.state == states.ATTEMPT_NOMINATED:
                attempt.state = states.ATTEMPT_WON
                attempt.admitted_at = attempt.admitted_at or now
        await self._follow_winner(row)

    # ---- BestFit bookkeeping -----------------------------------------------------------------

    def _requests_milli(self, row: WorkloadRecord) -> dict[str, int]:
        result = {}
        for resource, amount in (row.requests or {}).items():
            with contextlib.suppress(QuantityError):
                result[resource] = Quantity.parse(amount).milli_value()
        return result

    def _cluster_queue_of(self, conn: ClusterConnection, row: WorkloadRecord) -> str | None:
        local_queue = conn.caches[LOCAL_QUEUES].get((row.namespace, row.queue))
        if local_queue is None:
            return None
        spec = local_queue.get("spec") or {}
        value = spec.get("clusterQueue")
        return str(value) if value else None

    def _candidate(self, conn: ClusterConnection, row: WorkloadRecord, now: datetime) -> Candidate:
        report = self._capacity.get(conn.name)
        cluster_queue = self._cluster_queue_of(conn, row)
        if report is None or cluster_queue is None:
            return Candidate(conn.name)
        if now - report.at > self.settings.capacity_freshness:
            return Candidate(conn.name)
        return candidate_from_report(
            conn.name,
            report.entries,
            cluster_queue,
            self._requests_milli(row),
            report.sent.get(cluster_queue, {}),
        )

    def _note_sent(self, conn: ClusterConnection, row: WorkloadRecord) -> None:
        report = self._capacity.get(conn.name)
        cluster_queue = self._cluster_queue_of(conn, row)
        if report is None or cluster_queue is None:
            return
        sent = report.sent.setdefault(cluster_queue, {})
        for resource, milli in self._requests_milli(row).items():
            sent[resource] = sent.get(resource, 0) + milli

    def _preemption_step(
        self,
        row: WorkloadRecord,
        ready: dict[str, ClusterConnection],
        active: dict[str, AttemptRow],
        choice: Nomination,
        now: datetime,
    ) -> preemption.Step:
        """One preemption at a time (see `preemption`), from fresh reports of every worker."""
        if self.settings.dispatch.mode is DispatchMode.EXTERNAL:
            return preemption.Step(choice)
        rooms = self._rooms(row, ready, now)
        attempt = next((a for a in active.values() if a.reason == preemption.NOMINEE), None)
        nominee, rejected = None, False
        if attempt is not None:
            nominee = preemption.Round(attempt.cluster, attempt.created_at)
            conn = ready.get(attempt.cluster)
            obj = conn.caches[WORKLOADS].get((row.namespace, row.workload_name)) if conn else None
            seen = workload_copy_state(obj) if obj is not None else None
            rejected = seen is not None and bool(seen.evicted_reason) and not seen.admitted
        tried = preemption.tried_clusters(
            (a.cluster, a.state, a.reason) for a in sorted(row.attempts, key=lambda a: a.id)
        )
        return preemption.amend(
            choice,
            rooms,
            active,
            nominee,
            rejected,
            tried,
            now,
            self.settings.preemption_round_timeout,
        )

    def _rooms(
        self, row: WorkloadRecord, ready: dict[str, ClusterConnection], now: datetime
    ) -> list[preemption.Room] | None:
        """Each worker's preemption cost for the workload; None unless all reported lately."""
        requests = self._requests_milli(row)
        rooms = []
        for name, conn in sorted(ready.items()):
            cluster_queue = self._cluster_queue_of(conn, row)
            if cluster_queue is None:
                # No such LocalQueue there: Kueue would not admit it, nor preempt for it.
                rooms.append(preemption.Room(name, None))
                continue
            report = self._capacity.get(name)
            if report is None or now - report.at > self.settings.capacity_freshness:
                return None
            cost = preemption.room_cost(report.entries, cluster_queue, requests, row.priority)
            rooms.append(preemption.Room(name, cost))
        return rooms or None

    def capacity_reported(self, cluster: str, entries: list[dict[str, Any]], at: datetime) -> None:
        self._capacity[cluster] = _Capacity(at, entries)

    # ---- housekeeping ------------------------------------------------------------------------

    async def _resync(self) -> None:
        """The safety net for a missed event: every unfinished workload not looked at lately."""
        async with self._reads() as session:
            ids = await workload_queries.ids_needing_work(session)
        since = asyncio.get_running_loop().time() - self.settings.resync_seconds
        for workload_id in ids:
            if self._reconciled_at.get(workload_id, since) <= since:
                self._queue.add(workload_id)

    async def _remove_stale_copies(self, conn: ClusterConnection) -> int:
        """Delete copies in `conn` that no active attempt or running winner accounts for.

        The cache is read before the database: a copy is created only after its attempt is
        committed, so any copy in this snapshot has its attempt visible to the query below.

        A copy of a workload this dispatcher works on is not deleted here: its reconcile is
        asked to look, and removes what its attempts do not account for. The reconcile runs one
        at a time per workload; a delete from here would not wait for it, and in the seconds a
        sweep of many deletes takes, a new attempt can adopt the copy judged stale, elect it,
        and create its Job, which the delete then takes away (the Job ran; it would run again).
        Only copies of workloads it has forgotten (finished, or never known) go from here.
        """
        workload_keys = list(conn.caches[WORKLOADS])
        job_keys = [(kind, key) for kind in self._job_caches.values() for key in conn.caches[kind]]
        if not workload_keys and not job_keys:
            return 0
        async with self._reads() as session:
            allowed_workloads = {
                (ns, wl)
                for ns, wl in (
                    await session.execute(
                        select(WorkloadRow.namespace, WorkloadRow.workload_name)
                        .join(AttemptRow, AttemptRow.workload_id == WorkloadRow.id)
                        .where(
                            AttemptRow.cluster == conn.name,
                            AttemptRow.state.in_(states.ATTEMPT_ACTIVE),
                            WorkloadRow.state.not_in(states.FINAL_STATES),
                            WorkloadRow.cancel_requested.is_(False),
                        )
                    )
                ).all()
            }
            allowed_jobs = {
                (self._job_caches.get(kind, JOBS), (ns, name))
                for ns, name, kind in (
                    await session.execute(
                        select(WorkloadRow.namespace, WorkloadRow.name, WorkloadRow.kind).where(
                            WorkloadRow.cluster == conn.name,
                            WorkloadRow.state.not_in(states.FINAL_STATES),
                            WorkloadRow.cancel_requested.is_(False),
                        )
                    )
                ).all()
            }
        removed = 0
        for kind, key in job_keys:
            if (kind, key) in allowed_jobs or key not in conn.caches[kind]:
                continue
            if (workload_id := self._by_job_name.get(key)) is not None:
                self._queue.add(workload_id)
                continue
            await conn.delete_job(*key, kind=kind)
            removed += 1
        for key in workload_keys:
            if key in allowed_workloads or key not in conn.caches[WORKLOADS]:
                continue
            if (workload_id := self._by_workload_name.get(key)) is not None:
                self._queue.add(workload_id)
                continue
            await conn.delete_workload(*key)
            removed += 1
        if removed:
            log.info("cluster %s: removed %d stale or orphaned copies", conn.name, removed)
        return removed

    async def _collect_garbage(self) -> None:
        for conn in list(self.ready_connections().values()):
            try:
                await self._remove_stale_copies(conn)
            except (Unreachable, ApiException) as error:
                log.info("gc in %s skipped: %s", conn.name, error)

    async def check_lost_workers(self) -> list[str]:
        """Clusters unreachable past the worker-lost timeout give up their workloads."""
        now = self._clock.now()
        async with self._reads() as session:
            rows = await cluster_queries.list_clusters(session)
        lost = []
        for row in rows:
            if row.lost or not is_lost(
                row.unreachable_since, now, self.settings.worker_lost_timeout
            ):
                continue
            await self._evict_cluster(row.name, "WorkerLost", mark_lost=True)
            lost.append(row.name)
        return lost

    async def _evict_cluster(self, name: str, reason: str, *, mark_lost: bool) -> list[int]:
        async with self._reads() as session:
            won = await workload_queries.workloads_won_by(session, name)
            copies = await workload_queries.workloads_with_active_attempt_in(session, name)
        affected = sorted(set(won) | set(copies))
        message = (
            f"cluster {name} was unreachable for longer than the worker-lost timeout"
            if mark_lost
            else f"cluster {name} was removed"
        )
        await self._evict_workloads(affected, name, reason, message, states.ATTEMPT_LOST)
        if mark_lost:
            async with self._decide() as session:
                await cluster_queries.mark_lost(session, name)
                await append_event(
                    session, at=self._clock.now(), kind="WorkerLost", message=message, cluster=name
                )
        for workload_id in affected:
            self._queue.add(workload_id)
        return affected
