"""Ledger tables (SQLAlchemy 2.0 typed models).

A run is recorded before its job exists; each submission of it is a JobAttempt
linked to the previous attempt, so the lineage of a rerun is explicit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import JSON, Enum, ForeignKey, Index, String, Table, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from campaign.ledger.layout import SCHEMA_VERSION as SCHEMA_VERSION  # re-exported: written once, in layout
from campaign.ledger.spec_text import CONFIGURATION_ENTRIES, SpecText
from campaign.ledger.types import Reason, UTCDateTime
from campaign.plumbing.states import JobState


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: UTCDateTime}


class Meta(Base):
    """Key/value facts about the ledger itself (schema_version)."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


class Campaign(Base):
    __tablename__ = "campaign"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    cluster: Mapped[str] = mapped_column(String(100))
    experiment: Mapped[str] = mapped_column(String(100))
    backend: Mapped[str] = mapped_column(String(20))
    cluster_yaml: Mapped[str]  # the resolved cluster config used to submit (reruns reuse it)
    python: Mapped[str]  # interpreter of the job side on the nodes (reruns reuse it)
    created_at: Mapped[datetime]
    workdir: Mapped[str]
    runs: Mapped[list[Run]] = relationship(back_populates="campaign")


class Provenance(Base):
    """One record per `submit`/`rerun` invocation: how the jobs were made."""

    __tablename__ = "provenance"
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"))
    created_at: Mapped[datetime]
    command: Mapped[str]
    git_commit: Mapped[str | None]
    git_dirty: Mapped[bool | None]
    config_hash: Mapped[str] = mapped_column(String(64))
    config_yaml: Mapped[str]
    hostname: Mapped[str]
    packages: Mapped[dict[str, Any]]
    # Toolchain facts of the submit host (compilers, binary hashes, CUDA/cuDNN,
    # CPU/GPU model, driver); NULL in ledgers older than schema version 8.
    environment: Mapped[dict[str, Any] | None]


