"""Run environments as configured, rendered and identified: a container's
argv per runtime (the launcher outside, the container inside), a Spack
environment's activation in the job scripts, and what enters the run's key
(image digest, runtime version, spack.lock hash). Bad input is one line,
exit 2, and nothing recorded."""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
from pathlib import Path

import pytest

from campaign.api import dry_run
from campaign.config import load_config
from campaign.config.schema import ContainerSpec, SpackSpec
from campaign.planning import run_env
from campaign.planning.identity import with_identity
from campaign.planning.plan import plan
from tests.conftest import run_cli

BINDS = ("/scratch/runs",)
HOSTILE = "/images/a dir/it's;rm -rf.sif"
JOB = "/scratch/runs/c/a1"  # the folder a program starts in without a container
HOSTILE_JOB = "/scratch/runs/it's a;job\nfolder"


def _identity(
    container: ContainerSpec | None = None, spack: SpackSpec | None = None, gpus: bool = False
) -> list[tuple[str, str]]:
    return run_env.identity_items(container, spack, gpus, {})


def test_apptainer_passes_gpus_only_where_the_partition_has_them(tmp_path: Path) -> None:
    image = tmp_path / "img.sif"
    image.write_bytes(b"sif bytes")
    spec = ContainerSpec(runtime="apptainer", image=str(image), options=["--bind", "/projects"], gpus=True)
    on_gpu = run_env.wrap(_identity(spec, gpus=True), BINDS, [("OMP_NUM_THREADS", "1")], ["prog", "--n", "64"], JOB)
    assert on_gpu == [
        "apptainer",
        "exec",
        "--pwd",
        JOB,
        "--nv",
        "--bind",
        "/scratch/runs",
        "--bind",
        "/projects",
        str(image),
        "prog",
        "--n",
        "64",
    ]
    on_cpu = run_env.wrap(_identity(spec, gpus=False), BINDS, [], ["prog"], JOB)
    assert "--nv" not in on_cpu and on_cpu[-2:] == [str(image), "prog"]


def test_podman_names_cdi_gpus_and_passes_the_job_variables() -> None:
    spec = ContainerSpec(runtime="podman", image="localhost/bench:1", gpus=True)
    argv = run_env.wrap(
        _identity(spec, gpus=True), BINDS, [("OMP_NUM_THREADS", "1"), ("OMP_PLACES", "cores")], ["prog"], JOB
    )
    assert argv[:6] == ["podman", "run", "--workdir", JOB, "--rm", "--network=host"]
    assert argv[6:8] == ["--device", "nvidia.com/gpu=all"]
    assert "--volume" in argv and "/scratch/runs:/scratch/runs" in argv
    assert argv[argv.index("OMP_NUM_THREADS") - 1] == "--env" and argv[-2:] == ["localhost/bench:1", "prog"]


def test_charliecloud_separates_the_program_and_keeps_hostile_paths_one_word(tmp_path: Path) -> None:
    spec = ContainerSpec(runtime="charliecloud", image=HOSTILE)
    argv = run_env.wrap(_identity(spec), BINDS, [], ["/opt/prog", "--out", "/scratch/runs/x.csv"], HOSTILE_JOB)
    assert argv == [
        "ch-run",
        "--cd",
        HOSTILE_JOB,
        "--bind",
        "/scratch/runs:/scratch/runs",
        HOSTILE,
        "--",
        "/opt/prog",
        "--out",
        "/scratch/runs/x.csv",
    ]
    assert shlex.split(shlex.join(argv)) == argv  # rendered into a script, it reads back as the same words


