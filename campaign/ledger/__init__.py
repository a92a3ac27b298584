"""The ledger: every campaign, run and job attempt, and the pointers to the result files (job and imported rows).

Each name is imported from its module on first use (PEP 562 `__getattr__`),
so that `campaign.ledger.layout` (the standard-library facts of the ledger:
schema version, default path, the jobs SQL) can be imported without loading
SQLAlchemy (`jobs --no-sync` and `show --no-sync` read the file
with sqlite3; tests/cli/test_startup_imports.py keeps it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy and readers see; at run time __getattr__ below imports on demand
    from campaign.ledger.db import Ledger, default_ledger_path
    from campaign.ledger.models import (
        ATTEMPT_TABLE,
        RUN_TABLE,
        BuildStep,
        Campaign,
        CampaignClaim,
        CounterRow,
        ImportFile,
        ImportKey,
        JobAttempt,
        PreflightStep,
        Provenance,
        ResultFile,
        Run,
    )

__all__ = ["ATTEMPT_TABLE", "RUN_TABLE", "BuildStep", "Campaign", "CampaignClaim", "CounterRow", "ImportFile",
           "ImportKey", "JobAttempt", "Ledger", "PreflightStep", "Provenance", "ResultFile", "Run",
           "default_ledger_path"]
_DB = ("Ledger", "default_ledger_path")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'campaign.ledger' has no attribute {name!r}")
    value = getattr(importlib.import_module("campaign.ledger.db" if name in _DB else "campaign.ledger.models"), name)
    globals()[name] = value  # once: later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
