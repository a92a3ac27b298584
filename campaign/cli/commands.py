"""Command bodies: call the library, print the answer. No logic of their own.
Imported only after the command line is parsed (campaign.cli), and light
itself: each command imports what it needs (`api` loads a use case on first
use), so `jobs --no-sync` never loads pandas, Hydra or submitit (tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from campaign import api
from campaign.cli.output import (
    emit_rows,
    print_counts,
    print_preflight,
    progress_printer,
    stream_table,
    table,
    write_csv,
    write_json,
)
from campaign.cli.plan_view import cmd_plan_repeats
from campaign.cli.submit_view import cmd_submit
from campaign.cli.wait_view import check_interval, exit_for, watch_jobs
from campaign.plumbing.errors import BadInputError, LedgerError, SchedulerError
from campaign.plumbing.states import JobState

LedgerFactory = Callable[..., Any]
STATUS_ROWS = 50  # `status` lists every job up to this many, then only the unfinished/failed ones


def cmd_status(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    from campaign.cli import views  # lazy: the ledger's models (SQLAlchemy)
    from campaign.ledger.sqlite_read import job_dicts

    check_interval(args)
    led = ledger(args, create=False)
    if args.watch or args.wait:
        return watch_jobs(args, led, [args.campaign] if args.campaign else [], silent=args.wait and not args.watch)
    rep = api.sync(led, args.campaign, sweep_everywhere=True)  # (its sweep: every folder, docs/results.md)
    for w in rep.warnings:
        print(f"campaign: warning: {w}", file=sys.stderr)
    rows = views.job_rows(led, args.campaign, None, all_attempts=False)
    if args.format == "json":
        write_json(
            {
                "campaign": args.campaign,
                "changed": rep.changed,
                "ingested_rows": rep.ingested_rows,
                "swept_files": rep.swept,
                "counts": rep.counts,
                "warnings": rep.warnings,
                "jobs": job_dicts(rows),
            }
        )
        return 0
    if args.format == "csv":
        emit_rows("csv", None, views.JOB_COLUMNS, [rows])
        return 0
    title = f"campaign {args.campaign}" if args.campaign else "all campaigns"
    if len(rows) > STATUS_ROWS:  # big campaigns: the jobs that need attention, not 10,000 lines
        state_col = views.JOB_COLUMNS.index("state")
        shown = [r for r in rows if r[state_col] != "COMPLETED"]
        title += f" — {len(rows) - len(shown)} COMPLETED jobs not listed (`campaign jobs` lists all)"
        if len(shown) > STATUS_ROWS:
            title += f"; first {STATUS_ROWS} of {len(shown)} others"
        rows = shown[:STATUS_ROWS]
    from campaign.cli.jobs_table import TABLE_COLUMNS, table_row

    table(title, TABLE_COLUMNS, [table_row(r) for r in rows])
    print(
        f"{rep.changed} job(s) changed state, {rep.ingested_rows} result row(s) ingested"
        + (f", {rep.swept} orphaned result file(s) removed" if rep.swept else "")
    )
    print_counts(rep.counts)
    print_preflight(rep.preflight)
    return 0


def _refresh(led: Any, campaign: str | None) -> None:
    """Bring the states to be printed up to date (one batched scheduler query);
    when the scheduler cannot answer, say that the states are the ledger's."""
    try:
        rep = api.sync(led, campaign)
    except SchedulerError as exc:
        print(f"campaign: warning: states not refreshed, as of the last sync: {exc}", file=sys.stderr)
        return
    for w in rep.warnings:
        print(f"campaign: warning: {w}", file=sys.stderr)


