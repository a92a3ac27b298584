"""Command bodies: call the library, print the answer. No logic of their own.

Imported only after the command line is parsed (campaign.cli.main), so the
library's heavy modules may be imported at the top here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from campaign import api
from campaign.cli import views
from campaign.cli.output import console, print_counts, progress_printer, table
from campaign.errors import BadInputError, LedgerError
from campaign.ledger import default_ledger_path
from campaign.states import JobState

LedgerFactory = Callable[..., Any]
STATUS_ROWS = 50  # `status` lists every job up to this many, then only the unfinished/failed ones


def cmd_submit(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.dry_run:
        rep = api.dry_run(args.overrides, args.ledger or default_ledger_path(), preflight=not args.no_preflight)
        for i, script in enumerate(rep.scripts):
            print(f"# ---- job script {i + 1}/{len(rep.scripts)} ----")
            print(script, end="" if script.endswith("\n") else "\n")
        print(f"# campaign {rep.campaign}: {rep.planned} runs, {len(rep.scripts)} job script(s); nothing submitted")
        for line in rep.skipped:
            print(f"# skipped: {line}")
        return 0
    led = ledger(args)
    rep = api.submit(args.overrides, led, force=args.force, progress=progress_printer(),
                     preflight=not args.no_preflight)
    con = console()
    con.print(f"campaign {rep.campaign}: {rep.planned} runs planned, {rep.existing} already in the ledger, "
              f"{len(rep.submitted)} submitted (ledger {led.path})")
    for line in rep.skipped:
        con.print(f"  skipped: {line}")
    if rep.recovered:
        con.print(f"  {rep.recovered} job(s) of an interrupted submit found in the scheduler and recorded")
    if rep.submitted:
        ids = [j for j, _ in rep.submitted]
        con.print(f"  job IDs: {ids[0]} … {ids[-1]}" if len(ids) > 2 else f"  job IDs: {', '.join(ids)}")
    if rep.sync is not None:
        print_counts(rep.sync.counts)
        for w in rep.sync.warnings:
            con.print(f"  warning: {w}")
        _print_preflight(rep.sync.preflight)
    return 0


def _print_preflight(lines: list[str]) -> None:
    for line in lines:  # failed build/preflight chains, with the log tail (plain print: no markup)
        print(line)


def cmd_status(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    rep = api.sync(led, args.campaign)
    for w in rep.warnings:
        print(f"campaign: warning: {w}", file=sys.stderr)
    rows = views.job_rows(led, args.campaign, None, all_attempts=False)
    title = f"campaign {args.campaign}" if args.campaign else "all campaigns"
    if len(rows) > STATUS_ROWS:  # big campaigns: the jobs that need attention, not 10,000 lines
        state_col = views.JOB_COLUMNS.index("state")
        shown = [r for r in rows if r[state_col] != "COMPLETED"]
        title += f" — {len(rows) - len(shown)} COMPLETED jobs not listed (`campaign jobs` lists all)"
        if len(shown) > STATUS_ROWS:
            title += f"; first {STATUS_ROWS} of {len(shown)} others"
        rows = shown[:STATUS_ROWS]
    table(title, views.JOB_COLUMNS, rows)
    print(f"{rep.changed} job(s) changed state, {rep.ingested_rows} result row(s) ingested")
    print_counts(rep.counts)
    _print_preflight(rep.preflight)
    return 0


def cmd_jobs(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    rows = views.job_rows(led, args.campaign, args.state, all_attempts=args.all_attempts)
    table(None, views.JOB_COLUMNS, rows)
    return 0


def cmd_show(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    print(views.show_job(led, args.job_id))
    return 0


def cmd_rerun(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    known = [s.value for s in JobState]
    for state in args.state:  # checked before the ledger is opened: bad input touches nothing
        if state.upper() not in known:
            raise BadInputError(f"unknown state {state!r}; known: {', '.join(known)}")
    led = ledger(args, create=False)
    rep = api.rerun(led, args.campaign, failed=args.failed, job_id=args.job_id, states=args.state,
                    time_factor=args.time_factor, mem_factor=args.mem_factor, progress=progress_printer(),
                    preflight=not args.no_preflight)
    for new, old in rep.submitted:
        print(f"rerun: {old} -> {new}")
    print(f"{len(rep.submitted)} run(s) resubmitted")
    return 0


def cmd_cancel(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    ids = api.cancel(led, args.target)
    print(f"cancelled {len(ids)} job(s){': ' + ', '.join(ids[:20]) if ids else ''}")
    return 0


def cmd_import(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    rows = api.read_import_file(args.file)  # validated before the ledger is even opened
    led = ledger(args)
    count = api.store_import(led, args.file, rows)
    print(f"imported {count} rows from {args.file}")
    return 0


def cmd_results(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    frame = api.results_frame(led, campaign=args.campaign)
    if args.format == "json":
        json.dump(api.frame_records(frame), sys.stdout, indent=None)
        sys.stdout.write("\n")
    else:
        frame.to_csv(sys.stdout, index=False)
    return 0


def cmd_report(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    if args.json:
        json.dump(api.metrics(led, cluster=args.cluster, campaign=args.campaign), sys.stdout)
        sys.stdout.write("\n")
        return 0
    files = api.write_reports(led, Path(args.out), cluster=args.cluster, campaign=args.campaign)
    for f in files:
        print(f"report: {f}")
    return 0


def cmd_advise(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    try:
        led = ledger(args, create=False)
    except LedgerError:  # no ledger yet: advice from the wave model alone
        led = None
    print(api.shape_advice(args.h, args.a, args.vocab, gpu=args.gpu, seq=args.seq, batch=args.batch, tp=args.tp,
                           led=led))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, LedgerFactory], int]] = {
    "submit": cmd_submit, "status": cmd_status, "jobs": cmd_jobs, "show": cmd_show,
    "rerun": cmd_rerun, "cancel": cmd_cancel, "import": cmd_import, "results": cmd_results,
    "report": cmd_report, "advise": cmd_advise,
}


def dispatch(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.cmd not in COMMANDS:
        raise BadInputError(f"unknown command {args.cmd}")
    return COMMANDS[args.cmd](args, ledger)
