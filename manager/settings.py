"""Manager settings, read from the environment (MKQ_*) and checked at start-up.

A Kueue Configuration file (`mkq manager serve --config FILE`, or MKQ_CONFIG) may set the
MultiKueue ones, as it sets them for Kueue's own manager: its `multiKueue` section gives
gcInterval, origin, workerLostTimeout, dispatcherName and incrementalDispatcherConfig, and an
MKQ_* variable set in the environment overrides the file's value (`load_settings`), so one
deployment can share Kueue's file and still tune a value per environment. Its
`integrations.declarativeKinds` (mkq's extension, kueue_api.jobs.declarative) are the job kinds
the manager dispatches beside the built-in ones (`job_kinds`), as the agents run them.
"""

from __future__ import annotations

import functools
import os
import socket
from datetime import timedelta
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kueue_api.jobs import (
    DispatchedKind,
    JobKind,
    JobKinds,
    declared_problems,
    declaring,
    dispatching,
)
from kueue_api.models.config import (
    MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
    MULTIKUEUE_DISPATCHER_INCREMENTAL,
    Configuration,
    DeclarativeKindSpec,
)
from manager.db.session import check_database_url
from manager.dispatch.nomination import DispatchConfig, DispatchMode
from manager.remote.connection import ConnectionSettings

# The namespace the manifests deploy the manager in (deploy/base/manager), and the one namespace
# whose Secrets its RBAC lets it read: the worker kubeconfigs MultiKueueClusters name live there.
# (Kueue's own manager reads them from kueue-system, where Kueue runs; ours is not there.)
MANAGER_NAMESPACE = "mkq-system"

# Kueue's dispatcher names (apis/config/v1beta2/configuration_types.go): its two built-in
# dispatchers. Kueue hands a workload to any other name to nominate clusters for it
# (pkg/controller/admissionchecks/multikueue/workload.go), which is our External mode.
KUEUE_DISPATCHERS: dict[str, DispatchMode] = {
    MULTIKUEUE_DISPATCHER_ALL_AT_ONCE: DispatchMode.ALL_AT_ONCE,
    MULTIKUEUE_DISPATCHER_INCREMENTAL: DispatchMode.INCREMENTAL,
}
# Kueue's feature gates (pkg/features/kube_features.go), both Beta and on since 0.19: a
# stepSize from the file, and incremental nomination in the MultiKueueConfig's order.
STEP_SIZE_GATE = "MultiKueueIncrementalDispatcherConfig"
CONFIG_ORDER_GATE = "MultiKueueIncrementalDispatcherRespectConfigOrder"


class ManagerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MKQ_", extra="ignore")

    database_url: str = Field(description="SQLAlchemy async URL of the manager's database")
    api_token: str = Field(min_length=8, description="bearer token of users and tools")
    declarative_kinds: list[DeclarativeKindSpec] = Field(
        default_factory=list,
        description="job kinds declared by their paths (a Kueue Configuration's "
        "integrations.declarativeKinds, or MKQ_DECLARATIVE_KINDS as JSON): dispatched as the "
        "built-in kinds are",
    )
    # /metrics names clusters and queues: it takes the API token, or this read-only one (give
    # it to Prometheus: `authorization: {credentials_file: ...}`). MKQ_METRICS_PUBLIC=true
    # serves it to anyone, for a port only the scraper can reach.
    metrics_token: str | None = Field(default=None, min_length=8)
    metrics_public: bool = False
    encryption_key: str = Field(description="Fernet key that encrypts stored kubeconfigs")
    origin: str = "multikueue"
    dispatcher: DispatchMode = DispatchMode.ALL_AT_ONCE
    incremental_step_size: int = Field(default=3, ge=1)
    incremental_round_seconds: float = Field(default=300.0, gt=0)
    # False: Incremental nominates by cluster name (Kueue with CONFIG_ORDER_GATE off).
    incremental_config_order: bool = True
    best_fit_round_seconds: float = Field(default=60.0, gt=0)
    capacity_freshness_seconds: float = Field(default=60.0, gt=0)
    # One preemption at a time: how long the one worker offered a workload that needs
    # preemption keeps it before the next is tried.
    preemption_round_seconds: float = Field(default=120.0, gt=0)
    # Kueue accepts a zero workerLostTimeout: a worker is lost as soon as it is unreachable.
    worker_lost_timeout_seconds: float = Field(default=900.0, ge=0)
    # Writes per second to each worker: enough for 100 workloads/s in AllAtOnce (a copy per
    # worker, three deleted, the Job, the cleanup: about 2.5 writes per workload and worker).
    worker_qps: float = Field(default=500.0, gt=0)
    worker_burst: int = Field(default=1000, ge=1)
    reconnect_base_seconds: float = Field(default=5.0, gt=0)
    reconnect_cap_seconds: float = Field(default=320.0, gt=0)
    resync_seconds: float = Field(default=30.0, gt=0)
    # 0 turns the periodic garbage collection off, as Kueue's gcInterval 0 does (stale copies
    # are still removed when a worker reconnects).
    gc_seconds: float = Field(default=60.0, ge=0)
    lost_check_seconds: float = Field(default=5.0, gt=0)
    # How often a connected worker is asked for /version; no answer within
    # health_probe_timeout_seconds and it is Unreachable (a frozen API server answers nothing).
    health_probe_seconds: float = Field(default=10.0, gt=0)
    health_probe_timeout_seconds: float = Field(default=5.0, gt=0)
    # Deadline of each list and write to a worker (a watch has its own, longer one).
    worker_request_timeout_seconds: float = Field(default=30.0, gt=0)
    reconcile_workers: int = Field(default=16, ge=1)
    # The manager cluster (mkq manager serve --kubeconfig): where MultiKueueCluster Secrets live
    # (MKQ_KUEUE_NAMESPACE; the manager's own namespace, the only one its RBAC lets it read
    # Secrets in), and the period of a full pass besides the one after each change.
    kueue_namespace: str = MANAGER_NAMESPACE
    # Request bodies larger than this get 413 before they are parsed: kube-apiserver's limit
    # (3 MiB), so whatever kubectl can send, the manager takes.
    max_body_bytes: int = Field(default=3 * 1024 * 1024, ge=1024)
    manager_cluster_seconds: float = Field(default=30.0, gt=0)
    # The manager cluster's admission webhook (manager.webhooks): a MultiKueue Job gets
    # spec.managedBy at creation. MKQ_WEBHOOK_URL is where kube-apiserver reaches this
    # server (https); with it and MKQ_WEBHOOK_PORT set, the manager writes the configurations.
    webhook_port: int | None = Field(default=None, ge=0, le=65535)
    webhook_host: str = "0.0.0.0"
    webhook_url: str | None = Field(default=None, pattern=r"^https://")
    # Several replicas over one Postgres (manager.leadership): this one's name (the pod's, by
    # default the host's name and process id), the URL where the other replicas reach its REST
    # API (MKQ_ADVERTISE_URL, e.g. http://$(POD_IP):8080; `mkq manager serve` derives one from
    # --listen), how often a standby tries for the leadership, and how often the leader checks
    # that it still holds it.
    replica_name: str = Field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}",
        min_length=1,
        max_length=253,
    )
    advertise_url: str | None = Field(default=None, pattern=r"^https?://")
    leader_retry_seconds: float = Field(default=0.5, gt=0)
    leader_check_seconds: float = Field(default=1.0, gt=0)

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        return check_database_url(value)

    @field_validator("declarative_kinds")
    @classmethod
    def _declared_kinds_well_formed(
        cls, value: list[DeclarativeKindSpec]
    ) -> list[DeclarativeKindSpec]:
        problems = declared_problems(value, "declarativeKinds")
        if problems:
            raise ValueError("; ".join(str(problem) for problem in problems))
        return value

    @functools.cached_property
    def _kinds(self) -> JobKinds[JobKind]:
        return declaring(self.declarative_kinds)

    @functools.cached_property
    def _dispatched(self) -> JobKinds[DispatchedKind]:
        return dispatching(self._kinds)

    def job_kinds(self) -> JobKinds[JobKind]:
        """The job kinds of the manager cluster: the built-in ones and the declared ones."""
        return self._kinds

    def dispatched_kinds(self) -> JobKinds[DispatchedKind]:
        """The kinds this manager takes through its REST API and dispatches: the job kinds
        and the pod groups (kueue_api.jobs.dispatching)."""
        return self._dispatched

    @field_validator("dispatcher", mode="before")
    @classmethod
    def _kueue_dispatcher_name(cls, value: object) -> object:
        """MKQ_DISPATCHER may be written as in a Kueue Configuration, for its two built-in
        dispatchers (other names stay errors here: a typo must not silently mean External)."""
        if isinstance(value, str) and value in KUEUE_DISPATCHERS:
            return KUEUE_DISPATCHERS[value]
        return value

    def dispatch_config(self) -> DispatchConfig:
        return DispatchConfig(
            mode=self.dispatcher,
            step_size=self.incremental_step_size,
            round_timeout=timedelta(seconds=self.incremental_round_seconds),
            config_order=self.incremental_config_order,
            best_fit_round_timeout=timedelta(seconds=self.best_fit_round_seconds),
        )

    def connection_settings(self) -> ConnectionSettings:
        return ConnectionSettings(
            qps=self.worker_qps,
            burst=self.worker_burst,
            backoff_base=self.reconnect_base_seconds,
            backoff_cap=self.reconnect_cap_seconds,
            probe_seconds=self.health_probe_seconds,
            probe_timeout=self.health_probe_timeout_seconds,
            request_timeout=self.worker_request_timeout_seconds,
            kinds=self.dispatched_kinds(),
        )