def test_a_tool_driven_benchmark_keeps_its_driver_outside() -> None:
    """The driver (campaign.job.fom) runs on the host and starts the tool per n and repeat in the image."""
    spec = ContainerSpec(runtime="charliecloud", image="/img")
    driver = ["/venv/bin/python", "-m", "campaign.job.fom", json.dumps({"argv": ["mbw", "{n}"]}), "--n", "4"]
    argv = run_env.wrap(_identity(spec), BINDS, [], driver, JOB)
    assert argv[:3] == driver[:3] and argv[4:] == driver[4:]
    # the word at wrap_cwd is the folder the tool starts in, the driver's own (its preflight's or attempt's)
    assert json.loads(argv[3]) == {
        "argv": ["mbw", "{n}"],
        "wrap_cwd": 2,
        "wrap": ["ch-run", "--cd", ".", "--bind", "/scratch/runs:/scratch/runs", "/img", "--"],
    }


@pytest.mark.parametrize(
    ("runtime", "head"),
    [
        ("podman", ["podman", "run", "--workdir", "."]),
        ("apptainer", ["apptainer", "exec", "--pwd", "."]),
        ("singularity", ["singularity", "exec", "--pwd", "."]),
    ],
)
def test_every_runtime_starts_the_tool_in_the_drivers_folder(runtime: str, head: list[str]) -> None:
    """podman would start the tool in the image's WORKDIR: each runtime names the folder with its own option."""
    spec = ContainerSpec(runtime=runtime, image="localhost/bench")
    driver = ["/venv/bin/python", "-m", "campaign.job.fom", json.dumps({"argv": ["mbw"]}), "--n", "4"]
    wrapped = json.loads(run_env.wrap(_identity(spec), BINDS, [], driver, JOB)[3])
    assert wrapped["wrap"][: len(head)] == head and wrapped["wrap_cwd"] == len(head) - 1


def test_a_file_image_is_identified_by_its_sha256_and_a_tag_is_unpinned(tmp_path: Path) -> None:
    import hashlib

    image = tmp_path / "img.sif"
    image.write_bytes(b"one")
    facts = dict(_identity(ContainerSpec(runtime="apptainer", image=str(image))))
    assert facts["container.digest"] == "sha256:" + hashlib.sha256(b"one").hexdigest()
    pinned = "docker://nvcr.io/nvidia/pytorch@sha256:" + "ab" * 32
    assert (
        dict(_identity(ContainerSpec(runtime="apptainer", image=pinned)))["container.digest"] == "sha256:" + "ab" * 32
    )
    tag = dict(_identity(ContainerSpec(runtime="apptainer", image="docker://nvcr.io/nvidia/pytorch:24.07-py3")))
    assert tag["container.digest"] == "unpinned tag"


def test_a_folder_image_digest_follows_its_content(tmp_path: Path) -> None:
    (tmp_path / "img" / "bin").mkdir(parents=True)
    (tmp_path / "img" / "bin" / "prog").write_text("v1")
    spec = ContainerSpec(runtime="charliecloud", image=str(tmp_path / "img"))
    first = dict(_identity(spec))["container.digest"]
    assert first == dict(_identity(spec))["container.digest"]
    (tmp_path / "img" / "bin" / "prog").write_text("v2")
    assert dict(_identity(spec))["container.digest"] != first


def _keys(overrides: list[str]) -> set[str]:
    cfg = load_config(overrides)
    return {r.key for r in with_identity(cfg, plan(cfg).runs)}


def test_the_image_and_the_spack_lock_are_part_of_the_run_key(tmp_path: Path) -> None:
    image, lock = tmp_path / "img.sif", tmp_path / "env" / "spack.lock"
    image.write_bytes(b"one")
    lock.parent.mkdir()
    lock.write_text('{"v": 1}')
    base = ["experiment=byob_mbw"]
    plain = _keys(base)
    boxed = [*base, f"experiment.container={{runtime:apptainer,image:'{image}'}}"]
    spacked = [*base, f"experiment.spack={{env:'{lock.parent}'}}"]
    first, spack_first = _keys(boxed), _keys(spacked)
    assert len({frozenset(plain), frozenset(first), frozenset(spack_first)}) == 3
    image.write_bytes(b"two")
    lock.write_text('{"v": 2}')
    assert _keys(boxed).isdisjoint(first) and _keys(spacked).isdisjoint(spack_first)


