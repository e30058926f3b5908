"""Each event records the leader's epoch it was decided under (manager.db.fence), so the event
log shows that no two replicas ever decided at once.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("events", sa.Column("epoch", _ID, nullable=True))


def downgrade() -> None:
    op.drop_column("events", "epoch")
