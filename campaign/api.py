"""The library's public API: every use case the CLI offers, for scripts and
tests to call directly. Nothing inside campaign imports this module (it sits
on top of the layering in docs/design.md).

Each name is imported from its module on first use (PEP 562 `__getattr__`):
`api.sync` loads the sync use case, not pandas and matplotlib with the report,
so a command pays only for what it calls (every command that does
not sync answers within 0.3 s; tests/cli/test_startup_imports.py keeps it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy and readers see; at run time __getattr__ below imports on demand
    from campaign.commands.advice import shape_advice, thread_advice
    from campaign.commands.analyze import metrics, write_metrics, write_reports
    from campaign.commands.cancel import cancel
    from campaign.commands.compare import CompareReport, compare, parse_selection
    from campaign.commands.multirun import composed_yaml, dry_run_all, submit_all
    from campaign.commands.multirun import prepare as prepare_campaigns
    from campaign.commands.repeat_plan import RepeatPlan, plan_repeats
    from campaign.commands.rerun import RerunReport, rerun
    from campaign.commands.submit import SubmitReport, dry_run, submit
    from campaign.commands.sync import SyncReport, sync
    from campaign.commands.waiting import failed_among
    from campaign.config.load import SEARCH_PATH_ENV, config_dirs, group_options
    from campaign.ledger.db import default_ledger_path
    from campaign.results.export import latest_frame, results_frame
    from campaign.results.frames import counters_frame
    from campaign.results.import_stream import import_file
    from campaign.results.reader import read_import_file
    from campaign.results.store import import_campaign_name, store_import
    from campaign.results.table import RESULT_COLUMNS, Export, frame_export
    from campaign.results.table import emit as emit_export
    from campaign.results.table import results as results_export
    from campaign.results.table import rows as export_rows

# name -> (module, attribute): the table __getattr__ imports from
_WHERE: dict[str, tuple[str, str]] = {
    **{n: ("campaign.commands.analyze", n) for n in ("metrics", "write_metrics", "write_reports")},
    **{n: ("campaign.commands.advice", n) for n in ("shape_advice", "thread_advice")},
    "cancel": ("campaign.commands.cancel", "cancel"),
    **{n: ("campaign.commands.compare", n) for n in ("CompareReport", "compare", "parse_selection")},
    **{n: ("campaign.config.load", n) for n in ("SEARCH_PATH_ENV", "config_dirs", "group_options")},
    "counters_frame": ("campaign.results.frames", "counters_frame"),
    "default_ledger_path": ("campaign.ledger.db", "default_ledger_path"),
    **{n: ("campaign.commands.multirun", n) for n in ("composed_yaml", "dry_run_all", "submit_all")},
    "prepare_campaigns": ("campaign.commands.multirun", "prepare"),
    **{n: ("campaign.commands.repeat_plan", n) for n in ("RepeatPlan", "plan_repeats")},
    **{n: ("campaign.commands.rerun", n) for n in ("RerunReport", "rerun")},
    **{n: ("campaign.results.export", n) for n in ("latest_frame", "results_frame")},
    "read_import_file": ("campaign.results.reader", "read_import_file"),
    **{n: ("campaign.results.store", n) for n in ("import_campaign_name", "store_import")},
    "import_file": ("campaign.results.import_stream", "import_file"),
    **{n: ("campaign.results.table", n) for n in ("RESULT_COLUMNS", "Export", "frame_export")},
    "results_export": ("campaign.results.table", "results"),
    "emit_export": ("campaign.results.table", "emit"),
    "export_rows": ("campaign.results.table", "rows"),
    **{n: ("campaign.commands.submit", n) for n in ("SubmitReport", "dry_run", "submit")},
    **{n: ("campaign.commands.sync", n) for n in ("SyncReport", "sync")},
    "failed_among": ("campaign.commands.waiting", "failed_among"),
}

__all__ = [
    "CompareReport", "Export", "RESULT_COLUMNS", "RepeatPlan", "RerunReport", "SEARCH_PATH_ENV", "SubmitReport", "SyncReport", "cancel",
    "compare", "composed_yaml", "config_dirs", "counters_frame", "default_ledger_path", "dry_run", "dry_run_all",
    "emit_export", "export_rows", "failed_among", "frame_export", "group_options", "import_campaign_name", "import_file", "latest_frame", "metrics", "parse_selection", "plan_repeats", "prepare_campaigns",
    "read_import_file", "rerun", "results_export", "results_frame", "shape_advice", "store_import", "submit",
    "submit_all", "sync", "thread_advice", "write_metrics", "write_reports",
]  # == the keys of _WHERE (tests/cli/test_startup_imports.py)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'campaign.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value  # once: later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
