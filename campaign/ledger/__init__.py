"""The ledger: every campaign, run and job attempt, the pointers to their result files, and imported rows."""

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
    ResultFile,
    ResultRow,
    Run,
)

__all__ = ["ATTEMPT_TABLE", "RESULT_TABLE", "RUN_TABLE", "BuildStep", "Campaign", "CampaignClaim", "CounterRow", "ImportFile", "JobAttempt", "Ledger",
           "PreflightStep", "Provenance", "ResultFile", "ResultRow",
           "Run", "default_ledger_path"]
