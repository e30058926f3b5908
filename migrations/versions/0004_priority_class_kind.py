"""The kind of a workload's priority class: a WorkloadPriorityClass, or the pods' PriorityClass
(scheduling.k8s.io) when no WorkloadPriorityClass gives the priority (kueue_api.priority).
NULL: a WorkloadPriorityClass, as every row written before this revision names.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workloads") as batch:
        batch.add_column(sa.Column("priority_class_kind", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workloads") as batch:
        batch.drop_column("priority_class_kind")
