"""A real campaign in a real container: mbw from an image folder made here
from this machine's files, run by Charliecloud (the distribution's
charliecloud-runtime), on this machine and on the test Slurm. Changing the
image changes the runs' keys, and `compare` names the digest that changed."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign import api
from campaign.commands.chain import kernel_sources
from campaign.config.load import repo_root
from campaign.ledger import Ledger
from tests.byob.declared import declare
from tests.conftest import export_records, run_cli
from tests.containers.on_slurm import mbw_on_slurm
from tests.fixtures.container_image import folder_image, require_charliecloud, toolchain_image
from tests.slurm.helpers import _all_finished, _name, _overrides, _sync_until
from tests.slurm_cluster import SlurmCluster


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_charliecloud()
    if shutil.which("mbw") is None:
        pytest.skip("mbw not installed (make setup installs it)")
    os.environ.setdefault("USER", getpass.getuser())  # ch-run refuses to start without $USER
    # a path with a space and a `;`: one word everywhere it goes (argv, JSON, Hydra, show)
    yield folder_image(tmp_path_factory.mktemp("image") / "mbw image;v1", ["mbw"])


def _container(image: Path) -> str:
    return f"experiment.container={{runtime:charliecloud,image:'{image}'}}"


def test_a_campaign_runs_in_the_image_and_a_new_image_is_new_runs(image: Path, tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.sqlite"
    base = ["--ledger", str(ledger_path), "submit", "experiment=byob_mbw", f"campaign.workdir={tmp_path / 'runs'}"]
    first = run_cli(*base, "campaign.name=img-a", _container(image))
    assert first.returncode == 0, first.stderr
    assert "COMPLETED 1" in first.stdout
    ledger = Ledger(ledger_path, create=False)
    rows = export_records(ledger, "img-a")
    assert {r["n"] for r in rows} == {1, 4} and all(r["value"] > 0 for r in rows)
    # the tool ran in the image: the job's argv names ch-run and the image
    job = rows[0]["job_id"]
    shown = run_cli("--ledger", str(ledger_path), "show", str(job))
    assert shown.returncode == 0 and "container.runtime: charliecloud" in shown.stdout
    assert f'"ch-run","--cd",".","--bind","{tmp_path / "runs"}:{tmp_path / "runs"}","{image}","--"' in shown.stdout
    old = next(line for line in shown.stdout.splitlines() if "container.digest:" in line).split()[-1]

    (image / "etc" / "motd").write_text("another image\n")  # the image changes under the same path
    again = run_cli(*base, "campaign.name=img-a", _container(image))
    assert again.returncode == 0, again.stderr
    assert "1 new run(s): container.digest" in again.stdout and "COMPLETED 2" in again.stdout
    second = run_cli(*base, "campaign.name=img-b", _container(image))
    assert second.returncode == 0, second.stderr
    diff = run_cli("--ledger", str(ledger_path), "compare", "img-a", "img-b", "--format", "json")
    assert diff.returncode == 0, diff.stderr
    changed = {d["key"]: d for d in json.loads(diff.stdout)["provenance"]}
    digest = changed["environment.run_env.local.container.digest"]
    assert digest["category"] == "run environment" and old in digest["base"] and old not in digest["new"]


def test_native_programs_are_built_and_run_in_the_image(image: Path, tmp_path: Path) -> None:
    """The build job runs make in the image (here one whose /usr is the host's), into a folder keyed
    by the image; the preflight and the run start the program built there, in the image."""
    root = toolchain_image(tmp_path / "toolchain", [str(kernel_sources())])
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=forward_scaling",
        f"campaign.workdir={tmp_path / 'runs'}",
        "experiment.sweeps.0.impls=[c]",
        "experiment.sweeps.0.variants=[naive]",
        "experiment.sweeps.0.threads=[1]",
        "experiment.sweeps.0.n=[64,128]",
        "experiment.repeats=2",
        f"experiment.container={{runtime:charliecloud,image:'{root}',options:[--bind,'/usr:/usr']}}",
    )
    assert proc.returncode == 0, proc.stderr
    assert "COMPLETED 1" in proc.stdout
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "runs" / "builds").glob("*/build.json")]
    assert record["ok"] and record["make"][0] == "ch-run" and str(root) in record["make"]
    rows = export_records(Ledger(ledger, create=False), "forward_scaling-local")
    assert {r["n"] for r in rows} == {64, 128} and all(r["impl"] == "c" for r in rows)


def test_an_image_without_the_program_fails_the_preflight(image: Path, tmp_path: Path) -> None:
    """Only the node can tell that the program is not in the image: PREFLIGHT_FAILED, the run never starts."""
    empty = folder_image(tmp_path / "empty", [])
    # two runs: a partition's one run is its own check, with no preflight job
    proc = run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        "experiment=byob_mbw",
        "experiment.sweeps.0.threads=[1,2]",
        f"campaign.workdir={tmp_path / 'runs'}",
        _container(empty),
    )
    assert proc.returncode == 3, proc.stderr
    assert "PREFLIGHT_FAILED" in proc.stdout and "mbw" in proc.stdout


@pytest.mark.slurm
def test_a_campaign_runs_in_the_image_on_slurm(image: Path, slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    shown = mbw_on_slurm(tmp_path, "ctr", _container(image))
    assert '"wrap":["ch-run"' in shown, shown
    assert "container.runtime_version: charliecloud" in shown


@pytest.mark.slurm
def test_each_mpi_rank_starts_its_own_container_behind_srun(
    image: Path, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """mpi_allreduce over 2 nodes: srun --mpi=pmix outside, the rank shim, then ch-run per rank (Apptainer's
    hybrid model, docs/sites.md#containers); the image binds the host's /usr, so its Open MPI is the host's."""
    kernel_bin = repo_root() / "kernels" / "build"
    assert (kernel_bin / "mpi" / "mpi_allreduce").is_file(), "make kernels builds the MPI kernel"
    root = toolchain_image(tmp_path / "toolchain", [str(kernel_bin)])
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("ctr-mpi")
    container = (
        f"experiment.container={{runtime:charliecloud,image:'{root}',"
        f"options:[--bind,'/usr:/usr',--bind,'{kernel_bin}:{kernel_bin}']}}"
    )
    # the build job builds the MPI program in the image: Debian's mpicc is a link through /etc/alternatives,
    # which the image does not have, so the wrapper is named by its own file
    rep = api.submit(
        _overrides(
            tmp_path,
            name,
            "experiment=mpi_scaling",
            "experiment.sweeps.0.nodes=[2]",
            "experiment.sweeps.0.ranks_per_node=[1]",
            "experiment.sweeps.0.variants=[strong]",
            "cluster.build.mpicc=mpicc.openmpi",
            container,
        ),
        ledger,
    )
    assert rep.submitted, rep
    done = _sync_until(ledger, name, _all_finished)
    assert set(done.counts) == {"COMPLETED"}, done.counts
    rows = export_records(ledger, name)
    assert rows and all(r["nodes"] == 2 and r["ranks"] == 2 for r in rows)
    shown = run_cli("--ledger", str(ledger.path), "show", str(rows[0]["job_id"]))
    launcher, _, rest = next(line for line in shown.stdout.splitlines() if "srun --mpi=pmix" in line).partition(" -- ")
    folder = rest.split(" --out ")[1].rsplit("/", 1)[0]  # each rank starts in the attempt's folder, the launcher's
    assert "ch-run" not in launcher
    assert rest.startswith(f"ch-run --cd {folder} --bind {tmp_path / 'runs'}:{tmp_path / 'runs'} "), rest
    assert "ranks: 2 on 2 node(s)" in shown.stdout


CP_KERNEL = """\
name: cpbench
driven_by: tool
impls:
  img:
    argv: ["/usr/bin/cp", "in.txt", "out.txt"]
    variants: [plain]
inputs:
  in.txt: "value: {n}"
figures:
  - name: copied
    regex: 'value: (?P<value>[0-9]+)'
    source: file:out.txt
    unit: items
    higher_is_better: true
"""
CP_SWEEP = """\
name: cp_sweep
repeats: 2
warmup: 0
check: false
walltime_min: 5
sweeps:
  - kernel: cpbench
    impls: [img]
    variants: [plain]
    threads: [1]
    n: [3, 5]
"""


def test_a_tool_in_the_image_starts_in_its_job_folder(image: Path, tmp_path: Path) -> None:
    """ch-run starts its program in / unless told otherwise (podman in the image's WORKDIR): a tool in
    an image read no `inputs:` file and wrote its `file:` figure where nothing looked. It starts in its
    job folder, as a tool without a container does: cp reads the rendered in.txt and writes out.txt there."""
    root = folder_image(tmp_path / "cp image", ["cp"])
    env = declare(tmp_path / "decl", {"cpbench": CP_KERNEL}, {"cp_sweep": CP_SWEEP}, {})
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=cp_sweep",
        f"campaign.workdir={tmp_path / 'runs'}",
        _container(root),
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = export_records(Ledger(ledger, create=False), "cp_sweep-local")
    assert sorted((r["n"], r["value"]) for r in rows) == [(3, 3), (3, 3), (5, 5), (5, 5)]


# a contract program that keeps a scratch file where it starts, as many do (a checkpoint, per-rank timings)
CONTRACT_PROGRAM = """#!/usr/bin/python3
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--n"); p.add_argument("--threads", default="1"); p.add_argument("--repeats", default="1")
p.add_argument("--out")
a, _ = p.parse_known_args()
with open("scratch.txt", "w") as f:
    f.write(os.getcwd())
with open(a.out, "w") as f:
    f.write("kernel,impl,variant,device,dtype,n,threads,repeat,time_s\\n")
    for n in a.n.split(","):
        for r in range(int(a.repeats)):
            f.write(f"scratchy,c,plain,cpu,fp32,{n},{a.threads},{r},{1e-6 * int(n)}\\n")
"""
# the program is the image's alone: /opt/scratchy is no file on this machine
CONTRACT_KERNEL = "name: scratchy\nimpls:\n  c: {argv: [/opt/scratchy], variants: [plain]}\n"
CONTRACT_SWEEP = """name: scratchy_sweep
check: false
repeats: 2
warmup: 0
sweeps:
  - {kernel: scratchy, impls: [c], variants: [plain], threads: [1, 2], n: [10, 20]}
"""


def _contract_submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """submit of the scratchy sweep, its program in an image whose /usr is the host's."""
    require_charliecloud()
    os.environ.setdefault("USER", getpass.getuser())
    root = toolchain_image(tmp_path / "image", [])
    (root / "opt").mkdir()
    (root / "opt" / "scratchy").write_text(CONTRACT_PROGRAM)
    (root / "opt" / "scratchy").chmod(0o755)
    env = declare(tmp_path / "decl", {"scratchy": CONTRACT_KERNEL}, {"scratchy_sweep": CONTRACT_SWEEP}, {})
    return run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        *args,
        "experiment=scratchy_sweep",
        f"campaign.workdir={tmp_path / 'runs'}",
        f"experiment.container={{runtime:charliecloud,image:'{root}',options:[--bind,'/usr:/usr']}}",
        env=env,
    )


def test_a_contract_program_only_in_the_image_is_no_unbuilt_kernel(tmp_path: Path) -> None:
    """A program named by its path in the image was refused as 'kernel program not built: /opt/scratchy
    (run `make kernels`)': the check before the ledger opens looked for it on this machine."""
    proc = _contract_submit(tmp_path)
    assert "not built" not in proc.stderr and "2 runs planned, 0 already in the ledger" in proc.stdout, proc.stderr


def test_a_contract_program_in_the_image_starts_in_its_job_folder(tmp_path: Path) -> None:
    """A contract program (driven_by: program) in an image started in / (ch-run's default; podman's is
    the image's WORKDIR), read-only there: 'OSError: [Errno 30] Read-only file system: scratch.txt',
    PREFLIGHT_FAILED. It starts in its job folder, as without a container, in the preflight's check
    (two runs: one check) and in each run."""
    proc = _contract_submit(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = export_records(Ledger(tmp_path / "ledger.sqlite", create=False), "scratchy_sweep-local")
    assert sorted((r["threads"], r["n"]) for r in rows) == [(t, n) for t in (1, 2) for n in (10, 10, 20, 20)]
    scratch = sorted((tmp_path / "runs").rglob("scratch.txt"))
    assert len(scratch) == 3, scratch  # the preflight's check and the two runs'
    assert all(p.read_text() == str(p.parent) for p in scratch), [(p, p.read_text()) for p in scratch]
