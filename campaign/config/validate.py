"""Compose-time validation of every config value that reaches a batch script,
a command line or a path ("no value reaching a shell or a path").

The rule, in one place: a value that *names* something (campaign, cluster,
partition, kernel, implementation, variant, dtype, template, account, QoS,
sbatch option) must match a strict pattern and a length limit; a value that is
*free text* but still reaches a script (environment values, module names,
program arguments, folders) must hold no control character (a newline ends an
`#SBATCH` comment line and a NUL cannot be passed to a program) and is quoted
where it is rendered; paths are resolved and the job folder is kept under its
root. Everything is checked before anything is planned, recorded or written,
so a hostile value is one line and exit 2 with the ledger untouched.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from campaign.backends.capabilities import capabilities
from campaign.backends.slurm_extra import check_sbatch_extra
from campaign.config import sweep_values
from campaign.config.numbers import check_partition
from campaign.config.schema import CONTAINER_RUNTIMES, ContainerSpec, RootConfig, SpackSpec
from campaign.planning import byob
from campaign.plumbing.errors import ConfigError

NAME_MAX = 100  # campaign.name is String(200) in the ledger; runs/<name> must stay a sane path
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # no "/", no "..", no leading "-" or "."
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")
ARG_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# an interpreter is an absolute path or a plain command word, nothing a shell would read
PYTHON = re.compile(r"(/[A-Za-z0-9._+/-]+|[A-Za-z0-9._+-]+)")
TEXT_MAX = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LINE_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # all but tab and newline
TEMPLATE_MAX = 65536  # an input file's template travels in the run's command line


def _safe(where: str) -> str:
    """A field's path may hold the hostile key itself: shown escaped, short."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], where)
    return text if len(text) <= 120 else text[:117] + "..."


def check_name(value: object, where: str, limit: int = NAME_MAX) -> str:
    """A name used in job names, #SBATCH lines, labels and folder names."""
    text = str(value)
    if len(text) > limit:
        raise ConfigError(f"{_safe(where)} is {len(text)} characters long; at most {limit} are allowed")
    if not NAME.fullmatch(text) or ".." in text:
        raise ConfigError(
            f"{_safe(where)}={text[:60]!r} is not a valid name: use letters, digits and . _ + - "
            f"(starting with a letter or digit)"
        )
    return text


def check_text(value: object, where: str, limit: int = TEXT_MAX, *, lines: bool = False) -> str:
    """Free text that reaches a script or a command: no control characters.
    With `lines`, multi-line text that never reaches a batch script as text (a
    script run by `bash -c`, an input file's template): newlines and tabs
    allowed, no other control character. A list or mapping is no text: OmegaConf
    lets one into a list or mapping of strings from YAML (`argv: [a, {b: 1}]`)."""
    if isinstance(value, list | tuple | dict):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        raise ConfigError(
            f"{_safe(where)} is {kind} ({_safe(str(value))[:60]}), not text: write it as one string (quoted)"
        )
    text = str(value)
    if len(text) > limit:
        raise ConfigError(f"{_safe(where)} is {len(text)} characters long; at most {limit} are allowed")
    bad = (_LINE_CONTROL if lines else _CONTROL).search(text)
    if bad:
        allowed = "only newlines and tabs" if lines else "newlines, tabs and NUL cannot reach a job script"
        raise ConfigError(f"{_safe(where)} contains the control character {bad.group()!r}; {allowed}")
    return text


