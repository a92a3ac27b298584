"""The ledger: every campaign, run, job attempt and result row, in SQLite."""

from campaign.ledger.db import Ledger, default_ledger_path
from campaign.ledger.models import (
    BuildStep,
    Campaign,
    CounterRow,
    JobAttempt,
    PreflightStep,
    Provenance,
    ResultRow,
    Run,
)

__all__ = ["BuildStep", "Campaign", "CounterRow", "JobAttempt", "Ledger", "PreflightStep", "Provenance", "ResultRow",
           "Run", "default_ledger_path"]
