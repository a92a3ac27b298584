"""The command line's grammar (campaign/cli/parser.py): global options on
either side of the subcommand, on every subcommand (also ones added later),
Hydra-style overrides between submit's options, and usage errors as one line
with exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from campaign.cli import parser as cli_parser
from campaign.cli.parser import build_parser, parse


@pytest.mark.parametrize(
    "argv",
    [
        ["--ledger", "a.sqlite", "--format", "json", "-q", "jobs"],
        ["jobs", "--ledger", "a.sqlite", "--format", "json", "--quiet"],
        ["--ledger", "other.sqlite", "-q", "jobs", "--ledger", "a.sqlite", "--format", "json"],  # the later one wins
    ],
)
def test_global_options_before_or_after(argv: list[str]) -> None:
    args = parse(argv)
    assert (args.ledger, args.format, args.quiet, args.cmd) == (Path("a.sqlite"), "json", True, "jobs")


def test_defaults_when_not_given() -> None:
    args = parse(["status"])
    assert (args.ledger, args.format, args.quiet) == (None, None, False)


def test_every_subcommand_takes_the_globals() -> None:
    p = build_parser()
    subs = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subs.choices.items():
        assert {"--ledger", "--format", "--quiet"} <= set(sub._option_string_actions), name


def test_a_subcommand_added_later_gets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    original = cli_parser._add_globals_everywhere

    def with_extra(p: argparse.ArgumentParser) -> None:
        if p.prog == "campaign":  # the top level: a subcommand another change adds
            subs = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
            extra = subs.add_parser("later")
            extra.add_argument("--format", choices=["md"], default="md")  # its own --format wins
        original(p)

    monkeypatch.setattr(cli_parser, "_add_globals_everywhere", with_extra)
    args = parse(["later", "--ledger", "x"])
    assert args.ledger == Path("x") and args.format == "md"


def test_overrides_between_submit_options() -> None:
    args = parse(["submit", "experiment=smoke", "-m", "a=1,2", "--dry-run", "b=range(1,3)", "--quiet"])
    assert args.overrides == ["experiment=smoke", "a=1,2", "b=range(1,3)"]
    assert args.multirun and args.dry_run and args.quiet


@pytest.mark.parametrize(
    "argv", [["jobs", "stray"], ["submit", "--cfg", "hydra"], ["--format", "xml", "jobs"], ["submit", "a=1", "--bogus"]]
)
def test_usage_errors_are_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parse(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("campaign") and "error:" in err[0]


def test_jobs_takes_one_campaign_and_says_so_when_given_two(capsys: pytest.CaptureFixture[str]) -> None:
    """results, report and compare take --campaign again and again; jobs lists one campaign (or
    all): a second one must not silently replace the first."""
    assert parse(["jobs", "--campaign", "a"]).campaign == "a"
    with pytest.raises(SystemExit) as stop:
        parse(["jobs", "--campaign", "a", "--campaign", "b"])
    assert stop.value.code == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert "--campaign is given twice ('a', 'b'): jobs lists one campaign, or every one without --campaign" in err
