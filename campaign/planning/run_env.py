"""The run environment a program starts in: a container image, a Spack
environment, or both (docs/sites.md#containers).

An experiment's `container:`/`spack:` wins over its partition's. What the
environment is (runtime, image, options, GPUs; the Spack environment or view)
and what it contained when the campaign was submitted (the image's digest,
the runtime's version, spack.lock's hash) go into the run's identity
(campaign.planning.identity), so a campaign run in another image is a new set
of runs and `compare` names the digest that changed. The job side gets the
same facts back from the identity: reruns start in the image the run was
planned with, not in whatever the config says today.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from campaign.backends.capabilities import capabilities
from campaign.config.load import repo_root
from campaign.config.schema import CONTAINER_RUNTIMES, ContainerSpec, ExperimentSpec, PartitionSpec, SpackSpec
from campaign.job.start_failure import RUNTIME_ENV

# image references apptainer/singularity pull themselves (no file to hash; a digest only when pinned)
_REMOTE = ("docker://", "docker-daemon://", "oras://", "library://", "shub://", "https://", "http://")
ABSENT = "absent"
NOT_HERE = "not installed here"
# `<runtime> --version` exited non-zero here (ch-run without $USER): its error line, which may hold a
# process id, would make every submit's key new; one fixed value instead
VERSION_FAILED = "--version fails here"
FOM_DRIVER = "campaign.job.fom"  # a tool-driven benchmark's driver (campaign.planning.byob)
# each runtime's option naming the folder its program starts in
WORKDIR_OPTION = {"apptainer": "--pwd", "singularity": "--pwd", "podman": "--workdir", "charliecloud": "--cd"}


def resolve(exp: ExperimentSpec, part: PartitionSpec) -> tuple[ContainerSpec | None, SpackSpec | None]:
    """The experiment's own container/Spack environment, else the partition's (None: neither has one)."""
    container = next((c for c in (exp.container, part.container) if c.runtime), None)
    spack = next((s for s in (exp.spack, part.spack) if s.env or s.view), None)
    return container, spack


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _sha256_tree(root: Path) -> str:
    """A folder image (charliecloud): every entry's relative path, type and
    mode, a link's target and a file's content, in a fixed order."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            digest.update(f"{rel}\0{st.st_mode:o}\0".encode())
            if path.is_symlink():
                digest.update(os.readlink(path).encode() + b"\0")
            elif path.is_file():
                digest.update(_sha256_file(path).encode() + b"\0")
    return "sha256:" + digest.hexdigest()


