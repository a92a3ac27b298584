"""The command line's grammar (argparse): what `campaign --help` shows.

Imports nothing heavy, so `--help` and usage errors answer at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="campaign", description="Benchmark campaigns on Slurm clusters, tracked in a ledger.")
    p.add_argument("--ledger", type=Path, help="ledger file (default: $CAMPAIGN_LEDGER, else ~/.local/share/campaign/ledger.sqlite)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    s = sub.add_parser("submit", help="expand an experiment, submit its runs, record them")
    s.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. cluster=delta experiment=smoke experiment.repeats=5")
    s.add_argument("--dry-run", action="store_true", help="print the job scripts; submit and record nothing")
    s.add_argument("--force", action="store_true", help="submit runs again even if the ledger has them")
    s.add_argument("--no-preflight", action="store_true",
                   help="submit the arrays without the build and preflight jobs in front of them (experts)")

    s = sub.add_parser("status", help="sync job states from the scheduler; show counts")
    s.add_argument("campaign", nargs="?")

    s = sub.add_parser("jobs", help="list jobs")
    s.add_argument("--campaign")
    s.add_argument("--state", help="e.g. FAILED")
    s.add_argument("--all-attempts", action="store_true", help="also earlier attempts of rerun runs")

    s = sub.add_parser("show", help="one job: parameters, state, attempts, log paths, stderr tail")
    s.add_argument("job_id")

    s = sub.add_parser("rerun", help="resubmit failed runs as new attempts")
    s.add_argument("campaign", nargs="?")
    s.add_argument("--failed", action="store_true", help="every state but COMPLETED, PENDING, RUNNING")
    s.add_argument("--job", dest="job_id", help="one job ID")
    s.add_argument("--state", action="append", default=[], help="a state to rerun (repeatable)")
    s.add_argument("--time-factor", type=float, default=1.0, help="multiply the walltime of TIMEOUT jobs")
    s.add_argument("--mem-factor", type=float, default=1.0, help="multiply the memory of OUT_OF_MEMORY jobs")
    s.add_argument("--no-preflight", action="store_true", help="resubmit without the build and preflight jobs")

    s = sub.add_parser("cancel", help="cancel a campaign's jobs or one job")
    s.add_argument("target", help="campaign name or job ID")

    s = sub.add_parser("import", help="import a results CSV (all or nothing)")
    s.add_argument("file", type=Path)

    s = sub.add_parser("results", help="export result rows")
    s.add_argument("--format", choices=["csv", "json"], default="csv")
    s.add_argument("--campaign")

    s = sub.add_parser("report", help="per-cluster report (Markdown + HTML), or --json metrics")
    s.add_argument("--cluster")
    s.add_argument("--campaign")
    s.add_argument("--out", type=Path, default=Path("report"))
    s.add_argument("--json", action="store_true", help="print the metrics as one JSON object")

    s = sub.add_parser("advise", help="advice on model shapes (co-design paper)")
    adv = s.add_subparsers(dest="what", required=True, parser_class=_Parser)
    a = adv.add_parser("shape", help="check h, a, vocab against the GPU and propose better shapes")
    a.add_argument("--h", type=int, required=True, help="hidden size")
    a.add_argument("--a", type=int, required=True, help="attention heads")
    a.add_argument("--vocab", type=int, required=True)
    a.add_argument("--gpu", required=True, help="e.g. a100, h100, h200")
    a.add_argument("--seq", type=int, default=2048)
    a.add_argument("--batch", type=int, default=1)
    a.add_argument("--tp", type=int, default=1)
    return p
