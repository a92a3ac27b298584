"""The job environment is configuration (docs/design.md#lessons-the-tool-encodes: an 8 MB stack and a
hard-coded module version broke jobs). Computed here once, recorded with every
attempt, and rendered into Slurm scripts from job_templates/."""

from __future__ import annotations

import shlex
import string
from pathlib import Path

from campaign.config.load import repo_root
from campaign.config.schema import ClusterSpec, PartitionSpec, ProfilerSpec
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError


def job_env(cluster: ClusterSpec, part: PartitionSpec, run: RunSpec) -> dict[str, str]:
    """Variables the kernel program sees; later entries override earlier ones."""
    env: dict[str, str] = {"OMP_NUM_THREADS": str(run.threads)}
    if cluster.omp_proc_bind:
        env["OMP_PROC_BIND"] = cluster.omp_proc_bind
    if cluster.omp_places:
        env["OMP_PLACES"] = cluster.omp_places
    env.update({str(k): str(v) for k, v in cluster.env.items()})
    env.update({str(k): str(v) for k, v in part.env.items()})
    return env


def template_path(name: str) -> Path:
    return repo_root() / "job_templates" / f"{name}.sh"


def setup_lines(cluster: ClusterSpec, part: PartitionSpec, env: dict[str, str]) -> list[str]:
    """Shell lines run in the batch script before the job step. Every value is
    shell-quoted: config values never become shell syntax."""
    path = template_path(cluster.job_template)
    if not path.is_file():
        raise ConfigError(f"cluster {cluster.name}: job template {path} not found")
    modules = list(cluster.modules) + list(part.modules)
    module_lines = (["module reset"] if cluster.module_reset else []) + [
        f"module load {shlex.quote(m)}" for m in modules
    ]
    values = {
        "cluster": shlex.quote(cluster.name),
        "partition": shlex.quote(part.name),
        "modules": "\n".join(module_lines) or ":",
        "stack": "ulimit -s unlimited" if cluster.stack_unlimited else ":",
        "exports": "\n".join(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())) or ":",
    }
    body = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
    text = string.Template(body).substitute(values)
    return [line for line in text.splitlines() if line.strip()]


def profiler_lines(profiler: ProfilerSpec, where: str) -> list[str]:
    """Shell lines a profiled job runs before its step (partition `profiler:`
    block): `module load` of the profiler, then each setup command split into
    words and re-quoted, so that a value is one command with literal
    arguments and never shell syntax (no `;`, pipes, `$(...)`)."""
    if not profiler.enabled:
        return []
    lines = [f"module load {shlex.quote(profiler.module)}"] if profiler.module else []
    for index, line in enumerate(profiler.setup):
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"{where}.profiler.setup[{index}] is not one command line: {exc}") from None
        if words:
            lines.append(shlex.join(words))
    return lines
