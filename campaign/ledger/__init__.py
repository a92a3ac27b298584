"""The ledger: every campaign, run, job attempt and result row, in SQLite."""

from campaign.ledger.db import Ledger, default_ledger_path
from campaign.ledger.models import (
    BuildStep,
    Campaign,
    CampaignClaim,
    CounterRow,
    ImportFile,
    JobAttempt,
    PreflightStep,
    Provenance,
    ResultRow,
    Run,
)

__all__ = ["BuildStep", "Campaign", "CampaignClaim", "CounterRow", "ImportFile", "JobAttempt", "Ledger",
           "PreflightStep", "Provenance", "ResultRow",
           "Run", "default_ledger_path"]
