"""Tables of the manager's dispatch state.

The schema is created by the Alembic migrations in `migrations/`; these classes are the ORM view of
it and must stay in step with the latest revision (a unit test compares them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC, also on SQLite (which drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# BIGINT on Postgres; INTEGER on SQLite, where only INTEGER PRIMARY KEY autoincrements.
Id = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    """Declarative base of the manager's tables."""


class ClusterRow(Base):
    """A worker cluster: where it is, whether it answers, and what it last said about capacity."""

    __tablename__ = "clusters"

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(253), unique=True)
    # Fernet token of the kubeconfig YAML; the key comes from MKQ_ENCRYPTION_KEY.
    kubeconfig_encrypted: Mapped[bytes] = mapped_column(LargeBinary)
    # Keyed digest of the agent token handed out once at registration (credentials.TokenHasher).
    token_digest: Mapped[str] = mapped_column(String(128))
    # Where the cluster came from: "api" (REST) or "multikueue" (a MultiKueueCluster object).
    source: Mapped[str] = mapped_column(String(32), default="api")
    state: Mapped[str] = mapped_column(String(32), default="Pending")
    state_reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    state_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The worker-lost clock: set at the first failed reconnect, cleared on a good one.
    unreachable_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Set once the lost-worker timeout expired and its workloads were moved elsewhere.
    lost: Mapped[bool] = mapped_column(Boolean, default=False)
    last_contact_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    capacity: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    capacity_reported_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WorkloadRow(Base):
    """A workload as the manager tracks it: what was submitted, where it runs, how it ended."""

    __tablename__ = "workloads"
    __table_args__ = (
        UniqueConstraint("namespace", "name", name="uq_workloads_namespace_name"),
        UniqueConstraint("namespace", "workload_name", name="uq_workloads_namespace_wl_name"),
        Index("ix_workloads_state", "state"),
        Index("ix_workloads_queue", "queue"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(63))
    # Name of the submitted object (the Job).
    name: Mapped[str] = mapped_column(String(253))
    kind: Mapped[str] = mapped_column(String(63))
    uid: Mapped[str] = mapped_column(String(64))
    # Name of the Kueue Workload mirrored into the workers.
    workload_name: Mapped[str] = mapped_column(String(253))
    queue: Mapped[str] = mapped_column(String(253))
    priority_class: Mapped[str | None] = mapped_column(String(253), nullable=True)
    # WorkloadPriorityClass (NULL) or PriorityClass: see kueue_api.priority.
    priority_class_kind: Mapped[str | None] = mapped_column(String(32), nullable=True)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    # "api" or "manager-cluster".
    source: Mapped[str] = mapped_column(String(32), default="api")
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Requests of the whole workload, resource -> canonical quantity, for BestFit.
    requests: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(32), default="Pending")
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    cluster: Mapped[str | None] = mapped_column(String(253), nullable=True)
    nominated: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Clusters an External dispatcher named; None when none did yet.
    external_nominations: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    round_started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    job_created_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    remote_status: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    admitted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Cleared once every remote object of a final workload is gone.
    cleanup_pending: Mapped[bool] = mapped_column(Boolean, default=False)
    # Under a manager-cluster queue: whether Kueue there holds its quota (it is dispatched only
    # then); None when no manager-cluster queue holds it back.
    quota_reserved: Mapped[bool | None] = mapped_column(Boolean, nullable=True, default=None)

    attempts: Mapped[list[AttemptRow]] = relationship(
        back_populates="workload", order_by="AttemptRow.id", lazy="raise"
    )


class AttemptRow(Base):
    """One copy of a workload sent to one cluster, from nomination to removal."""

    __tablename__ = "dispatch_attempts"
    __table_args__ = (Index("ix_attempts_workload", "workload_id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id", ondelete="CASCADE"))
    cluster: Mapped[str] = mapped_column(String(253))
    # Nominated, Admitted (won), Removed, Evicted, Lost, Succeeded, Failed.
    state: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    remote_uid: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # When the worker said (watch or report) that it admitted this copy.
    admitted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    removed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)

    workload: Mapped[WorkloadRow] = relationship(back_populates="attempts", lazy="raise")


class EventRow(Base):
    """Append-only log of what the manager decided and observed, for history and audits."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_workload", "workload_id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    workload_id: Mapped[int | None] = mapped_column(
        ForeignKey("workloads.id", ondelete="SET NULL"), nullable=True
    )
    cluster: Mapped[str | None] = mapped_column(String(253), nullable=True)
    kind: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text, default="")
    # The leader's epoch (manager.db.fence) the event was decided under; None for what is not
    # a decision between replicas (a submission accepted) and on the demo's SQLite store. With
    # the fence, events in id order never go back to an older epoch: the audit that no two
    # replicas ever acted at once (tests/replica_audit.py).
    epoch: Mapped[int | None] = mapped_column(Id, nullable=True)


class AgentReportRow(Base):
    """Ids of agent reports already applied, so a retried report is applied once."""

    __tablename__ = "agent_reports"

    cluster: Mapped[str] = mapped_column(String(253), primary_key=True)
    report_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LeadershipRow(Base):
    """Which replica dispatches, and its fencing epoch (manager.leadership).

    One row (id 1). Each new leader raises `epoch`; every write that decides carries the epoch
    its replica was elected with and matches only while it is still the current one.
    """

    __tablename__ = "manager_leadership"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    epoch: Mapped[int] = mapped_column(Id, nullable=False)
    holder: Mapped[str] = mapped_column(String(253), nullable=False)
    address: Mapped[str | None] = mapped_column(String(2048))
    elected_at: Mapped[datetime] = mapped_column(UtcDateTime, nullable=False)


class ReplicaRow(Base):
    """A manager replica and when it last said it was alive (GET /api/v1/replicas)."""

    __tablename__ = "manager_replicas"

    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    address: Mapped[str | None] = mapped_column(String(2048))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, nullable=False)
    seen_at: Mapped[datetime] = mapped_column(UtcDateTime, nullable=False)
