"""campaign: benchmark campaigns on Slurm clusters, tracked in a ledger."""

__version__ = "0.1.0"
