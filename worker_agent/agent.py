"""The worker agent: informers, controllers, the scheduling loop, reports and health, wired up.

Informers run on every replica; the controllers and the scheduling loop run only on the leader.
Each time a replica becomes leader it rebuilds the engine's state from its caches, which hold
the cluster's truth (admissions live in Workload status), so a restarted or failed-over agent
neither loses an admission nor makes a second one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kueue_api import Configuration
from kueue_api.conditions import find_condition
from kueue_api.jobs import POD_GROUP_PARENTS, JobKind, job_kinds
from kueue_api.jobs.base import Finish
from kueue_api.webhooks.server import WebhookServer
from worker_agent.admission_checks.base import AdmissionCheckController
from worker_agent.admission_checks.node_capacity import NodeCapacityCheck
from worker_agent.admission_checks.provisioning import ProvisioningRequestCheck
from worker_agent.admission_checks.runner import AdmissionCheckRunner
from worker_agent.background import cancel_quietly
from worker_agent.cache import Change, object_key
from worker_agent.controllers.elastic_ungater import ElasticUngater
from worker_agent.controllers.jobs import JobController
from worker_agent.controllers.pod_groups import PodGroupController
from worker_agent.controllers.pod_parents import PodGroupParentController
from worker_agent.controllers.runner import ControllerRunner
from worker_agent.controllers.topology_ungater import TopologyUngater
from worker_agent.controllers.workloads import WorkloadController
from worker_agent.engine import EngineConfig
from worker_agent.engine_feed import ENGINE_RESOURCES
from worker_agent.events import EventRecorder
from worker_agent.health import HealthServer
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.leader import LeaderElector
from worker_agent.metrics import AgentMetrics
from worker_agent.reporter import Reporter
from worker_agent.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    PODS,
    PRIORITY_CLASSES,
    WORKLOADS,
    ResourceType,
)
from worker_agent.scheduling import SchedulingLoop
from worker_agent.webhooks import WebhookConfig, agent_webhook_server
from worker_agent.workloads import cluster_queue_of, eviction_pending_latency
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

_ENGINE_RESOURCE_SET = frozenset(ENGINE_RESOURCES)
"""The same, for the membership test every watch event makes."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class AgentConfig:
    """How one agent runs; the CLI fills it from flags."""

    cluster_name: str
    manager_url: str | None = None
    token: str | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str | None = None
    workers: int = 4
    write_parallelism: int = 64
    report_interval: float = 2.0
    pods_ready_timeout: float | None = 1800.0
    """waitForPodsReady (on by default in Kueue's v1beta2 configuration); None disables."""
    pods_ready_recovery_timeout: float | None = None
    """waitForPodsReady.recoveryTimeout after a pod failed: None means the timeout, 0 off."""
    block_admission: bool = False
    """waitForPodsReady.blockAdmission: admit nothing while an admitted workload is not
    PodsReady."""
    requeue_backoff_base: float = 60.0
    requeue_backoff_max: float = 3600.0
    requeue_backoff_limit: int | None = None
    """waitForPodsReady.requeuingStrategy.backoffLimitCount: a workload timed out once more
    than this many requeues is deactivated (RequeuingLimitExceeded); None requeues forever."""
    webhook: WebhookConfig | None = None
    """Serve Kueue's admission webhooks (worker_agent.webhooks); None: no webhook."""
    configuration: Configuration | None = None
    """The user's Kueue Configuration: the engine follows all of it (fair sharing, admission
    fair sharing, resources, DRA); its waitForPodsReady arrives through the fields above
    (`settings_from`), where flags may override it. None: Kueue's defaults."""

    def engine_config(self) -> EngineConfig:
        """The engine settings before any Configuration is applied: Kueue's defaults (those of
        `EngineConfig`, as with no Configuration file), with blockAdmission as this agent runs
        it. A Configuration (`engine_configuration`) then replaces them."""
        return EngineConfig(block_admission=self.block_admission)

    def engine_configuration(self) -> Configuration | None:
        """The Configuration the engine applies, with blockAdmission as this agent runs it."""
        configuration = self.configuration
        if configuration is None:
            return None
        pods_ready = configuration.wait_for_pods_ready.model_copy(
            update={"block_admission": self.block_admission}
        )
        return configuration.model_copy(update={"wait_for_pods_ready": pods_ready})


