"""The README's example block is what a new user copies: every
`campaign` line in it parses with the CLI's own parser, every submit line
composes, and every `compare` of two campaign names compares campaigns that
earlier example lines make, with enough repeats for a verdict (the old
example compared a 3-repeat smoke campaign with one no line made, and could
never say "slower")."""

from __future__ import annotations

import re
import shlex

import pytest

from analysis.compare import MIN_REPEATS
from campaign.cli.parser import build_parser, parse
from campaign.commands.multirun import compose
from campaign.planning.plan import campaign_name, plan
from tests.conftest import REPO


def example_commands() -> list[list[str]]:
    """The commands of the README's "Examples:" block, one argument list each
    (continuations joined, comments dropped, pipelines and `&&` split)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^Examples:\n```\n(.*?)^```", text, re.S | re.M)
    assert block, "README has no Examples: block"
    joined = block.group(1).replace("\\\n", " ")
    commands: list[list[str]] = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "|", ";"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
    return commands


def campaign_lines() -> list[list[str]]:
    return [c for c in example_commands() if c[0] == "campaign"]


def test_the_block_has_examples() -> None:
    assert len(campaign_lines()) >= 8


@pytest.mark.parametrize("argv", campaign_lines(), ids=lambda a: " ".join(a)[:60])
def test_every_example_parses(argv: list[str]) -> None:
    parse(argv[1:])  # the CLI's own parse: a misspelt option is SystemExit, the test fails


@pytest.mark.parametrize("misspelt", [["status", "--wacth"], ["submit", "experiment=smoke", "--dryrun"],
                                      ["compare", "a", "b", "--fail-onn", "slower"]])
def test_a_misspelt_option_in_an_example_fails_the_parse(misspelt: list[str]) -> None:
    """What the examples go through: a misspelt option is an error there, as at the prompt (a
    parse that kept unknown arguments aside would let the README drift from the CLI)."""
    build_parser().parse_known_args(misspelt)  # the lenient parse takes it: the check below must not
    with pytest.raises(SystemExit):
        parse(misspelt)


def _made_campaigns() -> dict[str, int]:
    """Campaign name -> repeats, for every submit line of the block."""
    made: dict[str, int] = {}
    for argv in campaign_lines():
        args = parse(argv[1:])
        if args.cmd == "submit":
            for _member, cfg in compose(args.overrides):
                assert plan(cfg).runs, argv  # plans as written (accounts, partitions, threads)
                made[campaign_name(cfg)] = min(made.get(campaign_name(cfg), 10**9), cfg.experiment.repeats)
    return made


def test_compares_of_named_campaigns_can_give_a_verdict() -> None:
    made = _made_campaigns()
    compares = [parse(a[1:]) for a in campaign_lines() if a[1] == "compare"]
    named = [(c.base, c.new) for c in compares if "=" not in c.base + c.new]
    assert named, "no compare of two campaign names in the examples"
    for base, new in named:
        for name in (base, new):
            assert name in made, f"compare {base} {new}: no example line makes campaign {name}"
            assert made[name] >= MIN_REPEATS, f"campaign {name} has {made[name]} repeats; a verdict needs {MIN_REPEATS}"


def test_the_test_slurm_is_reached_by_sourcing_its_env() -> None:
    commands = example_commands()
    source = next(i for i, c in enumerate(commands) if c[:2] == ["source", "/tmp/campaign-slurm/env.sh"])
    first_slurm = next(i for i, c in enumerate(commands) if "cluster=localslurm" in c)
    assert source < first_slurm


@pytest.mark.parametrize("text", ["EXAMPLES", "SUBMIT_EXAMPLES"])
def test_help_examples_parse_and_plan(text: str) -> None:
    """`campaign --help` and `submit --help` end with examples: each parses, and
    each submit composes and plans as written."""
    from campaign.cli import help_text

    examples = getattr(help_text, text).split("examples:")[1].split("shell completion")[0]
    lines = [line.split("  ")[1] for line in examples.splitlines() if line.startswith("  campaign ")]
    commands = [shlex.split(line) for line in lines]
    assert len(commands) >= 5 and all(c[0] == "campaign" for c in commands)
    for argv in commands:
        args = parse(argv[1:])
        if args.cmd == "submit" and not (args.info or args.cfg):  # composes and plans (accounts, partitions, threads)
            assert all(plan(cfg).runs for _member, cfg in compose(args.overrides)), argv
