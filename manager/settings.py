"""Manager settings, read from the environment (MKQ_*) and checked at start-up."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from manager.db.session import check_database_url
from manager.dispatch.nomination import DispatchConfig, DispatchMode
from manager.remote.connection import ConnectionSettings

# The namespace the manifests deploy the manager in (deploy/base/manager), and the one namespace
# whose Secrets its RBAC lets it read: the worker kubeconfigs MultiKueueClusters name live there.
# (Kueue's own manager reads them from kueue-system, where Kueue runs; ours is not there.)
MANAGER_NAMESPACE = "mkq-system"


class ManagerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MKQ_", extra="ignore")

    database_url: str = Field(description="SQLAlchemy async URL of the manager's database")
    api_token: str = Field(min_length=8, description="bearer token of users and tools")
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
    best_fit_round_seconds: float = Field(default=60.0, gt=0)
    capacity_freshness_seconds: float = Field(default=60.0, gt=0)
    # One preemption at a time: how long the one worker offered a workload that needs
    # preemption keeps it before the next is tried.
    preemption_round_seconds: float = Field(default=120.0, gt=0)
    worker_lost_timeout_seconds: float = Field(default=900.0, gt=0)
    # Writes per second to each worker: enough for 100 workloads/s in AllAtOnce (a copy per
    # worker, three deleted, the Job, the cleanup: about 2.5 writes per workload and worker).
    worker_qps: float = Field(default=500.0, gt=0)
    worker_burst: int = Field(default=1000, ge=1)
    reconnect_base_seconds: float = Field(default=5.0, gt=0)
    reconnect_cap_seconds: float = Field(default=320.0, gt=0)
    resync_seconds: float = Field(default=30.0, gt=0)
    gc_seconds: float = Field(default=60.0, gt=0)
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

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        return check_database_url(value)

    def dispatch_config(self) -> DispatchConfig:
        return DispatchConfig(
            mode=self.dispatcher,
            step_size=self.incremental_step_size,
            round_timeout=timedelta(seconds=self.incremental_round_seconds),
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
        )