def test_spack_activation_is_rendered_in_every_job_script(tmp_path: Path) -> None:
    """Arrays, build and preflight all run in the environment; its name is quoted."""
    # two runs: a partition's one run is its own check, with no preflight job
    report = dry_run(
        [
            "cluster=localslurm",
            f"campaign.workdir={tmp_path / 'runs'}",
            "experiment=byob_mbw",
            "experiment.sweeps.0.threads=[1,2]",
            "experiment.spack.env='bench env;x'",
            "experiment.spack.lock=/nonexistent/spack.lock",
        ],
        tmp_path / "ledger.sqlite",
    )
    assert len(report.scripts) >= 2  # the preflight and the array
    for script in report.scripts:
        assert "campaign_spack=$(spack env activate --sh 'bench env;x') || " in script
        assert 'eval "$campaign_spack"' in script
    assert not (tmp_path / "ledger.sqlite").exists()


def test_a_spack_view_puts_its_bin_and_lib_first() -> None:
    lines = run_env.spack_lines(_identity(spack=SpackSpec(view="/sw/views/bench")))
    assert lines[0] == 'export PATH=/sw/views/bench/bin:"$PATH"'
    assert lines[1].startswith("export LD_LIBRARY_PATH=/sw/views/bench/lib:/sw/views/bench/lib64")


def _no_campaign(ledger: Path) -> bool:
    if not ledger.exists():
        return True
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT count(*) FROM campaign").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "experiment.container={runtime:docker,image:x}",
            "experiment.container.runtime='docker' is not a container runtime",
        ),
        ("experiment.container.image=/img.sif", "experiment.container.image is set but no runtime"),
        (
            "experiment.container={runtime:charliecloud,image:/nonexistent/image}",
            "container image /nonexistent/image not found (charliecloud)",
        ),
        ("experiment.spack={env:bench,view:/v}", "experiment.spack: set exactly one of env"),
    ],
)
def test_bad_run_environments_are_one_line_and_record_nothing(tmp_path: Path, override: str, message: str) -> None:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=byob_mbw", override)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr
    assert _no_campaign(ledger)


def test_a_runtime_missing_where_the_jobs_run_is_refused(tmp_path: Path) -> None:
    """The local backend runs jobs here: a runtime not installed here is exit 2 at submit (Apptainer is not)."""
    import shutil

    if shutil.which("apptainer"):
        pytest.skip("apptainer is installed here")
    image = tmp_path / "bench.sif"
    image.write_bytes(b"not read: the runtime is refused first")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=byob_mbw",
        f"experiment.container={{runtime:apptainer,image:'{image}'}}",
    )
    assert (
        proc.returncode == 2
        and "container runtime apptainer (apptainer) is not installed on this machine" in proc.stderr
    )
    assert _no_campaign(ledger)


