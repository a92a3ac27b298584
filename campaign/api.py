"""The library's public API: every use case the CLI offers, for scripts and
tests to call directly. Nothing inside campaign imports this module (it sits
on top of the layering in docs/design.md)."""

from __future__ import annotations

from campaign.analyze import metrics, shape_advice, thread_advice, write_metrics, write_reports
from campaign.cancel import cancel
from campaign.compare import CompareReport, compare, parse_selection
from campaign.config.load import SEARCH_PATH_ENV, config_dirs, group_options
from campaign.frames import counters_frame
from campaign.multirun import composed_yaml, dry_run_all, submit_all
from campaign.multirun import prepare as prepare_campaigns
from campaign.rerun import RerunReport, rerun
from campaign.results.export import frame_records, results_frame
from campaign.results.import_stream import import_file
from campaign.results.reader import read_import_file
from campaign.results.store import import_campaign_name, store_import
from campaign.results.table import RESULT_COLUMNS, result_records
from campaign.submit import SubmitReport, dry_run, submit
from campaign.sync import SyncReport, sync
from campaign.waiting import failed_among

__all__ = [
    "RESULT_COLUMNS", "SEARCH_PATH_ENV", "CompareReport", "RerunReport", "SubmitReport", "SyncReport", "cancel",
    "compare", "composed_yaml", "config_dirs", "counters_frame", "dry_run", "dry_run_all", "frame_records",
    "group_options", "import_campaign_name", "import_file", "metrics", "parse_selection", "prepare_campaigns", "read_import_file", "rerun", "result_records",
    "results_frame", "shape_advice", "store_import", "submit", "submit_all", "sync", "thread_advice", "write_metrics",
    "write_reports", "failed_among",
]
