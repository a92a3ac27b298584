"""How a set of jobs was made: code version, config, host, package versions,
and the toolchain facts (`environment`) that `campaign compare` diffs.

The environment is read on the submit host: for the local backend that is
the node itself; on Slurm the compilers and binaries are the ones the jobs
use (built on the shared filesystem), while the CPU/GPU model and driver
describe the login node. The job side's GPU clocks and throttle reasons
come with the CUDA rows themselves (kernels/torch/gpu_state.py) and join the
provenance that `compare` diffs through campaign.results.gpu_state.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata, util
from pathlib import Path
from typing import Any

from campaign.config.load import repo_root
from campaign.planning.programs import file_sha256

PACKAGES = ("campaign", "submitit", "hydra-core", "omegaconf", "sqlalchemy", "pandas", "torch", "numpy")


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository campaign runs from, or (None, None)."""
    root = str(repo_root())
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(dirty)


def package_versions() -> dict[str, Any]:
    versions: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def config_hash(yaml_text: str) -> str:
    return hashlib.sha256(yaml_text.encode()).hexdigest()


def collect(yaml_text: str) -> dict[str, Any]:
    commit, dirty = git_state()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "config_hash": config_hash(yaml_text),
        "config_yaml": yaml_text,
        "hostname": socket.gethostname(),
        "packages": package_versions(),
    }


# Distributions whose versions say which CUDA libraries torch loads.
CUDA_PACKAGES = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cublas", "nvidia-cublas-cu12",
                 "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "triton")
_TIMEOUT_S = 10


def _first_line(argv: list[str]) -> str | None:
    """First output line of a version command, or None if it is absent or fails."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


def _torch_cuda() -> str | None:
    """torch's CUDA version from torch/version.py, without importing torch (seconds)."""
    spec = util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = (Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text()
    except OSError:
        return None
    found = re.search(r"^cuda\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _sha256(path: str) -> str | None:
    digest = file_sha256(path)
    return digest[:16] if digest else None


def _program_files(argvs: Iterable[tuple[str, ...]], root: str) -> set[str]:
    """The files that are the kernels: a binary named by absolute path, or the
    source of a `python -m kernels.torch.X` module (not the interpreter)."""
    files = set()
    for argv in argvs:
        if "-m" in argv[:-1]:
            module = argv[argv.index("-m") + 1]
            path = os.path.join(root, *module.split(".")) + ".py"
        else:
            path = argv[0]
        if os.path.isabs(path) and os.path.isfile(path):
            files.add(path)
    return files


def environment(cc: str, fc: str, programs: Iterable[tuple[str, ...]]) -> dict[str, Any]:
    """Toolchain facts: compiler versions, kernel binary hashes (sha256, 16
    hex digits) of the programs in `programs` (argv tuples), CUDA library
    versions, CPU and GPU model and driver."""
    libraries: dict[str, Any] = {"torch_cuda": _torch_cuda()}
    for name in CUDA_PACKAGES:
        try:
            libraries[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    gpu = _first_line(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    gpu_name, _, driver = (gpu or "").partition(",")
    root = str(repo_root())
    binaries = {os.path.relpath(p, root) if p.startswith(root) else p: _sha256(p)
                for p in sorted(_program_files(programs, root))}
    return {
        "compilers": {"cc": _first_line([cc, "--version"]), "fc": _first_line([fc, "--version"])},
        "libraries": libraries,
        "binaries": binaries,
        "host": {"cpu_model": _cpu_model(), "gpu_model": gpu_name.strip() or None},
        "driver": driver.strip() or None,
    }