def check_env_name(name: object, where: str) -> str:
    text = str(name)
    if not ENV_NAME.fullmatch(text) or len(text) > 200:
        raise ConfigError(f"{_safe(where)}: {text[:60]!r} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
    return text


def check_python(value: object, where: str = "campaign.python") -> str:
    """The interpreter reaches the job step's command line: an absolute path or
    a plain word (it is quoted as well where it is rendered)."""
    text = str(value)
    if len(text) > 1024 or not PYTHON.fullmatch(text) or "/../" in f"{text}/":
        raise ConfigError(
            f"{_safe(where)}={text[:60]!r} must be an absolute path or a plain command name "
            "(letters, digits, . _ + - /)"
        )
    return text


def check_under(path: Path, root: Path, where: str) -> Path:
    """`path` resolved; refused unless it lies inside `root` (resolved)."""
    resolved, base = path.resolve(), root.resolve()
    if resolved == base or not resolved.is_relative_to(base):
        raise ConfigError(f"{_safe(where)}: {str(path)[:80]!r} leaves its folder {base}")
    return resolved


def check_folder(value: str, where: str) -> Path:
    """A folder the user names (campaign.workdir, campaign.kernel_bin): any
    printable text (it is always quoted), resolved to an absolute path."""
    check_text(value, where, limit=1024)
    path = Path(value).expanduser().resolve()
    for place in (path, *path.parents):  # the nearest that exists: the folders below it are made at submit
        try:
            found = place.exists()
        except OSError as exc:  # a name this filesystem cannot hold (a part past 255 bytes)
            raise ConfigError(f"{_safe(where)}={_safe(value)[:80]!r}: {exc.strerror}") from None
        if found:
            if not place.is_dir():  # found here, not as NotADirectoryError after the runs are recorded
                raise ConfigError(f"{_safe(where)}={_safe(value)[:80]!r}: {_safe(str(place))} is a file, not a folder")
            break
    return path


def _names(values: Iterable[object], where: str) -> None:
    for i, v in enumerate(values):
        check_name(v, f"{where}[{i}]")


def _env(env: dict[str, Any], where: str) -> None:
    for k, v in env.items():
        check_env_name(k, where)
        check_text(v, f"{where}.{k}")


def _sbatch_value(value: Any, where: str) -> None:
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return
    text = check_text(value, where, limit=1024)
    if any(c.isspace() for c in text):
        raise ConfigError(f"{_safe(where)}={text[:60]!r}: an sbatch option value cannot contain whitespace")


def _run_env(container: ContainerSpec, spack: SpackSpec, where: str) -> None:
    """A container's runtime is one we know how to render; its image, options
    and the Spack names are text that reaches an argv or a quoted line."""
    if container.image and not container.runtime:
        raise ConfigError(
            f"{_safe(where)}.container.image is set but no runtime: set {_safe(where)}.container.runtime "
            f"to one of {', '.join(sorted(CONTAINER_RUNTIMES))}"
        )
    if container.runtime:
        if container.runtime not in CONTAINER_RUNTIMES:
            raise ConfigError(
                f"{_safe(where)}.container.runtime={str(container.runtime)[:60]!r} is not a container "
                f"runtime: use one of {', '.join(sorted(CONTAINER_RUNTIMES))}"
            )
        if not str(container.image).strip():
            raise ConfigError(f"{_safe(where)}.container.image is empty: name the image (a .sif file, an image name)")
        check_text(container.image, f"{where}.container.image", limit=1024)
        for i, option in enumerate(container.options):
            check_text(option, f"{where}.container.options[{i}]", limit=1024)
    if spack.env or spack.view or spack.lock:
        if bool(spack.env) == bool(spack.view):
            raise ConfigError(
                f"{_safe(where)}.spack: set exactly one of env (an environment) and view (a view's folder)"
            )
        for what in ("env", "view", "lock"):
            if getattr(spack, what):
                check_text(getattr(spack, what), f"{where}.spack.{what}", limit=1024)


def _clusters(value: str | None, where: str) -> None:
    """sbatch's -M: Slurm cluster names, comma-separated (`all` is one of them)."""
    for i, name in enumerate(str(value).split(",") if value else []):
        check_name(name, f"{where}[{i}]" if "," in str(value) else where)


def _check_cluster(cfg: RootConfig) -> None:
    c = cfg.cluster
    check_name(c.name, "cluster.name")
    check_name(c.job_template, "cluster.job_template")
    for what in ("account", "qos"):
        if getattr(c, what):
            check_name(getattr(c, what), f"cluster.{what}")
    _clusters(c.clusters, "cluster.clusters")
    for i, m in enumerate([*c.modules]):
        check_text(m, f"cluster.modules[{i}]", limit=200)
    _env(c.env, "cluster.env")
    for what in ("omp_proc_bind", "omp_places"):
        check_text(getattr(c, what), f"cluster.{what}", limit=200)
    if c.local_parallel_jobs < 1:
        raise ConfigError(f"cluster.local_parallel_jobs must be >= 1, got {c.local_parallel_jobs}")
    cores = os.cpu_count() or 1
    if capabilities(c.backend).local and c.local_parallel_jobs > cores:
        raise ConfigError(
            f"cluster.local_parallel_jobs={c.local_parallel_jobs} exceeds this machine's {cores} "
            "cores: timed jobs would share cores and spoil each other's timings"
        )
    if c.preflight_walltime_min < 1:
        raise ConfigError(f"cluster.preflight_walltime_min must be >= 1 (minutes), got {c.preflight_walltime_min}")
    if c.array_parallelism < 1:
        raise ConfigError(f"cluster.array_parallelism must be >= 1, got {c.array_parallelism}")
    for key, part in c.partitions.items():
        where = f"cluster.partitions.{key}"
        check_name(key, where)
        check_name(part.name or key, f"{where}.name")
        if part.name and part.name != key:  # runs, the ledger and sbatch's --partition all go by the key
            raise ConfigError(f"{where}.name={_safe(part.name)!r} must be the partition's key {key!r} (or left out)")
        if part.charging.model == "per_gpu" and not part.gpus:
            raise ConfigError(f"{where}.charging.model='per_gpu' bills GPUs, and partition {key} has none")
        check_partition(part, where)  # sizes, memory, walltime, ceilings: each within its bound
        for what in ("account", "qos"):
            if getattr(part, what):
                check_name(getattr(part, what), f"{where}.{what}")
        _clusters(part.clusters, f"{where}.clusters")
        if part.gpu_model:
            check_text(part.gpu_model, f"{where}.gpu_model", limit=100)
        for i, m in enumerate(part.modules):
            check_text(m, f"{where}.modules[{i}]", limit=200)
        _env(part.env, f"{where}.env")
        _run_env(part.container, part.spack, where)
        for k, v in part.sbatch_extra.items():
            if not SBATCH_KEY.fullmatch(str(k)) or len(str(k)) > 64:
                raise ConfigError(f"{_safe(where)}.sbatch_extra: {str(k)[:60]!r} is not an sbatch option name")
            _sbatch_value(v, f"{where}.sbatch_extra.{k}")
        check_sbatch_extra(part.sbatch_extra, f"{where}.sbatch_extra")
        check_sbatch_extra(part.profiler.sbatch_extra, f"{where}.profiler.sbatch_extra")


def _check_kernels(cfg: RootConfig) -> None:
    for kname, kernel in cfg.kernels.items():
        where = f"kernels.{kname}"
        check_name(kname, where)
        check_name(kernel.name, f"{where}.name")
        for iname, impl in kernel.impls.items():
            check_name(iname, f"{where}.impls")
            _names(impl.variants, f"{where}.impls.{iname}.variants")
            _names(impl.dtypes, f"{where}.impls.{iname}.dtypes")
            _names(impl.devices, f"{where}.impls.{iname}.devices")
            if bool(impl.argv) == (impl.script is not None):
                raise ConfigError(
                    f"{_safe(where)}.impls.{iname}: give argv (the program and its arguments) or "
                    "script (bash lines), one of them"
                )
            for i, a in enumerate(impl.argv):
                check_text(a, f"{where}.impls.{iname}.argv[{i}]")
            if impl.script is not None:
                check_text(impl.script, f"{where}.impls.{iname}.script", lines=True)
        byob.check_kernel(kname, kernel)  # figures, sanity patterns, cost expressions
        _env(kernel.env, f"{where}.env")
        for name, text in kernel.inputs.items():
            check_text(text, f"{where}.inputs.{name}", limit=TEMPLATE_MAX, lines=True)


def _argument(value: Any) -> bool:
    """A value `--key value` can carry: a number or a word (bool is an int), or a flat list of them
    (passed joined by commas, docs/contracts.md); never null or a mapping, which have no text."""
    if isinstance(value, str | int | float):
        return True
    if not isinstance(value, Sequence):  # (a str is one, returned above)
        return False
    return len(value) > 0 and all(isinstance(v, str | int | float) for v in value)


def _check_experiment(cfg: RootConfig) -> None:
    exp = cfg.experiment
    check_name(exp.name, "experiment.name")
    _run_env(exp.container, exp.spack, "experiment")
    for i, sweep in enumerate(exp.sweeps):
        where = f"experiment.sweeps.{i}"
        check_name(sweep.kernel, f"{where}.kernel")
        kernel = cfg.kernels.get(sweep.kernel)
        if kernel is not None:  # integers, 1e6 allowed, or none for a program without a size
            byob.sizes_of(kernel, sweep, where)
        elif sweep.n is not None:
            byob.sizes(sweep.n, where)
        for what in ("impls", "variants", "dtypes"):
            values = getattr(sweep, what)
            if not values:
                raise ConfigError(f"{_safe(where)}.{what} is empty: name at least one")
            _names(values, f"{where}.{what}")
        _names(sweep.partitions, f"{where}.partitions")
        for block, key, value in [
            *(("args", k, v) for k, v in sweep.args.items()),
            *(("grid", k, v) for k, vs in sweep.grid.items() for v in vs),
        ]:
            if not ARG_KEY.fullmatch(str(key)) or len(str(key)) > 64:
                raise ConfigError(f"{_safe(where)}: {str(key)[:60]!r} is not a program option name")
            if not _argument(value):
                raise ConfigError(
                    f"{_safe(where)}.{block}.{key}: {_safe(str(value))[:60]!r} is not a value an "
                    "argument can take: a number, a word, or a list of them (joined by commas)"
                )
            check_text(str(value), f"{where}.{key}", limit=1024)  # a list joined by commas: checked above
        for key, values in sweep.grid.items():
            if not values:
                raise ConfigError(f"{_safe(where)}.grid.{key} is empty: give at least one value")
    sweep_values.check(exp)  # as a reader sees them: no two that look the same, none infinite


def validate(cfg: RootConfig) -> None:
    """Refuse any value that could become shell syntax or leave its folder."""
    _check_cluster(cfg)
    _check_kernels(cfg)
    _check_experiment(cfg)
    s = cfg.campaign
    if s.name is not None:
        check_name(s.name, "campaign.name")
    else:
        check_name(f"{cfg.experiment.name}-{cfg.cluster.name}", "the campaign name <experiment>-<cluster>")
    if s.python is not None and s.python != sys.executable:  # this interpreter is trusted (and quoted)
        check_python(s.python)
    for what in ("workdir", "kernel_bin"):
        value = getattr(s, what)
        if value is not None:
            check_folder(value, f"campaign.{what}")
    if s.max_runs < 1:
        raise ConfigError(f"campaign.max_runs must be >= 1, got {s.max_runs}")
