"""`campaign submit`'s command body: --info (the config search path), --cfg,
--dry-run (the job scripts and the cost estimate), and what was submitted
(table or JSON), then --wait. Called by campaign.cli.commands, like the
other command bodies it only calls the library and prints the answer.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from campaign import api
from campaign.cli.output import console, print_counts, print_preflight, progress_printer, write_json
from campaign.cli.wait_view import EXIT_JOBS_FAILED, check_interval, exit_for, watch_jobs
from campaign.plumbing.errors import BadInputError

LedgerFactory = Callable[..., Any]


def _add_config_dirs(dirs: list[Path]) -> None:
    """--config-dir: the same as putting the folders first on $CAMPAIGN_CONFIG_PATH."""
    for d in dirs:
        if not d.is_dir():
            raise BadInputError(f"--config-dir {d}: not a folder")
    if dirs:
        old = [p for p in os.environ.get(api.SEARCH_PATH_ENV, "").split(":") if p]
        os.environ[api.SEARCH_PATH_ENV] = ":".join([str(d.resolve()) for d in dirs] + old)


def _print_info() -> None:
    dirs = api.config_dirs()
    print("config search path (first match wins):")
    for i, d in enumerate(dirs, 1):
        print(f"  {i}. {d}  ({'shipped' if d == dirs[-1] else '--config-dir / $' + api.SEARCH_PATH_ENV})")
    for group in ("cluster", "experiment", "kernel"):
        print(f"{group}: {', '.join(api.group_options(group)) or '(none)'}")


def cmd_submit(args: argparse.Namespace, ledger: LedgerFactory) -> int:
    check_interval(args)
    _add_config_dirs(args.config_dir)
    if args.info:
        _print_info()
        return 0
    from campaign.config.groups import check_choices

    check_choices(args.overrides)  # `experiment=smok`: one line with the close names, before Hydra loads
    if args.cfg:
        sys.stdout.write(api.composed_yaml(args.overrides))
        return 0
    if args.dry_run:
        reports = api.dry_run_all(
            args.overrides, args.ledger or api.default_ledger_path(), preflight=not args.no_preflight
        )
        for rep in reports:
            for i, script in enumerate(rep.scripts):
                print(f"# ---- job script {i + 1}/{len(rep.scripts)} ----")
                print(script, end="" if script.endswith("\n") else "\n")
            held = f" ({rep.existing} already in the ledger: a submit skips them)" if rep.existing else ""
            print(
                f"# campaign {rep.campaign}: {rep.planned} runs{held}, {len(rep.scripts)} job script(s); "
                "nothing submitted"
            )
            for line in rep.why_new:
                print(f"# {line}")
            for line in rep.skipped:
                print(f"# skipped: {line}")
            for line in rep.notes:
                print(f"# note: {line}")
            if rep.charges:
                from campaign.planning.charging import charge_lines  # lazy: only a dry run estimates

                print("# estimate (requested walltime; the site may bill less if jobs end early):")
                for line in charge_lines(rep.charges):
                    print(f"#   {line}")
        return 0
    # bad input (node-local paths included) fails here, before the ledger is opened
    groups = api.prepare_campaigns(args.overrides, args.ledger or api.default_ledger_path())
    led = ledger(args)
    quiet = args.quiet or args.format == "json"  # JSON: nothing but the document on stdout
    reports = api.submit_all(
        args.overrides, groups, led, force=args.force, progress=progress_printer(quiet), preflight=not args.no_preflight
    )
    if args.format == "json":
        write_json(
            [
                {
                    "campaign": r.campaign,
                    "planned": r.planned,
                    "existing": r.existing,
                    "submitted": [{"job_id": j, "run": label} for j, label in r.submitted],
                    "skipped": r.skipped,
                    "notes": r.notes,
                    "recovered": r.recovered,
                    "why_new": r.why_new,
                    "failed": [{"job_id": j, "state": st} for j, st in r.failed],
                    "counts": r.sync.counts if r.sync is not None else None,
                }
                for r in reports
            ]
        )
        if args.wait:
            return watch_jobs(args, led, [r.campaign for r in reports], quiet=True)
        return EXIT_JOBS_FAILED if any(r.failed for r in reports) else 0
    con = console()
    for rep in reports:
        con.print(
            f"campaign {rep.campaign}: {rep.planned} runs planned, {rep.existing} already in the ledger, "
            f"{len(rep.submitted)} submitted (ledger {led.path})"
        )
        for line in rep.skipped:
            con.print(f"  skipped: {line}")
        for line in rep.notes:
            print(f"  note: {line}")  # (plain print: a module name is not markup)
        if rep.recovered:
            con.print(f"  {rep.recovered} job(s) of an interrupted submit found in the scheduler and recorded")
        if rep.submitted:
            ids = [j for j, _ in rep.submitted]
            con.print(f"  job IDs: {ids[0]} … {ids[-1]}" if len(ids) > 2 else f"  job IDs: {', '.join(ids)}")
        for line in rep.why_new:
            con.print(f"  {line}")
        if rep.sync is not None:
            print_counts(rep.sync.counts)
            for w in rep.sync.warnings:
                con.print(f"  warning: {w}")
            print_preflight([] if args.wait else rep.sync.preflight)  # --wait: the watch says it, once
    if args.wait:
        return watch_jobs(args, led, [rep.campaign for rep in reports])
    return exit_for([f for rep in reports for f in rep.failed])
