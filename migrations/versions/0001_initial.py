"""The manager's initial schema: clusters, workloads, dispatch attempts, events, agent reports.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "clusters",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(253), nullable=False, unique=True),
        sa.Column("kubeconfig_encrypted", sa.LargeBinary(), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("state_reason", sa.String(64), nullable=True),
        sa.Column("state_message", sa.Text(), nullable=True),
        sa.Column("unreachable_since", Ts, nullable=True),
        sa.Column("lost", sa.Boolean(), nullable=False),
        sa.Column("last_contact_at", Ts, nullable=True),
        sa.Column("capacity", sa.JSON(), nullable=True),
        sa.Column("capacity_reported_at", Ts, nullable=True),
        sa.Column("created_at", Ts, nullable=False),
    )
    op.create_table(
        "workloads",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(63), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("workload_name", sa.String(253), nullable=False),
        sa.Column("queue", sa.String(253), nullable=False),
        sa.Column("priority_class", sa.String(253), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("requests", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("cluster", sa.String(253), nullable=True),
        sa.Column("nominated", sa.JSON(), nullable=False),
        sa.Column("external_nominations", sa.JSON(), nullable=True),
        sa.Column("round_started_at", Ts, nullable=True),
        sa.Column("job_created_at", Ts, nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("remote_status", sa.JSON(), nullable=True),
        sa.Column("created_at", Ts, nullable=False),
        sa.Column("dispatched_at", Ts, nullable=True),
        sa.Column("admitted_at", Ts, nullable=True),
        sa.Column("started_at", Ts, nullable=True),
        sa.Column("finished_at", Ts, nullable=True),
        sa.Column("cleanup_pending", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("namespace", "name", name="uq_workloads_namespace_name"),
        sa.UniqueConstraint("namespace", "workload_name", name="uq_workloads_namespace_wl_name"),
    )
    op.create_index("ix_workloads_state", "workloads", ["state"])
    op.create_index("ix_workloads_queue", "workloads", ["queue"])
    op.create_table(
        "dispatch_attempts",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column(
            "workload_id",
            Id,
            sa.ForeignKey("workloads.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("cluster", sa.String(253), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("reason", sa.String(64), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("remote_uid", sa.String(64), nullable=True),
        sa.Column("admitted_at", Ts, nullable=True),
        sa.Column("created_at", Ts, nullable=False),
        sa.Column("removed_at", Ts, nullable=True),
    )
    op.create_index("ix_attempts_workload", "dispatch_attempts", ["workload_id"])
    op.create_table(
        "events",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("at", Ts, nullable=False),
        sa.Column(
            "workload_id",
            Id,
            sa.ForeignKey("workloads.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("cluster", sa.String(253), nullable=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
    )
    op.create_index("ix_events_workload", "events", ["workload_id"])
    op.create_table(
        "agent_reports",
        sa.Column("cluster", sa.String(253), primary_key=True),
        sa.Column("report_id", sa.String(128), primary_key=True),
        sa.Column("received_at", Ts, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("agent_reports")
    op.drop_index("ix_events_workload", "events")
    op.drop_table("events")
    op.drop_index("ix_attempts_workload", "dispatch_attempts")
    op.drop_table("dispatch_attempts")
    op.drop_index("ix_workloads_queue", "workloads")
    op.drop_index("ix_workloads_state", "workloads")
    op.drop_table("workloads")
    op.drop_table("clusters")