def image_digest(runtime: str, image: str) -> str:
    """The image's content digest, ABSENT when it is not there. A registry
    reference counts only when pinned by @sha256:, as the registry resolves a
    tag to whatever it holds that day."""
    if image.startswith(_REMOTE):
        return image.split("@", 1)[1] if "@sha256:" in image else "unpinned tag"
    if runtime == "podman":
        if shutil.which("podman") is None:
            return NOT_HERE
        proc = subprocess.run(
            ["podman", "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return "sha256:" + proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else ABSENT
    path = Path(image)
    if path.is_dir():
        return _sha256_tree(path)
    return _sha256_file(path) if path.is_file() else ABSENT


def runtime_version(runtime: str) -> str:
    """`<runtime> --version` here, its first line (charliecloud prints it on stderr)."""
    exe = shutil.which(CONTAINER_RUNTIMES[runtime])
    if exe is None:
        return NOT_HERE
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return NOT_HERE
    if proc.returncode != 0:
        return VERSION_FAILED
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    return f"{runtime} {text[0]}" if text and not text[0].startswith(runtime) else (text[0] if text else "unknown")


def lock_file(spack: SpackSpec) -> Path | None:
    """The spack.lock that identifies the environment: the configured one, or the env folder's."""
    if spack.lock:
        return Path(spack.lock)
    if spack.env and os.sep in spack.env:
        return Path(spack.env) / "spack.lock"
    return None


def identity_items(
    container: ContainerSpec | None, spack: SpackSpec | None, has_gpus: bool, cache: dict[str, str]
) -> list[tuple[str, str]]:
    """The run environment as identity items: what to render, and what it held."""
    items: list[tuple[str, str]] = []
    if container is not None:
        gpus = container.gpus and has_gpus
        items += [
            ("container.runtime", container.runtime),
            ("container.image", container.image),
            ("container.options", json.dumps(list(container.options))),
            ("container.gpus", str(gpus).lower()),
        ]
        items += [("container.python", container.python)] if container.python else []
        key = f"image:{container.runtime}:{container.image}"
        if key not in cache:
            cache[key] = image_digest(container.runtime, container.image)
        if f"rt:{container.runtime}" not in cache:
            cache[f"rt:{container.runtime}"] = runtime_version(container.runtime)
        items += [("container.digest", cache[key]), ("container.runtime_version", cache[f"rt:{container.runtime}"])]
    if spack is not None:
        items += [("spack.env", spack.env)] if spack.env else [("spack.view", spack.view or "")]
        lock = lock_file(spack)
        if lock is not None:
            items.append(("spack.lock", _sha256_file(lock) if lock.is_file() else ABSENT))
    return items


def refusal(identity: Sequence[tuple[str, str]], backend: str) -> str | None:
    """Why a submit (not a dry run) must not send this run, or None: a missing
    image or spack.lock anywhere; a runtime (or Spack) not installed here
    where the jobs run here. On Slurm the node tells: the preflight fails."""
    facts = dict(identity)
    image = facts.get("container.image")
    if image is not None and facts.get("container.digest") == ABSENT:
        return f"container image {image} not found ({facts['container.runtime']}): build or pull it first"
    if facts.get("spack.lock") == ABSENT:
        return "spack.lock of the run's Spack environment not found: concretize it (spack concretize) or set spack.lock"
    if not capabilities(backend).local:
        return None
    runtime = facts.get("container.runtime")
    if runtime is not None and facts.get("container.runtime_version") == NOT_HERE:
        return f"container runtime {runtime} ({CONTAINER_RUNTIMES[runtime]}) is not installed on this machine"
    if runtime is not None and facts.get("container.runtime_version") == VERSION_FAILED:
        exe = CONTAINER_RUNTIMES[runtime]
        return (
            f"container runtime {runtime}: `{exe} --version` fails on this machine, where the jobs run, so "
            f"they would fail too: run it to see why (Charliecloud's ch-run needs $USER set)"
        )
    if "spack.env" in facts or "spack.view" in facts:
        return (
            "the local backend runs no job script, so no Spack environment is activated there: "
            "run Spack environments on a Slurm cluster"
        )
    return None


def run_env_facts(identity: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The run environment's identity items alone (a build's key holds them: a program is built in its image)."""
    return {name: value for name, value in identity if name.startswith(("container.", "spack."))}


def containerised(identity: Sequence[tuple[str, str]]) -> bool:
    return any(name == "container.runtime" for name, _ in identity)


@functools.lru_cache(maxsize=1024)
def _container_facts(identity: tuple[tuple[str, str], ...]) -> dict[str, str] | None:
    """The identity as a dict when it names a container (runs share a few identities: 100,000 runs
    are wrapped per submit, and a dict per run cost more than the rest of the wrapping)."""
    facts = dict(identity)
    return facts if "container.runtime" in facts else None


def container_head(
    identity: Sequence[tuple[str, str]],
    binds: Sequence[str],
    env: Sequence[tuple[str, str]],
    set_env: dict[str, str] | None = None,
    workdir: str | None = None,
) -> list[str]:
    """The words in front of a program that start it in the run's container
    (none without one): the runtime, the folder the program starts in
    (`workdir`, right after the runtime's command words), its GPU flags, the
    job folders bound at their own paths, variables set inside (`set_env`),
    the configured options, the image."""
    set_env = set_env or {}
    facts = _container_facts(tuple(identity))
    if facts is None:
        return []
    runtime = facts["container.runtime"]
    image, options = facts["container.image"], list(json.loads(facts.get("container.options", "[]")))
    gpus = facts.get("container.gpus") == "true"
    cd = [WORKDIR_OPTION[runtime], workdir] if workdir is not None else []
    if runtime in ("apptainer", "singularity"):
        head = [runtime, "exec", *cd, *(["--nv"] if gpus else [])]
        for folder in binds:
            head += ["--bind", folder]
        for name, value in set_env.items():
            head += ["--env", f"{name}={value}"]
        return [*head, *options, image]
    if runtime == "podman":
        # podman passes no variable of its own accord: the job environment's names, valued from the job's
        head = ["podman", "run", *cd, "--rm", "--network=host", *(["--device", "nvidia.com/gpu=all"] if gpus else [])]
        for folder in binds:
            head += ["--volume", f"{folder}:{folder}"]
        for name, _ in env:
            head += ["--env", name]
        for name, value in set_env.items():
            head += ["--env", f"{name}={value}"]
        return [*head, *options, image]
    head = ["ch-run", *cd]  # charliecloud: GPU libraries go into the image (ch-fromhost --nvidia), no run flag
    for folder in binds:
        head += ["--bind", f"{folder}:{folder}"]
    for name, value in set_env.items():
        head += [f"--set-env={name}={value}"]
    return [*head, *options, image, "--"]


def wrap(
    identity: Sequence[tuple[str, str]],
    binds: Sequence[str],
    env: Sequence[tuple[str, str]],
    argv: Sequence[str],
    workdir: str,
) -> list[str]:
    """The program's argv inside the run's container (unchanged without one),
    started in `workdir`, the folder it starts in without one (ch-run would
    start it in /, podman in the image's WORKDIR). A tool-driven benchmark's
    driver (campaign.job.fom) stays outside: the tool it starts per n and
    repeat goes in (its spec's `wrap`), in the driver's folder. A launcher
    goes in front of the whole, one container per rank, as the sites run MPI
    programs in containers (campaign.backends.slurm_launch): each rank starts
    in the launcher's folder, `workdir` too."""
    head = container_head(identity, binds, env, workdir=workdir)
    if not head:
        return list(argv)
    if len(argv) > 3 and tuple(argv[1:3]) == ("-m", FOM_DRIVER):
        spec = json.loads(argv[3])
        # the tool starts in the driver's folder, where its inputs are and its file figures are read, as
        # it does outside a container (ch-run starts it in /, podman in the image's WORKDIR): the word at
        # `wrap_cwd` is that folder, which only the driver knows (a preflight's or an attempt's)
        spec["wrap"] = container_head(identity, binds, env, workdir=".")
        spec["wrap_cwd"] = spec["wrap"].index(".")
        return [*argv[:3], json.dumps(spec, sort_keys=True, separators=(",", ":")), *argv[4:]]
    python = (_container_facts(tuple(identity)) or {}).get("container.python")
    if python and argv and Path(argv[0]).name.startswith("python"):
        # the image's interpreter runs the repository's module (a torch kernel), bound at its own path
        root = str(repo_root())
        return [*container_head(identity, [*binds, root], env, {"PYTHONPATH": root}, workdir), python, *argv[1:]]
    return [*head, *argv]


def runtime_env(identity: Sequence[tuple[str, str]], partition: str) -> tuple[tuple[str, str], ...]:
    """The variable that tells the job side which command is the run's container runtime and on
    which partition (none without a container): a runtime missing on a node is then named as the
    subject of the failure, not the program it would have started (campaign.job.start_failure).
    Set beside the job's own variables, outside the container, and no part of the run's key."""
    facts = _container_facts(tuple(identity))
    if facts is None:
        return ()
    return ((RUNTIME_ENV, f"{CONTAINER_RUNTIMES[facts['container.runtime']]}:{partition}"),)


def spack_lines(identity: Sequence[tuple[str, str]]) -> list[str]:
    """Shell lines of the job script that activate the run's Spack environment
    (after the modules), every value quoted."""
    facts = dict(identity)
    if "spack.env" in facts:
        # `--sh` prints the activation for a plain shell (no `. setup-env.sh`, only `spack` on PATH);
        # a failing activation ends the job, as a failing module line does, before anything runs outside it
        name = shlex.quote(facts["spack.env"])
        return [
            f"campaign_spack=$(spack env activate --sh {name}) || "
            f"{{ printf 'campaign: spack env activate failed: %s\\n' {name} >&2; exit 1; }}",
            'eval "$campaign_spack"',
        ]
    if "spack.view" in facts:
        view = shlex.quote(facts["spack.view"])
        return [
            f'export PATH={view}/bin:"$PATH"',
            f"export LD_LIBRARY_PATH={view}/lib:{view}/lib64${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
        ]
    return []
