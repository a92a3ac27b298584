"""One command line, several campaigns: Hydra's sweep grammar over `submit`.

`campaign.config.sweep` turns the overrides into the configurations they
stand for; this module composes each, groups them into campaigns and hands
each campaign to the submit use case. A campaign is one (experiment, cluster)
by its name (`<experiment>-<cluster>` unless `campaign.name=` says otherwise):
`cluster=anvil,delta` is two campaigns, `experiment.repeats=3,5` is one
campaign holding the runs of both values (each run once, by its key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from campaign.commands.attempts import Progress
from campaign.commands.submit import SubmitReport, campaign_dir, dry_run, submit
from campaign.config import RootConfig, load_config, split_overrides
from campaign.config.clusters import cluster_yaml
from campaign.config.load import group_options, resolved_yaml
from campaign.config.sweep import expand
from campaign.ledger import Ledger
from campaign.planning.node_local import check_node_local
from campaign.planning.plan import campaign_name, missing_programs, plan
from campaign.plumbing.errors import ConfigError


@dataclass
class CampaignSweep:
    """The composed members of one campaign (one member without a sweep)."""

    name: str
    members: list[list[str]] = field(default_factory=list)  # each member's overrides
    configs: list[RootConfig] = field(default_factory=list)


def members(overrides: Sequence[str]) -> list[list[str]]:
    """The override list of every configuration the command line stands for."""
    return expand(split_overrides(overrides), group_options)


def compose(overrides: Sequence[str]) -> list[tuple[list[str], RootConfig]]:
    """Every member composed and validated (for `--cfg job` and grouping)."""
    return [(m, load_config(m)) for m in members(overrides)]


def campaigns(overrides: Sequence[str]) -> list[CampaignSweep]:
    """The campaigns of a command line, in the order Hydra enumerates them."""
    out: dict[str, CampaignSweep] = {}
    for member, cfg in compose(overrides):
        name = campaign_name(cfg)
        group = out.setdefault(name, CampaignSweep(name))
        if group.configs:
            first = group.configs[0]
            if cluster_yaml(first.cluster) != cluster_yaml(cfg.cluster) or first.campaign != cfg.campaign:
                raise ConfigError(
                    f"the sweep gives campaign {name!r} two different clusters or campaign settings "
                    f"({' '.join(group.members[0])} vs {' '.join(member)}): give each its own name, "
                    f"e.g. campaign.name=<name>-${{cluster.name}}"
                )
        group.members.append(member)
        group.configs.append(cfg)
    return list(out.values())


def composed_yaml(overrides: Sequence[str]) -> str:
    """`--cfg job`: the composed, resolved config of each member as YAML
    documents (one document without a sweep)."""
    docs = []
    many = len(members(overrides)) > 1
    for member, cfg in compose(overrides):
        head = f"# overrides: {' '.join(member)}\n" if many else ""
        docs.append(head + resolved_yaml(cfg))
    return "---\n".join(docs)


def prepare(overrides: Sequence[str], ledger_path: Path | None = None) -> list[CampaignSweep]:
    """Every campaign of the command line composed and planned, so that a
    mistake anywhere is found before the ledger is opened or a job submitted."""
    groups = campaigns(overrides)
    for group in groups:
        for cfg in group.configs:
            runs = plan(cfg).runs  # config mistakes (a missing account...) are named first
            if ledger_path is not None:
                check_node_local(cfg, [campaign_dir(cfg, ledger_path), ledger_path])
            missing = missing_programs(cfg, runs)
            if missing:
                raise ConfigError(f"kernel program not built: {missing[0]} (run `make kernels`)")
    return groups


def submit_all(
    overrides: Sequence[str],
    groups: Sequence[CampaignSweep],
    ledger: Ledger,
    *,
    force: bool = False,
    progress: Progress | None = None,
    preflight: bool = True,
) -> list[SubmitReport]:
    """The prepared campaigns, one after the other (`overrides`: the command
    line as typed, recorded as each campaign's provenance)."""
    return [
        submit(overrides, ledger, force=force, progress=progress, configs=g.configs, preflight=preflight)
        for g in groups
    ]


def dry_run_all(overrides: Sequence[str], ledger_path: Path, *, preflight: bool = True) -> list[SubmitReport]:
    return [dry_run(overrides, ledger_path, configs=c.configs, preflight=preflight) for c in campaigns(overrides)]
