"""Agent tokens stored as a keyed digest (HMAC-SHA256 by the server's secret), not plain sha256.

The column is renamed and widened for the digest's `hmac-sha256:` prefix; the plain digests
already stored still match, and are replaced by keyed ones at each cluster's next report
(manager.db.credentials.TokenHasher).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.alter_column(
            "token_sha256",
            new_column_name="token_digest",
            type_=sa.String(128),
            existing_type=sa.String(64),
            existing_nullable=False,
        )


def downgrade() -> None:
    # A keyed digest has no plain one to go back to: those clusters need a new token
    # (POST /api/v1/clusters/{name}/token) after a downgrade.
    op.execute("UPDATE clusters SET token_digest = '' WHERE token_digest LIKE 'hmac-sha256:%'")
    with op.batch_alter_table("clusters") as batch:
        batch.alter_column(
            "token_digest",
            new_column_name="token_sha256",
            type_=sa.String(64),
            existing_type=sa.String(128),
            existing_nullable=False,
        )