def settings_from(configuration: Configuration) -> dict[str, Any]:
    """The AgentConfig fields a Configuration's waitForPodsReady sets (seconds)."""
    pods_ready = configuration.wait_for_pods_ready
    strategy = pods_ready.requeuing_strategy
    recovery = pods_ready.recovery_timeout
    if recovery == pods_ready.timeout:
        # Kueue's default (the timeout): left to follow a --wait-for-pods-ready-timeout flag.
        recovery = None
    # Kueue's v1beta2 defaults always give waitForPodsReady (30 min: apis/config/v1beta2/
    # defaults.go); it is off only with the DisableWaitForPodsReady feature gate
    # (pkg/util/waitforpodsready: Enabled).
    disabled = configuration.feature_enabled("DisableWaitForPodsReady", False)
    return {
        "pods_ready_timeout": None if disabled else pods_ready.timeout.total_seconds(),
        "pods_ready_recovery_timeout": None if recovery is None else recovery.total_seconds(),
        "block_admission": pods_ready.block_admission,
        "requeue_backoff_base": float(strategy.backoff_base_seconds),
        "requeue_backoff_max": float(strategy.backoff_max_seconds),
        "requeue_backoff_limit": strategy.backoff_limit_count,
        "configuration": configuration,
    }


def _spec_changed(change: Change) -> bool:
    if change.old is None or change.new is None:
        return True
    old_meta, new_meta = change.old.get("metadata") or {}, change.new.get("metadata") or {}
    return change.old.get("spec") != change.new.get("spec") or old_meta.get(
        "deletionTimestamp"
    ) != new_meta.get("deletionTimestamp")


def _active_changed(change: Change) -> bool:
    """Whether a queue's Active condition changed status (e.g. an AdmissionCheck it uses
    turned inactive), which its Workloads' QuotaReserved message follows."""
    old, new = (find_condition(obj or {}, "Active") or {} for obj in (change.old, change.new))
    return old.get("status") != new.get("status")


