"""`campaign submit`: plan an experiment, record its runs, submit them.

Transactions are short and never span a scheduler call: runs and attempts
are committed before sbatch, job IDs as each chunk is answered
(campaign.commands.attempts).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from campaign.backends import get_backend
from campaign.backends.capabilities import capabilities
from campaign.commands import chain
from campaign.commands.attempts import (
    Progress,
    attempt_folder,
    job_requests,
    recover_orphans,
    refused,
    submit_requests,
)
from campaign.commands.chain_gate import gate
from campaign.commands.claims import claimed, notice
from campaign.commands.submit_record import (
    get_or_create_campaign,
    new_reasons,
    record_provenance,
    record_runs,
    refuse_imported,
)
from campaign.commands.sync import SyncReport, sync
from campaign.commands.waiting import failed_among
from campaign.config import RootConfig, load_config
from campaign.config.load import resolved_yaml
from campaign.config.validate import check_under
from campaign.ledger import Campaign, Ledger, Run
from campaign.ledger import queries as q
from campaign.planning import programs, provenance, run_env
from campaign.planning.charging import Charge, estimate
from campaign.planning.identity import with_identity
from campaign.planning.node_local import check_node_local
from campaign.planning.plan import Plan, campaign_name, missing_programs, plan
from campaign.planning.run_spec import RunSpec
from campaign.plumbing import storage
from campaign.plumbing.errors import BadInputError, CampaignError, ConfigError
from campaign.plumbing.gc_pause import gc_paused


@dataclass
class SubmitReport:
    campaign: str
    planned: int
    existing: int = 0
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (job_id, run label)
    skipped: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    charges: list[Charge] = field(default_factory=list)  # dry run: the estimate per partition, then the total
    recovered: int = 0  # jobs found in the scheduler whose IDs an interrupted submit never recorded
    sync: SyncReport | None = None
    failed: list[tuple[str, str]] = field(default_factory=list)  # waited-for jobs that ended failed (job id, state)
    why_new: list[str] = field(default_factory=list)  # what makes the new runs new (campaign.planning.identity)
    notes: list[str] = field(default_factory=list)  # settings the backend cannot honour, said, not ignored


def _workdir_root(cfg_dir: str | None, ledger_path: Path) -> Path:
    return Path(cfg_dir).resolve() if cfg_dir else ledger_path.resolve().parent / "runs"


def campaign_dir(cfg: RootConfig, ledger_path: Path) -> Path:
    """Where a campaign's job folders go."""
    return _workdir_root(cfg.campaign.workdir, ledger_path) / campaign_name(cfg)


def _prepare(
    overrides: Sequence[str], ledger_path: Path, configs: Sequence[RootConfig] | None = None
) -> tuple[RootConfig, Plan, str, Path]:
    """Config, plan, campaign name and job folder: the same for a dry run and a submit.
    `configs`: the composed members of one campaign's sweep (campaign.commands.multirun);
    their runs are planned together, one run per key."""
    members = list(configs) if configs else [load_config(overrides)]
    cfg = members[0]
    p = plan(cfg)
    p.runs = with_identity(cfg, p.runs)  # environment, modules, program: part of each run's key
    for other in members[1:]:
        more = plan(other)
        more.runs = with_identity(other, more.runs)
        keys = {r.key for r in p.runs}
        p.runs += [r for r in more.runs if r.key not in keys]
        p.skipped += [line for line in more.skipped if line not in p.skipped]
    if len(members) > 1:
        p.runs.sort(
            key=lambda r: r.replicate
        )  # the members' replicate rounds merged (stable: each round's shuffle kept)
        cfg.__dict__["_resolved_yaml"] = "---\n".join(resolved_yaml(c) for c in members)  # provenance: all members
    name = campaign_name(cfg)
    root = _workdir_root(cfg.campaign.workdir, ledger_path)
    return cfg, p, name, check_under(root / name, root, "campaign.name")