def dispatch_mode_for(dispatcher_name: str) -> DispatchMode:
    """Our mode for a Configuration's `multiKueue.dispatcherName`.

    Kueue's two names map to AllAtOnce and Incremental; our own mode names (MKQ_DISPATCHER's
    values, BestFit among them) are taken as written; any other name is, as in Kueue, a
    dispatcher outside the manager, here one that nominates through
    `PUT /api/v1/workloads/{ns}/{name}/nominations`.
    """
    if dispatcher_name in KUEUE_DISPATCHERS:
        return KUEUE_DISPATCHERS[dispatcher_name]
    try:
        return DispatchMode(dispatcher_name)
    except ValueError:
        return DispatchMode.EXTERNAL


def configuration_settings(configuration: Configuration) -> dict[str, Any]:
    """The ManagerSettings fields a Configuration's `multiKueue` section sets.

    Only fields written in the file count, so that a file that leaves one out changes
    nothing (the defaults are Kueue's anyway: 1m, "multikueue", 15m, AllAtOnce, 3).
    """
    section = configuration.multi_kueue
    written = section.model_fields_set
    values: dict[str, Any] = {}
    if "gc_interval" in written:
        values["gc_seconds"] = section.gc_interval.total_seconds()
    if "origin" in written:
        values["origin"] = section.origin
    if configuration.integrations.declarative_kinds:
        values["declarative_kinds"] = configuration.integrations.declarative_kinds
    if "worker_lost_timeout" in written:
        values["worker_lost_timeout_seconds"] = section.worker_lost_timeout.total_seconds()
    if "dispatcher_name" in written:
        values["dispatcher"] = dispatch_mode_for(section.dispatcher_name)
    incremental = section.incremental_dispatcher_config
    if (
        incremental is not None
        and "step_size" in incremental.model_fields_set
        and configuration.feature_enabled(STEP_SIZE_GATE, True)
    ):
        values["incremental_step_size"] = incremental.step_size
    if (configuration.feature_gates or {}).get(CONFIG_ORDER_GATE) is not None:
        values["incremental_config_order"] = configuration.feature_enabled(CONFIG_ORDER_GATE, True)
    return values


def configuration_warnings(configuration: Configuration) -> list[str]:
    """What the file asks for that the manager does not do: said at start, not dropped."""
    section = configuration.multi_kueue
    warnings = []
    name = section.dispatcher_name
    if "dispatcher_name" in section.model_fields_set and dispatch_mode_for(name) is (
        DispatchMode.EXTERNAL
    ):
        warnings.append(
            f"multiKueue.dispatcherName {name!r} is not one of Kueue's dispatchers: the External "
            "mode, clusters are nominated through PUT /api/v1/workloads/{ns}/{name}/nominations"
        )
    if section.external_frameworks:
        warnings.append(
            "multiKueue.externalFrameworks is not supported: the manager dispatches batch/v1 "
            "Jobs and JobSets only"
        )
    if section.cluster_profile:
        warnings.append(
            "multiKueue.clusterProfile is not supported: a MultiKueueCluster needs "
            "spec.clusterSource.kubeConfig"
        )
    return warnings


def _set_in_environment(field_name: str) -> bool:
    """Whether an MKQ_* variable sets this field (matched without case, as pydantic does)."""
    wanted = f"MKQ_{field_name}".upper()
    return any(key.upper() == wanted for key in os.environ)


def load_settings(configuration: Configuration | None = None) -> ManagerSettings:
    """ManagerSettings from the environment, over the `multiKueue` section of a Kueue
    Configuration when one is given: the MKQ_* variable, else the file, else the default.

    Read the file with kueue_api.loader.load_configuration (its ConfigurationFileError names
    the file and field); a bad MKQ_* value raises pydantic's ValidationError.
    """
    from_file = configuration_settings(configuration) if configuration is not None else {}
    kept = {name: value for name, value in from_file.items() if not _set_in_environment(name)}
    return ManagerSettings(**kept)