def cmd_jobs(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    from campaign.ledger import sqlite_read

    batches = None
    if args.no_sync:  # an SQLite ledger of this version: read without SQLAlchemy, a page at a time (start-up time)
        batches = sqlite_read.job_batches(
            args.ledger, args.campaign, args.state, all_attempts=args.all_attempts, failed=args.failed
        )
    if batches is None:
        from campaign.cli import views  # lazy: the ledger's models (SQLAlchemy)

        led = ledger(args, create=False)
        if not args.no_sync:
            _refresh(led, args.campaign)
        batches = iter(
            [views.job_rows(led, args.campaign, args.state, all_attempts=args.all_attempts, failed=args.failed)]
        )
    if args.format in (None, "table"):  # the run by its label; csv and json: its typed columns
        from campaign.cli.jobs_table import TABLE_COLUMNS, table_batches

        emit_rows(args.format, None, TABLE_COLUMNS, table_batches(batches))
    else:
        emit_rows(args.format, None, sqlite_read.JOB_COLUMNS, batches)
    return 0


def cmd_show(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    from campaign.cli import show_view
    from campaign.ledger import sqlite_read

    # --no-sync on an SQLite ledger of this version: read without SQLAlchemy (start-up time)
    facts = sqlite_read.show_facts(args.ledger, args.job_id) if args.no_sync else None
    if facts is None:
        from campaign.cli import views  # lazy: the ledger's models (SQLAlchemy)
        from campaign.cli.step_show import step_text

        led = ledger(args, create=False)
        step = step_text(led, args.job_id)  # a build or preflight job's ID (its runs may carry it too)
        if step is not None:
            if args.format not in (None, "table"):
                raise BadInputError(
                    f"{args.job_id} is a build or preflight job: `campaign show {args.job_id}` "
                    "prints it; --format json|csv is for runs' jobs"
                )
            print(step)
            return 0
        if not args.no_sync:
            _refresh(led, views.campaign_of_job(led, args.job_id))
        facts = views.show_facts(led, args.job_id)
    rec = show_view.job_record(facts)
    if args.format == "json":
        write_json(rec)
    elif args.format == "csv":
        write_csv(list(rec), [list(rec.values())])
    else:
        print(show_view.show_text(facts))
    return 0


def cmd_rerun(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    check_interval(args)
    known = [s.value for s in JobState]
    for state in args.state:  # checked before the ledger is opened: bad input touches nothing
        if state.upper() not in known:
            raise BadInputError(f"unknown state {state!r}; known: {', '.join(known)}")
    led = ledger(args, create=False)
    rep = api.rerun(
        led,
        args.campaign,
        failed=args.failed,
        job_id=args.job_id,
        states=args.state,
        time_factor=args.time_factor,
        mem_factor=args.mem_factor,
        progress=progress_printer(args.quiet),
        all_campaigns=args.all,
        preflight=not args.no_preflight,
    )
    from campaign.cli.rerun_view import print_rerun

    print_rerun(rep)
    if rep.sync is not None:
        print_counts(rep.sync.counts)
    if args.wait:  # the campaign named, else those of the attempts it submitted (--job, --all)
        watched = [args.campaign] if args.campaign else rep.campaigns
        if not watched:
            return exit_for(rep.failed)
        return watch_jobs(args, led, watched, attempts=rep.attempts)
    return exit_for(rep.failed)


def cmd_cancel(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    led = ledger(args, create=False)
    ids = api.cancel(led, args.target)
    print(f"cancelled {len(ids)} job(s){': ' + ', '.join(ids[:20]) if ids else ''}")
    return 0


def cmd_import(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.campaign is not None:  # before reading a large file
        api.import_campaign_name(args.campaign)
    # read in chunks (flat memory); the ledger is opened once the first chunk passed the reader
    done = api.import_file(lambda: ledger(args), args.file, campaign=args.campaign)
    print(done.summary(args.file, args.campaign))
    return 0


def cmd_compare(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    from campaign.cli import compare_view  # lazy: pandas

    fmt = args.format or "table"
    if fmt not in ("table", "json", "md"):
        raise BadInputError(f"compare prints --format table, json or md, not {fmt}")
    rep = api.compare(
        lambda: ledger(args, create=False),
        args.base,
        args.new,
        by=args.by,
        threshold=args.threshold,
        reference=args.reference,
        min_replicates=args.min_replicates,
    )
    _gate_compared_something(args, rep.comparison)
    if fmt == "json":
        json.dump(compare_view.as_json(rep), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(compare_view.as_text(rep, markdown=fmt == "md"))
    if args.fail_on and len(rep.comparison.slower):
        print(
            f"campaign: {len(rep.comparison.slower)} point(s) slower or worse than BASE by more than "
            f"{args.threshold:.0%}",
            file=sys.stderr,
        )
        return 3
    return 0


def _gate_compared_something(args: argparse.Namespace, c: Any) -> None:
    """A regression gate that compared nothing must not pass (exit 2, one line): no
    point in common, or none with enough repeats on both sides for a verdict."""
    from analysis.verdicts import FEW_REPLICATES, INSUFFICIENT  # lazy: pandas, scipy

    if not args.fail_on:
        return
    if not len(c.points):
        raise BadInputError(
            f"compare --fail-on {args.fail_on}: no point in common between BASE {args.base!r} "
            f"and NEW {args.new!r} ({len(c.base_only)} only in BASE, {len(c.new_only)} only in NEW), "
            f"so nothing was compared"
        )
    if c.points["verdict"].isin([INSUFFICIENT, FEW_REPLICATES]).all():
        raise BadInputError(
            f"compare --fail-on {args.fail_on}: none of the {len(c.points)} matched point(s) has >= "
            f"{c.min_repeats} repeats and {c.min_replicates} replicate(s) on both sides, so none could be judged"
        )


def cmd_results(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.format == "parquet" and args.out is None:  # before the ledger is opened: bad input touches nothing
        raise BadInputError("results --format parquet writes a file: name it with --out FILE.parquet")
    if args.format == "table" and args.out is not None:
        raise BadInputError(
            "results --out writes csv, json or parquet; a table is printed: drop --out or "
            "name --format csv, json or parquet"
        )
    led = ledger(args, create=False)
    if args.out is not None:
        _refuse_the_ledger(args.out, led)
    if getattr(args, "counters", False):  # the hardware counters of profiled runs
        export = api.frame_export(api.counters_frame(led, campaign=args.campaign))
    else:
        export = api.results_export(led, campaign=args.campaign)
    if args.format == "table":
        try:
            stream_table(None, export.columns, api.export_rows(export))
        finally:
            export.close()
    else:  # csv: the default, for spreadsheets and pandas; into the named --out file where given
        api.emit_export(export, args.format, args.out)
    return 0


def _refuse_the_ledger(out: Path, led: Any) -> None:
    """An export named --out replaces the file there: the ledger itself (or a link to it, or its
    journal) would be lost."""
    if led.url is not None:
        return
    ledger = Path(led.path).resolve()
    companions = {ledger, *(ledger.with_name(ledger.name + s) for s in ("-wal", "-shm", "-journal"))}
    try:
        same = out.resolve() in companions or (out.exists() and ledger.exists() and out.samefile(ledger))
    except OSError:  # a name the filesystem cannot hold is no ledger (the export names the problem)
        return
    if same:
        raise BadInputError(
            f"results --out {out} is the ledger {led.path} (the export would replace it); name another file"
        )


def cmd_report(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    as_json = args.json or args.format == "json"
    if args.keys and not as_json:
        raise BadInputError("--keys limits the JSON metrics: use it with --json")
    if not as_json and args.out.exists() and not args.out.is_dir():
        raise BadInputError(f"report --out {args.out} is a file; name a folder (it is made if missing)")
    from campaign.cli.report_process import report_process

    with report_process():  # the collector paused and frozen, OpenBLAS on one thread: the process's costs
        code = _report(args, ledger(args, create=False), as_json)
    return code


def _report(args: argparse.Namespace, led: Any, as_json: bool) -> int:
    if as_json:
        keys = [k.strip() for k in args.keys.split(",") if k.strip()] if args.keys else None
        api.write_metrics(
            led, sys.stdout, cluster=args.cluster, campaign=args.campaign, all_campaigns=args.all, keys=keys
        )
        sys.stdout.write("\n")
        sys.stdout.flush()  # a full disk fails here, as one line (campaign.cli), not at the interpreter's exit
        return 0
    files = api.write_reports(led, Path(args.out), cluster=args.cluster, campaign=args.campaign, all_campaigns=args.all)
    for f in files:
        print(f"report: {f}")
    return 0


def cmd_advise(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.what == "threads":
        if args.format == "csv":
            raise BadInputError("advise threads prints --format table or json, not csv")
        advice = api.thread_advice(
            ledger(args, create=False),
            cluster=args.cluster,
            partition=args.partition,
            kernel=args.kernel,
            n=args.n,
            campaign=args.campaign,
            all_campaigns=args.all,
            as_json=args.format == "json",
        )
        if args.format == "json":
            write_json(advice)
        else:
            print(advice)
        return 0
    try:
        led = ledger(args, create=False)
    except LedgerError:  # no ledger yet: advice from the wave model alone
        led = None
    if args.format == "csv":
        raise BadInputError("advise shape prints --format table or json, not csv")
    advice = api.shape_advice(
        args.h,
        args.a,
        args.vocab,
        gpu=args.gpu,
        seq=args.seq,
        batch=args.batch,
        tp=args.tp,
        led=led,
        as_json=args.format == "json",
    )
    if args.format == "json":
        write_json(advice)
    else:
        print(advice)
    return 0


def cmd_completion(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    from campaign.cli.completion import script

    sys.stdout.write(script(args.shell))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, LedgerFactory], int]] = {
    "submit": cmd_submit,
    "status": cmd_status,
    "jobs": cmd_jobs,
    "show": cmd_show,
    "rerun": cmd_rerun,
    "cancel": cmd_cancel,
    "import": cmd_import,
    "compare": cmd_compare,
    "results": cmd_results,
    "report": cmd_report,
    "advise": cmd_advise,
    "completion": cmd_completion,
    "plan-repeats": cmd_plan_repeats,
}


def dispatch(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    if args.cmd not in COMMANDS:
        raise BadInputError(f"unknown command {args.cmd}")
    return COMMANDS[args.cmd](args, ledger)