def dry_run(
    overrides: Sequence[str], ledger_path: Path, configs: Sequence[RootConfig] | None = None, *, preflight: bool = True
) -> SubmitReport:
    """Plan and render the job scripts (with the preflight chain: build,
    preflight, then the arrays with their dependency flags) and the cost
    estimate; writes nothing (an existing ledger is only read, to mark the
    runs a submit would skip)."""
    cfg, p, name, camp_dir = _prepare(overrides, ledger_path, configs)
    reqs = job_requests(
        cfg.cluster, name, [(i + 1, r, attempt_folder(camp_dir, r.key, 1)) for i, r in enumerate(p.runs)]
    )
    backend = get_backend(cfg.cluster, camp_dir, cfg.campaign.python)
    existing, reasons = _existing(ledger_path, name, p.runs)
    in_ledger = sum(1 for r in p.runs if r.key in existing)  # shown, and skipped by a submit
    arrays: dict[str, int] = {}
    for batch in backend.batches([r for r in reqs if r.run.key not in existing]):
        arrays[batch[0].run.partition] = arrays.get(batch[0].run.partition, 0) + 1
    if preflight and cfg.experiment.preflight:
        chains = chain.plan_chains(cfg.cluster, backend.name, name, camp_dir, _kernel_bin(cfg), reqs)
        # what a submit would send in front of the runs it sends (none when every run is in the ledger)
        new = [r for r in reqs if r.run.key not in existing]
        sent = chain.plan_chains(cfg.cluster, backend.name, name, camp_dir, _kernel_bin(cfg), new) if new else []
        charges = estimate(cfg.cluster, p.runs, arrays, existing, chain.step_costs(sent))
        return SubmitReport(
            name,
            len(p.runs),
            in_ledger,
            skipped=p.skipped,
            scripts=chain.render(backend, chains),
            charges=charges,
            notes=unhonoured(cfg, p),
            why_new=reasons,
        )
    charges = estimate(cfg.cluster, p.runs, arrays, existing)
    return SubmitReport(
        name,
        len(p.runs),
        in_ledger,
        skipped=p.skipped,
        scripts=backend.render(reqs),
        charges=charges,
        notes=unhonoured(cfg, p),
        why_new=reasons,
    )


def unhonoured(cfg: RootConfig, p: Plan) -> list[str]:
    """Settings of the cluster that its backend cannot apply to these runs: the
    local backend starts programs from this process, with no job script to
    `module load` in."""
    c = cfg.cluster
    if not capabilities(c.backend).local:
        return []
    used = {r.partition for r in p.runs}
    mods = [*c.modules, *(m for k, part in c.partitions.items() if k in used for m in part.modules)]
    if not mods:
        return []
    return [
        f"the local backend loads no modules ({' '.join(mods)}): the jobs run in this shell's environment, "
        f"so load them here before submitting (they stay part of each run's recorded identity)"
    ]


def _existing(ledger_path: Path, name: str, runs: list[RunSpec]) -> tuple[set[str], list[str]]:
    """Run keys of this campaign already in the ledger, and why the planned runs not among them are
    new, as a submit would say it; none when there is no ledger."""
    if not ledger_path.exists():
        return set(), []
    ledger = Ledger(ledger_path, create=False)
    try:
        with ledger.session() as s:
            camp = q.campaign_by_name(s, name)
            if camp is None:
                return set(), []
            refuse_imported(camp)
            keys = set(s.scalars(select(Run.key).where(Run.campaign_id == camp.id)))
            fresh = [r for r in runs if r.key not in keys]
            if not fresh or not keys:  # the runs' specs are read only where some run would be new
                return keys, []
            return keys, new_reasons(fresh, s.scalars(select(Run).where(Run.campaign_id == camp.id)))
    finally:
        ledger.close()


def _kernel_bin(cfg: RootConfig) -> str:
    return cfg.campaign.kernel_bin or ""


def submit(
    overrides: Sequence[str],
    ledger: Ledger,
    *,
    force: bool = False,
    progress: Progress | None = None,
    configs: Sequence[RootConfig] | None = None,
    preflight: bool = True,
) -> SubmitReport:
    with gc_paused():
        cfg, p, name, camp_dir = _prepare(overrides, ledger.path, configs)
    # The local backend's submit runs the jobs and waits for them: the collector stays on there.
    with gc_paused() if not capabilities(cfg.cluster.backend).local else nullcontext():
        return _submit(overrides, ledger, cfg, p, name, camp_dir, force=force, progress=progress, preflight=preflight)


