"""The library's public API: every use case the CLI offers, for scripts and
tests to call directly. Nothing inside campaign imports this module (it sits
on top of the layering in docs/design.md)."""

from __future__ import annotations

from campaign.analyze import metrics, shape_advice, write_reports
from campaign.cancel import cancel
from campaign.rerun import RerunReport, rerun
from campaign.results.export import frame_records, results_frame
from campaign.results.reader import read_import_file
from campaign.results.store import store_import
from campaign.submit import SubmitReport, dry_run, submit
from campaign.sync import SyncReport, sync
from campaign.waiting import failed_among, wait

__all__ = [
    "RerunReport", "SubmitReport", "SyncReport", "cancel", "dry_run", "frame_records", "metrics",
    "read_import_file", "rerun", "results_frame", "shape_advice", "store_import", "submit", "sync",
    "write_reports", "failed_among", "wait",
]
