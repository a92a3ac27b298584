"""The command line's grammar (argparse): what `campaign --help` shows.

Imports nothing heavy, so `--help` and usage errors answer at once
(bench/bench_cli_startup.py keeps `campaign --help` under 0.3 s).

The global options (GLOBAL_OPTIONS) are added to the top level and to every
subcommand, so they may come before or after it; a subcommand added later
gets them without doing anything.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from campaign import __version__
from campaign.cli import completion
from campaign.cli.arg_types import Once, named, nonblank, percent, positive
from campaign.cli.help_text import ADVISE, EXAMPLES, SUBMIT_EXAMPLES
from campaign.plumbing.errors import did_you_mean

FORMATS = ("table", "csv", "json")
COMPARE_FORMATS = ("table", "json", "md")


_CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<known>.*)\)")
_UNKNOWN_OPTION = re.compile(r"unrecognized arguments: (?P<word>-[^\s=]+)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}{self._hint(message)} (see {self.prog} --help)\n")

    def _hint(self, message: str) -> str:
        """ "did you mean" for a misspelt command, choice or option (difflib)."""
        found = _CHOICE.search(message)
        if found:
            return did_you_mean(found["word"], re.findall(r"'([^']*)'", found["known"]))
        found = _UNKNOWN_OPTION.search(message)
        if found:
            return did_you_mean(found["word"], [o for o in self._option_string_actions if o.startswith("--")])
        return ""


def _add_globals(p: argparse.ArgumentParser, *, top: bool) -> None:
    """--ledger, --format, --quiet; below the top level their default is
    SUPPRESS, so a subcommand never overwrites a value given before it."""

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    have = p._option_string_actions  # a subcommand's own option of the same name wins
    if "--ledger" not in have:
        p.add_argument(
            "--ledger",
            type=Path,
            default=default(None),
            help="ledger file or URL (default: $CAMPAIGN_LEDGER, else ~/.local/share/campaign/ledger.sqlite)",
        )
    if "--format" not in have:
        p.add_argument(
            "--format",
            choices=FORMATS,
            default=default(None),
            help="output of jobs, status, results, show (default: table; results: csv); "
            "a table into a pipe is plain text",
        )
    if "--quiet" not in have:
        p.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            default=default(False),
            help="no progress display; waiting commands print one line per state change",
        )


def _add_globals_everywhere(p: argparse.ArgumentParser) -> None:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_globals(child, top=False)
                _add_globals_everywhere(child)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="campaign",
        description="Benchmark campaigns on Slurm clusters, tracked in a ledger.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"campaign {__version__}")
    _add_globals(p, top=True)
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    s = sub.add_parser(
        "submit",
        help="expand an experiment, submit its runs, record them",
        epilog=SUBMIT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "overrides",
        nargs="*",
        help="Hydra overrides, e.g. cluster=delta experiment=smoke experiment.repeats=5; sweeps: "
        "'experiment.sweeps.0.threads=1,2,4', range(1,9), choice(a,b), cluster=glob(*)",
    )
    s.add_argument("--dry-run", action="store_true", help="print the job scripts; submit and record nothing")
    s.add_argument("--force", action="store_true", help="submit runs again even if the ledger has them")
    s.add_argument(
        "--no-preflight",
        action="store_true",
        help="submit the arrays without the build and preflight jobs in front of them (experts)",
    )
    s.add_argument(
        "-m", "--multirun", action="store_true", help="accepted for Hydra habits; sweeps expand with or without it"
    )
    s.add_argument("-c", "--cfg", choices=["job"], help="print the composed config (YAML) and exit")
    s.add_argument(
        "--info", action="store_true", help="print the config search path and the configs it offers, and exit"
    )
    s.add_argument(
        "-cd",
        "--config-dir",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of configs searched first (same as $CAMPAIGN_CONFIG_PATH); repeatable",
    )
    s.add_argument(
        "--wait",
        action="store_true",
        help="Slurm: after submitting, watch until every job finished (exit 3 if one failed)",
    )
    s.add_argument("--interval", type=float, default=5.0, help="seconds between syncs with --wait")

    s = sub.add_parser("status", help="sync job states from the scheduler; show counts")
    s.add_argument("campaign", nargs="?", type=named)
    s.add_argument(
        "--watch",
        action="store_true",
        help="keep syncing and show progress until nothing is pending or running (exit 3 if a job failed)",
    )
    s.add_argument("--interval", type=float, default=5.0, help="seconds between syncs with --watch")
    s.add_argument(
        "--wait",
        action="store_true",
        help="sync until nothing is pending or running, without the live view (exit 3 if a job failed)",
    )

    s = sub.add_parser("jobs", help="list jobs (states refreshed from the scheduler first)")
    s.add_argument("--campaign", action=Once, type=named)
    s.add_argument("--state", type=nonblank, help="e.g. FAILED")
    s.add_argument(
        "--failed",
        action="store_true",
        help="every failed state (FAILED, TIMEOUT, OUT_OF_MEMORY, ...: what rerun --failed takes)",
    )
    s.add_argument("--all-attempts", action="store_true", help="also earlier attempts of rerun runs")
    s.add_argument("--no-sync", action="store_true", help="print the ledger's states without asking the scheduler")

    s = sub.add_parser("show", help="one job: parameters, state, attempts, log paths, stderr tail")
    s.add_argument("job_id", type=named)
    s.add_argument("--no-sync", action="store_true", help="print the ledger's state without asking the scheduler")

    s = sub.add_parser("rerun", help="resubmit failed runs as new attempts")
    s.add_argument("campaign", nargs="?", type=named)
    s.add_argument(
        "--failed", action="store_true", help="every failed state (not CANCELLED: ask with --state CANCELLED)"
    )
    s.add_argument("--all", action="store_true", help="without CAMPAIGN: rerun in every campaign of the ledger")
    s.add_argument("--job", dest="job_id", type=named, help="one job ID")
    s.add_argument("--state", action="append", default=[], help="a state to rerun (repeatable)")
    s.add_argument(
        "--time-factor",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply the walltime of every job rerun, whatever its failure (rounded up to whole "
        "minutes, at most the partition's maximum)",
    )
    s.add_argument(
        "--mem-factor",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply the memory of every job rerun, whatever its failure (at most what a node lets a job ask)",
    )
    s.add_argument("--no-preflight", action="store_true", help="resubmit without the build and preflight jobs")
    s.add_argument(
        "--wait",
        action="store_true",
        help="Slurm: after resubmitting, watch until every job finished (exit 3 if one failed)",
    )
    s.add_argument("--interval", type=float, default=5.0, help="seconds between syncs with --wait")

    s = sub.add_parser("cancel", help="cancel a campaign's jobs or one job")
    s.add_argument("target", type=named, help="campaign name or job ID")

    s = sub.add_parser("import", help="import a results CSV (all or nothing)")
    s.add_argument("file", type=Path)
    s.add_argument("--campaign", help="put the rows into this named campaign (compared like any other)")

    s = sub.add_parser("compare", help="NEW vs BASE per point: ratio, interval, verdict; what provenance changed")
    s.add_argument(
        "base",
        help="campaign name, or campaign=NAME,cluster=C,since=DATE,until=DATE,commit=SHA,ledger=PATH,axis.NAME=VALUE (one value of a grid argument)",
    )
    s.add_argument("new", help="as BASE")
    s.add_argument(
        "--by",
        choices=["cluster", "partition", "impl", "variant"],
        help="the dimension in which BASE and NEW differ (left out of the matching)",
    )
    s.add_argument(
        "--threshold",
        type=percent,
        default=0.05,
        metavar="P",
        help="smallest change that counts, e.g. 5%% or 0.05 (default 5%%)",
    )
    s.add_argument(
        "--fail-on",
        choices=["slower", "worse"],
        help="exit 3 when a point is slower, or a figure worse, beyond the threshold (the two words "
        "are one gate: a time's regression is slower, a rate's is worse)",
    )
    s.add_argument(
        "--min-replicates",
        type=positive,
        default=1,
        metavar="R",
        help="refuse a verdict (insufficient-replicates) below R replicates on a side (default 1: "
        "such points are judged on the within-run interval only, and say so)",
    )
    s.add_argument("--reference", action="store_true", help="also check NEW against the references of its partitions")
    # its own --format (md too); SUPPRESS: a global `--format json` before the subcommand stays
    s.add_argument("--format", choices=COMPARE_FORMATS, default=argparse.SUPPRESS, help="table (default), json or md")

    s = sub.add_parser(
        "plan-repeats",
        help="from a pilot campaign: replicates and repeats for an interval width "
        "at least machine time (Kalibera & Jones 2013)",
    )
    s.add_argument("pilot", help="the pilot: campaign name or campaign=NAME,...,ledger=PATH (as compare)")
    s.add_argument(
        "--width",
        type=percent,
        default=0.05,
        metavar="P",
        help="half-width of the NEW/BASE interval of two campaigns run so, e.g. 5%% (default 5%%)",
    )
    s.add_argument(
        "--job-overhead",
        type=float,
        default=None,
        metavar="SECONDS",
        help="cost of one more job beyond its timed repeats (default: measured from the pilot's jobs)",
    )

    s = sub.add_parser("results", help="export result rows (fixed columns, README: results columns)")
    s.add_argument("--campaign", action="append", help="campaign(s) to export (repeatable; default: every campaign)")
    s.add_argument(
        "--counters",
        action="store_true",
        help="export the hardware counters (experiment.profile) instead of the timings",
    )
    s.add_argument(
        "--format",
        choices=(*FORMATS, "parquet"),
        default=argparse.SUPPRESS,
        help="csv (default), json, table, or parquet (one Parquet file of the same columns, "
        "`extra` as JSON text; written to --out)",
    )
    s.add_argument(
        "--out",
        type=Path,
        help="the file the csv, json or parquet export is written to (parquet: required; csv and json: default stdout)",
    )

    s = sub.add_parser("report", help="per-cluster report (Markdown + HTML), or --json metrics")
    s.add_argument("--cluster", type=nonblank)
    s.add_argument(
        "--campaign",
        action="append",
        default=[],
        help="campaign(s) to report (repeatable; default: the latest campaign)",
    )
    s.add_argument("--all", action="store_true", help="pool every campaign of the ledger, on purpose")
    s.add_argument("--out", type=Path, default=Path("report"))
    s.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    s.add_argument("--keys", help="with --json: only these metrics, comma-separated (e.g. speedup,ratios)")

    s = sub.add_parser(
        "advise",
        help="advice: model shapes for a GPU (shape), thread counts per n range (threads)",
        description=ADVISE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    adv = s.add_subparsers(dest="what", required=True, parser_class=_Parser, metavar="{shape,threads}")
    a = adv.add_parser("shape", help="check h, a, vocab against the GPU and propose better shapes")
    a.add_argument("--h", type=int, required=True, help="hidden size")
    a.add_argument("--a", type=int, required=True, help="attention heads")
    a.add_argument("--vocab", type=int, required=True)
    a.add_argument("--gpu", required=True, help="e.g. a100, h100, h200")
    a.add_argument("--seq", type=int, default=2048)
    a.add_argument("--batch", type=int, default=1)
    a.add_argument("--tp", type=int, default=1)
    a = adv.add_parser("threads", help="recommended thread count per n range, and the cost of all cores")
    a.add_argument("--cluster", required=True)
    a.add_argument("--partition", required=True)
    a.add_argument("--kernel", required=True)
    a.add_argument("--n", type=int, help="one problem size only")
    a.add_argument(
        "--campaign",
        action="append",
        default=[],
        help="campaign(s) to advise from (repeatable; default: the latest campaign, as report)",
    )
    a.add_argument("--all", action="store_true", help="pool every campaign of the ledger, on purpose")

    s = sub.add_parser(
        "completion",
        help="print the bash or zsh completion script (see campaign --help)",
        description="Print the shell completion script. Install once: "
        "echo 'eval \"$(campaign completion bash)\"' >> ~/.bashrc "
        "(zsh: the same with zsh and ~/.zshrc).",
    )
    s.add_argument("shell", choices=["bash", "zsh"])
    _add_globals_everywhere(p)  # last: every subcommand above (and any added later) takes them
    completion.attach(p)
    return p


def _subparser(p: argparse.ArgumentParser, cmd: str) -> argparse.ArgumentParser:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction) and cmd in action.choices:
            child: argparse.ArgumentParser = action.choices[cmd]
            return child
    return p


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line. Overrides may sit between submit's options, as
    Hydra users write them (`submit -m a=1,2 --dry-run b=3`)."""
    p = build_parser()
    completion.complete_if_asked(p)  # a TAB: print the candidates and exit
    args, extra = p.parse_known_args(argv)
    if extra:
        if args.cmd == "submit" and not any(item.startswith("-") for item in extra):
            args.overrides = [*args.overrides, *extra]
        else:  # the subcommand's parser: its usage and its options for "did you mean"
            _subparser(p, args.cmd).error(f"unrecognized arguments: {' '.join(extra)}")
    return args
