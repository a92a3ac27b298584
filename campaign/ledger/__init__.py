"""The ledger: every campaign, run, job attempt and result row, in SQLite."""

from campaign.ledger.db import Ledger, default_ledger_path
from campaign.ledger.models import (
    Campaign,
    CampaignClaim,
    CounterRow,
    ImportFile,
    JobAttempt,
    Provenance,
    ResultRow,
    Run,
)

__all__ = ["Campaign", "CampaignClaim", "CounterRow", "ImportFile", "JobAttempt", "Ledger", "Provenance", "ResultRow",
           "Run", "default_ledger_path"]