class Run(Base):
    __tablename__ = "run"
    __table_args__ = (UniqueConstraint("campaign_id", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"))
    key: Mapped[str] = mapped_column(String(32))
    kernel: Mapped[str] = mapped_column(String(100))
    impl: Mapped[str] = mapped_column(String(50))
    variant: Mapped[str] = mapped_column(String(50))
    partition: Mapped[str] = mapped_column(String(100))
    device: Mapped[str] = mapped_column(String(20))
    dtype: Mapped[str] = mapped_column(String(20))
    threads: Mapped[int]
    gpus: Mapped[int]
    spec: Mapped[dict[str, Any]]  # the full RunSpec as JSON
    created_at: Mapped[datetime]
    # v16: the newest submit that planned the run (a new run's, or one that found it already recorded),
    # so that the configuration's latest identity (campaign.results.latest) is the one submitted last:
    # a program built again as it was is in the ledger already and makes no run
    # (a provenance id; no foreign key: SQLite adds the column in place only without one)
    named_by: Mapped[int | None] = mapped_column(default=None)
    campaign: Mapped[Campaign] = relationship(back_populates="runs")
    attempts: Mapped[list[JobAttempt]] = relationship(
        back_populates="run", order_by="JobAttempt.attempt", foreign_keys="JobAttempt.run_id"
    )


class JobAttempt(Base):
    __tablename__ = "job_attempt"
    __table_args__ = (
        UniqueConstraint("run_id", "attempt"),
        Index("ix_job_attempt_job_id", "job_id"),
        Index("ix_job_attempt_state", "state"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"))
    attempt: Mapped[int]  # 1, 2, ... per run
    previous_id: Mapped[int | None] = mapped_column(ForeignKey("job_attempt.id"))
    backend: Mapped[str] = mapped_column(String(20))
    job_id: Mapped[str | None] = mapped_column(String(64))  # None until the scheduler answered
    array_job_id: Mapped[str | None] = mapped_column(String(64))
    array_index: Mapped[int | None]
    state: Mapped[JobState] = mapped_column(Enum(JobState, native_enum=False, length=20))
    reason: Mapped[str | None] = mapped_column(Reason)
    submitted_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    exit_code: Mapped[int | None]
    node: Mapped[str | None] = mapped_column(String(200))
    workdir: Mapped[str]
    stdout_path: Mapped[str | None]
    stderr_path: Mapped[str | None]
    output_path: Mapped[str]
    walltime_min: Mapped[int]
    mem_gb: Mapped[float | None]
    provenance_id: Mapped[int | None] = mapped_column(ForeignKey("provenance.id"))
    # v3: the process that recorded the attempt (crash recovery touches an
    # unconfirmed attempt only when this process is gone), and a note when its
    # timing overlapped another timed job on the same machine.
    owner_host: Mapped[str | None] = mapped_column(String(200))
    owner_pid: Mapped[int | None]
    owner_start: Mapped[str | None] = mapped_column(String(64))
    overlap: Mapped[str | None]
    # v4: the n this attempt runs (None: all of the run's) and, once a TIMEOUT/
    # CANCELLED/OUT_OF_MEMORY attempt was synced, the n it left without rows.
    n: Mapped[list[Any] | None]
    missing_n: Mapped[list[Any] | None]
    # v5: the scheduler's cluster holding the job (multi-cluster sites: a job ID
    # means something only with it; None = the submitting host's own cluster),
    # and the allocation the job asked for (cores, GPUs; memory is mem_gb)
    scheduler_cluster: Mapped[str | None] = mapped_column(String(100), default=None)
    alloc_cpus: Mapped[int | None] = mapped_column(default=None)
    alloc_gpus: Mapped[int | None] = mapped_column(default=None)
    # v14: the machine's state while the kernel ran, from the job's exit record
    # (campaign.job.machine: other processes' CPUs, load average, clock); a
    # busy one also puts its note in `overlap` (campaign.results.overlap)
    machine: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    run: Mapped[Run] = relationship(back_populates="attempts", foreign_keys=[run_id])


class CounterRow(Base):
    """One hardware counter of one attempt's profiled call at one n, combined
    over that call's GPU kernels (kernels/torch/ncu.py); `kernels` names them."""

    __tablename__ = "counter"
    __table_args__ = (Index("ix_counter_attempt", "attempt_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("job_attempt.id"))
    n: Mapped[int]
    metric: Mapped[str] = mapped_column(String(200))
    value: Mapped[float | None]
    unit: Mapped[str | None] = mapped_column(String(40))
    kernels: Mapped[str | None]


class ResultFile(Base):
    """v12: the pointer to one Parquet file of result rows (campaign.ledger.files):
    a finished attempt's rows, written once at ingest, or (v13) a chunk of an
    imported file's rows (no attempt; the campaign they were imported into, or
    none). `path` is relative to the campaign's result folder; `sha256` the
    file's bytes, checked at every read."""

    __tablename__ = "result_file"
    __table_args__ = (Index("ix_result_file_attempt", "attempt_id"), Index("ix_result_file_campaign", "campaign_id"))
    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("job_attempt.id"))
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaign.id"))  # v13: NULL, imported without one
    path: Mapped[str] = mapped_column(String(300))
    sha256: Mapped[str] = mapped_column(String(64))
    rows: Mapped[int]
    schema_version: Mapped[int]
    # v13: an imported file's `import:<path>` (its rows' source: `import --campaign` replaces them); NULL for job rows
    source: Mapped[str | None] = mapped_column(String(300))


class ImportKey(Base):
    """v13: the natural key of each imported row (campaign.results.keys) and the
    pointer of the file that holds the row (whose campaign and source say where
    the row came from). Unique, so that rows already imported from another file
    are skipped and counted, never doubled. Only the key: the rows themselves
    live in the files."""

    __tablename__ = "import_key"
    __table_args__ = (Index("ix_import_key_file", "file_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    natural_key: Mapped[str] = mapped_column(String(48))
    file_id: Mapped[int] = mapped_column(ForeignKey("result_file.id"))


Index("ux_import_key_natural_key", ImportKey.natural_key, unique=True)


class ImportFile(Base):
    """v3: one row per imported file content (its SHA-256), so the same data
    imported twice is a no-op that says so."""

    __tablename__ = "import_file"
    id: Mapped[int] = mapped_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    path: Mapped[str]
    rows: Mapped[int]
    imported_at: Mapped[datetime]


class CampaignClaim(Base):
    """v3: the one process allowed to submit or rerun a campaign's jobs now
    (taken with BEGIN IMMEDIATE, released at the end; a claim whose process is
    gone is taken over). See campaign.commands.claims."""

    __tablename__ = "campaign_claim"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int]
    start: Mapped[str] = mapped_column(String(64))
    command: Mapped[str] = mapped_column(String(40))
    taken_at: Mapped[datetime]
    # refreshed by the holder while it holds the claim: a holder on another host (whose PID this
    # machine cannot probe) that stopped beating is gone (campaign.commands.claims); NULL before v9
    beat_at: Mapped[datetime | None]


class StepJob:
    """What a build and a preflight step both are: one scheduler job outside the campaign's arrays
    (its folder of files, its backend and job ID, its state and why), so that one code path
    (campaign.commands.chain_sync) follows both."""

    folder: Mapped[str]
    backend: Mapped[str] = mapped_column(String(20))
    job_id: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[JobState] = mapped_column(Enum(JobState, native_enum=False, length=20))
    reason: Mapped[str | None] = mapped_column(Reason)
    stderr_path: Mapped[str | None]
    created_at: Mapped[datetime]


class BuildStep(StepJob, Base):
    """One build job: the kernels of one partition + environment +
    source hash (`key`). `info` is its provenance, read from the node's
    build.json: compilers and versions, flags, lscpu, numactl, modules."""

    __tablename__ = "build_step"
    __table_args__ = (Index("ix_build_step_key", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64))
    cluster: Mapped[str] = mapped_column(String(100))
    partition: Mapped[str] = mapped_column(String(100))
    # after StepJob's columns, where the migrations put it (a new ledger = an upgraded one)
    info: Mapped[dict[str, Any] | None] = mapped_column(sort_order=1)


class PreflightStep(StepJob, Base):
    """One preflight job of a campaign's partition; the attempts it gates are
    listed in `attempt_ids` (they become PREFLIGHT_FAILED when it fails)."""

    __tablename__ = "preflight_step"
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"))
    partition: Mapped[str] = mapped_column(String(100))
    build_id: Mapped[int | None] = mapped_column(ForeignKey("build_step.id"))
    build_key: Mapped[str] = mapped_column(String(64))
    kernel_bin: Mapped[str]  # the programs' configured folder, mapped onto the build folder
    attempt_ids: Mapped[list[Any]] = mapped_column(sort_order=1)  # after StepJob's, as migrated
    result: Mapped[dict[str, Any] | None] = mapped_column(sort_order=1)


# The Core tables of the hot bulk paths (submit's and sync's executemany), typed once:
# a mapped class's __table__ is declared as a FromClause.
RUN_TABLE = cast(Table, Run.__table__)
# a configuration's runs in order (campaign.results.latest groups by these), their spec entries read from the
# index (campaign.ledger.spec_text); SQLite only: PostgreSQL hashes the groups
RUN_CONFIGURATION: tuple[Any, ...] = (
    Run.campaign_id,
    Run.partition,
    Run.kernel,
    Run.impl,
    Run.variant,
    Run.device,
    Run.dtype,
    *(SpecText(name) for name in CONFIGURATION_ENTRIES),
)
Index("ix_run_configuration", *RUN_CONFIGURATION, Run.named_by).ddl_if(dialect="sqlite")
ATTEMPT_TABLE = cast(Table, JobAttempt.__table__)