class _LeaderRun:
    """The controllers of one leadership term."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        informers, writer, recorder = agent.informers, agent.writer, agent.recorder
        self.scheduling = SchedulingLoop(
            informers,
            writer,
            recorder,
            agent.metrics,
            agent.clock,
            agent.reporter,
            parallelism=agent.config.write_parallelism,
            engine_config=agent.config.engine_config(),
            configuration=agent.config.engine_configuration(),
        )
        managed_kinds = frozenset(i.resource.kind for i in agent.integrations)
        self.job_controllers = [
            JobController(
                i,
                informers,
                writer,
                recorder,
                agent.clock,
                agent.on_finish,
                managed_kinds,
                agent.metrics,
            )
            for i in agent.integrations
        ]
        config = agent.config
        self.workloads = WorkloadController(
            informers,
            writer,
            agent.clock,
            [
                PODS,
                *(i.resource for i in agent.integrations),
                *(p.resource for p in POD_GROUP_PARENTS),
            ],
            pods_ready_timeout=config.pods_ready_timeout,
            recovery_timeout=config.pods_ready_recovery_timeout,
            backoff_base=config.requeue_backoff_base,
            backoff_max=config.requeue_backoff_max,
            backoff_limit=config.requeue_backoff_limit,
            recorder=recorder,
        )
        self.pod_groups = PodGroupController(
            informers, writer, recorder, agent.clock, agent.on_finish, agent.metrics
        )
        self.parents = [
            PodGroupParentController(kind, informers, writer, recorder, agent.clock)
            for kind in POD_GROUP_PARENTS
        ]
        observe = agent.metrics.observe_reconcile
        self.parent_runners = [
            ControllerRunner(f"parent-{c.rt.plural}", c.reconcile, agent.config.workers, observe)
            for c in self.parents
        ]
        self.job_runners = [
            ControllerRunner(f"job-{c.rt.plural}", c.reconcile, agent.config.workers, observe)
            for c in self.job_controllers
        ]
        self.workload_runner = ControllerRunner(
            "workload", self.workloads.reconcile, agent.config.workers, observe
        )
        self.pod_group_runner = ControllerRunner(
            "pod-group", self.pod_groups.reconcile, agent.config.workers, observe
        )
        self.checks = AdmissionCheckRunner(
            informers, writer, recorder, agent.metrics, agent.clock, agent.admission_checks
        )
        self.check_workload_runner = ControllerRunner(
            "admission-check-workloads", self.checks.reconcile, agent.config.workers, observe
        )
        self.check_runner = ControllerRunner(
            "admission-checks", self.checks.reconcile_check, 1, observe
        )
        self._check_watches = frozenset(self.checks.watched)
        self.ungater = TopologyUngater(informers, writer, agent.metrics, agent.clock)
        self.ungater_runner = ControllerRunner(
            "topology-ungater", self.ungater.reconcile, agent.config.workers, observe
        )
        self.elastic = ElasticUngater(informers, writer, agent.metrics, agent.clock)
        self.elastic_runner = ControllerRunner(
            "elastic-job-ungater", self.elastic.reconcile, agent.config.workers, observe
        )
        self._tasks: list[asyncio.Task[None]] = []

    def on_change(self, rt: ResourceType, change: Change) -> None:
        if rt in _ENGINE_RESOURCE_SET:
            self.scheduling.on_change(rt, change)
        if rt == PODS:
            for key in self.ungater.keys_for_pod(change):
                self.ungater_runner.enqueue(key)
            for key in self.elastic.keys_for_pod(change):
                self.elastic_runner.enqueue(key)
            for key in self.pod_groups.keys_for_pod(change):
                self.pod_group_runner.enqueue(key)
            for parent, runner in zip(self.parents, self.parent_runners, strict=True):
                for key in parent.keys_for_pod(change):
                    runner.enqueue(key)
            for key in self.workloads.keys_for_job(change):
                self.workload_runner.enqueue(key)
        self._on_check_change(rt, change)
        if rt == WORKLOADS:
            released = eviction_pending_latency(change.old, change.new, self.agent.clock())
            if released is not None:
                self.agent.metrics.eviction_released(*released)
            self.workload_runner.enqueue(change.key)
            for key in self.pod_groups.keys_for_workload(change):
                self.pod_group_runner.enqueue(key)
            for parent, runner in zip(self.parents, self.parent_runners, strict=True):
                for key in parent.keys_for_workload(change):
                    runner.enqueue(key)
            if self.ungater.wants(change):
                self.ungater_runner.enqueue(change.key)
            for key in self.elastic.keys_for_workload(change):
                self.elastic_runner.enqueue(key)
            for controller, runner in zip(self.job_controllers, self.job_runners, strict=True):
                for key in controller.job_keys_for_workload(change):
                    runner.enqueue(key)
        elif rt in (LOCAL_QUEUES, CLUSTER_QUEUES) and (
            _spec_changed(change) or _active_changed(change)
        ):
            # A queue appearing, going, changing or turning (in)active may unblock its
            # Workloads (other status updates, most of them our own, cannot).
            if rt == LOCAL_QUEUES:
                keys = self.workloads.keys_for_local_queue(change)
            else:
                keys = self.workloads.keys_for_cluster_queue(change)
            for key in keys:
                self.workload_runner.enqueue(key)
        for controller, runner in zip(self.job_controllers, self.job_runners, strict=True):
            if rt == controller.rt:
                runner.enqueue(change.key)
                for key in self.workloads.keys_for_job(change):
                    self.workload_runner.enqueue(key)
        for parent, runner in zip(self.parents, self.parent_runners, strict=True):
            if rt == parent.rt:
                runner.enqueue(change.key)
                for key in self.workloads.keys_for_job(change):
                    self.workload_runner.enqueue(key)

    def _on_check_change(self, rt: ResourceType, change: Change) -> None:
        """What the admission check runner looks at again after a change."""
        checks = self.checks
        if rt == WORKLOADS and checks.wants(change):
            self.check_workload_runner.enqueue(change.key)
        if rt == ADMISSION_CHECKS:
            self.check_runner.enqueue(change.key)
        if rt == ADMISSION_CHECKS or rt in self._check_watches:
            for key in checks.workload_keys_for(rt, change):
                self.check_workload_runner.enqueue(key)
            for key in checks.check_keys_for(rt):
                self.check_runner.enqueue(key)
        if rt in (LOCAL_QUEUES, CLUSTER_QUEUES) and _spec_changed(change):
            if rt == LOCAL_QUEUES:
                keys = self.workloads.keys_for_local_queue(change)
            else:
                keys = self.workloads.keys_for_cluster_queue(change)
            for key in keys:
                self.check_workload_runner.enqueue(key)

    def start(self) -> None:
        informers = self.agent.informers
        # Rebuild: every cached object enters the engine and every key is reconciled once.
        self.scheduling.resync()
        for key in informers.cache(WORKLOADS):
            self.workload_runner.enqueue(key)
            self.ungater_runner.enqueue(key)
        for obj in informers.cache(WORKLOADS).values():
            if self.checks.wants(Change(object_key(obj), None, obj)):
                self.check_workload_runner.enqueue(object_key(obj))
            for key in self.elastic.keys_for_workload(Change(object_key(obj), None, obj)):
                self.elastic_runner.enqueue(key)
        for key in informers.cache(ADMISSION_CHECKS):
            self.check_runner.enqueue(key)
        for pod in informers.cache(PODS).values():
            for key in self.pod_groups.keys_for_pod(Change(object_key(pod), None, pod)):
                self.pod_group_runner.enqueue(key)
        for controller, runner in zip(self.job_controllers, self.job_runners, strict=True):
            for key in informers.cache(controller.rt):
                runner.enqueue(key)
        for parent, runner in zip(self.parents, self.parent_runners, strict=True):
            for key in informers.cache(parent.rt):
                runner.enqueue(key)
        for runner in self._runners:
            runner.start()
        self._tasks.append(asyncio.create_task(self.scheduling.run(), name="scheduling-loop"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for runner in self._runners:
            await runner.stop()

    @property
    def idle(self) -> bool:
        return not self.scheduling.busy and all(r.queue.idle for r in self._runners)

    @property
    def _runners(self) -> list[ControllerRunner]:
        return [
            *self.job_runners,
            *self.parent_runners,
            self.workload_runner,
            self.ungater_runner,
            self.elastic_runner,
            self.check_workload_runner,
            self.check_runner,
            self.pod_group_runner,
        ]


def default_admission_checks() -> list[AdmissionCheckController]:
    """The check controllers an agent runs unless told otherwise."""
    return [NodeCapacityCheck(), ProvisioningRequestCheck()]


def informed_resources(
    integrations: Sequence[JobKind], checks: Sequence[AdmissionCheckController]
) -> list[ResourceType]:
    """Every type the agent lists and watches: the engine's, the jobs', the checks'."""
    watched = (rt for c in checks for rt in (*c.watches, *c.activity_watches))
    jobs = (
        *(i.resource for i in integrations),
        *(p.resource for p in POD_GROUP_PARENTS),
        PRIORITY_CLASSES,
    )
    return list(dict.fromkeys([*ENGINE_RESOURCES, *jobs, *watched]))


