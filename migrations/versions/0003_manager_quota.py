"""Whether a workload holds quota in the manager cluster's ClusterQueue.

A workload submitted into a LocalQueue of the manager cluster whose ClusterQueue uses the
MultiKueue admission check is dispatched only while Kueue on the manager cluster reserves its
quota (QuotaReserved on the manager's Workload), as Kueue's MultiKueue does. NULL: the workload
is not under a manager-cluster queue (REST into a worker queue only) and is dispatched at once.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workloads") as batch:
        batch.add_column(sa.Column("quota_reserved", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workloads") as batch:
        batch.drop_column("quota_reserved")