def _submit(
    overrides: Sequence[str],
    ledger: Ledger,
    cfg: RootConfig,
    p: Plan,
    name: str,
    camp_dir: Path,
    *,
    force: bool,
    progress: Progress | None,
    preflight: bool,
) -> SubmitReport:
    check_node_local(cfg, [camp_dir, ledger.path])
    preflight = preflight and cfg.experiment.preflight
    # With the chain, the build job makes the native programs on the partition.
    missing = [
        m for m in missing_programs(cfg, p.runs) if not (preflight and chain.native_program(m, _kernel_bin(cfg)))
    ]
    if missing:
        raise ConfigError(f"kernel program not built: {missing[0]} (run `make kernels`)")
    # a missing image or runtime: refused before anything is recorded (runs share a few identities)
    shared = {id(r.identity): r for r in p.runs}.values()
    refusal = profiler_refusal(cfg, p.runs) or next(
        (why for r in shared if (why := run_env.refusal(r.identity, cfg.cluster.backend))), None
    )
    if refusal:
        raise BadInputError(refusal)
    report = SubmitReport(name, len(p.runs), skipped=p.skipped, notes=unhonoured(cfg, p))
    # Read before the transaction: it runs `gcc --version`, `nvidia-smi`, hashes binaries.
    # each distinct program once (100,000 runs share a few: a stat per run costs ~0.2 s)
    env = provenance.environment(
        cfg.cluster.build.cc, cfg.cluster.build.fc, list(dict.fromkeys(r.argv for r in p.runs))
    )
    # the user's programs (not built by the build job): real path and sha256, for the report's builds table
    env[programs.KEY] = programs.record(p.runs, lambda argv0: chain.native_program(argv0, _kernel_bin(cfg)))
    # the image digests, runtime versions and spack.lock hashes the runs carry, per partition: `compare` names a change
    facts = {r.partition: run_env.run_env_facts(r.identity) for r in shared}
    if any(facts.values()):
        env["run_env"] = {part: f for part, f in facts.items() if f}
    with ledger.session.begin() as s:
        camp_id = get_or_create_campaign(s, cfg, name, camp_dir).id
    # One submit or rerun of a campaign at a time (campaign.commands.claims): a second
    # identical submit waits, then finds every run recorded and submits nothing.
    with claimed(ledger, [camp_id], "submit", notice):
        with ledger.session.begin() as s:
            camp = s.get_one(Campaign, camp_id)
            prov = record_provenance(s, camp, cfg, overrides, env)
            todo, report.existing, resumed, report.why_new = record_runs(s, camp, p.runs, camp_dir, prov.id, force)
        reqs = job_requests(cfg.cluster, name, todo)
        labels = {r.attempt_id: r.task.label for r in reqs}  # the run's label, made once per request
        backend = get_backend(cfg.cluster, camp_dir, cfg.campaign.python)
        asked = [r.attempt_id for r in reqs]  # a run its failed build/preflight kept back counts too
        try:
            with storage.writing(camp_dir):  # job folders, scripts: a full disk names the campaign's folder
                reqs, found = recover_orphans(ledger, backend, reqs, resumed)
                report.recovered = len(found)
                if preflight and reqs:
                    chains = chain.plan_chains(cfg.cluster, backend.name, name, camp_dir, _kernel_bin(cfg), reqs)
                    reqs = gate(ledger, backend, cfg.cluster.name, camp_id, _kernel_bin(cfg), chains)
                sent = submit_requests(ledger, backend, reqs, progress)
        except CampaignError as exc:  # sbatch refused (no SLURM_CONF, a bad account): say so in the ledger
            raise refused(ledger, asked, exc) from None
        report.submitted = [(sub.job_id, labels[sub.attempt_id]) for sub in [*found, *sent]]
        if capabilities(cfg.cluster.backend).local and (todo or found):
            report.sync = sync(ledger, name)
            report.failed = failed_among(ledger, asked)
    return report


def profiler_refusal(cfg: RootConfig, runs: Sequence[RunSpec]) -> str | None:
    """Why the profiler a run asks for (experiment.profile) cannot work, or
    None. Local clusters: ncu must be on PATH (or the partition's profiler.ncu
    must exist) on this machine. Slurm: the partition needs a `profiler:`
    block, and perf its `perf_allowed`."""
    cluster = cfg.cluster
    for run in runs:
        profile = dict(run.extra_args).get("profile", "none")
        if profile == "none":
            continue
        part = cluster.partitions[run.partition]
        where = f"cluster {cluster.name} partition {part.name}"
        knob = f"cluster.partitions.{part.name}.profiler"
        if profile == "perf" and not part.profiler.perf_allowed:
            return (
                f"experiment.profile=perf refused: {where} does not allow perf "
                f"(set {knob}.perf_allowed=true where the site permits hardware events)"
            )
        if not capabilities(cluster.backend).local:
            if not part.profiler.enabled:
                return (
                    f"experiment.profile={profile} refused: {where} has no enabled profiler: block "
                    f"({knob}: enabled: true, ncu path or module, sbatch_extra, setup)"
                )
            continue
        tool = part.profiler.ncu or None
        name = profile if profile == "perf" else "ncu"
        found = (
            tool
            if tool and os.path.isfile(tool) and os.access(tool, os.X_OK)
            else (None if tool else shutil.which(name))
        )
        if found is None:
            missing = f"{tool} does not exist" if tool else f"{name} is not on PATH"
            return (
                f"experiment.profile={profile} refused: {missing} on this machine ({where}); "
                f"install it, set {knob}.ncu=<path>, or use experiment.profile=none"
            )
    return None