class Agent:
    """One worker agent against one cluster."""

    def __init__(
        self,
        config: AgentConfig,
        client: KubeClient,
        integrations: list[JobKind] | None = None,
        clock: Callable[[], datetime] = _utc_now,
        admission_checks: list[AdmissionCheckController] | None = None,
    ) -> None:
        """`admission_checks`: the check controllers this agent runs (default: the
        `mkq.dev/node-capacity` check and Kueue's ProvisioningRequest check); checks of other
        controllers are left to them."""
        self.config = config
        self.client = client
        self.clock = clock
        self.integrations = integrations or list(job_kinds(config.configuration))
        self.admission_checks = (
            default_admission_checks() if admission_checks is None else admission_checks
        )
        self.metrics = AgentMetrics()
        resources = informed_resources(self.integrations, self.admission_checks)
        self.informers = InformerSet(client, resources, on_error=self._on_watch_error)
        self.writer = ObjectWriter(client, self.informers, on_api_error=self._on_api_error)
        self.recorder = EventRecorder(client, clock)
        self.reporter: Reporter | None = None
        if config.manager_url:
            self.reporter = Reporter(
                config.manager_url,
                config.cluster_name,
                config.token or "",
                capacity=self._capacity,
                clock=clock,
                interval=config.report_interval,
            )
        identity = config.identity or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.elector = LeaderElector(
            client,
            config.lease_namespace,
            config.lease_name or f"mkq-agent-{config.cluster_name}",
            identity,
            config.lease_duration,
            config.renew_deadline,
            config.retry_period,
        )
        self.health: HealthServer | None = None
        if config.metrics_port is not None:
            self.health = HealthServer(
                lambda: self.ready, self.metrics.render, config.metrics_host, config.metrics_port
            )
        self.webhooks: WebhookServer | None = None
        if config.webhook is not None:
            self.webhooks = agent_webhook_server(
                config.webhook, client, self.informers, config.configuration
            )
        self._webhooks_started: asyncio.Task[None] | None = None
        self._run: _LeaderRun | None = None
        self._leadership: asyncio.Task[None] | None = None
        for rt in resources:
            self.informers[rt].add_handler(functools.partial(self._on_change, rt))

    # --- hooks -----------------------------------------------------------------------------

    def _on_change(self, rt: ResourceType, change: Change) -> None:
        if self._run is not None:
            self._run.on_change(rt, change)

    def _on_watch_error(self, rt: ResourceType, error: Exception) -> None:
        self.metrics.watch_errors.labels(str(rt)).inc()

    def _on_api_error(self, verb: str, error: ApiError) -> None:
        self.metrics.api_errors.labels(verb, str(error.status)).inc()

    def on_finish(self, workload: dict[str, object], finish: Finish) -> None:
        self.metrics.finished(workload, cluster_queue_of(workload) or "", self.clock())
        if self.reporter is not None:
            self.reporter.finished(workload, finish.succeeded, finish.message)

    def _capacity(self) -> list[dict[str, object]]:
        return list(self._run.scheduling.capacity) if self._run is not None else []

    # --- state -----------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.informers.synced

    @property
    def is_leader(self) -> bool:
        return self._run is not None

    @property
    def idle(self) -> bool:
        """No queued reconcile, change or write (for tests and benchmarks)."""
        return self._run is not None and self._run.idle

    @property
    def health_port(self) -> int | None:
        return self.health.port if self.health is not None else None

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self.health is not None:
            await self.health.start()
        self.informers.start()
        self.recorder.start()
        if self.reporter is not None:
            self.reporter.start()
        if self.webhooks is not None:
            self._webhooks_started = asyncio.create_task(
                self._serve_webhooks(self.webhooks), name="webhooks"
            )
        self._leadership = asyncio.create_task(self._lead(), name="leadership")

    async def _serve_webhooks(self, server: WebhookServer) -> None:
        """Serve once the caches are synced: an answer from empty caches would miss the
        namespace's default LocalQueue (until then kube-apiserver's call fails, and with
        failurePolicy Fail the object waits for a retry rather than going in unqueued)."""
        await self.informers.wait_synced()
        while True:
            try:
                await server.start()
                log.info("admission webhooks served on port %s", server.port)
                return
            except ApiError as error:
                # Its namespace or RBAC missing, say: the message says which.
                log.warning("admission webhooks could not start (%s); retrying", error)
                await asyncio.sleep(5.0)
            except Exception:
                log.exception("admission webhooks could not start; retrying")
                await asyncio.sleep(5.0)

    async def _lead(self) -> None:
        """Lead whenever we hold the lease; a failure inside a term ends only that term."""
        while True:
            try:
                await self._lead_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("leadership term failed; starting over")
                await asyncio.sleep(1.0)

    async def _lead_once(self) -> None:
        while True:
            if self.config.leader_elect:
                await self.elector.acquire()
            await self.informers.wait_synced()
            self.metrics.is_leader.set(1)
            self.metrics.role = "leader" if self.config.leader_elect else "standalone"
            run = _LeaderRun(self)
            self._run = run
            run.start()
            log.info("agent for cluster %s is leading", self.config.cluster_name)
            try:
                if self.config.leader_elect:
                    await self.elector.keep()
                else:
                    await asyncio.Event().wait()
            finally:
                self._run = None
                self.metrics.is_leader.set(0)
                if self.config.leader_elect:
                    self.metrics.role = "follower"
                await run.stop()

    async def stop(self, release_lease: bool = True) -> None:
        """Stop everything this agent started; release the lease unless simulating a crash."""
        if self._leadership is not None:
            await cancel_quietly(self._leadership)
            self._leadership = None
        if self._webhooks_started is not None:
            await cancel_quietly(self._webhooks_started)
            self._webhooks_started = None
        if self.webhooks is not None:
            await self.webhooks.stop()
        if release_lease and self.config.leader_elect:
            await self.elector.release()
        if self.reporter is not None:
            await self.reporter.stop()
        await self.recorder.stop()
        await self.informers.stop()
        if self.health is not None:
            await self.health.stop()

    async def __aenter__(self) -> Agent:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
