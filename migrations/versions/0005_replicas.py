"""Several manager replicas over one database: the leader and its fencing epoch
(manager_leadership, one row) and the replicas' heartbeats (manager_replicas).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "manager_leadership",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("epoch", _ID, nullable=False),
        sa.Column("holder", sa.String(253), nullable=False),
        sa.Column("address", sa.String(2048), nullable=True),
        sa.Column("elected_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "manager_replicas",
        sa.Column("name", sa.String(253), primary_key=True),
        sa.Column("address", sa.String(2048), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("manager_replicas")
    op.drop_table("manager_leadership")
