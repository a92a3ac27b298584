"""The ledger: every campaign, run, job attempt and result row, in SQLite."""

from campaign.ledger.db import Ledger, default_ledger_path
from campaign.ledger.models import (
    ATTEMPT_TABLE,
    RESULT_TABLE,
    RUN_TABLE,
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

__all__ = ["ATTEMPT_TABLE", "RESULT_TABLE", "RUN_TABLE", "BuildStep", "Campaign", "CampaignClaim", "CounterRow", "ImportFile", "JobAttempt", "Ledger",
           "PreflightStep", "Provenance", "ResultRow",
           "Run", "default_ledger_path"]