def _failing_ch_run(tmp_path: Path) -> dict[str, str]:
    """A `ch-run` whose `--version` fails as Charliecloud's does without $USER: its error line, with
    its process id, on stderr, exit 1; and a folder image. The environment that finds it first."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ch-run"
    fake.write_text('#!/bin/sh\necho "ch-run[$$]: error: \\$USER not set (ch-run.c:122)" >&2\nexit 1\n')
    fake.chmod(0o755)
    (tmp_path / "image" / "etc").mkdir(parents=True)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_runtime_whose_version_fails_is_no_version_and_refused_where_the_jobs_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ch-run --version` failing here ($USER unset) was recorded as the runtime's version, error line
    and process id included (`charliecloud ch-run[30087]: error: ...`): every submit of the same
    campaign was new runs that failed the same way. The failed probe is one fixed value, and where the
    jobs run here (the local backend) the submit is refused in one line, exit 2, nothing recorded."""
    env = _failing_ch_run(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    spec = ContainerSpec(runtime="charliecloud", image=str(tmp_path / "image"))
    first, second = (dict(_identity(spec))["container.runtime_version"] for _ in range(2))
    assert first == second and "error" not in first and "ch-run[" not in first, (first, second)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=byob_mbw",
        f"experiment.container={{runtime:charliecloud,image:'{tmp_path / 'image'}'}}",
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "ch-run --version" in proc.stderr and "fails" in proc.stderr, proc.stderr
    assert _no_campaign(ledger)


PB_CONTRACT = "name: pb\nimpls:\n  c: {argv: [/opt/pb/pb], variants: [plain]}\n"
PB_TOOL = """name: pbtool
driven_by: tool
impls:
  img: {argv: [/opt/pb/pb, "{n}"], variants: [plain]}
figures:
  - {name: rate, regex: 'rate (?P<value>[0-9.]+)', unit: items/s, higher_is_better: true}
"""


def _pb_sweep(kernel: str, impl: str, threads: str) -> str:
    return (
        f"name: {kernel}_sweep\ncheck: false\nrepeats: 1\nwarmup: 0\nwalltime_min: 5\nsweeps:\n"
        f"  - {{kernel: {kernel}, impls: [{impl}], variants: [plain], threads: {threads}, n: [8]}}\n"
    )


@pytest.mark.slurm
def test_a_runtime_missing_on_the_node_is_the_subject_of_the_failure(slurm_cluster: object, tmp_path: Path) -> None:
    """A runtime missing on the node (here Apptainer) was blamed on the program ('/opt/pb/pb exited
    with 127 ...: cannot start podman'). The runtime is the subject of the line, with the node and
    partition; the exit status stays 127 and the states as they were: a contract program's run FAILED,
    a tool-driven one's FAILED, a preflight's check PREFLIGHT_FAILED."""
    if shutil.which("apptainer"):
        pytest.skip("apptainer is installed here, on the test Slurm's nodes")
    image = tmp_path / "pb.sif"
    image.write_bytes(b"never read: the node has no runtime")
    from tests.byob.declared import declare
    from tests.slurm.helpers import _all_finished, _sync_until

    env = declare(
        tmp_path / "decl",
        {"pb": PB_CONTRACT, "pbtool": PB_TOOL},
        {
            "pb_sweep": _pb_sweep("pb", "c", "[1]"),
            "pbtool_sweep": _pb_sweep("pbtool", "img", "[1]"),
            "pb2_sweep": _pb_sweep("pb", "c", "[1, 2]").replace("pb_sweep", "pb2_sweep"),
        },
        {},
    )
    ledger = tmp_path / "ledger.sqlite"
    for experiment in ("pb_sweep", "pbtool_sweep", "pb2_sweep"):
        proc = run_cli(
            "--ledger",
            str(ledger),
            "submit",
            "cluster=localslurm",
            f"experiment={experiment}",
            f"campaign.workdir={tmp_path / 'runs'}",
            f"campaign.name={experiment}",
            f"experiment.container={{runtime:apptainer,image:'{image}'}}",
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    from campaign.ledger import Ledger

    led = Ledger(ledger, create=False)
    said = {}
    for experiment, state in (("pb_sweep", "FAILED"), ("pbtool_sweep", "FAILED"), ("pb2_sweep", "PREFLIGHT_FAILED")):
        done = _sync_until(led, experiment, _all_finished)
        assert set(done.counts) == {state}, (experiment, done.counts)
        shown = run_cli("--ledger", str(ledger), "status", experiment, env=env)
        said[experiment] = shown.stdout + shown.stderr
    import socket

    # the node by its host name (the job side knows no scheduler; on the test Slurm, NodeName localhost)
    missing = f"apptainer: not found on node {socket.gethostname()} (the container runtime of partition cpu)"
    for experiment, text in said.items():
        assert missing in text, (experiment, text)
        assert "cannot start apptainer" not in text and "/opt/pb/pb exited" not in text, (experiment, text)
    assert "exit 127: campaign: apptainer: not found" in said["pb_sweep"]
