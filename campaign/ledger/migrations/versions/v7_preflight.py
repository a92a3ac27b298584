"""Schema version 7: build and preflight jobs and their provenance.

Two new tables: `build_step` (one build job of a partition + environment +
source hash, with the node's compilers, flags, lscpu, numactl and modules)
and `preflight_step` (one preflight job of a campaign's partition and the
attempts it gates). Existing rows are untouched. Idempotent: a table that is
already there (a ledger created by create_all at version 7) is left alone.

Revision ID: v7
Revises: v6
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v7"
down_revision = "v6"
branch_labels = None
depends_on = None


def _state() -> sa.Enum:
    from campaign.plumbing.states import JobState

    return sa.Enum(JobState, native_enum=False, length=20)


def upgrade() -> None:
    conn = op.get_bind()
    tables = set(sa.inspect(conn).get_table_names())
    if "build_step" not in tables:
        op.create_table(
            "build_step",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("key", sa.String(64), nullable=False),
            sa.Column("cluster", sa.String(100), nullable=False),
            sa.Column("partition", sa.String(100), nullable=False),
            sa.Column("folder", sa.String(), nullable=False),
            sa.Column("backend", sa.String(20), nullable=False),
            sa.Column("job_id", sa.String(64), nullable=True),
            sa.Column("state", _state(), nullable=False),
            sa.Column("reason", sa.String(), nullable=True),
            sa.Column("stderr_path", sa.String(), nullable=True),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("info", sa.JSON(), nullable=True),
        )
        op.create_index("ix_build_step_key", "build_step", ["key"])
    if "preflight_step" not in tables:
        op.create_table(
            "preflight_step",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("campaign_id", sa.Integer(), sa.ForeignKey("campaign.id"), nullable=False),
            sa.Column("partition", sa.String(100), nullable=False),
            sa.Column("build_id", sa.Integer(), sa.ForeignKey("build_step.id"), nullable=True),
            sa.Column("build_key", sa.String(64), nullable=False),
            sa.Column("kernel_bin", sa.String(), nullable=False),
            sa.Column("folder", sa.String(), nullable=False),
            sa.Column("backend", sa.String(20), nullable=False),
            sa.Column("job_id", sa.String(64), nullable=True),
            sa.Column("state", _state(), nullable=False),
            sa.Column("reason", sa.String(), nullable=True),
            sa.Column("stderr_path", sa.String(), nullable=True),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("attempt_ids", sa.JSON(), nullable=False),
            sa.Column("result", sa.JSON(), nullable=True),
        )
    conn.execute(sa.text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    tables = set(sa.inspect(conn).get_table_names())
    if "preflight_step" in tables:
        op.drop_table("preflight_step")
    if "build_step" in tables:
        op.drop_index("ix_build_step_key", table_name="build_step")
        op.drop_table("build_step")
    conn.execute(sa.text("UPDATE meta SET value = '6' WHERE key = 'schema_version'"))
